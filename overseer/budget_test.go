package overseer_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/judge"
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
	assert.Equal(t, "spent 600 tokens by phase run 1, 2.0× what the type's succeeded jobs typically had (300 tokens); at most 5% of jobs like them reach 1.8×", first.Budget.RelativeReached)
	assert.Equal(t, overseer.BudgetNear, first.Budget.State())
	assert.Equal(t, overseer.BandNeedsALook, first.Band)
	st := envStatus(t, env)
	assert.Zero(t, st.Counters.Pauses, "a relative budget never opens a gate")
	require.NotNil(t, st.Budget)
	assert.Equal(t, "spent 2400 tokens by phase run 4, 2.7× what the type's succeeded jobs typically had (900 tokens); at most 5% of jobs like them reach 1.8×", st.Budget.RelativeReached)
}

// Time spent at a budget's gate counts against a time budget, so a raise
// is checked against the spend when the resume arrives: 7 hours at the
// gate of a 2h30m budget, a raise to 4h is refused (the job has spent 10h),
// and one to 24h resumes.
func TestATimeRaiseIsCheckedWhenTheResumeArrives(t *testing.T) {
	env := budgetEnv(t, overseer.Options{Mode: overseer.ModeManage, Budget: overseer.Budget{Elapsed: 150 * time.Minute}})
	var tooLittle, enough error
	env.RegisterDelayedCallback(func() {
		updateResume(env, overseer.ResumeRequest{By: "reviewer", Budget: &overseer.Budget{Elapsed: 4 * time.Hour}}, &tooLittle)
	}, 10*time.Hour)
	env.RegisterDelayedCallback(func() {
		updateResume(env, overseer.ResumeRequest{By: "reviewer", Budget: &overseer.Budget{Elapsed: 24 * time.Hour}}, &enough)
	}, 10*time.Hour+time.Minute)
	env.ExecuteWorkflow("Spending", 5, true)
	require.NoError(t, env.GetWorkflowError())
	require.Error(t, tooLittle)
	assert.Contains(t, tooLittle.Error(), "the raised budget (4h0m0s) is still reached: the job spent 10h0m0s of its budget of 4h0m0s (250%)")
	require.NoError(t, enough)
	st := envStatus(t, env)
	assert.Equal(t, 1, st.Counters.Pauses, "no second budget gate after a raise that holds")
	assert.Equal(t, 5, st.Counters.Phases)
}

// A gate deadline whose action is continue does not continue a budget's
// gate unraised: it escalates, and the gate waits for a raise or an abort.
func TestAContinueDeadlineEscalatesABudgetGate(t *testing.T) {
	env := budgetEnv(t, overseer.Options{Mode: overseer.ModeManage, Budget: overseer.Budget{Tokens: 2000},
		GateDeadline: overseer.GateDeadline{After: 30 * time.Minute, Action: overseer.DeadlineContinue}})
	var waiting overseer.Status
	var raised error
	env.RegisterDelayedCallback(func() {
		waiting = envStatus(t, env)
		updateResume(env, overseer.ResumeRequest{By: "reviewer", Budget: &overseer.Budget{Tokens: 10_000}}, &raised)
	}, 8*time.Hour)
	env.ExecuteWorkflow("Spending", 6, true)
	require.NoError(t, env.GetWorkflowError())

	require.True(t, waiting.Paused, "still at the budget's gate hours after its continue deadline")
	require.Len(t, waiting.Gates, 1)
	g := waiting.Gates[0]
	assert.Equal(t, overseer.GateKindBudget, g.Kind)
	assert.False(t, g.Expired)
	require.NotNil(t, g.EscalatedAt)
	assert.Equal(t, "deadline 30m: continue (a budget gate continues only with a raised budget: escalated instead)", g.EscalatedBy)
	assert.Equal(t, 4, waiting.Counters.Phases, "no phase ran past the budget")

	require.NoError(t, raised)
	st := envStatus(t, env)
	assert.Equal(t, 1, st.Counters.Pauses)
	assert.Equal(t, 6, st.Counters.Phases)
}

// twoAtOnceWorkflow runs two phases at once, then a last one: when the
// first one's verdict opens a gate and the second one reaches the budget,
// both gates are open together.
func twoAtOnceWorkflow(ctx workflow.Context) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	first, second := workflow.ExecuteActivity(ctx, "spend"), workflow.ExecuteActivity(ctx, "spend")
	if err := first.Get(ctx, nil); err != nil {
		return err
	}
	if err := second.Get(ctx, nil); err != nil {
		return err
	}
	return workflow.ExecuteActivity(ctx, "spend").Get(ctx, nil)
}

