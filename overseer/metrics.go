package overseer

import (
	"errors"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Metric names. The overseer emits them from workflow code through
// workflow.GetMetricsHandler, so they go wherever the client's
// MetricsHandler sends the SDK's own metrics, carry its tags (namespace,
// task_queue, workflow_type) and are not emitted again when a workflow
// replays. Counters are exported to Prometheus with a _total suffix and
// timers as histograms in seconds (_seconds).
const (
	// MetricAssessments counts phase-boundary assessments, tagged mode
	// (observe, manage), outcome (ok, flagged, error) and, when the judge
	// answered, band (on_track, needs_a_look, off_track).
	MetricAssessments = "overseer_assessments"
	// MetricJudgeLatency times the judge's answers (successful ones).
	MetricJudgeLatency = "overseer_judge_latency"
	// MetricJudgeTokens counts the tokens the judge reported, tagged kind
	// (input, output).
	MetricJudgeTokens = "overseer_judge_tokens"
	// MetricJudgeErrors counts failed assessments (after retries), tagged
	// kind (invalid_answer, rejected, invalid_request, timeout, error).
	MetricJudgeErrors = "overseer_judge_errors"
	// MetricPauses counts gates opened, tagged cause (verdict,
	// judge_failures).
	MetricPauses = "overseer_pauses"
	// MetricResumes counts gates closed by a human, tagged action
	// (continue, abort).
	MetricResumes = "overseer_resumes"
	// MetricGateWait times how long a job waited at a gate, tagged action.
	MetricGateWait = "overseer_gate_wait"
	// MetricOpenGates is a gauge of the running jobs paused at a gate. Workflow
	// code cannot keep a gauge across workers, so the worker package sets it
	// from visibility (OverseerPaused = true), by workflow type.
	MetricOpenGates = "overseer_open_gates"
)

// MetricHelp returns the one-line description of an overseer metric (the
// Prometheus HELP text), or "" for any other name.
func MetricHelp(name string) string { return metricHelp[name] }

var metricHelp = map[string]string{
	MetricAssessments:  "Phase-boundary assessments by mode, band (when the judge answered) and outcome (ok, flagged, error).",
	MetricJudgeLatency: "Time the judge took to answer an assessment.",
	MetricJudgeTokens:  "Tokens the judge reported, by kind (input, output).",
	MetricJudgeErrors:  "Assessments that failed after retries, by kind (invalid_answer, rejected, invalid_request, timeout, error).",
	MetricPauses:       "Gates opened in manage mode, by cause (verdict, judge_failures).",
	MetricResumes:      "Gates closed by a human, by action (continue, abort).",
	MetricGateWait:     "Time a job waited at a gate before a human resumed it, by action.",
	MetricOpenGates:    "Running jobs paused at a gate now, by workflow type (from the OverseerPaused search attribute).",
}

// Metric tag names and values.
const (
	TagMode    = "mode"
	TagBand    = "band"
	TagOutcome = "outcome"
	TagKind    = "kind"
	TagCause   = "cause"
	TagAction  = "action"

	OutcomeOK      = "ok"
	OutcomeFlagged = "flagged"
	OutcomeError   = "error"

	CauseVerdict       = "verdict"
	CauseJudgeFailures = "judge_failures"

	// Kinds of MetricJudgeErrors.
	ErrorKindInvalidAnswer  = "invalid_answer"
	ErrorKindRejected       = "rejected"
	ErrorKindInvalidRequest = "invalid_request"
	ErrorKindTimeout        = "timeout"
	ErrorKindOther          = "error"
)

// ZeroMetrics emits every overseer counter at zero for each of its tag
// values, through h (tag it with the namespace, task queue and workflow
// type the workflow code's handler will carry). A series that exists from
// the start makes rate() and absent-series alerts work before the first
// event. Timers (histograms) have no zero value and appear with their first
// observation.
func ZeroMetrics(h client.MetricsHandler) {
	zero := func(name string, tags map[string]string) { h.WithTags(tags).Counter(name).Inc(0) }
	for _, mode := range []Mode{ModeObserve, ModeManage} {
		for _, band := range []Band{BandOnTrack, BandNeedsALook, BandOffTrack} {
			for _, outcome := range []string{OutcomeOK, OutcomeFlagged} {
				zero(MetricAssessments, map[string]string{TagMode: string(mode), TagBand: string(band), TagOutcome: outcome})
			}
		}
		zero(MetricAssessments, map[string]string{TagMode: string(mode), TagOutcome: OutcomeError})
	}
	for _, kind := range []string{ErrorKindInvalidAnswer, ErrorKindRejected, ErrorKindInvalidRequest, ErrorKindTimeout, ErrorKindOther} {
		zero(MetricJudgeErrors, map[string]string{TagKind: kind})
	}
	for _, kind := range []string{"input", "output"} {
		zero(MetricJudgeTokens, map[string]string{TagKind: kind})
	}
	for _, cause := range []string{CauseVerdict, CauseJudgeFailures} {
		zero(MetricPauses, map[string]string{TagCause: cause})
	}
	for _, action := range []Action{ActionContinue, ActionAbort} {
		zero(MetricResumes, map[string]string{TagAction: string(action)})
	}
}

// metricAssessment records one assessment: its outcome, and the judge's
// latency and tokens or its error.
func metricAssessment(ctx workflow.Context, mode Mode, a Assessment, err error) {
	m := workflow.GetMetricsHandler(ctx)
	// A failed assessment has no band: its series carries none rather
	// than a made-up value.
	tags := map[string]string{TagMode: string(mode), TagOutcome: OutcomeError}
	if a.Verdict != nil {
		tags[TagBand], tags[TagOutcome] = string(a.Verdict.Band), OutcomeOK
		if a.Verdict.Flagged {
			tags[TagOutcome] = OutcomeFlagged
		}
	}
	m.WithTags(tags).Counter(MetricAssessments).Inc(1)
	if err != nil {
		m.WithTags(map[string]string{TagKind: judgeErrorKind(err)}).Counter(MetricJudgeErrors).Inc(1)
		return
	}
	m.Timer(MetricJudgeLatency).Record(a.Latency)
	m.WithTags(map[string]string{TagKind: "input"}).Counter(MetricJudgeTokens).Inc(a.Usage.InputTokens)
	m.WithTags(map[string]string{TagKind: "output"}).Counter(MetricJudgeTokens).Inc(a.Usage.OutputTokens)
}

func judgeErrorKind(err error) string {
	var app *temporal.ApplicationError
	var timeout *temporal.TimeoutError
	if errors.As(err, &app) {
		switch app.Type() {
		case InvalidAnswerErrorType:
			return ErrorKindInvalidAnswer
		case RejectedErrorType:
			return ErrorKindRejected
		case InvalidRequestErrorType:
			return ErrorKindInvalidRequest
		}
	}
	if errors.As(err, &timeout) {
		return ErrorKindTimeout
	}
	return ErrorKindOther
}

// metricPause records a gate opening.
func metricPause(ctx workflow.Context, judgeFailures bool) {
	cause := CauseVerdict
	if judgeFailures {
		cause = CauseJudgeFailures
	}
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{TagCause: cause}).Counter(MetricPauses).Inc(1)
}

// metricResume records a gate closing and how long it was open.
func metricResume(ctx workflow.Context, g Gate) {
	m := workflow.GetMetricsHandler(ctx).WithTags(map[string]string{TagAction: string(g.Action)})
	m.Counter(MetricResumes).Inc(1)
	if g.ResumedAt != nil {
		m.Timer(MetricGateWait).Record(g.ResumedAt.Sub(g.PausedAt))
	}
}
