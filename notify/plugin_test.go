package notify_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/notify"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

func step(onObjective float64) jev.Step {
	return jev.Step{Response: &jev.Response{
		ModelVersion: "scripted-1",
		Answers: map[string]jev.Answer{
			overseer.QuestionBreach:   {Type: jev.Choice, Choice: overseer.BreachNone, Confidence: jev.Prob(0.9)},
			overseer.QuestionOffTrack: {Type: jev.Noul, Probability: jev.Prob(onObjective)},
			overseer.QuestionSeverity: {Type: jev.Score, Score: jev.Prob(0.2), Confidence: jev.Prob(0.7)},
			overseer.QuestionBlocked:  {Type: jev.Noul, Probability: jev.Prob(0.1)},
		},
	}}
}

func twoPhases(ctx workflow.Context) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	for _, p := range []string{"code", "test"} {
		if err := workflow.ExecuteActivity(ctx, p).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// TestPluginNotifiesAWebhookThatFailsItsFirstAttempts runs a managed job
// under the plugin with a signed webhook to a real receiver that answers
// 503 to the first two attempts of every event: the notify activity's
// retries deliver each of opened, escalated and expired once, every
// signature verifies, and the job ends at the final deadline.
func TestPluginNotifiesAWebhookThatFailsItsFirstAttempts(t *testing.T) {
	rcv := newReceiver(t, 2)
	hook, err := notify.NewWebhook(rcv.URL, secret)
	require.NoError(t, err)
	plugin, err := overseer.NewPlugin(overseer.Options{
		Mode:      overseer.ModeManage,
		Judge:     jev.NewScripted(step(0.1), step(0.9)),
		Placement: overseer.PlacementLocalActivity,
		GateDeadlines: map[string]overseer.GateDeadline{
			"twoPhases": {After: 24 * time.Hour, Action: overseer.DeadlineEscalate, FinalAfter: 72 * time.Hour, FinalAction: overseer.DeadlineAbort},
		},
		Notifier:     hook,
		DashboardURL: "http://127.0.0.1:8080",
	})
	require.NoError(t, err)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{Plugins: []worker.Plugin{plugin}})
	env.RegisterWorkflow(twoPhases)
	var ran []string
	for _, p := range []string{"code", "test"} {
		env.RegisterActivityWithOptions(func(context.Context) error { ran = append(ran, p); return nil }, activity.RegisterOptions{Name: p})
	}
	env.ExecuteWorkflow(twoPhases)
	require.True(t, env.IsWorkflowCompleted())
	assert.Equal(t, overseer.AbortedErrorType, overseer.ErrorType(env.GetWorkflowError()))
	assert.Equal(t, []string{"code"}, ran)

	assert.Equal(t, []overseer.GateEventKind{overseer.GateOpened, overseer.GateEscalated, overseer.GateExpired}, rcv.kinds())
	assert.Empty(t, rcv.refused, "every signature verified")
	for key, n := range rcv.attempts {
		assert.Equal(t, 3, n, "%s: two failed attempts, then the retry", key)
	}
	rcv.mu.Lock()
	var exp overseer.GateEvent
	for key, ev := range rcv.events {
		if ev.Kind == overseer.GateExpired {
			exp = ev
			assert.Equal(t, fmt.Sprintf("default-test-workflow-id/default-test-run-id/code-1/%d/expired", ev.OpenedAt.UnixMilli()), key)
		}
	}
	rcv.mu.Unlock()
	assert.Equal(t, "deadline 72h: abort", exp.Rule)
	assert.Equal(t, "http://127.0.0.1:8080/job?id=default-test-workflow-id", exp.DashboardURL, "the worker adds the dashboard link")

	v, err := env.QueryWorkflow(overseer.StatusQueryName)
	require.NoError(t, err)
	var st overseer.Status
	require.NoError(t, v.Get(&st))
	assert.Equal(t, 2, st.Counters.Notifications, "the run delivered the opening and the escalation")
	assert.Zero(t, st.Counters.NotifyFailures)
	assert.NotEmpty(t, st.NotifyWorkflow, "and handed the expiry that ended it to the notifier workflow")
	assert.True(t, st.Gates[0].Expired)
}
