package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

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
	// RetryDelay is the wait before re-running a failed phase ("10s").
	RetryDelay Duration `json:"retry_delay,omitempty" yaml:"retry_delay"`
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
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		err = dec.Decode(&spec)
	default:
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		err = dec.Decode(&spec)
	}
	if err != nil {
		return JobSpec{}, fmt.Errorf("spec %s is not a valid job spec: %w", path, err)
	}
	return spec, spec.Validate()
}

// Validate reports the first problem a user must fix.
func (s JobSpec) Validate() error {
	if strings.TrimSpace(s.Objective) == "" {
		return fmt.Errorf("job spec: objective is required")
	}
	if _, err := activities.ParseScenario(s.Scenario); err != nil {
		return fmt.Errorf("job spec: %w", err)
	}
	if s.Mode != "" {
		if _, err := overseer.ParseMode(s.Mode); err != nil {
			return fmt.Errorf("job spec: %w", err)
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
	return nil
}

// startJob starts the job workflow for spec.
func startJob(ctx context.Context, c client.Client, taskQueue string, spec JobSpec) (client.WorkflowRun, error) {
	if spec.ID == "" {
		spec.ID = fmt.Sprintf("job-%s-%d", spec.Scenario, time.Now().UnixNano())
	}
	opts := client.StartWorkflowOptions{ID: spec.ID, TaskQueue: taskQueue}
	if spec.Mode != "" {
		opts.Memo = map[string]any{overseer.ModeMemoKey: spec.Mode}
	}
	in := workflows.JobInput{Objective: spec.Objective, Scenario: activities.Scenario(spec.Scenario), Phases: spec.Phases, MaxLoops: spec.MaxLoops, RetryDelay: time.Duration(spec.RetryDelay)}
	run, err := c.ExecuteWorkflow(ctx, opts, workflows.JobWorkflowName, in)
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
	fs.StringVar(&spec.Mode, "mode", "", "overseer mode for this job: off, observe, manage")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(pos); err != nil {
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
	return file
}
