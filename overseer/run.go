package overseer

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

type runKey struct{}

// run is the overseer's state for one workflow run. It is only touched by
// workflow coroutines, which never run in parallel.
type run struct {
	// startedBy is who started the job, read from its memo when a gate
	// opens, for the four-eyes rule.
	startedBy string
	wfType    string
	cfg       runConfig
	logger    log.Logger
	// judge is the worker's judge, asked in workflow code when the run is
	// pinned to PlacementWorkflow.
	judge jev.Judge
	// models finds the model of the run's pinned version (cfg.ModelVersion).
	models ModelSource
	// circuit is the judge's on this worker (judgeCircuit).
	circuit *judgeCircuit
	// tel is the worker's Options.Telemetry (not pinned: it sends nothing
	// to Temporal).
	tel Telemetry
	// redact is the worker's Options.ContentRedactor (nil: the shipped
	// one), for the run's content window (cfg.ContentWindow).
	redact trajectory.Redactor

	st   Status
	traj Trajectory
	// note is the process note waiting for the next phase.
	note *Note
	// seq numbers assessments; applied is the highest one reflected in the
	// band (observe-mode assessments may finish out of order).
	seq, applied int
	inFlight     int
	// pending are the assessments in flight in an activity, by seq;
	// failedInARow counts this run's latest assessments that failed, in the
	// order they finished; abandoned is set when the run ended without
	// waiting for the pending ones (see awaitAssessments).
	pending      []Assessment
	background   []backgroundPending
	failedInARow int
	abandoned    bool
	// open are the open gates, oldest first (phases flagged in parallel
	// queue their gates); aborted is the gate a human aborted the job at.
	open    []*Gate
	aborted *Gate
	// userDetails are the workflow's own current details, put back when
	// the last gate closes; detailsSet says the gates replaced them.
	userDetails string
	detailsSet  bool
	// assessmentMeters are made at the first assessment (meters).
	assessmentMeters *assessmentMeters
	// sa is what was last upserted, to skip redundant upserts.
	sa *searchAttributes
	// loop is set for runs of runStructureV2: the run's own coroutine
	// oversees the phases, tasks (in the order they were scheduled), instead
	// of a coroutine per phase.
	loop  bool
	tasks []*boundaryTask
	// redoing is the rerun a redo is scheduling, until the outbound
	// interceptor takes it (redo.go).
	redoing *redoing
	// redoDropped: replaying a history from before redo, the run dropped a
	// redo signal (redoChangeID settled on DefaultVersion), so it can never
	// redo, and nothing offers it.
	redoDropped bool
	// unpinnedRedos is the bound of a run pinned before MaxRedos existed,
	// once unpinnedSettled (settleUnpinnedRedos); -1 until then.
	unpinnedRedos   int
	unpinnedSettled bool
	// budgetRules is budgetRulesChangeID's version, once read
	// (settleBudgetRules): nil until then.
	budgetRules *workflow.Version
	// calls are the activities of a declared phase not yet ended by a
	// Boundary, and callsSince when the phase began (ShapeDeclared).
	calls      []declaredCall
	callsSince time.Time
	// tracker tells an agent loop's calls apart (PhaseRun.SameCall,
	// SameResult, NewCall); in memory only.
	tracker trajectory.CallTracker
	// carriedPaused: the run continued from one paused at a gate.
	carriedPaused bool
	// carriedSpend is what the runs before this one spent (carried across
	// continue-as-new), jobStarted when the first of them started (zero:
	// this run is the first, or its predecessor did not say).
	carriedSpend Budget
	jobStarted   time.Time
	// published is the summary last written to the memo (publish).
	published *Summary
	// notifyVersion is notifyChangeID's version, read at the first
	// notification; notices are the notifications not yet delivered, in
	// the order they were sent (version 1 only).
	notifyVersion *workflow.Version
	// notifyKey is notifyKeyChangeID's version, read at the first
	// notification built (notifyKeyVersion).
	notifyKey *workflow.Version
	notices   []*notice
	// ended is set when the run's end begins: no phase follows.
	ended bool
	// structure is versionChangeID's version for the run (runStructureV2,
	// runStructureV3, …).
	structure workflow.Version
	// summaryAt is when the summary was last written (publishSummary).
	summaryAt time.Time
	// summaryMocked: the test environment's UpsertMemo mock refused the
	// summary (upsertSummary); the run writes no more.
	summaryMocked bool
	// opening counts the gates a verdict asked for whose coroutine has not
	// yet opened them (afterVerdict).
	opening int
	// runID is the run's id, which its summary names (Summary.RunID).
	runID string
	// runCtx is the context the run's workflow code started with: only
	// the run's own cancellation ends it (verdictCtx).
	runCtx workflow.Context
}

