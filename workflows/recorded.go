package workflows

import (
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/overseer"
)

// RecordedJobWorkflowName is the registered name of RecordedJob.
const RecordedJobWorkflowName = "CoroRecordedJob"

// The error types a recorded job ends with when its run did not succeed.
const (
	RecordedFailedErrorType  = "RecordedRunFailed"
	RecordedBlockedErrorType = "RecordedRunBlocked"
)

// The outcomes of a recorded run (as eval.Outcome spells them).
const (
	RecordedSucceeded = "succeeded"
	RecordedFailed    = "failed"
	RecordedBlocked   = "blocked"
)

// Defaults of RecordedJobInput.
const (
	DefaultRecordedSpeed    = 1000
	DefaultRecordedStepTime = 10 * time.Millisecond
)

// RecordedJobInput starts a job that replays a recorded agent run, phase
// by phase (eval.RecordedJob converts a run record to it).
type RecordedJobInput struct {
	// Run is the recorded run's id; Agent the agent that ran it.
	Run    string `json:"run"`
	Agent  string `json:"agent,omitempty"`
	Family string `json:"family,omitempty"`
	// Objective is the recorded task.
	Objective string `json:"objective,omitempty"`
	// Outcome is how the recorded run ended: succeeded, failed or blocked.
	Outcome string                     `json:"outcome"`
	Phases  []activities.RecordedPhase `json:"phases"`
	// Speed divides each phase's recorded time. If not set,
	// DefaultRecordedSpeed.
	Speed float64 `json:"speed,omitempty"`
	// StepTime is the time per agent step of a phase recorded without
	// timestamps. If not set, DefaultRecordedStepTime.
	StepTime time.Duration `json:"step_time,omitempty"`
}

// RecordedJobResult is what a recorded job that succeeded returns.
type RecordedJobResult struct {
	Run     string `json:"run"`
	Outcome string `json:"outcome"`
	Phases  int    `json:"phases"`
}

func (in *RecordedJobInput) defaults() error {
	switch {
	case strings.TrimSpace(in.Run) == "":
		return fmt.Errorf("recorded job input: run (the recorded run's id) is required")
	case in.Outcome != RecordedSucceeded && in.Outcome != RecordedFailed && in.Outcome != RecordedBlocked:
		return fmt.Errorf("recorded job input: run %s has outcome %q: use succeeded, failed or blocked", in.Run, in.Outcome)
	case len(in.Phases) == 0:
		return fmt.Errorf("recorded job input: run %s has no phases", in.Run)
	case in.Speed < 0 || in.StepTime < 0:
		return fmt.Errorf("recorded job input: run %s has a negative speed or step time", in.Run)
	}
	for i, p := range in.Phases {
		if p.Phase == "" || strings.Contains(p.Phase, ".") {
			return fmt.Errorf("recorded job input: run %s phase %d is named %q: give each phase a name without dots", in.Run, i, p.Phase)
		}
	}
	if in.Speed == 0 {
		in.Speed = DefaultRecordedSpeed
	}
	if in.StepTime == 0 {
		in.StepTime = DefaultRecordedStepTime
	}
	return nil
}

// RecordingObjective is the objective a recorded job shows: it says that
// the job is a recording, which a process note cannot change.
func RecordingObjective(in RecordedJobInput) string {
	by := ""
	if in.Agent != "" {
		by = " by " + in.Agent
	}
	s := fmt.Sprintf("Recording of run %s%s (a replay: a process note cannot change it)", in.Run, by)
	if o := strings.TrimSpace(in.Objective); o != "" {
		s += ": " + o
	}
	return s
}

// Work is how long a recorded phase takes in the job.
func (in RecordedJobInput) Work(p activities.RecordedPhase) time.Duration {
	if p.Duration > 0 {
		return time.Duration(float64(p.Duration) / in.Speed)
	}
	return time.Duration(max(1, p.Steps)) * in.StepTime
}

// RecordedJob replays a recorded agent run as a Coro-style job: each
// recorded phase is one activity that takes its time and reports what the
// recorded steps did, and the job ends as the run ended — a run that did
// not succeed ends the job failed, with a RecordedFailedErrorType (or
// RecordedBlockedErrorType) application error. A phase that fails (an
// abort at an overseer gate) ends it failed at once.
func RecordedJob(ctx workflow.Context, in RecordedJobInput) (RecordedJobResult, error) {
	if err := in.defaults(); err != nil {
		return RecordedJobResult{}, temporal.NewNonRetryableApplicationError(err.Error(), "InvalidJobInput", nil)
	}
	overseer.SetObjective(ctx, RecordingObjective(in))
	for i, p := range in.Phases {
		work := in.Work(p)
		actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: work + time.Minute,
			// A recording replays once; a lost worker is the only retry.
			RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 3, NonRetryableErrorTypes: []string{"UnknownActivity", "InvalidPhaseInput"}},
		})
		pin := activities.RecordedPhaseInput{Run: in.Run, Index: i, Phase: p.Phase, Work: work, Report: p.Report}
		var out activities.RecordedPhaseOutput
		if err := workflow.ExecuteActivity(actx, activities.RecordedActivityName(p.Phase), pin).Get(actx, &out); err != nil {
			return RecordedJobResult{}, fmt.Errorf("recorded run %s, phase %d (%s): %w", in.Run, i, p.Phase, err)
		}
	}
	switch in.Outcome {
	case RecordedFailed:
		return RecordedJobResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the recorded run %s failed", in.Run), RecordedFailedErrorType, nil)
	case RecordedBlocked:
		return RecordedJobResult{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("the recorded run %s was blocked", in.Run), RecordedBlockedErrorType, nil)
	}
	return RecordedJobResult{Run: in.Run, Outcome: in.Outcome, Phases: len(in.Phases)}, nil
}

// RegisterRecorded registers RecordedJob under RecordedJobWorkflowName on a
// worker, a replayer or the SDK's test environment.
func RegisterRecorded(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(RecordedJob, workflow.RegisterOptions{Name: RecordedJobWorkflowName})
}
