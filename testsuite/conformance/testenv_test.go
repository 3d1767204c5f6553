package conformance_test

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	sdktestsuite "go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/testsuite/conformance"
)

func testEnv(t *testing.T, p conformance.Pattern, m conformance.Mode, opts overseer.Options) *sdktestsuite.TestWorkflowEnvironment {
	t.Helper()
	var s sdktestsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := s.NewTestWorkflowEnvironment()
	wo := worker.Options{EnableSessionWorker: p.SessionWorker}
	if m.Plugin {
		plugin, err := overseer.NewPlugin(opts)
		require.NoError(t, err)
		wo.Plugins = []worker.Plugin{plugin}
	}
	env.SetWorkerOptions(wo)
	if p.DataConverter != nil {
		env.SetDataConverter(p.DataConverter())
	}
	p.Register(env)
	return env
}

// runInTestEnv runs p in the SDK's test environment, driven by its steps
// a second of workflow time apart.
func runInTestEnv(t *testing.T, p conformance.Pattern, m conformance.Mode, opts overseer.Options) (conformance.Outcome, *sdktestsuite.TestWorkflowEnvironment) {
	t.Helper()
	env := testEnv(t, p, m, opts)
	acts := conformance.NewActivities()
	acts.Register(env)
	var o conformance.Outcome
	for i, step := range p.Drive {
		env.RegisterDelayedCallback(func() {
			switch step.Kind {
			case conformance.StepSignal:
				env.SignalWorkflow(step.Name, step.Arg)
			case conformance.StepUpdate:
				env.UpdateWorkflow(step.Name, "", &sdktestsuite.TestUpdateCallback{
					OnReject:   func(err error) { o.Updates = append(o.Updates, "rejected: "+err.Error()) },
					OnAccept:   func() {},
					OnComplete: func(v any, err error) { o.Updates = append(o.Updates, conformance.UpdateOutcome(err)) },
				}, step.Arg)
			}
		}, time.Duration(i+1)*100*time.Millisecond)
	}
	env.ExecuteWorkflow(p.Name, p.Input)
	require.True(t, env.IsWorkflowCompleted())
	var can *workflow.ContinueAsNewError
	if err := env.GetWorkflowError(); errors.As(err, &can) {
		o.Err = "continued as new with " + can.WorkflowType.Name
	} else if err != nil {
		o.Err = err.Error()
	} else {
		require.NoError(t, env.GetWorkflowResult(&o.Result))
	}
	if len(p.Race) == 0 { // a race's losers may not have started when it ends
		o.Calls = acts.Calls()
	}
	return o, env
}

// Every pattern does in every mode what it does without the plugin, in
// the SDK's test environment: the same result or error, the same handler
// outcomes, the same activities called; and manage mode with a judge
// that never pauses opens no gate.
func TestPatternsInTheTestEnvironment(t *testing.T) {
	for _, p := range conformance.Patterns() {
		t.Run(p.Name, func(t *testing.T) {
			var want conformance.Outcome
			for i, m := range conformance.Modes() {
				got, env := runInTestEnv(t, p, m, m.Options)
				if i == 0 {
					want = got
					if !strings.HasPrefix(want.Err, "continued as new") { // the test environment runs one run
						assert.Empty(t, want.Err, "the pattern completes without the plugin")
					}
					continue
				}
				assert.Equal(t, want, got, "%s in mode %s", p.Name, m.Name)
				if m.Options.Mode == overseer.ModeOff || got.Err != "" {
					continue
				}
				st := envStatus(t, env)
				assert.Zero(t, st.Counters.Pauses, "no gate")
				if p.Phases > 0 {
					assert.Equal(t, p.Phases, st.Counters.Phases, "the workflow's own phases, none of the SDK's")
				}
			}
		})
	}
}