// verdictCtx is the context a phase's judge and gate wait in. From
// runStructureV4 it is the run's own, so that a workflow that cancels the
// phase's context once it has the phase's result (a per-phase
// workflow.WithCancel with a deferred cancel, a selector race that cancels
// the loser, a deferred workflow.CompleteSession) neither loses the
// verdict nor walks past the gate; a run that is itself cancelled still
// ends its gates. Earlier structures used the phase's own context, and
// replay them so.
func (r *run) verdictCtx(phaseCtx workflow.Context) workflow.Context {
	if r.structure >= runStructureV4 && r.runCtx != nil {
		return r.runCtx
	}
	return phaseCtx
}

type searchAttributes struct {
	status      string
	onObjective float64
	paused      bool
	gateSince   time.Time
	budget      string
}

// oldestOpenGate is when the oldest open gate opened; zero when none is.
func (r *run) oldestOpenGate() time.Time {
	var t time.Time
	for _, g := range r.open {
		if t.IsZero() || g.PausedAt.Before(t) {
			t = g.PausedAt
		}
	}
	return t
}

func newRun(ctx workflow.Context, wfType string, cfg runConfig, judge jev.Judge) *run {
	st := Status{Mode: cfg.Mode, Assessments: []Assessment{}, Approval: cfg.Approval}
	return &run{wfType: wfType, cfg: cfg, logger: workflow.GetLogger(ctx), judge: judge, st: st, unpinnedRedos: -1}
}

func (r *run) status() Status {
	s := r.st
	s.Assessments = slices.Clone(s.Assessments)
	s.Gates = slices.Clone(s.Gates)
	s.InPhase = slices.Clone(s.InPhase)
	s.Digest = r.traj.Digest()
	s.Objective = r.traj.Objective
	s.Shape = loopShape(ShapeOf(r.traj))
	s.MaxRedos, s.RedoPhases = r.redoBounds()
	if r.note != nil && s.Aborted() == nil && !r.ended { // an aborted or closed job has no next phase
		s.PendingNote = r.note.String()
	}
	return s
}

// redoBounds are the status's MaxRedos (-1: the job cannot redo) and
// RedoPhases (nil: every phase).
func (r *run) redoBounds() (int, []string) {
	max := r.maxRedos()
	if !r.loop || r.redoDropped || max < 0 {
		return -1, nil
	}
	if max == 0 || len(r.cfg.RedoSafe) == 0 || slices.Contains(r.cfg.RedoSafe, r.wfType) {
		return max, nil
	}
	phases := make([]string, 0, len(r.cfg.RedoSafe))
	for _, e := range r.cfg.RedoSafe {
		phases = append(phases, phaseName(e))
	}
	return max, phases
}

func (r *run) takeNote() *Note {
	if r.cfg.Mode != ModeManage {
		return nil
	}
	n := r.note
	r.note = nil
	return n
}

// boundary runs after a phase activity ends (runs of the first structure,
// on a coroutine of its own): it records the phase, assesses it and, in
// manage mode, holds the phase's result until the verdict (and any gate)
// lets the workflow go on. settle hands the phase's own result, untouched,
// to the workflow; a finished phase is never re-run.
func (r *run) boundary(ctx workflow.Context, phase string, started time.Time, f workflow.Future, settle func()) {
	r.recordBoundary(ctx, phase, started, f, nil, nil)
	if ctx.Err() != nil {
		settle() // cancelled: no assessment, no gate
		return
	}
	if r.cfg.Mode == ModeObserve {
		settle()
		r.assess(ctx, phase)
		return
	}
	r.assess(ctx, phase)
	if r.aborted == nil {
		settle()
	}
}

