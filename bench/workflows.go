package bench

import (
	"context"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
)

// Names the bench registers on its workers.
const (
	JobWorkflowName         = "bench.job"
	HandwrittenWorkflowName = "bench.handwritten-job"
	PhaseActivityName       = "bench.phase"
	// HandwrittenResumeSignal resumes a hand-written job paused by its judge.
	HandwrittenResumeSignal = "bench.resume"
)

// JobInput is one bench job: Phases phase activities of PhaseDuration each,
// continuing as new after every ContinueEvery phases (0: never).
type JobInput struct {
	Phases        int           `json:"phases"`
	PhaseDuration time.Duration `json:"phase_duration"`
	ContinueEvery int           `json:"continue_every,omitempty"`
	// Done counts the phases run by earlier runs of the chain.
	Done int `json:"done,omitempty"`
}

// PhaseInput is one phase's input.
type PhaseInput struct {
	Index    int           `json:"index"`
	Duration time.Duration `json:"duration"`
}

// PhaseResult is what a phase returns: a healthy agent phase's report, so
// that a judge has something real to read and finds nothing wrong.
type PhaseResult struct {
	overseer.ReportCarrier
	Index int `json:"index"`
}

// Phase is the phase activity: it works for its duration and reports.
func Phase(ctx context.Context, in PhaseInput) (PhaseResult, error) {
	if in.Duration > 0 {
		select {
		case <-time.After(in.Duration):
		case <-ctx.Done():
			return PhaseResult{}, ctx.Err()
		}
	}
	return PhaseResult{Index: in.Index, ReportCarrier: overseer.ReportCarrier{OverseerReport: &overseer.PhaseReport{
		Turns: 6, CostUSD: 0.04, InputTokens: 9000, OutputTokens: 900,
	}}}, nil
}

func phaseOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
}

// Job is the bench's job: plain Temporal, the same code with and without
// the overseer plugin on the worker.
func Job(ctx workflow.Context, in JobInput) (int, error) {
	ctx = phaseOptions(ctx)
	for run := 0; in.Done < in.Phases; run++ {
		if in.ContinueEvery > 0 && run == in.ContinueEvery {
			return 0, workflow.NewContinueAsNewError(ctx, JobWorkflowName, in)
		}
		var res PhaseResult
		if err := workflow.ExecuteActivity(ctx, PhaseActivityName, PhaseInput{Index: in.Done, Duration: in.PhaseDuration}).Get(ctx, &res); err != nil {
			return in.Done, err
		}
		in.Done++
	}
	return in.Done, nil
}

// HandwrittenInput is a hand-written job's input: the job, and the policy
// its judge's answers are held to.
type HandwrittenInput struct {
	JobInput
	Obligations []string        `json:"obligations"`
	Policy      overseer.Policy `json:"policy"`
}

// HandwrittenJob is the honest baseline the plugin is measured against:
// what a Temporal user would write by hand to get the same judgment and
// the same pause, with no plugin. After each phase it records the phase in
// a trajectory, asks the same judge in a local activity (the overseer's own
// Assessor, registered by the worker as overseer.assess), holds the answers
// to the same policy and, when they are flagged, waits for a resume
// signal. It has none of the plugin's status query, search attributes,
// gate ids, process notes or continue-as-new carry-over.
func HandwrittenJob(ctx workflow.Context, in HandwrittenInput) (int, error) {
	ctx = phaseOptions(ctx)
	judgeCtx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	resume := workflow.GetSignalChannel(ctx, HandwrittenResumeSignal)
	var rec overseer.TrajectoryRecorder
	for in.Done < in.Phases {
		started := workflow.Now(ctx)
		var res PhaseResult
		err := workflow.ExecuteActivity(ctx, PhaseActivityName, PhaseInput{Index: in.Done, Duration: in.PhaseDuration}).Get(ctx, &res)
		if err != nil {
			return in.Done, err
		}
		in.Done++
		rec.RecordPhase(overseer.PhaseRun{Phase: "phase", Duration: workflow.Now(ctx).Sub(started)}, res.OverseerReport)

		var out overseer.AssessOutput
		req := overseer.AssessInput{WorkflowType: HandwrittenWorkflowName, Phase: "phase", Obligations: in.Obligations, Trajectory: rec.Trajectory()}
		if err := workflow.ExecuteLocalActivity(judgeCtx, overseer.AssessActivityName, req).Get(ctx, &out); err != nil {
			workflow.GetLogger(ctx).Warn("judge failed; going on", "error", err)
			continue
		}
		if v := in.Policy.Evaluate(out.Answers); v.Flagged {
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(resume, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
			sel.Select(ctx)
		}
	}
	return in.Done, nil
}

func workflowOptions(name string) workflow.RegisterOptions {
	return workflow.RegisterOptions{Name: name}
}
