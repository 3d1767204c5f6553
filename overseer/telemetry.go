package overseer

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/workflow"
)

// Telemetry receives what the overseer decides as it happens: each
// assessment, each gate once it closes, each stop at a job's budget. It is
// the hook for tracing backends; package
// github.com/corohq/temporal-overseer/otel exports it to OpenTelemetry
// (docs/opentelemetry.md).
//
// The overseer calls it from workflow code, synchronously, and never while
// the workflow replays (workflow.IsReplaying): a worker that restarts or
// evicts the run from its cache and replays it reports nothing again. A
// workflow task that fails after a call and is retried calls it again for
// what the retried task does. A gate is reported once, when it closes,
// with the time it opened, so an implementation keeps nothing between
// calls. Calling it writes nothing to the run's history.
//
// An implementation must not block (hand the event to a batching exporter)
// and must not use ctx to schedule anything: it may read the context's
// values (a tracing interceptor's span), nothing more. A panic is
// recovered and logged.
//
// Some fields quote what the job's phases or its reviewers wrote (see each
// event's doc): an implementation that sends events elsewhere leaves them
// out unless the team asks for them.
type Telemetry interface {
	Assessed(ctx workflow.Context, ev AssessedEvent)
	GateClosed(ctx workflow.Context, ev GateClosedEvent)
	BudgetStopped(ctx workflow.Context, ev BudgetStopEvent)
}

// Job names the run an event is about.
type Job struct {
	WorkflowType string
	WorkflowID   string
	RunID        string
	Namespace    string
	TaskQueue    string
}

// EvaluationOnObjective is AssessedEvent.Name of an assessment reported by
// P(on objective).
const EvaluationOnObjective = "on_objective"

// LabelNotAssessed is AssessedEvent.Label of an assessment whose judge
// abstained from P(on objective) ([BandUnknown]).
const LabelNotAssessed = "not_assessed"

// AssessedEvent is one assessment, as the status records it.
type AssessedEvent struct {
	Job Job
	// Seq numbers the run's assessments (Assessment.Seq); Phase is the
	// phase assessed, At when the answer was recorded (workflow time).
	Seq   int
	Phase string
	At    time.Time
	Mode  Mode

	// Name is what the score measures: EvaluationOnObjective, or, when the
	// verdict was flagged because the judge found an obligation unmet
	// (and not by P), that obligation ("obligation[2]").
	Name string
	// Score is P(on objective), or the breach confidence for an
	// obligation; nil when the judge failed or abstained from P.
	Score *float64
	// Label is the verdict's band (on_track, needs_a_look, off_track) or
	// LabelNotAssessed; empty when the judge failed.
	Label string
	// Flagged is the verdict's flag; Reason the rule that fired (numbers
	// and the obligation's sentence, no output of the job).
	Flagged bool
	Reason  string
	// OnObjective is P(on objective) (nil when the judge failed or
	// abstained); Breach the obligation the judge named, if any
	// ("obligation[1]"), with its sentence (BreachText) and confidence.
	OnObjective      *float64
	Breach           string
	BreachText       string
	BreachConfidence float64
	// Model is the judge's model version; Basis what the judge says its
	// answers rest on.
	Model string
	Basis string
	// Error is set when the judge failed: the kind (invalid_answer,
	// rejected, invalid_request, timeout, error, not_waited_for).
	Error string

	// Evidence is what tripped a flag, in plain words (Assessment.Evidence).
	// Content: it may quote tool output ("exit status 1: TestExport: want
	// 3 rows, got 0").
	Evidence []string
}

// GateClosedEvent is one gate, reported when it closes.
type GateClosedEvent struct {
	Job Job
	// Gate is the gate's id ("code-2"), Phase the phase it held.
	Gate  string
	Phase string
	// Kind is what opened it: "flag" (a flagged verdict, or the judge
	// failing) or GateKindBudget.
	Kind string
	// OpenedAt and ClosedAt bound the wait (workflow time); Wait is
	// ClosedAt - OpenedAt.
	OpenedAt time.Time
	ClosedAt time.Time
	Wait     time.Duration
	// Outcome is Gate.Outcome: resumed, redone, aborted, expired or
	// cancelled; Action the action taken (continue, redo, abort; empty
	// when cancelled).
	Outcome string
	Action  Action
	// Reviewer is who resumed it, as the resume request gave it (empty
	// when its deadline or a cancellation closed it).
	Reviewer string
	// Needed is the judgement of the pause (Gate.Needed), NeededBy where
	// it came from.
	Needed   *bool
	NeededBy NeededBy
	// Content: Reason is the rule that opened it (for a failing judge it
	// quotes the judge's last error), Evidence what tripped the flag (it
	// may quote tool output) and Note the reviewer's own words.
	Reason   string
	Evidence []string
	Note     string
}