// recordBoundary adds the phase f ran to the trajectory; it waits for f.
// args are the phase's arguments, nil where unknown: in an agent loop,
// PhaseRun.SameCall compares them with the phase's previous call. The
// phase is recorded through the code `overseer eval` replays recorded runs
// with (ActivityCall).
func (r *run) recordBoundary(ctx workflow.Context, phase string, started time.Time, f workflow.Future, args []any, input []*commonpb.Payload) {
	var raw converter.RawValue
	var phaseErr error
	if r.invisible() {
		var ps *commonpb.Payloads
		ps, phaseErr = phaseOutcome(ctx, f)
		if ps != nil {
			raw = converter.NewRawValue(ps.Payloads[0])
		}
	} else {
		phaseErr = f.Get(ctx, &raw)
	}
	call := ActivityCall{Phase: phase, Duration: workflow.Now(ctx).Sub(started), Err: phaseErr, Args: args, Input: input}
	window := r.cfg.ContentWindow
	var readable *commonpb.Payload
	if phaseErr == nil {
		call.Result = raw.Payload()
		if window.On() {
			// Decoded once: the report is read from the readable result.
			readable = readableResult(ctx, call.Result, f)
			call.Report = reportOf(ctx, converter.NewRawValue(readable), f)
		} else {
			call.Report = reportOf(ctx, raw, f)
		}
	}
	// The tracker compares results as the worker encoded them (Result).
	r.traj.RecordPhase(r.tracker.PhaseRun(r.traj, call), call.Report)
	if window.On() {
		call.Result = readable
		r.traj.RecordContent(window, call, trajectory.InputText(call, nil), r.redact)
	}
	r.st.Phase = r.traj.Phase
	r.st.Counters.Phases++
}

// declaredCall is an activity of a declared phase (ShapeDeclared).
type declaredCall struct {
	name string
	f    workflow.Future
}

// declaredBoundary records the declared phase that the completed calls
// since the last boundary make (Boundary), and assesses it, pausing here
// when its verdict is flagged in manage mode.
func (r *run) declaredBoundary(ctx workflow.Context, phase string) {
	now := workflow.Now(ctx)
	if r.callsSince.IsZero() {
		r.callsSince = workflow.GetInfo(ctx).WorkflowStartTime
	}
	var report PhaseReport
	ran, failed := 0, 0
	kept := r.calls[:0]
	for _, c := range r.calls {
		if !c.f.IsReady() {
			kept = append(kept, c) // still running: it belongs to the next phase
			continue
		}
		ran++
		if c.f.Get(ctx, nil) != nil {
			failed++
			report.FailedToolCategories = append(report.FailedToolCategories, c.name)
		}
	}
	clear(r.calls[len(kept):])
	r.calls = kept
	r.traj.RecordPhase(PhaseRun{Phase: phase, Duration: now.Sub(r.callsSince), Failed: ran > 0 && failed == ran}, &report)
	r.st.Phase = r.traj.Phase
	r.st.Counters.Phases++
	r.assessDeclared(ctx, phase)
	// The next phase begins once this boundary is done: its time waiting
	// for the judge and at a gate is no phase's time (Trajectory.PhaseTime).
	r.callsSince = workflow.Now(ctx)
}

// assessDeclared assesses a declared phase at its Boundary. From
// runStructureV4 the judge is asked in the run's own context (verdictCtx),
// so that its answer outlives what the workflow does to its context once
// Boundary returns; observe mode does not wait for a judge in an activity
// (the run's loop records its answer, as for any phase); and the gate
// offers no redo, since Boundary cannot run the calls the workflow made
// itself. The workflow's coroutine waits (for the judge in manage mode, at
// the gate) in its own context, the only one it may block in. Earlier
// structures replay as they ran (assess).
func (r *run) assessDeclared(ctx workflow.Context, phase string) {
	if r.structure < runStructureV4 {
		r.assess(ctx, phase)
		return
	}
	call, why := r.startAssess(r.verdictCtx(ctx), phase)
	if call != nil && r.cfg.Mode == ModeObserve {
		r.tasks = append(r.tasks, &boundaryTask{ctx: ctx, phase: phase, f: call.f, call: call, attempt: 1})
		return
	}
	if call != nil {
		why = r.endAssess(ctx, call)
	}
	if why.flagged() {
		r.pause(ctx, phase, why, 1, holdsBoundary)
	}
}

