package conformance_test

import (
	"errors"
	"io"
	"log/slog"
	"slices"
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
	if len(p.Race) == 0 && !p.CallsVary { // a race's losers may not have started when it ends
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
				for _, a := range st.Assessments {
					assert.Empty(t, a.Error, "assessment %d of %s in mode %s: the workflow's own cancellations do not reach the judge", a.Seq, a.Phase, m.Name)
				}
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

// A gate holds whatever the workflow does with the context of the phase it
// flagged: a helper that cancels each phase's context as it returns, a
// race that cancels the loser's shared context, a session completed by a
// deferred CompleteSession right after its last phase. With the judge in
// workflow code or in a local activity, manage mode pauses after the
// first phase, holds the next one until the reviewer resumes, and the
// workflow then ends as it does without the plugin.
func TestAGateHoldsWhateverTheWorkflowDoesWithThePhasesContext(t *testing.T) {
	cases := []struct {
		pattern string
		// ranAtGate are the calls made while the gate is open; next is
		// the one it holds.
		ranAtGate []string
		next      string
	}{
		{pattern: "PhaseScoped", ranAtGate: []string{"Step spec"}, next: "Step code"},
		{pattern: "RaceCancelsTheLoser", ranAtGate: []string{"Step fast"}, next: "Step after-race"},
		{pattern: "SessionThenStep", ranAtGate: []string{"Step in-session"}, next: "Step after-session"},
	}
	patterns := map[string]conformance.Pattern{}
	for _, p := range conformance.Patterns() {
		patterns[p.Name] = p
	}
	for _, c := range cases {
		p, ok := patterns[c.pattern]
		require.True(t, ok, c.pattern)
		want, _ := runInTestEnv(t, p, conformance.Modes()[0], overseer.Options{})
		for _, placement := range []overseer.Placement{overseer.PlacementWorkflow, overseer.PlacementLocalActivity} {
			t.Run(c.pattern+"/"+string(placement), func(t *testing.T) {
				m := conformance.Mode{Name: "manage", Plugin: true,
					Options: overseer.Options{Mode: overseer.ModeManage, Judge: conformance.FlagsFirstPhase{}, Placement: placement}}
				env := testEnv(t, p, m, m.Options)
				acts := conformance.NewActivities()
				acts.Register(env)
				var atGate overseer.Status
				var callsAtGate []string
				env.RegisterDelayedCallback(func() {
					atGate = envStatus(t, env)
					// The race's loser may or may not have started.
					callsAtGate = slices.DeleteFunc(acts.Calls(), func(c string) bool { return c == "Held a" })
					env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "reviewer", Note: "go on"})
				}, time.Hour)
				env.ExecuteWorkflow(p.Name, p.Input)
				require.True(t, env.IsWorkflowCompleted())
				require.NoError(t, env.GetWorkflowError())
				var result string
				require.NoError(t, env.GetWorkflowResult(&result))
				assert.Equal(t, want.Result, result, "the workflow ends as it does without the plugin")

				require.True(t, atGate.Paused, "a gate was open an hour in")
				assert.Equal(t, c.ranAtGate, callsAtGate, "the gate holds %s", c.next)
				assert.Contains(t, acts.Calls(), c.next, "the resume let %s run", c.next)
				st := envStatus(t, env)
				require.Len(t, st.Gates, 1)
				g := st.Gates[0]
				assert.False(t, g.Cancelled, "the gate was not cancelled")
				assert.Equal(t, "reviewer", g.By)
				assert.Equal(t, overseer.ActionContinue, g.Action)
				for _, a := range st.Assessments {
					assert.Empty(t, a.Error, "assessment %d of %s", a.Seq, a.Phase)
				}
			})
		}
	}
}
