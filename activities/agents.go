package activities

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/supervision"
)

// Scenario names how a simulated job behaves.
type Scenario string

// The scenarios.
const (
	// OnTrack goes spec → plan → code → test → review → evaluate; the
	// tests fail once and the loop back to code fixes them.
	OnTrack Scenario = "on_track"
	// Drifting keeps switching lanes (feature, refactor, docs) and redoing
	// work before the evaluator pulls it back.
	Drifting Scenario = "drifting"
	// Looping fails the same tests again and again, until a process note
	// (after a human looked) makes the agent change its approach.
	Looping Scenario = "looping"
	// Blocked fails the code phase on missing credentials until a human
	// resumes the job with a note.
	Blocked Scenario = "blocked"
)

// Scenarios lists every scenario.
var Scenarios = []Scenario{OnTrack, Drifting, Looping, Blocked}

// ParseScenario parses a scenario name.
func ParseScenario(s string) (Scenario, error) { return parseName("scenario", Scenarios, s) }

// parseName is the one of names that s names, or an error that lists them.
func parseName[T ~string](what string, names []T, s string) (T, error) {
	list := make([]string, len(names))
	for i, n := range names {
		if string(n) == s {
			return n, nil
		}
		list[i] = string(n)
	}
	return "", fmt.Errorf("unknown %s %q: use one of %s", what, s, strings.Join(list, ", "))
}

// Phase names of the reference job and their activity names.
const (
	PhaseSpec     = "spec"
	PhasePlan     = "plan"
	PhaseCode     = "code"
	PhaseTest     = "test"
	PhaseReview   = "review"
	PhaseEvaluate = "evaluate"
)

// DefaultPhases is the job's phase order.
var DefaultPhases = []string{PhaseSpec, PhasePlan, PhaseCode, PhaseTest, PhaseReview, PhaseEvaluate}

// ActivityName is the registered activity name of a phase.
func ActivityName(phase string) string { return "coro." + phase }

// BlockedErrorType is the error type of a phase that cannot go on.
const BlockedErrorType = "AgentBlocked"

// PhaseInput is what a phase agent receives.
type PhaseInput struct {
	Objective string   `json:"objective"`
	Scenario  Scenario `json:"scenario"`
	Phase     string   `json:"phase"`
	Lane      string   `json:"lane"`
	// Run counts runs of this phase in the job, from 1.
	Run int `json:"run"`
	// Note is the overseer's process note, when the previous phase was
	// flagged (set by the overseer through overseer.NoteReceiver).
	Note *overseer.Note `json:"note,omitempty"`
	// Noted is true once any earlier phase of the job received a note.
	Noted bool `json:"noted,omitempty"`
}

// SetProcessNote implements overseer.NoteReceiver.
func (in *PhaseInput) SetProcessNote(n overseer.Note) { in.Note = &n }

var _ supervision.Tasker = (*PhaseInput)(nil)

// SupervisionTask implements supervision.Tasker: the task the in-phase
// supervisor judges the phase's progress against.
func (in *PhaseInput) SupervisionTask() string {
	return fmt.Sprintf("Phase %q of the job %q.", in.Phase, in.Objective)
}

// PhaseOutput is what a phase agent returns.
type PhaseOutput struct {
	overseer.ReportCarrier
	Phase   string `json:"phase"`
	Summary string `json:"summary"`
	// Passed is false when tests fail or review requests changes.
	Passed bool `json:"passed"`
	// NextLane asks the workflow to switch lanes.
	NextLane string `json:"next_lane,omitempty"`
	// WorkItems are status updates for work items.
	WorkItems map[string]string `json:"work_items,omitempty"`
}

// Agents are the simulated phase agents.
type Agents struct {
	// Work is how long each phase pretends to work. If not set, phases
	// return at once.
	Work time.Duration
}

// Register registers one activity per phase, named coro.<phase>, on a
// worker or the SDK's test environment.
func (a *Agents) Register(r worker.ActivityRegistry) {
	for _, p := range DefaultPhases {
		r.RegisterActivityWithOptions(a.Run, activity.RegisterOptions{Name: ActivityName(p)})
	}
}