// assess assesses the boundary just recorded, waiting for the answer and,
// in manage mode, at the gate it opens.
func (r *run) assess(ctx workflow.Context, phase string) {
	call, why := r.startAssess(ctx, phase)
	if call != nil {
		why = r.endAssess(ctx, call)
	}
	if why.flagged() {
		r.pause(ctx, phase, why, 1, holdsResult)
	}
}

// judgeCall is an assessment whose judge runs in an activity.
type judgeCall struct {
	rec Assessment
	// traj is the trajectory the judge was asked about, for the evidence
	// of a flag.
	traj Trajectory
	f    workflow.Future
}

// startAssess numbers the boundary just recorded and asks the judge. It
// returns the call when the judge runs in an activity (finish it with
// endAssess); otherwise it records the answer and returns why the job must
// pause (nothing when it need not).
func (r *run) startAssess(ctx workflow.Context, phase string) (*judgeCall, pauseCause) {
	r.seq++
	in := AssessInput{WorkflowType: r.wfType, Phase: phase, Obligations: r.cfg.Obligations, Trajectory: r.traj, ModelVersion: r.cfg.ModelVersion}
	rec := Assessment{Seq: r.seq, Phase: phase, Digest: r.traj.Digest()}
	switch r.cfg.placement() {
	case PlacementWorkflow:
		// Synchronous, and skipped on replay: the trajectory needs no copy.
		out, err := r.decideInWorkflow(ctx, in)
		return nil, r.finish(ctx, rec, r.traj, out, err)
	case PlacementBackground:
		// Observe mode only (see placementFor): nothing waits.
		r.assessInBackground(ctx, rec, in)
		return nil, pauseCause{}
	}
	// The activity runs while other phases may record theirs.
	in.Trajectory = r.traj.Clone()
	r.inFlight++
	r.pending = append(r.pending, rec)
	return &judgeCall{rec: rec, traj: in.Trajectory, f: r.executeAssess(ctx, in, false)}, pauseCause{}
}

// endAssess records the answer of call, waiting for it, and returns why the
// job must pause (nothing when it need not).
func (r *run) endAssess(ctx workflow.Context, call *judgeCall) pauseCause {
	var out AssessOutput
	err := call.f.Get(ctx, &out)
	r.inFlight--
	r.pending = slices.DeleteFunc(r.pending, func(a Assessment) bool { return a.Seq == call.rec.Seq })
	if r.abandoned {
		return pauseCause{} // already recorded as not assessed
	}
	return r.finish(ctx, call.rec, call.traj, out, err)
}

// meters are the run's assessmentMeters.
func (r *run) meters(ctx workflow.Context) *assessmentMeters {
	if r.assessmentMeters == nil {
		r.assessmentMeters = newAssessmentMeters(ctx, r.cfg.Mode)
	}
	return r.assessmentMeters
}

// finish records an assessment's outcome on the trajectory traj: the
// answer held to the policy, or the error. A flagged assessment carries
// its evidence. In manage mode a flagged answer (or too many failures)
// leaves the process note and returns why the job must pause; otherwise it
// returns nothing.
func (r *run) finish(ctx workflow.Context, rec Assessment, traj Trajectory, out AssessOutput, err error) pauseCause {
	budget := r.checkBudget(ctx, traj)
	why := r.finishVerdict(ctx, rec, traj, out, err, budget)
	if budget != nil && budget.Exceeded != "" && r.cfg.Mode == ModeManage {
		// The budget's gate, never mixed up with a verdict's: its reason is
		// the budget; a flag of the same boundary is its evidence.
		return pauseCause{reason: "budget: the job " + budget.Exceeded,
			evidence: append([]string{"the job " + budget.Exceeded}, why.evidence...), kind: GateKindBudget, afterRun: traj.PhaseRuns}
	}
	return why
}

