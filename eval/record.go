package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/corohq/temporal-overseer/overseer"
)

// RecordFormat is the version of the run-record format this package reads
// and writes. A record that names another version is refused.
const RecordFormat = "overseer-run/v1"

// Outcome is how a recorded run ended.
type Outcome string

// The outcomes of a run. For every measure the positive class is a run that
// did not succeed: OutcomeBlocked counts as failed.
const (
	OutcomeSucceeded Outcome = "succeeded"
	OutcomeFailed    Outcome = "failed"
	OutcomeBlocked   Outcome = "blocked"
)

// Failed reports whether the run did not succeed (failed or blocked).
func (o Outcome) Failed() bool { return o != OutcomeSucceeded }

func (o Outcome) valid() bool {
	return o == OutcomeSucceeded || o == OutcomeFailed || o == OutcomeBlocked
}

// Unit says what one entry of [Record.Steps] is.
type Unit string

// The units of a record's steps.
const (
	// UnitStep: each entry is one agent step (a tool call or turn).
	// Consecutive steps of the same phase form one phase run, whose end is a
	// phase boundary; a step with no phase belongs to the phase run in
	// progress (or to the first one).
	UnitStep Unit = "step"
	// UnitPhase: each entry is one phase run, as the overseer plugin sees it
	// in Temporal (one phase activity); each entry ends at a boundary.
	UnitPhase Unit = "phase"
	// UnitCall: each entry is one activity of a workflow as the plugin's
	// interceptor observed it at a boundary (`overseer export` writes
	// these): its phase, failure and error, the digests of its input
	// (Call) and result (Output), and what its result reported. It is
	// replayed call by call through the code the interceptor records a
	// live call with, so a job of phases and an agent loop (a model call,
	// then the tool it asked for) each replay as the plugin judged them.
	UnitCall Unit = "call"
)

// Record is one recorded agent run with its known outcome: one line of a
// run-record file (JSON Lines). Every command of `overseer` that reads runs
// (train, eval, calibrate) reads records; importers convert other formats
// to records, and `overseer export` writes them from Temporal.
type Record struct {
	// Format is RecordFormat.
	Format  string  `json:"format"`
	ID      string  `json:"id"`
	Outcome Outcome `json:"outcome"`
	Task    Task    `json:"task"`
	// Agent names the agent (and model) that ran, e.g. "mini-swe-agent/gemini-3-pro".
	Agent string `json:"agent,omitempty"`
	// Unit is what a step is; if not set, UnitStep.
	Unit Unit `json:"unit,omitempty"`
	// Shape is the shape the plugin judged the job as (UnitCall, read
	// from the judge's recorded answers): replayed with it declared, so a
	// loop whose activities' names do not say "model" still replays as
	// one. Empty: the plugin's rule from the names ([overseer.ShapeOf]).
	Shape overseer.Shape `json:"shape,omitempty"`
	Steps []Step         `json:"steps"`
	// Gates are the reviewers' decisions at the job's overseer gates, in
	// order (exported from Temporal); see [UseGateLabels].
	Gates []GateDecision `json:"gates,omitempty"`
}

// Task describes what the run worked on.
type Task struct {
	// Family groups related tasks (e.g. one repository), so that
	// cross-validation never trains and tests on the same family. If not
	// set, [FamilyOf] the record's id.
	Family    string `json:"family,omitempty"`
	Objective string `json:"objective,omitempty"`
}