// Run does one phase. The phase comes from the input, so that one function
// serves every phase activity.
func (a *Agents) Run(ctx context.Context, in *PhaseInput) (PhaseOutput, error) {
	if in.Phase == PhaseCode {
		return a.codeLoop(ctx, in)
	}
	if err := a.wait(ctx, a.Work); err != nil {
		return PhaseOutput{}, err
	}
	return a.finish(ctx, in)
}

// wait works for d, heartbeating every third of the activity's heartbeat
// timeout (if it has one) so that a phase that is still working is not
// taken for lost.
func (a *Agents) wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	done := time.NewTimer(d)
	defer done.Stop()
	var beat <-chan time.Time
	if hb := heartbeatTimeout(ctx); hb > 0 {
		t := time.NewTicker(hb / 3)
		defer t.Stop()
		beat = t.C
	}
	for {
		select {
		case <-done.C:
			return nil
		case <-beat:
			activity.RecordHeartbeat(ctx)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// heartbeatTimeout is the running activity's heartbeat timeout; none
// outside an activity (Run called directly, as in the examples).
func heartbeatTimeout(ctx context.Context) time.Duration {
	if !activity.IsActivity(ctx) {
		return 0
	}
	return activity.GetInfo(ctx).HeartbeatTimeout
}

// finish produces the phase's result: what the scenario makes happen,
// then the telemetry of the agent turns it took (telemetry.go).
func (a *Agents) finish(ctx context.Context, in *PhaseInput) (PhaseOutput, error) {
	out, err := a.play(ctx, in)
	if err != nil {
		return out, err
	}
	simulateTelemetry(ctx, in, out.Passed, out.OverseerReport)
	return out, nil
}

// play plays the scenario: the phase's outcome, rework and failed tools.
func (a *Agents) play(ctx context.Context, in *PhaseInput) (PhaseOutput, error) {
	out := PhaseOutput{Phase: in.Phase, Passed: true}
	report := &overseer.PhaseReport{}
	out.OverseerReport = report
	noted := in.Noted || in.Note != nil
	if n, ok := overseer.ProcessNote(ctx); ok && in.Note == nil {
		noted = true
		in.Note = &n
	}
	switch in.Phase {
	case PhaseSpec:
		out.Summary = "wrote the spec and acceptance criteria"
	case PhasePlan:
		out.Summary = "planned three work items"
		out.WorkItems = map[string]string{"W-1": "todo", "W-2": "todo", "W-3": "todo"}
	case PhaseCode:
		return a.code(in, out, report, noted)

	case PhaseTest:
		return a.test(in, out, report, noted)
	case PhaseReview:
		out.Summary = "review approved"
		report.OpenPullRequests = []string{}
		if in.Scenario == Drifting && in.Run <= 3 && !noted {
			out.Passed, out.Summary = false, "review found unrelated changes; requested a rework"
		}
	case PhaseEvaluate:
		out.Summary = "evaluator: the deliverable matches the spec"
	default:
		return out, temporal.NewNonRetryableApplicationError("unknown phase "+in.Phase, "UnknownPhase", nil)
	}
	return out, nil
}

func (a *Agents) code(in *PhaseInput, out PhaseOutput, report *overseer.PhaseReport, noted bool) (PhaseOutput, error) {
	switch in.Scenario {
	case Blocked:
		if in.Note == nil || in.Note.ReviewerNote == "" {
			return out, temporal.NewNonRetryableApplicationError(
				"cannot push: missing credentials for the package registry", BlockedErrorType, nil)
		}
		out.Summary = "credentials provided by the reviewer; implemented the work items"
	case Drifting:
		lanes := []string{"refactor", "feature", "docs", "refactor", "feature"}
		if !noted && in.Run <= len(lanes) {
			out.NextLane = lanes[in.Run-1]
			report.Rework = in.Run
			out.Summary = fmt.Sprintf("rewrote %s code instead of the feature", out.NextLane)
		} else {
			out.NextLane = "feature"
			out.Summary = "back on the feature after the process note"
		}
	default:
		out.Summary = "implemented the work items"
		if in.Run > 1 {
			report.Rework = 1
			out.Summary = "fixed the failing tests"
		}
	}
	report.OpenPullRequests = []string{"#101"}
	out.WorkItems = map[string]string{"W-1": "in_review", "W-2": "in_review", "W-3": "in_review"}
	return out, nil
}

func (a *Agents) test(in *PhaseInput, out PhaseOutput, report *overseer.PhaseReport, noted bool) (PhaseOutput, error) {
	fail := false
	switch in.Scenario {
	case OnTrack:
		fail = in.Run == 1
	case Looping:
		fail = !noted && in.Run <= 6
	}
	if !fail {
		out.Summary = "all tests pass"
		out.WorkItems = map[string]string{"W-1": "done", "W-2": "done", "W-3": "done"}
		return out, nil
	}
	out.Passed = false
	out.Summary = "2 tests fail: TestExportCSV, TestExportHeader"
	report.FailedToolCategories = []string{"test"}
	out.WorkItems = map[string]string{"W-2": "in_progress"}
	return out, nil
}

// codeSteps is how many agent steps a code phase takes.
const codeSteps = 4

// codeLoop is the long phase: an agent loop that edits a workspace step by
// step, reports each step as supervision events and heartbeats, runs its
// own checks at the end and gives the in-phase supervisor a trusted
// evidence source (the workspace's revision and the check's receipt).
func (a *Agents) codeLoop(ctx context.Context, in *PhaseInput) (PhaseOutput, error) {
	ws := &workspace{}
	supervision.SetEvidenceSource(ctx, ws)
	for i := range codeSteps {
		if err := a.wait(ctx, a.Work/codeSteps); err != nil {
			return PhaseOutput{}, err
		}
		file := fmt.Sprintf("reports/export_%d.go", i)
		supervision.RecordEvent(ctx, supervision.Event{Type: "TOOL_CALL"})
		supervision.RecordEvent(ctx, supervision.Event{Type: supervision.EventTextDelta, Text: fmt.Sprintf("Edited %s. ", file)})
		ws.edit(file)
		activity.RecordHeartbeat(ctx, i)
	}
	out, err := a.finish(ctx, in)
	if err != nil {
		supervision.RecordEvent(ctx, supervision.Event{Type: supervision.EventTextDelta, Text: "I need credentials for the package registry."})
		return out, err
	}
	noted := in.Noted || in.Note != nil
	passed := in.Scenario != Looping || noted
	ws.verify(passed)
	summary := "Done: implemented the work items; go test ./... passes."
	if !passed {
		summary = "Done: implemented the work items, but go test ./... still fails."
	}
	supervision.RecordEvent(ctx, supervision.Event{Type: supervision.EventFinalResult, Text: summary})
	return out, nil
}

// workspace is the code phase's simulated repository and the host's
// trusted evidence about it.
var _ supervision.EvidenceSource = (*workspace)(nil)

type workspace struct {
	mu       sync.Mutex
	files    []string
	edits    int
	verified *receipt
}

type receipt struct {
	revision string
	passed   bool
}

func (w *workspace) revision() string { return fmt.Sprintf("sim:%d", w.edits) }

func (w *workspace) edit(file string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.edits++
	w.files = append(w.files, file)
}

func (w *workspace) verify(passed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.verified = &receipt{revision: w.revision(), passed: passed}
}

// Evidence implements supervision.EvidenceSource. The receipt is bound to
// the requesting scope because this host ran the check itself, in this
// invocation, against this revision.
func (w *workspace) Evidence(_ context.Context, req supervision.EvidenceRequest) (supervision.Evidence, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ev := supervision.Evidence{
		Revision: w.revision(), RepositoryStatus: fmt.Sprintf("%d files changed", len(w.files)),
		ChangedFiles: append([]string{}, w.files...), Instructions: "Run go test ./... before you finish.",
	}
	if w.verified != nil {
		summary := "go test ./...: ok"
		if !w.verified.passed {
			summary = "go test ./...: 2 failures"
		}
		ev.Verification = &supervision.Verification{UserID: req.Scope.UserID, SessionID: req.Scope.SessionID, RunID: req.Scope.RunID,
			Revision: w.verified.revision, Source: "coro.test-runner", Passed: w.verified.passed, Summary: summary}
	}
	return ev, nil
}