// finishVerdict is finish without the budget: the answer held to the
// policy (a job at BudgetWarnShare of a bound reads at least Needs a
// look), or the error.
func (r *run) finishVerdict(ctx workflow.Context, rec Assessment, traj Trajectory, out AssessOutput, err error, budget *BudgetStatus) pauseCause {
	seq, phase, shape := rec.Seq, rec.Phase, ShapeOf(traj)
	if err != nil {
		r.failedInARow++
	} else {
		r.failedInARow = 0
	}
	rec.At = workflow.Now(ctx)
	r.st.Counters.Assessments++
	if err != nil {
		rec.Error = trajectory.DescribeError(err)
		r.st.Counters.Failures++
		r.st.Counters.ConsecutiveFailures++
		r.record(rec)
		r.meters(ctx).record(rec, err)
		r.reportAssessment(ctx, rec, err, r.cfg.Policy)
		r.logger.Warn("overseer: assessment failed", "phase", phase, "error", rec.Error)
		max := r.cfg.Policy.MaxConsecutiveFailures
		if r.cfg.Mode == ModeManage && max > 0 && r.st.Counters.ConsecutiveFailures >= max && ctx.Err() == nil {
			n := failureNote(phase, shape, r.st.Counters.ConsecutiveFailures)
			r.note = &n
			return pauseCause{
				reason: fmt.Sprintf("the overseer could not assess %d boundaries in a row (last error: %s); manual review",
					r.st.Counters.ConsecutiveFailures, rec.Error),
				evidence: JudgeFailureEvidence(traj, r.st.Counters.ConsecutiveFailures, rec.Error),
				afterRun: traj.PhaseRuns,
			}
		}
		return pauseCause{}
	}
	r.st.Counters.ConsecutiveFailures = 0
	policy := r.cfg.Policy.ForShape(shape)
	out.Answers.Basis = StagedBasis(out.Answers.Basis, policy)
	v := policy.Evaluate(out.Answers)
	if budget != nil && budget.Warning != "" && v.Band == BandOnTrack {
		v.Band = BandNeedsALook // the spend reads so, whatever the verdict
	}
	rec.Answers, rec.Verdict, rec.Model, rec.Usage, rec.Latency = &out.Answers, &v, out.Model, out.Usage, out.Latency
	if v.Flagged {
		rec.Evidence = Evidence(traj, out.Answers, policy)
	}
	r.record(rec)
	r.meters(ctx).record(rec, nil)
	r.reportAssessment(ctx, rec, nil, policy)
	if seq > r.applied {
		r.applied = seq
		r.st.Band, r.st.OnObjective, r.st.Assessed, r.st.Basis = v.Band, v.OnObjective, true, out.Answers.Basis
	}
	r.logger.Debug("overseer: phase assessed", "phase", phase, "band", string(v.Band), "on_objective", v.OnObjective, "flagged", v.Flagged)
	if !v.Flagged {
		r.publish(ctx)
		return pauseCause{}
	}
	r.st.Counters.Flags++
	if r.cfg.Mode != ModeManage {
		r.publish(ctx)
		return pauseCause{}
	}
	n := newNote(phase, shape, out.Answers, v, r.cfg.Obligations, rec.Evidence)
	r.note = &n
	return pauseCause{reason: v.Reason, evidence: rec.Evidence, afterRun: traj.PhaseRuns}
}

// pauseCause is why a boundary pauses its job: the rule that fired (the
// gate's Reason) and what happened, in plain words (its Evidence). The
// zero pauseCause does not pause.
type pauseCause struct {
	reason   string
	evidence []string
	// kind is the gate's Kind: GateKindBudget when a budget opens it.
	kind string
	// afterRun is the phase run the judge was asked about (its number,
	// Trajectory.PhaseRuns then): what a reviewer who resumes the gate saw.
	afterRun int
}

