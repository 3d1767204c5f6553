package overseer

import (
	"errors"

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
	// (observe, manage), band (on_track, needs_a_look, off_track, none when
	// the judge failed) and outcome (ok, flagged, error).
	MetricAssessments = "overseer_assessments"
	// MetricJudgeLatency times the judge's answers (successful ones).
	MetricJudgeLatency = "overseer_judge_latency"
	// MetricJudgeTokens counts the tokens the judge reported, tagged kind
	// (input, output).
	MetricJudgeTokens = "overseer_judge_tokens"
	// MetricJudgeErrors counts failed assessments (after retries), tagged
	// kind (invalid_answer, timeout, error).
	MetricJudgeErrors = "overseer_judge_errors"
	// MetricPauses counts gates opened, tagged cause (verdict,
	// judge_failures).
	MetricPauses = "overseer_pauses"
	// MetricResumes counts gates closed by a human, tagged action
	// (continue, abort).
	MetricResumes = "overseer_resumes"
	// MetricGateWait times how long a job waited at a gate, tagged action.
	MetricGateWait = "overseer_gate_wait"
)

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
)

// metricAssessment records one assessment: its outcome, and the judge's
// latency and tokens or its error.
func metricAssessment(ctx workflow.Context, mode Mode, a Assessment, err error) {
	m := workflow.GetMetricsHandler(ctx)
	band, outcome := "none", OutcomeError
	if a.Verdict != nil {
		band, outcome = string(a.Verdict.Band), OutcomeOK
		if a.Verdict.Flagged {
			outcome = OutcomeFlagged
		}
	}
	m.WithTags(map[string]string{TagMode: string(mode), TagBand: band, TagOutcome: outcome}).Counter(MetricAssessments).Inc(1)
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
	switch {
	case errors.As(err, &app) && app.Type() == InvalidAnswerErrorType:
		return "invalid_answer"
	case errors.As(err, &timeout):
		return "timeout"
	}
	return "error"
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