// Step is one agent step (UnitStep), one phase run (UnitPhase) or one
// activity call (UnitCall; what is said of a phase run holds for it).
type Step struct {
	// Phase is the phase or action class, e.g. "read", "edit", "test",
	// "code". Empty only for a failed step of unknown class (UnitStep).
	Phase string `json:"phase,omitempty"`
	// Failed is a failed tool call (UnitStep) or a phase run that failed as
	// an activity (UnitPhase).
	Failed bool `json:"failed,omitempty"`
	// FailureCategory names the failed tool call's category; if not set,
	// the phase name (or "failed" when there is none).
	FailureCategory string  `json:"failure_category,omitempty"`
	DurationMS      int64   `json:"duration_ms,omitempty"`
	CostUSD         float64 `json:"cost_usd,omitempty"`
	InputTokens     int64   `json:"input_tokens,omitempty"`
	OutputTokens    int64   `json:"output_tokens,omitempty"`
	// Turns is the number of agent turns of a phase run (UnitPhase only);
	// a step is one turn.
	Turns int `json:"turns,omitempty"`
	// FailedTools lists the categories of the failed tool calls of a phase
	// run (UnitPhase only).
	FailedTools []string `json:"failed_tools,omitempty"`
	// Rework counts units of earlier work this phase run redid (UnitPhase
	// only; for steps it is derived, see [Boundaries]).
	Rework int `json:"rework,omitempty"`
	// OutputMissing is true when the step or phase did not produce the
	// output the run's contract requires (e.g. an empty final submission).
	OutputMissing bool `json:"output_missing,omitempty"`
	// Text is optional free text (the command, a summary); no command reads it.
	Text string `json:"text,omitempty"`
	// Call and Output stand for an agent step's command and what its tool
	// printed (digests: the overseer only compares them), ExitCode and
	// TimedOut for how the command ended (UnitStep only). Replayed as an
	// agent loop, they tell the same call repeated with the same result
	// (looping) from a new one; a step without them is its own call.
	Call     string `json:"call,omitempty"`
	Output   string `json:"output,omitempty"`
	ExitCode int    `json:"exit_code,omitempty"`
	TimedOut bool   `json:"timed_out,omitempty"`
	// Command, Printed and Message are excerpts of an agent step's real
	// texts (UnitStep; each at most MaxStepTextBytes, see [Excerpt]): the
	// command it ran, what its tool printed, and what the model said with
	// it (its thought; the whole answer when it held no command). Only a
	// model judge reads them, in a content window
	// (ScoreOptions.ContentWindow); no figure does. Command must be an
	// excerpt of the text Call digests, and Printed of the text Output
	// digests (the importers make them so): replayed, the tool's input
	// and result carry them beside the digests, and a call made again is
	// told by its whole input. A step without a Call is known by its Text:
	// its tool receives that Text, and its Command joins the Message.
	Command string `json:"command,omitempty"`
	Printed string `json:"printed,omitempty"`
	Message string `json:"message,omitempty"`
	// Error is the failed activity's error message (UnitCall).
	Error string `json:"error,omitempty"`
	// Assessment is what the overseer recorded at this boundary, when the
	// record was exported from Temporal (UnitPhase only).
	Assessment *RecordedAssessment `json:"assessment,omitempty"`
}

// RecordedAssessment is an assessment the overseer made during the run.
type RecordedAssessment struct {
	OnObjective float64 `json:"on_objective"`
	// NotAssessed is true when the judge had no basis for P(on objective).
	NotAssessed bool `json:"not_assessed,omitempty"`
	// Basis is what the judge based its answers on.
	Basis        string `json:"basis,omitempty"`
	Band         string `json:"band,omitempty"`
	Flagged      bool   `json:"flagged,omitempty"`
	ModelVersion string `json:"model_version,omitempty"`
	Error        string `json:"error,omitempty"`
}

// ErrInvalidRecord is wrapped by every error about a record's content.
var ErrInvalidRecord = errors.New("invalid run record")