// A unit test that mocks the workflow's own UpsertMemo passes with the
// plugin in every mode once the summary memo is off (NoSummaryMemo): the
// SDK's test environment hands every UpsertMemo, the overseer's too, to
// the mock. Without the option the mock sees the overseer's summary.
func TestAWorkflowsUpsertMemoMockSeesOnlyItsOwnMemo(t *testing.T) {
	var memo conformance.Pattern
	for _, p := range conformance.Patterns() {
		if p.MocksUpsertMemo {
			memo = p
		}
	}
	require.NotEmpty(t, memo.Name)
	for _, m := range conformance.Modes() {
		t.Run(m.Name, func(t *testing.T) {
			opts := m.Options
			opts.NoSummaryMemo = true
			env := testEnv(t, memo, m, opts)
			conformance.NewActivities().Register(env)
			env.OnUpsertMemo(map[string]any{"owner": "team-a"}).Return(nil).Once()
			env.OnUpsertMemo(map[string]any{"stage": "done"}).Return(nil).Once()
			env.ExecuteWorkflow(memo.Name, 0)
			require.NoError(t, env.GetWorkflowError())
			var result string
			require.NoError(t, env.GetWorkflowResult(&result))
			assert.Equal(t, "memo: owner,stage", result)
			env.AssertExpectations(t)
		})
	}
	t.Run("observe with the summary", func(t *testing.T) {
		env := testEnv(t, memo, conformance.Modes()[2], overseer.Options{Mode: overseer.ModeObserve})
		conformance.NewActivities().Register(env)
		env.OnUpsertMemo(mock.Anything).Return(nil)
		env.ExecuteWorkflow(memo.Name, 0)
		require.NoError(t, env.GetWorkflowError())
		var result string
		require.NoError(t, env.GetWorkflowResult(&result))
		assert.Equal(t, "memo: owner,stage", result, "GetInfo does not show the summary")
	})
}

// Manage mode with the default judge and policy pauses where a person is
// needed: on the patterns, which handle their failures (a saga that
// compensates, a retry loop in workflow code, a lost session) and
// complete, it opens no gate and changes nothing; on a phase that keeps
// failing the same way it opens one, at the third failure.
func TestManageModeWithTheDefaultJudgeAndPolicy(t *testing.T) {
	managed := conformance.Mode{Name: "manage with the default judge", Plugin: true, Options: overseer.Options{Mode: overseer.ModeManage}}
	for _, p := range conformance.Patterns() {
		t.Run(p.Name, func(t *testing.T) {
			want, _ := runInTestEnv(t, p, conformance.Modes()[0], overseer.Options{})
			got, env := runInTestEnv(t, p, managed, managed.Options)
			assert.Equal(t, want, got)
			if got.Err != "" {
				return
			}
			st := envStatus(t, env)
			assert.Zero(t, st.Counters.Pauses, "no gate")
		})
	}

	t.Run("a phase that keeps failing", func(t *testing.T) {
		p := conformance.Pattern{Name: "KeepsFailing", Workflow: keepsFailing}
		env := testEnv(t, p, managed, managed.Options)
		conformance.NewActivities().Register(env)
		var st overseer.Status
		env.RegisterDelayedCallback(func() {
			st = envStatus(t, env)
			env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "reviewer", Action: overseer.ActionAbort})
		}, time.Hour)
		env.ExecuteWorkflow(p.Name, 0)
		require.True(t, env.IsWorkflowCompleted())
		require.True(t, st.Paused, "a gate opened")
		require.Len(t, st.Gates, 1)
		assert.Equal(t, 3, st.Counters.Phases, "at the third failure of the phase")
		assert.Contains(t, st.Gates[0].Evidence, "Fail failed 3 times in a row, each time with the same error: charge is unavailable")
	})
}

// keepsFailing calls a phase that fails the same way every time, five
// times at most, a second apart.
func keepsFailing(ctx workflow.Context, _ int) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	for range 5 {
		if err := workflow.ExecuteActivity(ctx, conformance.ActivityFail, "charge").Get(ctx, nil); err == nil {
			return "charged", nil
		}
		if err := workflow.Sleep(ctx, time.Second); err != nil {
			return "", err
		}
	}
	return "", errors.New("gave up")
}

// envStatus queries the run's overseer status in the test environment.
func envStatus(t *testing.T, env *sdktestsuite.TestWorkflowEnvironment) overseer.Status {
	t.Helper()
	v, err := env.QueryWorkflow(overseer.StatusQueryName)
	require.NoError(t, err)
	var st overseer.Status
	require.NoError(t, v.Get(&st))
	return st
}