func (c pauseCause) flagged() bool { return c.reason != "" }

// failingJudgeStreak is how many of a run's latest assessments must have
// failed, each after all its attempts, for the run to take its judge as
// failing: it then ends without waiting for the assessments still in
// flight. It is the default Policy.MaxConsecutiveFailures, after which
// manage mode pauses for manual review, but does not follow the policy:
// the policy is about pausing, this only about the end of an observed run.
const failingJudgeStreak = 3

// endWaitChangeID versions the end of a run: runs that recorded it (version
// 1) do not wait at their end for a judge that is failing; older histories
// replay with the wait. It is only recorded when the rule applies.
const endWaitChangeID = "temporal-overseer/end-wait"

// judgeFailing says the run's latest failingJudgeStreak assessments failed.
func (r *run) judgeFailing() bool { return r.failedInARow >= failingJudgeStreak }

// awaitAssessments runs when the workflow's code has returned. It waits for
// the assessments still in flight, so that the last boundary is recorded,
// unless the judge is failing (judgeFailing, now or while waiting): then
// the run ends at once and records each outstanding boundary as not
// assessed, with the reason. Fail-open: a judge that is down never delays
// the end of a job by its whole budget. With a judge in workflow code
// nothing is ever in flight here.
func (r *run) awaitAssessments(ctx workflow.Context) {
	if why := r.awaitBackground(ctx); why != "" {
		r.notAssessed(ctx, why)
		return
	}
	r.await(ctx, func() bool { return r.inFlight == 0 || r.judgeFailing() })
	if r.inFlight == 0 {
		return
	}
	if workflow.GetVersion(ctx, endWaitChangeID, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		r.await(ctx, func() bool { return r.inFlight == 0 })
		return
	}
	r.notAssessed(ctx, fmt.Sprintf("not assessed: the run ended without waiting for the judge, whose last %d assessments failed", r.failedInARow))
}

// notWaitedFor is what a boundary the run's end did not wait for counts
// as: an error outcome, and no judge error (judgeErrorKind).
var notWaitedFor = temporal.NewNonRetryableApplicationError("not waited for", JudgeFailingErrorType, nil)

// notAssessed records every assessment still in flight as not assessed,
// for reason, at the run's end, which does not wait for them.
func (r *run) notAssessed(ctx workflow.Context, reason string) {
	r.abandoned = true
	now := workflow.Now(ctx)
	for _, a := range r.pending {
		a.At, a.Error = now, reason
		r.st.Counters.Assessments++
		r.st.Counters.Failures++
		r.st.Counters.ConsecutiveFailures++
		r.record(a)
		r.meters(ctx).record(a, notWaitedFor)
		r.reportAssessment(ctx, a, notWaitedFor, r.cfg.Policy)
	}
	r.logger.Warn("overseer: run ends without waiting for a failing judge", "not_assessed", len(r.pending), "reason", reason)
	r.pending = nil
}

// executeAssess runs the Overseer activity in the run's placement, or as a
// local activity when local is set.
func (r *run) executeAssess(ctx workflow.Context, in AssessInput, local bool) workflow.Future {
	retry := &temporal.RetryPolicy{
		InitialInterval:        assessBackoff,
		BackoffCoefficient:     2,
		MaximumAttempts:        assessAttempts,
		NonRetryableErrorTypes: []string{InvalidAnswerErrorType},
	}
	// StartToClose bounds one attempt; ScheduleToClose all of them. Left
	// unset, a local activity's ScheduleToClose would be one attempt's bound.
	if r.cfg.placement() == PlacementActivity && !local {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue:              cmp.Or(r.cfg.AssessTaskQueue, ownTaskQueue(ctx)),
			StartToCloseTimeout:    r.cfg.AssessTimeout,
			ScheduleToCloseTimeout: r.cfg.totalAssessTimeout(),
			RetryPolicy:            retry,
		})
		return workflow.ExecuteActivity(ctx, AssessActivityName, in)
	}
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout:    r.cfg.AssessTimeout,
		ScheduleToCloseTimeout: r.cfg.totalAssessTimeout(),
		RetryPolicy:            retry,
	})
	return workflow.ExecuteLocalActivity(ctx, AssessActivityName, in)
}

