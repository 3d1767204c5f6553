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
	// metricAssessments counts phase-boundary assessments, tagged mode
	// (observe, manage), outcome (ok, flagged, error) and, when the judge
	// answered, band (on_track, needs_a_look, off_track).
	metricAssessments = "overseer_assessments"
	// metricJudgeLatency times the judge's answers (successful ones).
	metricJudgeLatency = "overseer_judge_latency"
	// metricJudgeTokens counts the tokens the judge reported, tagged kind
	// (input, output).
	metricJudgeTokens = "overseer_judge_tokens"
	// metricJudgeErrors counts failed assessments (after retries), tagged
	// kind (invalid_answer, rejected, invalid_request, timeout, error). A
	// boundary a run ends without waiting for, because the judge's circuit
	// is open (JudgeFailingErrorType), is not one: the failures that opened
	// the circuit were counted already.
	metricJudgeErrors = "overseer_judge_errors"
	// metricPauses counts gates opened, tagged cause (verdict,
	// judge_failures, budget).
	metricPauses = "overseer_pauses"
	// metricResumes counts gates closed by a human, tagged action
	// (continue, redo, abort).
	metricResumes = "overseer_resumes"
	// metricResumesRefused counts resume attempts the job refused, tagged
	// reason (the refusal's error type: OverseerNotPaused,
	// OverseerWrongGate, OverseerInvalidResume, OverseerNotAuthorized,
	// OverseerRedoRefused) and via (update: refused by the update's
	// validator, which writes no history, or its handler; signal: dropped,
	// also counted in Counters.IgnoredResumes).
	metricResumesRefused = "overseer_resumes_refused"
	// MetricGateWait times how long a job waited at a gate, tagged action
	// (continue, redo, abort, or expired for a gate closed by its deadline).
	MetricGateWait = "overseer_gate_wait"
	// metricEscalations counts gates escalated at their deadline.
	metricEscalations = "overseer_gate_escalations"
	// metricExpired counts gates closed by their deadline, tagged action
	// (continue, abort).
	metricExpired = "overseer_gates_expired"
	// metricNotifyFailed counts gate notifications whose delivery failed,
	// each once, at its first failed attempt (a retry may still deliver
	// it), tagged kind (opened, escalated, resumed, redone, aborted, expired).
	metricNotifyFailed = "overseer_notifications_failed"
	// MetricJobTokens and MetricJobCost count what jobs' phases reported
	// spending (tokens; cost in millionths of a dollar, a counter being
	// whole), added when a run ends, tagged outcome (completed, failed,
	// aborted: at a gate, continued_as_new; a run's own spend only, not
	// what it carried from its predecessor): failed jobs' share of the
	// spend is rate(…{outcome="failed"}) over all.
	MetricJobTokens = "overseer_job_tokens"
	MetricJobCost   = "overseer_job_cost_microusd"
	// MetricBudgetsReached counts runs reaching a bound of their budget
	// (again after a reviewer raised it), tagged mode (in manage mode each opens a gate,
	// also counted in overseer_pauses{cause="budget"}).
	MetricBudgetsReached = "overseer_budgets_reached"
	// MetricOpenGates is a gauge of the running jobs paused at a gate. Workflow
	// code cannot keep a gauge across workers, so the worker package sets it
	// from visibility (OverseerPaused = true), by workflow type.
	MetricOpenGates = "overseer_open_gates"

	// The learn loop's (package learn) series, emitted once per round from
	// the learn workflow's code and tagged MetricTagJobType: the workflow
	// type learned from (workflow_type is the learn workflow's own).
	//
	// MetricLearnPromotions counts rounds that promoted a candidate,
	// MetricLearnRefusals rounds that refused one.
	MetricLearnPromotions = "overseer_learn_promotions"
	MetricLearnRefusals   = "overseer_learn_refusals"
	// MetricLearnLabelledRuns is a gauge of the labelled runs the last
	// round found.
	MetricLearnLabelledRuns = "overseer_learn_labelled_runs"
	// MetricLearnFalsePauseRate and MetricLearnCatchRate are gauges of the
	// rates the last round measured on the newest closed jobs: the share of
	// succeeded jobs with a false pause (a pause judged not needed), and of
	// failed jobs that paused at a gate.
	MetricLearnFalsePauseRate = "overseer_learn_false_pause_rate"
	MetricLearnCatchRate      = "overseer_learn_catch_rate"
	// MetricLearnPromisedFalsePause is a gauge of the false-pause rate the
	// current model's policy promises at most: alert when the measured
	// rate is above it.
	MetricLearnPromisedFalsePause = "overseer_learn_promised_false_pause"

	// MetricTagJobType tags the learn loop's series with the workflow type
	// learned from.
	MetricTagJobType = "job_type"
)

