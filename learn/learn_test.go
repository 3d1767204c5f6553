package learn

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/corohq/temporal-overseer/eval"
)

// The workflow sequences the activities and keeps the totals: a round with
// too few runs says how many more it needs, a refused candidate is counted
// with its reason, a promoted one names the new current version.
func TestWorkflowRounds(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	run := func(prev *Result, ex ExportOutput, rf *RefitOutput) Result {
		env := s.NewTestWorkflowEnvironment()
		env.RegisterActivityWithOptions(func(ctx context.Context, in ExportInput) (ExportOutput, error) {
			if prev != nil {
				assert.Equal(t, prev.At, in.Since)
			}
			return ex, nil
		}, activity.RegisterOptions{Name: ExportActivityName})
		env.RegisterActivityWithOptions(func(ctx context.Context, in RefitInput) (RefitOutput, error) {
			require.NotNil(t, rf, "refit only when ready")
			return *rf, nil
		}, activity.RegisterOptions{Name: RefitActivityName})
		env.ExecuteWorkflow(Workflow, Input{Type: "Job", Previous: prev})
		require.True(t, env.IsWorkflowCompleted())
		require.NoError(t, env.GetWorkflowError())
		var res Result
		require.NoError(t, env.GetWorkflowResult(&res))
		return res
	}
	labels := eval.GateLabels{Aborts: 1, Continues: 2, FalsePauses: 1, RunsWithFalsePause: 1}
	r1 := run(nil, ExportOutput{NewRuns: 4, Readiness: Readiness{Sentence: "4 labelled runs: needs about 70 more succeeded runs"}, Labels: labels}, nil)
	assert.Equal(t, 1, r1.Rounds)
	assert.Equal(t, "round 1 for Job: no candidate: 4 labelled runs: needs about 70 more succeeded runs", r1.Sentence)
	require.NotNil(t, r1.Labels, "a round that does not refit still says what its reviewers decided")
	assert.Equal(t, labels, *r1.Labels)

	r2 := run(&r1, ExportOutput{Readiness: Readiness{Ready: true}}, &RefitOutput{Decision: Decision{Version: "v2", Reason: "refused v2: it ranks worse: …"}, Current: "v1"})
	assert.Equal(t, 2, r2.Rounds)
	assert.Nil(t, r2.Labels, "no reviewer decisions, none to say")
	assert.Equal(t, 1, r2.Refused)
	assert.Equal(t, []string{"refused v2: it ranks worse: …"}, r2.Refusals)

	r3 := run(&r2, ExportOutput{Readiness: Readiness{Ready: true}}, &RefitOutput{Decision: Decision{Version: "v3", Promote: true, Reason: "promote v3: …"}, Promoted: true, Current: "v3"})
	assert.Equal(t, 3, r3.Rounds)
	assert.Equal(t, 1, r3.Promoted)
	assert.Equal(t, 1, r3.Refused)
	assert.Equal(t, "v3", r3.Current)
	assert.Equal(t, "round 3 for Job: promote v3: …", r3.Sentence)
}

// A round names its series and gives it to both activities (the next round
// keeps it), runs them on Input.TaskQueue when set, and carries what the
// export read and stored in its result.
func TestWorkflowRoundsKeepTheirSeriesAndQueue(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	run := func(in Input) (Result, []string, []string) {
		env := s.NewTestWorkflowEnvironment()
		var queues, series []string
		env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
			queues = append(queues, info.TaskQueue)
		})
		env.RegisterActivityWithOptions(func(ctx context.Context, in ExportInput) (ExportOutput, error) {
			series = append(series, in.Series)
			return ExportOutput{NewRuns: 7, Read: 7, Stored: 40, Readiness: Readiness{Ready: true}}, nil
		}, activity.RegisterOptions{Name: ExportActivityName})
		env.RegisterActivityWithOptions(func(ctx context.Context, in RefitInput) (RefitOutput, error) {
			series = append(series, in.Series)
			return RefitOutput{Decision: Decision{Version: "v2", Reason: "refused v2"}, Current: "v1"}, nil
		}, activity.RegisterOptions{Name: RefitActivityName})
		env.ExecuteWorkflow(Workflow, in)
		require.True(t, env.IsWorkflowCompleted())
		require.NoError(t, env.GetWorkflowError())
		var res Result
		require.NoError(t, env.GetWorkflowResult(&res))
		return res, queues, series
	}
	first, queues, series := run(Input{Type: "Job", Where: "TaskQueue = 'a'", TaskQueue: "learn-rounds"})
	assert.Equal(t, []string{"learn-rounds", "learn-rounds"}, queues, "both activities on the rounds' own queue")
	require.NotEmpty(t, first.Series)
	assert.Equal(t, []string{first.Series, first.Series}, series)
	assert.Equal(t, [3]int{7, 7, 40}, [3]int{first.NewRuns, first.Read, first.Stored})

	second, queues, series := run(Input{Type: "Job", Where: "TaskQueue = 'a'", Previous: &first})
	assert.NotContains(t, queues, "learn-rounds", "without Input.TaskQueue, the round's own queue")
	assert.Equal(t, first.Series, second.Series, "the next round keeps the series")
	assert.Equal(t, []string{first.Series, first.Series}, series)

	other, _, _ := run(Input{Type: "Job", Where: "TaskQueue = 'b'", Previous: &first})
	assert.NotEqual(t, first.Series, other.Series, "other jobs: another series")
}
