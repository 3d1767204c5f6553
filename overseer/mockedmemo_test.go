package overseer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
)

// describingWorkflow writes its own memo, then runs one activity, as
// Temporal's memo sample does.
func describingWorkflow(ctx workflow.Context) error {
	if err := workflow.UpsertMemo(ctx, map[string]any{"description": "updated"}); err != nil {
		return err
	}
	if err := workflow.Sleep(ctx, time.Second); err != nil {
		return err
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	return workflow.ExecuteActivity(ctx, "DescribeWorkflow", workflow.GetInfo(ctx).WorkflowExecution.ID).Get(ctx, nil)
}

// A team's unit test that mocks UpsertMemo strictly, with exactly the memo
// its workflow writes and Once, passes with the plugin at its defaults on
// the test worker: the overseer's summary is not one of the workflow's
// memo writes the test expects, and the plugin does not make it fail.
func TestAStrictUpsertMemoMockPassesWithThePluginAtDefaults(t *testing.T) {
	for _, mode := range []overseer.Mode{overseer.ModeObserve, overseer.ModeManage} {
		t.Run(string(mode), func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			plugin, err := overseer.NewPlugin(overseer.Options{Mode: mode})
			require.NoError(t, err)
			env.SetWorkerOptions(worker.Options{Plugins: []worker.Plugin{plugin}})
			env.RegisterWorkflow(describingWorkflow)
			env.RegisterActivityWithOptions(func(context.Context, string) error { return nil }, activity.RegisterOptions{Name: "DescribeWorkflow"})
			env.OnUpsertMemo(map[string]any{"description": "updated"}).Return(nil).Once()
			env.OnActivity("DescribeWorkflow", mock.Anything, mock.Anything).Return(nil).Once()

			env.ExecuteWorkflow(describingWorkflow)
			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			env.AssertExpectations(t)
			var st overseer.Status
			v, err := env.QueryWorkflow(overseer.StatusQueryName)
			require.NoError(t, err)
			require.NoError(t, v.Get(&st))
			require.Equal(t, 1, st.Counters.Assessments, "the plugin oversaw the activity")
		})
	}
}
