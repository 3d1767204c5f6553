package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"gopkg.in/yaml.v3"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/workflows"
)

// JobSpec describes a job to start, from a JSON or YAML file or flags.
type JobSpec struct {
	// ID is the workflow id. If not set, one is made from the scenario.
	ID        string `json:"id,omitempty" yaml:"id"`
	Objective string `json:"objective" yaml:"objective"`
	Scenario  string `json:"scenario" yaml:"scenario"`
	// Phases is the phase order. If not set, the default order.
	Phases []string `json:"phases,omitempty" yaml:"phases"`
	// Mode overrides the overseer mode for this job: off, observe, manage.
	Mode     string `json:"mode,omitempty" yaml:"mode"`
	MaxLoops int    `json:"max_loops,omitempty" yaml:"max_loops"`
	// GateDeadline overrides the worker's gate deadline for this job
	// ("24h:escalate,72h:abort"; "none" for none); see
	// overseer.ParseGateDeadline.
	GateDeadline string `json:"gate_deadline,omitempty" yaml:"gate_deadline"`
	// StartedBy names who starts the job, recorded in its memo for the
	// four-eyes rule (overseer.StartedByMemoKey): the starter may not
	// resume its own gates where the worker sets the rule.
	StartedBy string `json:"started_by,omitempty" yaml:"started_by"`
	// RetryDelay is the wait before re-running a failed phase ("10s").
	RetryDelay Duration `json:"retry_delay,omitempty" yaml:"retry_delay"`
	// Loop starts the reference agent loop (CoroAgentLoop) with this
	// scenario instead of a CoroJob: healthy, tool_failing, looping,
	// blocked. Scenario, Phases, MaxLoops and RetryDelay do not apply.
	Loop string `json:"loop,omitempty" yaml:"loop"`
	// Budget is the job's budget, as its memo takes it
	// (overseer.BudgetMemoKey, overseer.ParseBudget): JSON such as
	// {"tokens": 2000000, "elapsed_ns": 21600000000000}.
	Budget string `json:"budget,omitempty" yaml:"budget"`
}

// Duration reads "10s"-style durations from JSON and YAML.
type Duration time.Duration

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("duration %q: use a number with a unit, like 10s or 2m", b)
	}
	*d = Duration(v)
	return nil
}

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// LoadJobSpec reads a spec file: YAML for .yaml/.yml, JSON otherwise.
// Unknown fields are errors.
func LoadJobSpec(path string) (JobSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return JobSpec{}, fmt.Errorf("read spec: %w", err)
	}
	var spec JobSpec
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		err = decodeYAMLSpec(data, &spec)
	default:
		err = decodeJSONSpec(data, &spec)
	}
	if err != nil {
		return JobSpec{}, fmt.Errorf("spec %s is not a valid job spec: %w", path, err)
	}
	return spec, spec.Validate()
}

// specFields maps each JobSpec field's file name (its yaml tag, which is
// also its JSON name) to its index.
func specFields() (map[string]int, string) {
	t := reflect.TypeFor[JobSpec]()
	m := map[string]int{}
	var names []string
	for i := range t.NumField() {
		name := t.Field(i).Tag.Get("yaml")
		m[name] = i
		names = append(names, name)
	}
	return m, strings.Join(names, ", ")
}

// decodeYAMLSpec decodes field by field, so that an error names the field
// and its line: "line 3: unknown field "colour"; the fields are …".
func decodeYAMLSpec(data []byte, spec *JobSpec) error {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(root.Content) == 0 {
		return errors.New("the file is empty; give at least objective and scenario")
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: expected fields such as \"objective: …\"", doc.Line)
	}
	fields, names := specFields()
	v := reflect.ValueOf(spec).Elem()
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, val := doc.Content[i], doc.Content[i+1]
		idx, ok := fields[k.Value]
		if !ok {
			return fmt.Errorf("line %d: unknown field %q; the fields are %s", k.Line, k.Value, names)
		}
		if err := val.Decode(v.Field(idx).Addr().Interface()); err != nil {
			switch v.Field(idx).Kind() {
			case reflect.Int:
				return fmt.Errorf("line %d: %s: %q is not a whole number", val.Line, k.Value, val.Value)
			case reflect.String:
				return fmt.Errorf("line %d: %s: write a single value, in quotes if it has a colon", val.Line, k.Value)
			case reflect.Slice:
				return fmt.Errorf("line %d: %s: write a list such as [spec, plan, code]", val.Line, k.Value)
			}
			msg := err.Error()
			if _, after, ok := strings.Cut(msg, fmt.Sprintf("line %d: ", val.Line)); ok {
				msg = after // the line is said once, below
			}
			return fmt.Errorf("line %d: %s: %s", val.Line, k.Value, strings.TrimPrefix(msg, "yaml: "))
		}
	}
	return nil
}