// Validate reports the first problem of r in one sentence.
func (r Record) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidRecord, fmt.Sprintf(format, args...))
	}
	if r.Format != RecordFormat {
		return bad("record %q has format %q, want %q", r.ID, r.Format, RecordFormat)
	}
	if strings.TrimSpace(r.ID) == "" {
		return bad("a record has no id")
	}
	if r.Outcome == "" {
		return bad("record %q has no outcome: set outcome to succeeded, failed or blocked", r.ID)
	}
	if !r.Outcome.valid() {
		return bad("record %q has outcome %q: use succeeded, failed or blocked", r.ID, r.Outcome)
	}
	if r.Unit != "" && r.Unit != UnitStep && r.Unit != UnitPhase && r.Unit != UnitCall {
		return bad("record %q has unit %q: use step, phase or call", r.ID, r.Unit)
	}
	if len(r.Steps) == 0 {
		return bad("record %q has no steps", r.ID)
	}
	for i, s := range r.Steps {
		switch {
		case s.Phase == "" && (r.unit() != UnitStep || !s.Failed):
			return bad("record %q step %d has no phase (only a failed step may omit it)", r.ID, i)
		case s.DurationMS < 0 || s.CostUSD < 0 || s.InputTokens < 0 || s.OutputTokens < 0 || s.Turns < 0 || s.Rework < 0:
			return bad("record %q step %d has a negative duration, cost, token or turn count", r.ID, i)
		}
	}
	for i, g := range r.Gates {
		switch {
		case g.Action != GateContinue && g.Action != GateRedo && g.Action != GateAbort:
			return bad("record %q gate %d has action %q: use continue, redo or abort", r.ID, i, g.Action)
		case g.After < 0 || g.After > len(r.Steps) || g.WaitMS < 0:
			return bad("record %q gate %d is after step %d of %d or waited a negative time", r.ID, i, g.After, len(r.Steps))
		case g.Kind != "" && !g.Budget():
			return bad("record %q gate %d has kind %q: use %q for a gate a budget opened, or leave it out for the judge's", r.ID, i, g.Kind, overseer.GateKindBudget)
		}
	}
	return nil
}

func (r Record) unit() Unit {
	if r.Unit == "" {
		return UnitStep
	}
	return r.Unit
}

// FamilyName is the task family used to group the record in
// cross-validation: Task.Family, or [FamilyOf] the id.
func (r Record) FamilyName() string {
	if r.Task.Family != "" {
		return r.Task.Family
	}
	return FamilyOf(r.ID)
}

var trailingNumber = regexp.MustCompile(`[-_.#]\d+$`)

// FamilyOf derives a task family from a run id by dropping a trailing
// number: "django__django-11099" → "django__django", "job-17" → "job". A
// Multi-SWE-bench evaluation's id, org/repo:pr-N, is of its repository's
// family, as its instance id org__repo-N is: "fasterxml/jackson-core:pr-1016"
// → "fasterxml__jackson-core" (a prefix before org/ dropped). An id without
// a trailing number is its own family.
func FamilyOf(id string) string {
	if m := multiSWEID.FindStringSubmatch(id); m != nil {
		return m[2] + "__" + m[3]
	}
	if f := trailingNumber.ReplaceAllString(id, ""); f != "" {
		return f
	}
	return id
}

// NumSteps is the number of agent steps of the run: the entries of a
// step-unit record, the turns (at least one per entry) of a phase-unit one.
func (r Record) NumSteps() int {
	if r.unit() == UnitStep {
		return len(r.Steps)
	}
	n := 0
	for _, s := range r.Steps {
		n += max(1, s.Turns)
	}
	return n
}

// Boundary is one phase boundary of a replayed record: the phase run that
// just ended, as the plugin's interceptor observes it (Run) and as the
// phase reports it (Report), and the number of agent steps done so far.
type Boundary struct {
	Steps  int
	Run    overseer.PhaseRun
	Report *overseer.PhaseReport
}