// MetricHelp returns the one-line description of an overseer metric (the
// Prometheus HELP text), or "" for any other name.
func MetricHelp(name string) string { return metricHelp[name] }

var metricHelp = map[string]string{
	metricAssessments:    "Phase-boundary assessments by mode, band (when the judge answered) and outcome (ok, flagged, error).",
	metricJudgeLatency:   "Time the judge took to answer an assessment.",
	metricJudgeTokens:    "Tokens the judge reported, by kind (input, output).",
	metricJudgeErrors:    "Assessments that failed after retries, by kind (invalid_answer, rejected, invalid_request, timeout, error).",
	metricPauses:         "Gates opened in manage mode, by cause (verdict, judge_failures, budget).",
	metricResumes:        "Gates closed by a human, by action (continue, redo, abort).",
	metricResumesRefused: "Resume attempts the job refused, by reason (the refusal's error type) and via (update, signal).",
	MetricGateWait:       "Time a job waited at a gate before a human resumed it, by action (expired: closed by its deadline).",
	metricEscalations:    "Gates escalated at their deadline.",
	metricExpired:        "Gates closed by their deadline, by the action taken (continue, abort).",
	metricNotifyFailed:   "Gate notifications whose delivery failed, counted at their first failed attempt (a retry may still deliver them), by kind (opened, escalated, resumed, redone, aborted, expired).",
	MetricJobTokens:      "Tokens jobs' phases reported, added when a run ends, by outcome (completed, failed, aborted, continued_as_new).",
	MetricJobCost:        "Cost jobs' phases reported, in millionths of a US dollar, added when a run ends, by outcome (completed, failed, aborted, continued_as_new).",
	MetricBudgetsReached: "Runs reaching a bound of their budget (again after it was raised), by mode.",
	MetricOpenGates:      "Running jobs paused at a gate now, by workflow type (from the OverseerPaused search attribute).",

	MetricLearnPromotions:         "Learn rounds that promoted a candidate model, by job_type.",
	MetricLearnRefusals:           "Learn rounds that refused a candidate model, by job_type.",
	MetricLearnLabelledRuns:       "Labelled runs the last learn round found, by job_type.",
	MetricLearnFalsePauseRate:     "Share of the newest closed succeeded jobs with a false pause (a pause judged not needed), measured by the last learn round, by job_type.",
	MetricLearnCatchRate:          "Share of the newest closed failed jobs that paused at a gate, measured by the last learn round, by job_type.",
	MetricLearnPromisedFalsePause: "False-pause rate the current model's policy promises at most, by job_type (absent when it makes no promise).",
}

