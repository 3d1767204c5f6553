package overseer

import (
	"fmt"
	"slices"
	"time"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

type runKey struct{}

// run is the overseer's state for one workflow run. It is only touched by
// workflow coroutines, which never run in parallel.
type run struct {
	wfType string
	cfg    runConfig
	logger log.Logger

	st   Status
	traj Trajectory
	// note is the process note waiting for the next phase.
	note *Note
	// seq numbers assessments; applied is the highest one reflected in the
	// band (observe-mode assessments may finish out of order).
	seq, applied int
	inFlight     int
	// gate is the open gate, nil when not paused.
	gate    *Gate
	aborted *Gate
	// sa is what was last upserted, to skip redundant upserts.
	sa *searchAttributes
}

type searchAttributes struct {
	status      string
	onObjective float64
	paused      bool
}

func newRun(ctx workflow.Context, wfType string, cfg runConfig) *run {
	return &run{wfType: wfType, cfg: cfg, logger: workflow.GetLogger(ctx), st: Status{Mode: cfg.Mode, Assessments: []Assessment{}}}
}

func (r *run) status() Status {
	s := r.st
	s.Assessments = slices.Clone(s.Assessments)
	s.Gates = slices.Clone(s.Gates)
	s.InPhase = slices.Clone(s.InPhase)
	s.Digest = r.traj.Digest()
	if r.note != nil {
		s.PendingNote = r.note.String()
	}
	return s
}

func (r *run) takeNote() *Note {
	if r.cfg.Mode != ModeManage {
		return nil
	}
	n := r.note
	r.note = nil
	return n
}

func (r *run) registerResume(ctx workflow.Context) error {
	ch := workflow.GetSignalChannel(ctx, ResumeSignalName)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for {
			var req ResumeRequest
			ch.Receive(ctx, &req)
			if _, err := r.resume(ctx, req); err != nil {
				r.st.Counters.IgnoredResumes++
				r.logger.Warn("overseer: ignored resume signal", "error", err.Error(), "by", req.By)
			}
		}
	})
	err := workflow.SetUpdateHandlerWithOptions(ctx, ResumeUpdateName,
		func(ctx workflow.Context, req ResumeRequest) (Gate, error) { return r.resume(ctx, req) },
		workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, req ResumeRequest) error {
			if err := req.Validate(); err != nil {
				return err
			}
			if r.gate == nil {
				return ErrNotPaused
			}
			return nil
		}})
	if err != nil {
		return fmt.Errorf("overseer: register %s update: %w", ResumeUpdateName, err)
	}
	return nil
}

// resume closes the open gate. The gate's own coroutine wakes up and lets
// the workflow go on (or the run ends, on abort).
func (r *run) resume(ctx workflow.Context, req ResumeRequest) (Gate, error) {
	if err := req.Validate(); err != nil {
		return Gate{}, err
	}
	if r.gate == nil {
		return Gate{}, ErrNotPaused
	}
	now := workflow.Now(ctx)
	g := r.gate
	g.ResumedAt, g.By, g.Note, g.Action = &now, req.By, req.Note, req.Action
	if g.Action == "" {
		g.Action = ActionContinue
	}
	r.st.Gates[len(r.st.Gates)-1] = *g
	r.gate = nil
	r.st.Paused, r.st.PausedSince, r.st.PauseReason = false, nil, ""
	r.st.Counters.Resumes++
	metricResume(ctx, *g)
	if g.Action == ActionAbort {
		r.aborted = g
	} else if r.note != nil && req.Note != "" {
		r.note.ReviewerNote, r.note.ReviewedBy = req.Note, req.By
	}
	r.logger.Info("overseer: job resumed", "by", g.By, "action", string(g.Action), "phase", g.Phase)
	return *g, nil
}