// Boundaries groups a record's steps into phase runs, in order (a
// UnitCall record's calls as phase runs, one to one). For
// step-unit records a phase run reports its steps as turns, the sums of
// their cost, tokens and durations, one failed tool call per failed step,
// one unit of rework when it is an edit after an earlier edit that was
// verified since ([overseer.PhaseKindOf]), and a missing output when any
// of its steps says so. Phase-unit entries map one to one.
func (r Record) Boundaries() []Boundary {
	if r.unit() != UnitStep {
		out := make([]Boundary, 0, len(r.Steps))
		steps := 0
		for _, s := range r.Steps {
			steps += max(1, s.Turns)
			run := overseer.PhaseRun{Phase: s.Phase, Failed: s.Failed, Duration: time.Duration(s.DurationMS) * time.Millisecond}
			rep := &overseer.PhaseReport{Turns: max(1, s.Turns), CostUSD: s.CostUSD, InputTokens: s.InputTokens, OutputTokens: s.OutputTokens,
				Rework: s.Rework, FailedToolCategories: s.FailedTools, OutputMissing: s.OutputMissing}
			out = append(out, Boundary{Steps: steps, Run: run, Report: rep})
		}
		return out
	}
	type group struct {
		phase string
		first int
		steps []Step
	}
	var groups []group
	var leading []Step // failed steps of unknown class before any phase
	for i, s := range r.Steps {
		switch {
		case s.Phase == "" && len(groups) == 0:
			leading = append(leading, s)
		case s.Phase == "" || (len(groups) > 0 && groups[len(groups)-1].phase == s.Phase):
			g := &groups[len(groups)-1]
			g.steps = append(g.steps, s)
		default:
			g := group{phase: s.Phase, first: i}
			if len(groups) == 0 {
				g.steps, leading = leading, nil
			}
			g.steps = append(g.steps, s)
			groups = append(groups, g)
		}
	}
	out := make([]Boundary, 0, len(groups))
	steps := 0
	editSeen, verifiedSinceEdit := false, false
	for _, g := range groups {
		steps += len(g.steps)
		run := overseer.PhaseRun{Phase: g.phase}
		rep := &overseer.PhaseReport{Turns: len(g.steps)}
		for _, s := range g.steps {
			run.Duration += time.Duration(s.DurationMS) * time.Millisecond
			rep.CostUSD += s.CostUSD
			rep.InputTokens += s.InputTokens
			rep.OutputTokens += s.OutputTokens
			if s.Failed {
				rep.FailedToolCategories = append(rep.FailedToolCategories, s.failureCategory())
			}
			rep.OutputMissing = rep.OutputMissing || s.OutputMissing
		}
		switch overseer.PhaseKindOf(g.phase) {
		case overseer.PhaseKindEdit:
			if editSeen && verifiedSinceEdit {
				rep.Rework = 1
			}
			editSeen, verifiedSinceEdit = true, false
		case overseer.PhaseKindVerify:
			verifiedSinceEdit = true
		}
		out = append(out, Boundary{Steps: steps, Run: run, Report: rep})
	}
	return out
}

func (s Step) failureCategory() string {
	switch {
	case s.FailureCategory != "":
		return s.FailureCategory
	case s.Phase != "":
		return s.Phase
	default:
		return "failed"
	}
}

// ReadRecords reads run records, one JSON object per line; blank lines are
// skipped. Unknown fields are refused (a misspelled field would otherwise
// be lost silently) and every record is validated; errors name the line.
func ReadRecords(r io.Reader) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	var out []Record
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		var rec Record
		if err := dec.Decode(&rec); err != nil {
			return nil, fmt.Errorf("line %d: %w: %v", line, ErrInvalidRecord, err)
		}
		if err := rec.Validate(); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// WriteRecords writes records as JSON Lines, each validated first (Format
// is filled in when empty).
func WriteRecords(w io.Writer, records []Record) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, rec := range records {
		if rec.Format == "" {
			rec.Format = RecordFormat
		}
		if err := rec.Validate(); err != nil {
			return err
		}
		if err := enc.Encode(rec); err != nil {
			return err
		}
	}
	return nil
}

// AsPhases is an agent's run (UnitStep) as a job of phases (UnitPhase): each
// run of consecutive steps of one kind a phase run ([Record.Boundaries]),
// the record a phase-shaped workflow (a CoroJob) would export. A record of
// phases is returned as is.
func (r Record) AsPhases() Record {
	if r.unit() != UnitStep {
		return r
	}
	out := r
	out.Unit, out.Steps = UnitPhase, nil
	for _, b := range r.Boundaries() {
		out.Steps = append(out.Steps, Step{Phase: b.Run.Phase, Failed: b.Run.Failed, DurationMS: b.Run.Duration.Milliseconds(),
			Turns: b.Report.Turns, CostUSD: b.Report.CostUSD, InputTokens: b.Report.InputTokens, OutputTokens: b.Report.OutputTokens,
			Rework: b.Report.Rework, FailedTools: b.Report.FailedToolCategories, OutputMissing: b.Report.OutputMissing})
	}
	return out
}