// workflowAnswer is what a judge run in workflow code leaves in history (a
// SideEffect marker): its output, or the error it failed with. Kind tells
// it from the workflow's own side effects, for tools that read histories.
type workflowAnswer struct {
	Kind   string        `json:"kind"`
	Output *AssessOutput `json:"output,omitempty"`
	Error  string        `json:"error,omitempty"`
}

// answerKind is workflowAnswer's Kind.
const answerKind = "overseer.answer/v1"

// decideInWorkflow asks a PureJudge in workflow code. The answer is
// recorded in a side effect, so replay reads it back instead of asking a
// judge whose model may have changed since. A panicking judge or one that
// is not pure (the worker was redeployed with another judge) is recorded
// as a failed assessment, like an activity error.
func (r *run) decideInWorkflow(ctx workflow.Context, in AssessInput) (AssessOutput, error) {
	var rec workflowAnswer
	err := workflow.SideEffect(ctx, func(workflow.Context) (rec any) {
		defer func() {
			if p := recover(); p != nil {
				rec = workflowAnswer{Kind: answerKind, Error: fmt.Sprintf("overseer.assess: judge panicked: %v", p)}
			}
		}()
		pinned, err := pinnedJudge(context.Background(), r.judge, r.models, in.WorkflowType, in.ModelVersion)
		if err != nil {
			return workflowAnswer{Kind: answerKind, Error: err.Error()}
		}
		judge, ok := pinned.(PureJudge)
		if !ok {
			return workflowAnswer{Kind: answerKind, Error: fmt.Sprintf("overseer.assess: this worker's judge %T cannot run in workflow code, "+
				"where this run's judge was pinned to run; give the worker a PureJudge", r.judge)}
		}
		out, err := decide(context.Background(), judge, in)
		if err != nil {
			return workflowAnswer{Kind: answerKind, Error: err.Error()}
		}
		return workflowAnswer{Kind: answerKind, Output: &out}
	}).Get(&rec)
	switch {
	case err != nil:
		return AssessOutput{}, fmt.Errorf("overseer.assess: read the recorded answer: %w", err)
	case rec.Error != "" || rec.Output == nil:
		return AssessOutput{}, errors.New(rec.Error)
	}
	return *rec.Output, nil
}

// reportKey is ReportCarrier's JSON key.
const reportKey = "overseer_report"

// topLevelField returns the value of the member name of the JSON object
// data, when it is one of the object's own members (not a nested one's).
// It reads data only up to the end of that value and does not validate the
// rest: the workflow's own decoding does.
func topLevelField(data []byte, name string) ([]byte, bool) {
	depth, keyStart, valueStart := 0, -1, -1
	expectKey, inString, escaped := false, false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
				if keyStart >= 0 && string(data[keyStart:i]) == name {
					j := i + 1
					for j < len(data) && isJSONSpace(data[j]) {
						j++
					}
					if j < len(data) && data[j] == ':' {
						valueStart, i = j+1, j
					}
				}
				keyStart = -1
			}
			continue
		}
		switch c {
		case '"':
			inString = true
			if depth == 1 && expectKey {
				keyStart = i + 1
			}
			expectKey = false
		case '{', '[':
			depth++
			expectKey = depth == 1 && c == '{'
		case '}', ']':
			depth--
			if depth == 0 && valueStart >= 0 {
				return data[valueStart:i], true
			}
		case ',':
			if depth == 1 {
				if valueStart >= 0 {
					return data[valueStart:i], true
				}
				expectKey = true
			}
		}
	}
	return nil, false
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// readableResult is a phase's result p as a content window reads it: as
// it is when its encoding is JSON, else as the workflow decodes it (the
// SDK undoes the codec in the activity's serialization context), read as
// JSON; p when it is not JSON at all.
func readableResult(ctx workflow.Context, p *commonpb.Payload, f workflow.Future) *commonpb.Payload {
	if p == nil || string(p.GetMetadata()[converter.MetadataEncoding]) == converter.MetadataEncodingJSON {
		return p
	}
	var m json.RawMessage
	if f.Get(ctx, &m) != nil {
		return p
	}
	return &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(converter.MetadataEncodingJSON)}, Data: m}
}