// decodeJSONSpec decodes the top-level object key by key, so that an error
// names the field and its line.
func decodeJSONSpec(data []byte, spec *JobSpec) error {
	line := func(off int64) int { return bytes.Count(data[:min(int(off), len(data))], []byte("\n")) + 1 }
	dec := json.NewDecoder(bytes.NewReader(data))
	syntax := func(err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("line %d: %v", line(se.Offset), se)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return errors.New("the JSON ends too early")
		}
		return err
	}
	if t, err := dec.Token(); err != nil {
		return syntax(err)
	} else if d, ok := t.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("line 1: expected an object such as {\"objective\": …}")
	}
	fields, names := specFields()
	v := reflect.ValueOf(spec).Elem()
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return syntax(err)
		}
		key, _ := t.(string)
		at := line(dec.InputOffset())
		idx, ok := fields[key]
		if !ok {
			return fmt.Errorf("line %d: unknown field %q; the fields are %s", at, key, names)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return syntax(err)
		}
		if err := json.Unmarshal(raw, v.Field(idx).Addr().Interface()); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return fmt.Errorf("line %d: %s: a JSON %s cannot be a %s", at, key, te.Value, te.Type)
			}
			return fmt.Errorf("line %d: %s: %v", at, key, err)
		}
	}
	if _, err := dec.Token(); err != nil {
		return syntax(err)
	}
	return nil
}

// Validate reports the first problem a user must fix.
func (s JobSpec) Validate() error {
	if strings.TrimSpace(s.Objective) == "" {
		return fmt.Errorf("job spec: objective is required")
	}
	if s.Loop != "" {
		if s.Scenario != "" {
			return fmt.Errorf("job spec: give a scenario (a CoroJob) or a loop (an agent loop), not both")
		}
		if _, err := activities.ParseLoopScenario(s.Loop); err != nil {
			return fmt.Errorf("job spec: %w", err)
		}
	} else if _, err := activities.ParseScenario(s.Scenario); err != nil {
		return fmt.Errorf("job spec: %w", err)
	}
	if s.Mode != "" {
		if _, err := overseer.ParseMode(s.Mode); err != nil {
			return fmt.Errorf("job spec: %w", err)
		}
	}
	if s.GateDeadline != "" {
		if _, err := overseer.ParseGateDeadline(s.GateDeadline); err != nil {
			return fmt.Errorf("job spec: gate_deadline: %w", err)
		}
	}
	for _, p := range s.Phases {
		if !slices.Contains(activities.DefaultPhases, p) {
			return fmt.Errorf("job spec: unknown phase %q: use phases from %s", p, strings.Join(activities.DefaultPhases, ", "))
		}
	}
	if s.RetryDelay < 0 {
		return fmt.Errorf("job spec: retry_delay is negative")
	}
	if s.MaxLoops < 0 {
		return fmt.Errorf("job spec: max_loops %d is negative", s.MaxLoops)
	}
	if s.Budget != "" {
		if _, err := overseer.ParseBudget(s.Budget); err != nil {
			return fmt.Errorf("job spec: budget: %v", err)
		}
	}
	return nil
}

// errAlreadyRunning is a start refused because a job with that id runs.
type errAlreadyRunning struct{ id, runID string }

func (e errAlreadyRunning) Error() string {
	return fmt.Sprintf("job %q is already running (run %s); choose another --id, or add --attach to follow the running job", e.id, e.runID)
}