// A raise given at one gate holds for a budget gate open at the same time:
// that gate then takes a continue without a raise of its own.
func TestARaiseAtOneGateLetsTheBudgetGateContinue(t *testing.T) {
	env := (&testsuite.WorkflowTestSuite{}).NewTestWorkflowEnvironment()
	scripted := jev.NewScripted(flagged(), onTrack(), onTrack())
	// The second of the two phases at once ends after the first one's
	// verdict: ended together, both would be counted at the first
	// boundary, whose one gate would then be the budget's.
	judged := make(chan struct{})
	var judgedOnce sync.Once
	judge := jev.JudgeFunc(func(ctx context.Context, req jev.Request) (*jev.Response, error) {
		defer judgedOnce.Do(func() { close(judged) })
		return scripted.Decide(ctx, req)
	})
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeManage, Judge: judge, Placement: overseer.PlacementLocalActivity,
		Budget: overseer.Budget{Tokens: 1000}})
	require.NoError(t, err)
	env.SetWorkerOptions(worker.Options{Plugins: []worker.Plugin{plugin}})
	env.RegisterWorkflowWithOptions(twoAtOnceWorkflow, workflow.RegisterOptions{Name: "TwoAtOnce"})
	var spends atomic.Int32
	env.RegisterActivityWithOptions(func(ctx context.Context) (overseer.ReportCarrier, error) {
		if spends.Add(1) == 2 {
			select {
			case <-judged:
			case <-ctx.Done():
				return overseer.ReportCarrier{}, ctx.Err()
			}
		}
		return overseer.ReportCarrier{OverseerReport: &overseer.PhaseReport{InputTokens: 700}}, nil
	}, activity.RegisterOptions{Name: "spend"})
	var both overseer.Status
	var verdictRaise, budgetContinue error
	env.RegisterDelayedCallback(func() {
		both = envStatus(t, env)
		var verdict, budget string
		for _, g := range both.Gates {
			if g.Kind == overseer.GateKindBudget {
				budget = g.ID
			} else {
				verdict = g.ID
			}
		}
		updateResume(env, overseer.ResumeRequest{By: "reviewer", Gate: verdict, Note: "go on", Budget: &overseer.Budget{Tokens: 5000}}, &verdictRaise)
		updateResume(env, overseer.ResumeRequest{By: "reviewer", Gate: budget}, &budgetContinue)
	}, 5*time.Hour)
	env.ExecuteWorkflow("TwoAtOnce")
	require.NoError(t, env.GetWorkflowError())

	require.Len(t, both.Gates, 2, "a verdict's gate and a budget's gate open together")
	require.NoError(t, verdictRaise)
	require.NoError(t, budgetContinue, "the budget in force (5000 tokens) is no longer reached")
	st := envStatus(t, env)
	assert.Equal(t, 2, st.Counters.Pauses)
	assert.Equal(t, 3, st.Counters.Phases)
}