// reportOf reads the PhaseReport a phase result carries: of a JSON
// result, only the top-level overseer_report member (topLevelField); any
// other encoding is decoded by the workflow's own data converter.
func reportOf(ctx workflow.Context, raw converter.RawValue, f workflow.Future) *PhaseReport {
	var c ReportCarrier
	p := raw.Payload()
	if p == nil {
		return nil
	}
	if string(p.GetMetadata()[converter.MetadataEncoding]) == converter.MetadataEncodingJSON {
		// The workflow decodes the whole result itself: read only the
		// report's own bytes.
		value, ok := topLevelField(p.GetData(), reportKey)
		if !ok || json.Unmarshal(value, &c.OverseerReport) != nil {
			return nil
		}
		return c.OverseerReport
	}
	if f.Get(ctx, &c) != nil {
		return nil
	}
	return c.OverseerReport
}

// The Overseer activity's retry policy: 3 attempts, 1 s then 2 s apart.
const (
	assessAttempts = 3
	assessBackoff  = time.Second
)

// totalAssessTimeout bounds all attempts of one assessment: the pinned
// AssessTotalTimeout, or every attempt's AssessTimeout plus the backoff
// between them.
func (c runConfig) totalAssessTimeout() time.Duration {
	if c.AssessTotalTimeout > 0 {
		return c.AssessTotalTimeout
	}
	return assessAttempts*c.AssessTimeout + assessBackoff + 2*assessBackoff
}

func (r *run) record(a Assessment) {
	r.st.Assessments = trajectory.Window(r.st.Assessments, a, r.cfg.RecentAssessments)
}

func (r *run) upsertSearchAttributes(ctx workflow.Context) {
	// Nothing to say before the first verdict or pause; but once something
	// was said (a pause before any assessment succeeded), the resume must
	// say it is over (runStructureV3; earlier runs left OverseerPaused set).
	if !r.cfg.SearchAttributes || !r.st.Assessed && !r.st.Paused && (r.sa == nil || !r.invisible()) {
		return
	}
	now := searchAttributes{status: string(r.st.Band), onObjective: r.st.OnObjective, paused: r.st.Paused}
	if r.cfg.GateSearchAttribute {
		now.gateSince = r.oldestOpenGate()
	}
	if r.cfg.BudgetSearchAttribute {
		now.budget = r.st.Budget.State()
	}
	if now.status == "" {
		now.status = "not_assessed"
	}
	if r.sa != nil && *r.sa == now {
		return
	}
	onObjective := SearchAttributeOnObjective.ValueSet(now.onObjective)
	if r.st.Assessed && r.st.Band == BandUnknown {
		// Not assessed: no P to filter on, rather than a 0 that reads as
		// "off track".
		onObjective = SearchAttributeOnObjective.ValueUnset()
	}
	updates := []temporal.SearchAttributeUpdate{
		SearchAttributeStatus.ValueSet(now.status),
		onObjective,
		SearchAttributePaused.ValueSet(now.paused),
	}
	if r.cfg.GateSearchAttribute {
		if now.gateSince.IsZero() {
			updates = append(updates, SearchAttributeGateSince.ValueUnset())
		} else {
			updates = append(updates, SearchAttributeGateSince.ValueSet(now.gateSince))
		}
	}
	if r.cfg.BudgetSearchAttribute {
		if now.budget == "" {
			updates = append(updates, SearchAttributeBudget.ValueUnset())
		} else {
			updates = append(updates, SearchAttributeBudget.ValueSet(now.budget))
		}
	}
	err := workflow.UpsertTypedSearchAttributes(ctx, updates...)
	if err != nil {
		r.logger.Warn("overseer: upsert search attributes failed", "error", err.Error())
		return
	}
	r.sa = &now
}
