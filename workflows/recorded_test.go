package workflows_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/workflows"
)

func recordedInput(outcome string) workflows.RecordedJobInput {
	return workflows.RecordedJobInput{
		Run: "django__django-11099", Agent: "mini-swe-agent/gemini-3-pro", Family: "django__django",
		Objective: "Fix the username validator", Outcome: outcome,
		Phases: []activities.RecordedPhase{
			{Phase: "read", Steps: 3, Duration: 90 * time.Second, Report: overseer.PhaseReport{Turns: 3, InputTokens: 9000, OutputTokens: 300, CostUSD: 0.03}},
			{Phase: "edit", Steps: 1, Report: overseer.PhaseReport{Turns: 1, InputTokens: 4000, OutputTokens: 500, CostUSD: 0.02, FailedToolCategories: []string{"edit"}}},
			{Phase: "test", Steps: 2, Duration: 20 * time.Second, Report: overseer.PhaseReport{Turns: 2, InputTokens: 8000, OutputTokens: 100, CostUSD: 0.02}},
			{Phase: "edit", Steps: 1, Report: overseer.PhaseReport{Turns: 1, Rework: 1, OutputMissing: true}},
		},
	}
}

// runRecorded runs a recorded job in observe mode under the heuristic
// judge and returns its error and final status.
func runRecorded(t *testing.T, in workflows.RecordedJobInput) (overseer.Status, []time.Duration, error) {
	t.Helper()
	env := overseenEnv(t, overseer.Options{Mode: overseer.ModeObserve, Judge: overseer.HeuristicJudge{}})
	workflows.RegisterRecorded(env)
	(&activities.Recorded{}).Register(env)
	var works []time.Duration
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		var pin activities.RecordedPhaseInput
		if strings.HasPrefix(info.ActivityType.Name, activities.RecordedActivityPrefix) && args.Get(&pin) == nil {
			works = append(works, pin.Work)
		}
	})
	env.ExecuteWorkflow(workflows.RecordedJobWorkflowName, in)
	require.True(t, env.IsWorkflowCompleted())
	v, err := env.QueryWorkflow(overseer.StatusQueryName)
	require.NoError(t, err)
	var st overseer.Status
	require.NoError(t, v.Get(&st))
	return st, works, env.GetWorkflowError()
}

func TestRecordedJobReportsEachRecordedPhaseAndSaysItIsARecording(t *testing.T) {
	in := recordedInput(workflows.RecordedSucceeded)
	st, works, err := runRecorded(t, in)
	require.NoError(t, err)
	assert.Equal(t, len(in.Phases), st.Counters.Assessments, "one boundary per recorded phase")
	assert.True(t, strings.HasPrefix(st.Objective, "Recording of run django__django-11099 by mini-swe-agent/gemini-3-pro (a replay: a process note cannot change it): Fix"), st.Objective)
	// The plugin read every phase's report: the totals are the recorded ones.
	assert.Contains(t, st.Digest, "; 7 turns, $0.07; tokens 21000 in, 900 out; rework 1; 1 phases without required output", st.Digest)
	// Recorded time over the speed factor; a phase without timestamps
	// takes the step time per step.
	assert.Equal(t, []time.Duration{90 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 10 * time.Millisecond}, works)
}

func TestRecordedJobEndsAsTheRecordedRunEnded(t *testing.T) {
	for outcome, typ := range map[string]string{workflows.RecordedFailed: workflows.RecordedFailedErrorType, workflows.RecordedBlocked: workflows.RecordedBlockedErrorType} {
		st, _, err := runRecorded(t, recordedInput(outcome))
		var app *temporal.ApplicationError
		require.ErrorAs(t, err, &app, outcome)
		assert.Equal(t, typ, app.Type(), outcome)
		assert.Equal(t, 4, st.Counters.Assessments, "%s: every phase ran before the end", outcome)
	}
}

func TestRecordedJobRefusesBadInputInOneSentence(t *testing.T) {
	in := recordedInput("resolved")
	_, _, err := runRecorded(t, in)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `run django__django-11099 has outcome "resolved": use succeeded, failed or blocked`)
	in = recordedInput(workflows.RecordedSucceeded)
	in.Phases[1].Phase = "str.replace"
	_, _, err = runRecorded(t, in)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `phase 1 is named "str.replace": give each phase a name without dots`)
}

func TestTheRecordedPhasesRefuseOtherActivityTypesRetryably(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	(&activities.Recorded{}).Register(env)
	_, err := env.ExecuteActivity("billing.charge", activities.RecordedPhaseInput{})
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, "UnknownActivity", app.Type())
	assert.False(t, app.NonRetryable(), "another worker of the queue may have it")
	assert.Contains(t, err.Error(), `no activity "billing.charge" is registered on this worker`)
}