// Metric tag names and values.
const (
	tagMode    = "mode"
	tagBand    = "band"
	tagOutcome = "outcome"
	tagKind    = "kind"
	tagCause   = "cause"
	tagAction  = "action"
	tagReason  = "reason"
	tagVia     = "via"

	// Ways a resume reaches a job, for metricResumesRefused.
	viaUpdate = "update"
	viaSignal = "signal"

	outcomeOK      = "ok"
	outcomeFlagged = "flagged"
	outcomeError   = "error"

	causeVerdict       = "verdict"
	causeJudgeFailures = "judge_failures"
	causeBudget        = GateKindBudget

	// Outcomes of a run, for MetricJobTokens and MetricJobCost.
	runCompleted      = "completed"
	runFailed         = "failed"
	runAborted        = "aborted"
	runContinuedAsNew = "continued_as_new"

	// Kinds of metricJudgeErrors.
	errorKindInvalidAnswer  = "invalid_answer"
	errorKindRejected       = "rejected"
	errorKindInvalidRequest = "invalid_request"
	errorKindTimeout        = "timeout"
	errorKindOther          = "error"
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
			for _, outcome := range []string{outcomeOK, outcomeFlagged} {
				zero(metricAssessments, map[string]string{tagMode: string(mode), tagBand: string(band), tagOutcome: outcome})
			}
		}
		zero(metricAssessments, map[string]string{tagMode: string(mode), tagOutcome: outcomeError})
	}
	for _, kind := range []string{errorKindInvalidAnswer, errorKindRejected, errorKindInvalidRequest, errorKindTimeout, errorKindOther} {
		zero(metricJudgeErrors, map[string]string{tagKind: kind})
	}
	for _, kind := range []string{"input", "output"} {
		zero(metricJudgeTokens, map[string]string{tagKind: kind})
	}
	for _, cause := range []string{causeVerdict, causeJudgeFailures, causeBudget} {
		zero(metricPauses, map[string]string{tagCause: cause})
	}
	for _, outcome := range []string{runCompleted, runFailed, runAborted, runContinuedAsNew} {
		zero(MetricJobTokens, map[string]string{tagOutcome: outcome})
		zero(MetricJobCost, map[string]string{tagOutcome: outcome})
	}
	for _, mode := range []Mode{ModeObserve, ModeManage} {
		zero(MetricBudgetsReached, map[string]string{tagMode: string(mode)})
	}
	for _, action := range []Action{ActionContinue, ActionAbort} {
		zero(metricResumes, map[string]string{tagAction: string(action)})
		zero(metricExpired, map[string]string{tagAction: string(action)})
	}
	zero(metricResumes, map[string]string{tagAction: string(ActionRedo)})
	zero(metricEscalations, nil)
	for _, via := range []string{viaUpdate, viaSignal} {
		for _, reason := range refusalReasons {
			zero(metricResumesRefused, map[string]string{tagReason: reason, tagVia: via})
		}
	}
	for _, kind := range []GateEventKind{GateOpened, GateEscalated, GateResumed, GateRedone, GateAborted, GateExpired} {
		zero(metricNotifyFailed, map[string]string{tagKind: string(kind)})
	}
}

// assessmentMeters are a run's handles on the series it records at every
// boundary, made at its first assessment: tagging a handler anew at each
// boundary allocated a map and a handler each time. The SDK's handlers
// stay replay-aware once tagged, so the handles emit nothing on replay.
type assessmentMeters struct {
	m             client.MetricsHandler
	mode          string
	outcomes      map[assessmentSeries]client.MetricsCounter
	latency       client.MetricsTimer
	input, output client.MetricsCounter
}

// assessmentSeries is one series of metricAssessments.
type assessmentSeries struct{ band, outcome string }

func newAssessmentMeters(ctx workflow.Context, mode Mode) *assessmentMeters {
	m := workflow.GetMetricsHandler(ctx)
	return &assessmentMeters{
		m:        m,
		mode:     string(mode),
		outcomes: map[assessmentSeries]client.MetricsCounter{},
		latency:  m.Timer(metricJudgeLatency),
		input:    m.WithTags(map[string]string{tagKind: "input"}).Counter(metricJudgeTokens),
		output:   m.WithTags(map[string]string{tagKind: "output"}).Counter(metricJudgeTokens),
	}
}

// record records one assessment: its outcome, and the judge's latency and
// tokens or its error.
func (a *assessmentMeters) record(rec Assessment, err error) {
	// A failed assessment has no band: its series carries none rather
	// than a made-up value.
	series := assessmentSeries{outcome: outcomeError}
	if rec.Verdict != nil {
		series = assessmentSeries{band: string(rec.Verdict.Band), outcome: outcomeOK}
		if rec.Verdict.Flagged {
			series.outcome = outcomeFlagged
		}
	}
	a.assessments(series).Inc(1)
	if err != nil {
		if kind := judgeErrorKind(err); kind != "" {
			a.m.WithTags(map[string]string{tagKind: kind}).Counter(metricJudgeErrors).Inc(1)
		}
		return
	}
	a.latency.Record(rec.Latency)
	a.input.Inc(rec.Usage.InputTokens)
	a.output.Inc(rec.Usage.OutputTokens)
}

// assessments is the counter of one series of metricAssessments. A
// verdict's series carries its band, the abstained one's ("") included; a
// failed assessment's carries none.
func (a *assessmentMeters) assessments(series assessmentSeries) client.MetricsCounter {
	c, ok := a.outcomes[series]
	if !ok {
		tags := map[string]string{tagMode: a.mode, tagOutcome: series.outcome}
		if series.outcome != outcomeError {
			tags[tagBand] = series.band
		}
		c = a.m.WithTags(tags).Counter(metricAssessments)
		a.outcomes[series] = c
	}
	return c
}