// startJob starts the job workflow for spec. A running job with the same
// id is an errAlreadyRunning: the SDK would otherwise return that job and
// silently drop the new spec.
func startJob(ctx context.Context, c client.Client, taskQueue string, spec JobSpec) (client.WorkflowRun, error) {
	if spec.ID == "" {
		kind := "job-" + spec.Scenario
		if spec.Loop != "" {
			kind = "agent-loop-" + spec.Loop
		}
		spec.ID = fmt.Sprintf("%s-%d", kind, time.Now().UnixNano())
	}
	opts := client.StartWorkflowOptions{ID: spec.ID, TaskQueue: taskQueue, WorkflowExecutionErrorWhenAlreadyStarted: true}
	if spec.Mode != "" || spec.GateDeadline != "" || spec.StartedBy != "" || spec.Budget != "" {
		opts.Memo = map[string]any{}
	}
	if spec.Budget != "" {
		opts.Memo[overseer.BudgetMemoKey] = spec.Budget
	}
	if spec.StartedBy != "" {
		opts.Memo[overseer.StartedByMemoKey] = spec.StartedBy
	}
	if spec.Mode != "" {
		opts.Memo[overseer.ModeMemoKey] = spec.Mode
	}
	if spec.GateDeadline != "" {
		opts.Memo[overseer.GateDeadlineMemoKey] = spec.GateDeadline
	}
	var run client.WorkflowRun
	var err error
	if spec.Loop != "" {
		run, err = c.ExecuteWorkflow(ctx, opts, workflows.AgentLoopWorkflowName,
			workflows.AgentLoopInput{Objective: spec.Objective, Scenario: activities.LoopScenario(spec.Loop)})
	} else {
		in := workflows.JobInput{Objective: spec.Objective, Scenario: activities.Scenario(spec.Scenario), Phases: spec.Phases, MaxLoops: spec.MaxLoops, RetryDelay: time.Duration(spec.RetryDelay)}
		run, err = c.ExecuteWorkflow(ctx, opts, workflows.JobWorkflowName, in)
	}
	var started *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &started) {
		return nil, errAlreadyRunning{id: spec.ID, runID: started.RunId}
	}
	if err != nil {
		return nil, fmt.Errorf("start job %q: %w", spec.ID, err)
	}
	return run, nil
}

// Start starts a job from a spec file or flags.
type Start struct{}

// Synopsis implements Command.
func (*Start) Synopsis() string {
	return "start a job from a spec file (--spec FILE) or flags (--objective, --scenario, --mode)"
}

// Run implements Command.
func (*Start) Run(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("start", out)
	var conn connFlags
	conn.register(fs)
	specPath := fs.String("spec", "", "job spec file, JSON or YAML")
	var spec JobSpec
	fs.StringVar(&spec.ID, "id", "", "workflow id (default: generated)")
	fs.StringVar(&spec.Objective, "objective", "", "the job's objective")
	fs.StringVar(&spec.Scenario, "scenario", "", "simulated scenario: on_track, drifting, looping, blocked")
	fs.StringVar(&spec.Loop, "loop", "", "start the reference agent loop (CoroAgentLoop) instead, with this scenario: healthy, tool_failing, looping, blocked")
	fs.StringVar(&spec.Budget, "budget", "", `the job's budget, as JSON (e.g. '{"tokens": 2000000, "elapsed_ns": 21600000000000}'): in manage mode it stops at a gate of its own when it reaches a bound`)
	fs.StringVar(&spec.Mode, "mode", "", "overseer mode for this job: off, observe, manage")
	fs.StringVar(&spec.StartedBy, "by", "", "who starts the job, recorded for the four-eyes rule (the starter may not resume its own gates)")
	fs.StringVar(&spec.GateDeadline, "gate-deadline", "", "this job's gate deadline, e.g. 24h:escalate,72h:abort or none (default: the worker's)")
	attach := fs.Bool("attach", false, "if a job with this --id is already running, follow it instead of refusing (the new spec is not applied)")
	err := parseNoArgs(fs, args)
	if err != nil {
		return err
	}
	if *specPath != "" {
		fromFile, err := LoadJobSpec(*specPath)
		if err != nil {
			return err
		}
		spec = mergeSpec(fromFile, spec)
	}
	if err := spec.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	c, err := conn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	run, err := startJob(ctx, c, conn.taskQueue, spec)
	var running errAlreadyRunning
	if errors.As(err, &running) && *attach {
		fmt.Fprintf(out, "Job %s is already running (run %s); attached to it, the new spec was not applied\n", running.id, running.runID)
		fmt.Fprintf(out, "Follow it with: overseer status %s\n", running.id)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Started job %s (run %s) on task queue %s\n", run.GetID(), run.GetRunID(), conn.taskQueue)
	fmt.Fprintf(out, "Follow it with: overseer status %s\n", run.GetID())
	return nil
}

// mergeSpec lets flags override the file's fields.
func mergeSpec(file, flags JobSpec) JobSpec {
	if flags.ID != "" {
		file.ID = flags.ID
	}
	if flags.Objective != "" {
		file.Objective = flags.Objective
	}
	if flags.Scenario != "" {
		file.Scenario = flags.Scenario
	}
	if flags.Mode != "" {
		file.Mode = flags.Mode
	}
	if flags.GateDeadline != "" {
		file.GateDeadline = flags.GateDeadline
	}
	if flags.StartedBy != "" {
		file.StartedBy = flags.StartedBy
	}
	if flags.Loop != "" {
		file.Loop = flags.Loop
	}
	return file
}