// ParseBudget takes one JSON object: data after it is refused, not
// dropped.
func TestParseBudgetRefusesTrailingData(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want overseer.Budget
		err  string
	}{
		{in: `{"tokens": 2000}`, want: overseer.Budget{Tokens: 2000}},
		{in: " {\"tokens\": 2000, \"cost_usd\": 40}\n", want: overseer.Budget{Tokens: 2000, CostUSD: 40}},
		{in: `{"tokens": 2000} {"cost_usd": 40}`, err: "it has data after its JSON object; give every bound in one object"},
		{in: `{"tokens": 2000} x`, err: "it has data after its JSON object"},
		{in: `{"tokens": 2000, "cost": 40}`, err: `unknown field "cost"`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := overseer.ParseBudget(tc.in)
			if tc.err != "" {
				require.ErrorIs(t, err, overseer.ErrInvalidBudget)
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// A continue-as-new successor that pins no budget of its own (its memo
// sets none, its type has none) keeps the one its predecessor ran with.
func TestASuccessorWithoutABudgetKeepsItsPredecessors(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	judge := jev.NewScripted(onTrack())
	judge.Repeat = true
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeObserve, Judge: judge, Placement: overseer.PlacementLocalActivity})
	require.NoError(t, err)
	rec := &recorder{}
	runs := 3
	var header *commonpb.Header
	for {
		env := s.NewTestWorkflowEnvironment()
		env.SetWorkerOptions(worker.Options{Plugins: []worker.Plugin{plugin}})
		env.RegisterWorkflow(continuingWorkflow)
		env.RegisterActivityWithOptions(rec.phase, activity.RegisterOptions{Name: "code"})
		if header == nil {
			require.NoError(t, env.SetMemoOnStart(map[string]any{overseer.BudgetMemoKey: `{"phase_runs": 2}`}))
		} else {
			env.SetHeader(header)
		}
		env.ExecuteWorkflow(continuingWorkflow, runs)
		var can *workflow.ContinueAsNewError
		if err := env.GetWorkflowError(); errors.As(err, &can) {
			header, runs = can.Header, runs-1
			continue
		}
		require.NoError(t, env.GetWorkflowError())
		st := envStatus(t, env)
		require.NotNil(t, st.Budget, "the last run is still held to the first run's budget")
		assert.Equal(t, 2, st.Budget.Limit.PhaseRuns)
		assert.Equal(t, "spent 3 phase runs of its budget of 2 phase runs (150%)", st.Budget.Exceeded)
		return
	}
}

// With relative budget gates on, a job that reaches the type's relative
// budget waits at a budget gate once; a continue needs no raise, and the
// relative budget only advises after. Off (the default) it never stops.
func TestARelativeBudgetGateStopsOnceWhereTheTeamTurnsItOn(t *testing.T) {
	policy := overseer.DefaultLearnedPolicy()
	policy.Spend = &overseer.SpendBudget{Curve: []int64{300, 600, 900, 1200}, Factor: 1.5, MaxReached: 0.05, Jobs: 40}
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			env := budgetEnv(t, overseer.Options{Mode: overseer.ModeManage, Policy: policy, RelativeBudgetGates: on})
			var paused overseer.Status
			var cont error
			env.RegisterDelayedCallback(func() {
				paused = envStatus(t, env)
				if paused.Paused {
					updateResume(env, overseer.ResumeRequest{By: "reviewer", Note: "worth finishing"}, &cont)
				}
			}, 30*time.Minute)
			env.ExecuteWorkflow("Spending", 4, true)
			require.NoError(t, env.GetWorkflowError())
			st := envStatus(t, env)
			require.NotNil(t, st.Budget)
			assert.NotEmpty(t, st.Budget.RelativeReached, "600 tokens a phase run against a curve of 300")
			if !on {
				assert.False(t, paused.Paused)
				assert.Zero(t, st.Counters.Pauses, "a relative budget never stops a job on its own")
				return
			}
			require.True(t, paused.Paused)
			require.Len(t, paused.Gates, 1)
			assert.Equal(t, overseer.GateKindBudget, paused.Gates[0].Kind)
			assert.Contains(t, paused.PauseReason, "budget: the job reached the relative budget: it spent 600 tokens by phase run 1, 2.0× what the type's succeeded jobs typically had (300 tokens)")
			require.NoError(t, cont, "a continue needs no raise")
			assert.Equal(t, 1, st.Counters.Pauses, "once per job")
			assert.True(t, st.Budget.RelativeGated)
			assert.Equal(t, 4, st.Counters.Phases)
		})
	}
}

// A relative budget learned from few succeeded jobs compares what a job
// spent in all, at whatever phase run, and its gate's reason says what its
// promise assumes.
func TestARelativeBudgetOfTotalsStopsWhereTheJobsTotalReachesIt(t *testing.T) {
	policy := overseer.DefaultLearnedPolicy()
	policy.Spend = &overseer.SpendBudget{Curve: []int64{500}, Factor: 2, MaxReached: 0.05, Jobs: 6, Assumes: judge.SpendAssumesLogNormal}
	env := budgetEnv(t, overseer.Options{Mode: overseer.ModeManage, Policy: policy, RelativeBudgetGates: true})
	paused, cont := resumeAfter(t, env, 90*time.Minute) // the second phase runs an hour after the first
	env.ExecuteWorkflow("Spending", 4, true)
	require.NoError(t, env.GetWorkflowError())
	require.True(t, paused.Paused)
	require.Len(t, paused.Gates, 1)
	assert.Equal(t, overseer.GateKindBudget, paused.Gates[0].Kind)
	assert.Contains(t, paused.PauseReason, "it spent 1200 tokens by phase run 2, 2.4× what the type's succeeded jobs typically spent in all (500 tokens); "+
		"at most 5% of jobs like them reach 2.0×, if their spend is log-normal", "600 tokens at the first phase run are within 2× of 500; 1200 are not")
	require.NoError(t, *cont)
	st := envStatus(t, env)
	assert.Equal(t, 1, st.Counters.Pauses, "once per job")
	assert.Equal(t, 4, st.Counters.Phases)
}

// timeBudgetPolicy carries a relative budget of time in phases: 1.5× five
// minutes by the first phase run, ten by the second.
func timeBudgetPolicy() overseer.Policy {
	policy := overseer.DefaultLearnedPolicy()
	policy.Spend = &overseer.SpendBudget{PhaseTimeCurve: []time.Duration{5 * time.Minute, 10 * time.Minute}, Factor: 1.5, MaxReached: 0.05, Jobs: 40}
	return policy
}

