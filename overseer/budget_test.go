package overseer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// spendingWorkflow runs n phases an hour apart, each reporting 600 tokens
// and a turn when report is set.
func spendingWorkflow(ctx workflow.Context, n int, report bool) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	for i := range n {
		if i > 0 {
			if err := workflow.Sleep(ctx, time.Hour); err != nil {
				return i, err
			}
		}
		if err := workflow.ExecuteActivity(ctx, "work", report).Get(ctx, nil); err != nil {
			return i, err
		}
	}
	return n, nil
}

func budgetEnv(t *testing.T, opts overseer.Options) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	return budgetEnvOf(t, &s, opts)
}

// budgetEnvOf is budgetEnv in suite s (its metrics handler), with
// interceptors.
func budgetEnvOf(t *testing.T, s *testsuite.WorkflowTestSuite, opts overseer.Options, interceptors ...interceptor.WorkerInterceptor) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	env := s.NewTestWorkflowEnvironment()
	judge := jev.NewScripted(onTrack())
	judge.Repeat = true
	opts.Judge, opts.Placement = judge, overseer.PlacementLocalActivity
	plugin, err := overseer.NewPlugin(opts)
	require.NoError(t, err)
	env.SetWorkerOptions(worker.Options{Plugins: []worker.Plugin{plugin}, Interceptors: interceptors})
	env.RegisterWorkflowWithOptions(spendingWorkflow, workflow.RegisterOptions{Name: "Spending"})
	env.RegisterActivityWithOptions(func(_ context.Context, report bool) (overseer.ReportCarrier, error) {
		if !report {
			return overseer.ReportCarrier{}, nil
		}
		return overseer.ReportCarrier{OverseerReport: &overseer.PhaseReport{Turns: 1, InputTokens: 500, OutputTokens: 100}}, nil
	}, activity.RegisterOptions{Name: "work"})
	return env
}

// updateResume sends a resume update; *refused is its refusal, if any,
// once the environment has run it.
func updateResume(env *testsuite.TestWorkflowEnvironment, req overseer.ResumeRequest, refused *error) {
	env.UpdateWorkflow(overseer.ResumeName, "", &testsuite.TestUpdateCallback{
		OnAccept:   func() {},
		OnReject:   func(err error) { *refused = err },
		OnComplete: func(any, error) {},
	}, req)
}

// A token budget reads Needs a look at 80 % with the budget named, opens a
// gate of its own at 100 % in manage mode, refuses a continue that does
// not raise it above the spend, and resumes with a raised one.
func TestABudgetOpensItsOwnGateAndARaisedBudgetResumes(t *testing.T) {
	env := budgetEnv(t, overseer.Options{Mode: overseer.ModeManage, Budgets: map[string]overseer.Budget{"Spending": {Tokens: 2000}}})
	var warned, paused overseer.Status
	var noRaise, tooLittle, raised error
	env.RegisterDelayedCallback(func() { warned = envStatus(t, env) }, 2*time.Hour+time.Minute) // after the third phase: 1800 tokens
	env.RegisterDelayedCallback(func() {
		paused = envStatus(t, env)
		updateResume(env, overseer.ResumeRequest{By: "reviewer", Note: "go on"}, &noRaise)
	}, 5*time.Hour)
	env.RegisterDelayedCallback(func() {
		updateResume(env, overseer.ResumeRequest{By: "reviewer", Budget: &overseer.Budget{Tokens: 2200}}, &tooLittle)
	}, 5*time.Hour+time.Minute)
	env.RegisterDelayedCallback(func() {
		updateResume(env, overseer.ResumeRequest{By: "reviewer", Note: "worth it", Budget: &overseer.Budget{Tokens: 10_000}}, &raised)
	}, 5*time.Hour+2*time.Minute)
	env.ExecuteWorkflow("Spending", 6, true)
	require.NoError(t, env.GetWorkflowError())

	require.NotNil(t, warned.Budget)
	assert.Equal(t, overseer.BandNeedsALook, warned.Band, "at 90%% of the budget")
	assert.Equal(t, "spent 1800 tokens of its budget of 2000 tokens (90%)", warned.Budget.Warning)
	assert.False(t, warned.Paused)

	require.True(t, paused.Paused)
	require.Len(t, paused.Gates, 1)
	g := paused.Gates[0]
	assert.Equal(t, overseer.GateKindBudget, g.Kind)
	assert.Equal(t, "budget: the job spent 2400 tokens of its budget of 2000 tokens (120%)", g.Reason)
	assert.Equal(t, "budget: the job spent 2400 tokens of its budget of 2000 tokens (120%)", paused.PauseReason)
	require.Error(t, noRaise)
	assert.Contains(t, noRaise.Error(), "was opened by the job's budget (2000 tokens): continue with a raised budget")
	require.Error(t, tooLittle)
	assert.Contains(t, tooLittle.Error(), "the raised budget (2200 tokens) is still reached: the job spent 2400 tokens")
	require.NoError(t, raised)

	st := envStatus(t, env)
	assert.Equal(t, 1, st.Counters.Pauses, "no gate after the raise")
	require.NotNil(t, st.Budget)
	assert.Equal(t, int64(10_000), st.Budget.Limit.Tokens)
	assert.Equal(t, int64(3600), st.Budget.Spent.Tokens)
	assert.Empty(t, st.Budget.Exceeded)
	require.NotNil(t, st.Gates[0].RaisedBudget)
	assert.Equal(t, int64(10_000), st.Gates[0].RaisedBudget.Tokens)
}