// boundary runs after a phase activity ends: it records the phase, assesses
// it and, in manage mode, holds the phase's result until the verdict (and
// any gate) lets the workflow go on. settle hands the phase's own result,
// untouched, to the workflow; a finished phase is never re-run.
func (r *run) boundary(ctx workflow.Context, phase string, started time.Time, f workflow.Future, settle func()) {
	phaseErr := f.Get(ctx, nil)
	var report *PhaseReport
	if phaseErr == nil {
		var c ReportCarrier
		if f.Get(ctx, &c) == nil {
			report = c.OverseerReport
		}
	}
	pr := PhaseRun{Phase: phase, Duration: workflow.Now(ctx).Sub(started), Failed: phaseErr != nil}
	if phaseErr != nil {
		pr.Error = describeError(phaseErr)
	}
	r.traj.recordPhase(pr, report)
	r.st.Phase = r.traj.Phase
	r.st.Counters.Phases++
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

func (r *run) assess(ctx workflow.Context, phase string) {
	r.seq++
	seq := r.seq
	in := AssessInput{WorkflowType: r.wfType, Phase: phase, Obligations: r.cfg.Obligations, Trajectory: r.traj.clone()}
	rec := Assessment{Seq: seq, Phase: phase, Digest: r.traj.Digest()}
	r.inFlight++
	var out AssessOutput
	err := r.executeAssess(ctx, in).Get(ctx, &out)
	r.inFlight--
	rec.At = workflow.Now(ctx)
	r.st.Counters.Assessments++
	if err != nil {
		rec.Error = describeError(err)
		r.st.Counters.Failures++
		r.st.Counters.ConsecutiveFailures++
		r.record(rec)
		metricAssessment(ctx, r.cfg.Mode, rec, err)
		r.logger.Warn("overseer: assessment failed", "phase", phase, "error", rec.Error)
		max := r.cfg.Policy.MaxConsecutiveFailures
		if r.cfg.Mode == ModeManage && max > 0 && r.st.Counters.ConsecutiveFailures >= max && ctx.Err() == nil {
			n := failureNote(phase, r.st.Counters.ConsecutiveFailures)
			r.note = &n
			r.pause(ctx, phase, fmt.Sprintf("the overseer could not assess %d boundaries in a row (last error: %s); manual review",
				r.st.Counters.ConsecutiveFailures, rec.Error))
		}
		return
	}
	r.st.Counters.ConsecutiveFailures = 0
	v := r.cfg.Policy.Evaluate(out.Answers)
	rec.Answers, rec.Verdict, rec.Model, rec.Usage, rec.Latency = &out.Answers, &v, out.Model, out.Usage, out.Latency
	r.record(rec)
	metricAssessment(ctx, r.cfg.Mode, rec, nil)
	if seq > r.applied {
		r.applied = seq
		r.st.Band, r.st.OnObjective, r.st.Assessed = v.Band, v.OnObjective, true
	}
	r.logger.Info("overseer: phase assessed", "phase", phase, "band", string(v.Band), "on_objective", v.OnObjective, "flagged", v.Flagged)
	if !v.Flagged {
		r.upsertSearchAttributes(ctx)
		return
	}
	r.st.Counters.Flags++
	if r.cfg.Mode != ModeManage {
		r.upsertSearchAttributes(ctx)
		return
	}
	n := newNote(phase, out.Answers, v, r.cfg.Obligations)
	r.note = &n
	r.pause(ctx, phase, v.Reason)
}

func (r *run) executeAssess(ctx workflow.Context, in AssessInput) workflow.Future {
	retry := &temporal.RetryPolicy{
		InitialInterval:        time.Second,
		BackoffCoefficient:     2,
		MaximumAttempts:        3,
		NonRetryableErrorTypes: []string{InvalidAnswerErrorType},
	}
	if r.cfg.AssessAsActivity {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			TaskQueue:           r.cfg.AssessTaskQueue,
			StartToCloseTimeout: r.cfg.AssessTimeout,
			RetryPolicy:         retry,
		})
		return workflow.ExecuteActivity(ctx, AssessActivityName, in)
	}
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: r.cfg.AssessTimeout,
		RetryPolicy:         retry,
	})
	return workflow.ExecuteLocalActivity(ctx, AssessActivityName, in)
}

func (r *run) record(a Assessment) {
	r.st.Assessments = window(r.st.Assessments, a, r.cfg.RecentAssessments)
}

// pause opens a gate and waits, durably, until a human resumes the job.
func (r *run) pause(ctx workflow.Context, phase, reason string) {
	now := workflow.Now(ctx)
	r.gate = &Gate{Phase: phase, Reason: reason, PausedAt: now}
	r.st.Gates = window(r.st.Gates, *r.gate, maxRecentGates)
	r.st.Paused, r.st.PausedSince, r.st.PauseReason = true, &now, reason
	r.st.Counters.Pauses++
	metricPause(ctx, r.st.Counters.ConsecutiveFailures > 0)
	r.upsertSearchAttributes(ctx)
	r.logger.Info("overseer: job paused", "phase", phase, "reason", reason)
	if err := workflow.Await(ctx, func() bool { return r.gate == nil }); err != nil {
		return // cancelled while paused: the workflow handles its cancellation
	}
	r.upsertSearchAttributes(ctx)
}

func (r *run) upsertSearchAttributes(ctx workflow.Context) {
	if !r.cfg.SearchAttributes || !r.st.Assessed && !r.st.Paused {
		return
	}
	now := searchAttributes{status: string(r.st.Band), onObjective: r.st.OnObjective, paused: r.st.Paused}
	if now.status == "" {
		now.status = "not_assessed"
	}
	if r.sa != nil && *r.sa == now {
		return
	}
	err := workflow.UpsertTypedSearchAttributes(ctx,
		SearchAttributeStatus.ValueSet(now.status),
		SearchAttributeOnObjective.ValueSet(now.onObjective),
		SearchAttributePaused.ValueSet(now.paused))
	if err != nil {
		r.logger.Warn("overseer: upsert search attributes failed", "error", err.Error())
		return
	}
	r.sa = &now
}