// resumeAfter reads the job's status after d and resumes it then; what
// it read, and the resume's refusal, are there once the workflow ran.
func resumeAfter(t *testing.T, env *testsuite.TestWorkflowEnvironment, d time.Duration) (*overseer.Status, *error) {
	var paused overseer.Status
	var refused error
	env.RegisterDelayedCallback(func() {
		paused = envStatus(t, env)
		updateResume(env, overseer.ResumeRequest{By: "reviewer", Note: "fine"}, &refused)
	}, d)
	return &paused, &refused
}

// slowWorkflow runs n phases an hour apart; each phase's call fails once
// and succeeds on its retry ten minutes later, so that it takes ten
// minutes of the workflow's time.
func slowWorkflow(ctx workflow.Context, n int) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: 10 * time.Minute, MaximumAttempts: 2}})
	for i := range n {
		if i > 0 {
			if err := workflow.Sleep(ctx, time.Hour); err != nil {
				return i, err
			}
		}
		if err := workflow.ExecuteActivity(ctx, "slow").Get(ctx, nil); err != nil {
			return i, err
		}
	}
	return n, nil
}

// A relative budget of time compares the job's time in its phases with
// the succeeded jobs': ten minutes a phase against a curve of five reach
// it, and neither the hour between phases nor five hours at its gate
// count as time in phases.
func TestARelativeBudgetOfTimeCountsTimeInPhasesOnly(t *testing.T) {
	policy := timeBudgetPolicy()
	var s testsuite.WorkflowTestSuite
	env := budgetEnvOf(t, &s, overseer.Options{Mode: overseer.ModeManage, Policy: policy, RelativeBudgetGates: true})
	env.RegisterWorkflowWithOptions(slowWorkflow, workflow.RegisterOptions{Name: "Slow"})
	env.RegisterActivityWithOptions(func(ctx context.Context) (overseer.ReportCarrier, error) {
		if activity.GetInfo(ctx).Attempt == 1 {
			return overseer.ReportCarrier{}, errors.New("flaky")
		}
		return overseer.ReportCarrier{OverseerReport: &overseer.PhaseReport{Turns: 1}}, nil
	}, activity.RegisterOptions{Name: "slow"})
	paused, cont := resumeAfter(t, env, 5*time.Hour)
	env.ExecuteWorkflow("Slow", 2)
	require.NoError(t, env.GetWorkflowError())
	require.True(t, paused.Paused, "ten minutes in the first phase, twice the curve")
	require.Len(t, paused.Gates, 1)
	assert.Equal(t, overseer.GateKindBudget, paused.Gates[0].Kind)
	assert.Contains(t, paused.PauseReason, "it spent 10m0s in phases by phase run 1, 2.0× what the type's succeeded jobs typically had (5m0s in phases)")
	require.NoError(t, *cont)
	st := envStatus(t, env)
	require.NotNil(t, st.Budget)
	assert.Equal(t, "spent 20m0s in phases by phase run 2, 2.0× what the type's succeeded jobs typically had (10m0s in phases); at most 5% of jobs like them reach 1.5×",
		st.Budget.RelativeReached, "the hour between phases and the five at the gate are not time in phases")
	assert.Equal(t, 1, st.Counters.Pauses, "the relative budget's gate opens once")
}

// declaredSlowWorkflow declares two phases of ten minutes each.
func declaredSlowWorkflow(ctx workflow.Context) error {
	overseer.SetShape(ctx, overseer.ShapeDeclared)
	for _, phase := range []string{"plan", "code"} {
		if err := workflow.Sleep(ctx, 10*time.Minute); err != nil {
			return err
		}
		if err := overseer.Boundary(ctx, phase); err != nil {
			return err
		}
	}
	return nil
}

// A declared phase's time runs from the end of the boundary before it:
// the five hours the job waited at the first boundary's gate are no
// phase's time.
func TestADeclaredPhasesTimeLeavesOutTheGateBeforeIt(t *testing.T) {
	policy := timeBudgetPolicy()
	env := budgetEnv(t, overseer.Options{Mode: overseer.ModeManage, Policy: policy, RelativeBudgetGates: true})
	env.RegisterWorkflowWithOptions(declaredSlowWorkflow, workflow.RegisterOptions{Name: "DeclaredSlow"})
	paused, cont := resumeAfter(t, env, 5*time.Hour)
	env.ExecuteWorkflow("DeclaredSlow")
	require.NoError(t, env.GetWorkflowError())
	require.True(t, paused.Paused)
	require.NoError(t, *cont)
	st := envStatus(t, env)
	require.NotNil(t, st.Budget)
	assert.Equal(t, "spent 20m0s in phases by phase run 2, 2.0× what the type's succeeded jobs typically had (10m0s in phases); at most 5% of jobs like them reach 1.5×",
		st.Budget.RelativeReached)
}