// judgeErrorKind is the kind of metricJudgeErrors err counts as, or "" for
// a boundary not waited for because the judge's circuit is open, which is
// not one.
func judgeErrorKind(err error) string {
	var app *temporal.ApplicationError
	var timeout *temporal.TimeoutError
	if errors.As(err, &app) {
		switch app.Type() {
		case JudgeFailingErrorType:
			return ""
		case InvalidAnswerErrorType:
			return errorKindInvalidAnswer
		case RejectedErrorType:
			return errorKindRejected
		case InvalidRequestErrorType:
			return errorKindInvalidRequest
		}
	}
	if errors.As(err, &timeout) {
		return errorKindTimeout
	}
	return errorKindOther
}

// metricPause records a gate opening: g's, with judge failures in a row
// behind it or not.
func metricPause(ctx workflow.Context, g *Gate, judgeFailures bool) {
	cause := causeVerdict
	switch {
	case g.Kind == GateKindBudget:
		cause = causeBudget
	case judgeFailures:
		cause = causeJudgeFailures
	}
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{tagCause: cause}).Counter(metricPauses).Inc(1)
}

// metricResume records a gate closing and how long it was open.
func metricResume(ctx workflow.Context, g Gate) {
	m := workflow.GetMetricsHandler(ctx).WithTags(map[string]string{tagAction: string(g.Action)})
	m.Counter(metricResumes).Inc(1)
	if g.ResumedAt != nil {
		m.Timer(MetricGateWait).Record(g.ResumedAt.Sub(g.PausedAt))
	}
}

// refusalReasons are the reasons of metricResumesRefused: the error types
// of a resume's refusals.
var refusalReasons = []string{NotPausedErrorType, WrongGateErrorType, InvalidResumeErrorType, NotAuthorizedErrorType, RedoRefusedErrorType}

// metricRefusedResume records a resume attempt the job refused, by the
// refusal's error type ("error" for one without a type).
func metricRefusedResume(ctx workflow.Context, via string, err error) {
	reason := ErrorType(err)
	if reason == "" {
		reason = "error"
	}
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{tagReason: reason, tagVia: via}).Counter(metricResumesRefused).Inc(1)
}

// actionExpired is the gate-wait tag of a gate its deadline closed.
const actionExpired = "expired"

// metricExpiry records a gate its deadline closed and how long it was open.
func metricExpiry(ctx workflow.Context, g Gate) {
	m := workflow.GetMetricsHandler(ctx)
	m.WithTags(map[string]string{tagAction: string(g.Action)}).Counter(metricExpired).Inc(1)
	if g.ResumedAt != nil {
		m.WithTags(map[string]string{tagAction: actionExpired}).Timer(MetricGateWait).Record(g.ResumedAt.Sub(g.PausedAt))
	}
}

// metricEscalation records a gate escalated at its deadline.
func metricEscalation(ctx workflow.Context) {
	workflow.GetMetricsHandler(ctx).Counter(metricEscalations).Inc(1)
}

// metricNotifyFailure records a notification that failed for good.
func metricNotifyFailure(ctx workflow.Context, kind GateEventKind) {
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{tagKind: string(kind)}).Counter(metricNotifyFailed).Inc(1)
}

// metricSpend adds what the run's phases spent (spent, less what it
// carried from its predecessor) to the job series, by the run's outcome.
func metricSpend(ctx workflow.Context, spent, carried Budget, aborted bool, wfErr error) {
	outcome := runCompleted
	var can *workflow.ContinueAsNewError
	switch {
	case aborted:
		outcome = runAborted
	case errors.As(wfErr, &can):
		outcome = runContinuedAsNew
	case wfErr != nil:
		outcome = runFailed
	}
	m := workflow.GetMetricsHandler(ctx).WithTags(map[string]string{tagOutcome: outcome})
	m.Counter(MetricJobTokens).Inc(max(0, spent.Tokens-carried.Tokens))
	m.Counter(MetricJobCost).Inc(int64(max(0, spent.CostUSD-carried.CostUSD) * 1e6))
}

// metricBudgetReached records that the run reached a bound of its budget.
func metricBudgetReached(ctx workflow.Context, mode Mode) {
	workflow.GetMetricsHandler(ctx).WithTags(map[string]string{tagMode: string(mode)}).Counter(MetricBudgetsReached).Inc(1)
}