// At a budget's gate an abort ends the job.
func TestABudgetGateAbortEndsTheJob(t *testing.T) {
	env := budgetEnv(t, overseer.Options{Mode: overseer.ModeManage, Budget: overseer.Budget{PhaseRuns: 2}})
	var refused error
	env.RegisterDelayedCallback(func() {
		updateResume(env, overseer.ResumeRequest{By: "reviewer", Action: overseer.ActionAbort}, &refused)
	}, 3*time.Hour)
	env.ExecuteWorkflow("Spending", 5, true)
	require.NoError(t, refused)
	err := env.GetWorkflowError()
	require.Error(t, err)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app))
	assert.Equal(t, overseer.AbortedErrorType, app.Type())
	st := envStatus(t, env)
	require.NotEmpty(t, st.Gates)
	assert.Equal(t, overseer.GateKindBudget, st.Gates[0].Kind)
	assert.Equal(t, 2, st.Counters.Phases, "stopped at its second phase run")
}

// A budget of workflow time opens its gate at the boundary that reaches it.
func TestAnElapsedBudgetOpensItsGate(t *testing.T) {
	env := budgetEnv(t, overseer.Options{Mode: overseer.ModeManage, Budget: overseer.Budget{Elapsed: 150 * time.Minute}})
	var paused overseer.Status
	var refused error
	env.RegisterDelayedCallback(func() {
		paused = envStatus(t, env)
		updateResume(env, overseer.ResumeRequest{By: "reviewer", Budget: &overseer.Budget{Elapsed: 24 * time.Hour}}, &refused)
	}, 10*time.Hour)
	env.ExecuteWorkflow("Spending", 5, true)
	require.NoError(t, env.GetWorkflowError())
	require.NoError(t, refused)
	require.True(t, paused.Paused)
	assert.Equal(t, 4, paused.Counters.Phases, "the fourth phase ends 3h in, past 2h30m")
	assert.Equal(t, "budget: the job spent 3h0m0s of its budget of 2h30m0s (120%)", paused.PauseReason)
}

// Observe mode shows the spend against the budget and never stops.
func TestObserveModeShowsTheSpendAndNeverStops(t *testing.T) {
	env := budgetEnv(t, overseer.Options{Mode: overseer.ModeObserve, Budget: overseer.Budget{Tokens: 1000}})
	env.ExecuteWorkflow("Spending", 4, true)
	require.NoError(t, env.GetWorkflowError())
	var n int
	require.NoError(t, env.GetWorkflowResult(&n))
	assert.Equal(t, 4, n)
	st := envStatus(t, env)
	assert.Zero(t, st.Counters.Pauses)
	require.NotNil(t, st.Budget)
	assert.Equal(t, "spent 2400 tokens of its budget of 1000 tokens (240%)", st.Budget.Exceeded)
	assert.Equal(t, overseer.BandNeedsALook, st.Band)
}

// A bound the phases report nothing for is shown as unchecked, and opens
// no gate.
func TestABudgetThePhasesReportNothingForIsUnchecked(t *testing.T) {
	env := budgetEnv(t, overseer.Options{Mode: overseer.ModeManage, Budget: overseer.Budget{Tokens: 1000, Turns: 2, CostUSD: 1}})
	env.ExecuteWorkflow("Spending", 3, false)
	require.NoError(t, env.GetWorkflowError())
	st := envStatus(t, env)
	require.NotNil(t, st.Budget)
	assert.Equal(t, []string{"tokens", "cost", "turns"}, st.Budget.Unchecked)
	assert.Zero(t, st.Counters.Pauses)
	assert.Equal(t, overseer.BandOnTrack, st.Band)
}

// A run's memo sets its budget; one that cannot be read fails the run at
// its start in one sentence.
func TestTheMemoSetsARunsBudget(t *testing.T) {
	env := budgetEnv(t, overseer.Options{Mode: overseer.ModeObserve})
	require.NoError(t, env.SetMemoOnStart(map[string]any{overseer.BudgetMemoKey: `{"phase_runs": 2}`}))
	env.ExecuteWorkflow("Spending", 3, true)
	require.NoError(t, env.GetWorkflowError())
	st := envStatus(t, env)
	require.NotNil(t, st.Budget)
	assert.Equal(t, "spent 3 phase runs of its budget of 2 phase runs (150%)", st.Budget.Exceeded)

	bad := budgetEnv(t, overseer.Options{Mode: overseer.ModeObserve})
	require.NoError(t, bad.SetMemoOnStart(map[string]any{overseer.BudgetMemoKey: `{"tokens": -5}`}))
	bad.ExecuteWorkflow("Spending", 3, true)
	err := bad.GetWorkflowError()
	require.Error(t, err)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app))
	assert.Equal(t, overseer.InvalidBudgetErrorType, app.Type())
	assert.Contains(t, app.Message(), "overseer: memo overseer.budget: overseer: a budget's bound is negative")
}