// BudgetStopEvent is a job stopped at a gate by its budget (manage mode).
type BudgetStopEvent struct {
	Job Job
	// Gate is the gate the stop opened, Phase the phase after which it
	// stopped, At when (workflow time).
	Gate  string
	Phase string
	At    time.Time
	// Reason says which bound the job reached, in numbers ("budget: the
	// job spent 2100 tokens of its budget of 2000 tokens (105%)").
	Reason string
}

// GateKindFlag is GateClosedEvent.Kind of a gate a flag (or a failing
// judge) opened.
const GateKindFlag = "flag"

// telemetry is the worker's Telemetry when the run may report to it now:
// nil when it has none or the workflow is replaying.
func (r *run) telemetry(ctx workflow.Context) Telemetry {
	if r.tel == nil || workflow.IsReplaying(ctx) {
		return nil
	}
	return r.tel
}

// report calls the Telemetry, recovering a panic: telemetry never fails a
// workflow task.
func (r *run) report(what string, call func()) {
	defer func() {
		if p := recover(); p != nil {
			r.logger.Warn("overseer: telemetry panicked; the event is dropped", "event", what, "panic", fmt.Sprint(p))
		}
	}()
	call()
}

func (r *run) job(ctx workflow.Context) Job {
	info := workflow.GetInfo(ctx)
	return Job{WorkflowType: r.wfType, WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID,
		Namespace: info.Namespace, TaskQueue: info.TaskQueueName}
}

// reportAssessment reports rec, recorded with err (nil when the judge
// answered) under policy.
func (r *run) reportAssessment(ctx workflow.Context, rec Assessment, err error, policy Policy) {
	t := r.telemetry(ctx)
	if t == nil {
		return
	}
	ev := AssessedEvent{Job: r.job(ctx), Seq: rec.Seq, Phase: rec.Phase, At: rec.At, Mode: r.cfg.Mode,
		Name: EvaluationOnObjective, Model: rec.Model, Evidence: rec.Evidence}
	if err != nil || rec.Verdict == nil || rec.Answers == nil {
		ev.Error = judgeErrorKind(err)
		if ev.Error == "" {
			ev.Error = "not_waited_for"
		}
		r.report("assessed", func() { t.Assessed(ctx, ev) })
		return
	}
	a, v := *rec.Answers, *rec.Verdict
	ev.Label, ev.Flagged, ev.Reason, ev.Basis = string(v.Band), v.Flagged, v.Reason, a.Basis
	if v.Band == BandUnknown {
		ev.Label = LabelNotAssessed
	}
	if !a.OnObjectiveUnknown {
		ev.OnObjective, ev.Score = ptrTo(a.OnObjective), ptrTo(a.OnObjective)
	}
	if a.Breach != BreachNone {
		ev.Breach, ev.BreachText, ev.BreachConfidence = a.Breach, a.BreachText, a.BreachConfidence
	}
	byP := !a.OnObjectiveUnknown && a.OnObjective <= policy.PauseAtOrBelow
	if v.Flagged && !byP && a.Breach != BreachNone {
		ev.Name, ev.Score = a.Breach, ptrTo(a.BreachConfidence)
	}
	r.report("assessed", func() { t.Assessed(ctx, ev) })
}

// reportGate reports gate g, which has just closed at closedAt.
func (r *run) reportGate(ctx workflow.Context, g Gate, closedAt time.Time) {
	t := r.telemetry(ctx)
	if t == nil {
		return
	}
	ev := GateClosedEvent{Job: r.job(ctx), Gate: g.ID, Phase: g.Phase, Kind: GateKindFlag, OpenedAt: g.PausedAt, ClosedAt: closedAt,
		Wait: closedAt.Sub(g.PausedAt), Outcome: g.Outcome(), Action: g.Action, Reviewer: g.By, Needed: g.Needed, NeededBy: g.NeededBy,
		Reason: g.Reason, Evidence: g.Evidence, Note: g.Note}
	if g.Kind != "" {
		ev.Kind = g.Kind
	}
	if g.Cancelled {
		ev.Action = ""
	}
	r.report("gate_closed", func() { t.GateClosed(ctx, ev) })
}

// reportBudgetStop reports gate g, which the job's budget just opened.
func (r *run) reportBudgetStop(ctx workflow.Context, g Gate) {
	t := r.telemetry(ctx)
	if t == nil {
		return
	}
	ev := BudgetStopEvent{Job: r.job(ctx), Gate: g.ID, Phase: g.Phase, At: g.PausedAt, Reason: g.Reason}
	r.report("budget_stopped", func() { t.BudgetStopped(ctx, ev) })
}