// What a view shows of a budget: the summary in the memo carries the
// spend, the budget and how near the job is to it; OverseerBudget says
// near, then reached; the gate's pause is counted with cause budget, the
// budget reached once, and the aborted job's tokens by its outcome.
func TestABudgetIsShownWherePeopleLook(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	m := newCapture()
	s.SetMetricsHandler(m)
	seen := &memosSeen{}
	env := budgetEnvOf(t, &s, overseer.Options{Mode: overseer.ModeManage, SearchAttributes: true, BudgetSearchAttribute: true,
		Budget: overseer.Budget{Tokens: 2000}}, seen)
	var budgetSA []any
	env.OnUpsertTypedSearchAttributes(mockAny).Run(func(args mock.Arguments) {
		if v, ok := describeSA(args.Get(0))["OverseerBudget"]; ok {
			budgetSA = append(budgetSA, v)
		}
	}).Return(nil)
	var refused error
	env.RegisterDelayedCallback(func() {
		updateResume(env, overseer.ResumeRequest{By: "reviewer", Action: overseer.ActionAbort}, &refused)
	}, 5*time.Hour)
	env.ExecuteWorkflow("Spending", 6, true)
	require.NoError(t, refused)
	require.Error(t, env.GetWorkflowError())

	seen.mu.Lock()
	defer seen.mu.Unlock()
	require.NotEmpty(t, seen.summaries)
	var states []string
	for _, sum := range seen.summaries {
		if len(states) == 0 || states[len(states)-1] != sum.BudgetState {
			states = append(states, sum.BudgetState)
		}
	}
	assert.Equal(t, []string{"", overseer.BudgetNear, overseer.BudgetReached}, states)
	last := seen.summaries[len(seen.summaries)-1]
	assert.Equal(t, int64(2400), last.Spent.Tokens)
	assert.Equal(t, 4, last.Spent.Turns)
	require.NotNil(t, last.Budget)
	assert.Equal(t, int64(2000), last.Budget.Tokens)

	// Unset below 80 % (not in the upsert's values), near at 1800 tokens,
	// reached at 2400.
	assert.Equal(t, []any{overseer.BudgetNear, overseer.BudgetReached}, compact(budgetSA))

	m.mu.Lock()
	defer m.mu.Unlock()
	assert.Equal(t, int64(1), m.counts["overseer_pauses{cause=budget}"])
	assert.Zero(t, m.counts["overseer_pauses{cause=verdict}"])
	assert.Equal(t, int64(1), m.counts["overseer_budgets_reached{mode=manage}"])
	assert.Equal(t, int64(2400), m.counts["overseer_job_tokens{outcome=aborted}"])
}

// compact drops consecutive repeats.
func compact(vs []any) []any {
	var out []any
	for _, v := range vs {
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	return out
}

// A relative budget in the run's pinned policy (as a promoted model's
// policy carries it): the job reads Needs a look once its tokens reach the
// factor times what the type's succeeded jobs had spent by the same phase
// run, with the comparison named, and near its budget; in manage mode it
// opens no gate.
func TestARelativeBudgetReadsNeedsALookAndNeverStops(t *testing.T) {
	policy := overseer.DefaultPolicy()
	policy.Spend = &overseer.SpendBudget{Curve: []int64{300, 600, 900}, Factor: 1.8, MaxReached: 0.05, Jobs: 40}
	env := budgetEnv(t, overseer.Options{Mode: overseer.ModeManage, Policy: policy})
	var first overseer.Status
	env.RegisterDelayedCallback(func() { first = envStatus(t, env) }, time.Minute) // after the first phase: 600 tokens, 2× 300
	env.ExecuteWorkflow("Spending", 4, true)
	require.NoError(t, env.GetWorkflowError())

	require.NotNil(t, first.Budget)
	assert.Equal(t, "spent 600 tokens by phase run 1, 2.0× what the type's succeeded jobs typically had (300); at most 5% of jobs like them reach 1.8×", first.Budget.RelativeReached)
	assert.Equal(t, overseer.BudgetNear, first.Budget.State())
	assert.Equal(t, overseer.BandNeedsALook, first.Band)
	st := envStatus(t, env)
	assert.Zero(t, st.Counters.Pauses, "a relative budget never opens a gate")
	require.NotNil(t, st.Budget)
	assert.Equal(t, "spent 2400 tokens by phase run 4, 2.7× what the type's succeeded jobs typically had (900); at most 5% of jobs like them reach 1.8×", st.Budget.RelativeReached)
}
