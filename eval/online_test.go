package eval_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
)

// onlineRun is a handmade scored run: its P and cumulative tokens at each
// boundary, 10 s and $1 a call.
func onlineRun(id string, outcome eval.Outcome, p []float64, tokens []int64) eval.ScoredRun {
	r := eval.ScoredRun{ID: id, Outcome: outcome, Steps: len(p)}
	for i := range p {
		r.Points = append(r.Points, eval.Point{Steps: i + 1, Answers: overseer.Answers{OnObjective: p[i]},
			Spent: overseer.Budget{Tokens: tokens[i], CostUSD: float64(i + 1), Elapsed: time.Duration(i+1) * 10 * time.Second, Turns: i + 1, PhaseRuns: i + 1}})
	}
	return r
}

// onlineRuns: f1 is flagged at its 2nd call (P 0.2), f2 passes 500 tokens
// at its 2nd, f3 neither; s1 is flagged at its 1st call (P 0.25), s2 passes
// 500 tokens at its 3rd, s3 neither.
func onlineRuns() []eval.ScoredRun {
	return []eval.ScoredRun{
		onlineRun("f1", eval.OutcomeFailed, []float64{0.9, 0.2, 0.2, 0.2}, []int64{100, 200, 300, 400}),
		onlineRun("f2", eval.OutcomeFailed, []float64{0.9, 0.9, 0.9, 0.9}, []int64{100, 600, 900, 1200}),
		onlineRun("f3", eval.OutcomeBlocked, []float64{0.9, 0.9}, []int64{50, 100}),
		onlineRun("s1", eval.OutcomeSucceeded, []float64{0.25, 0.9}, []int64{100, 200}),
		onlineRun("s2", eval.OutcomeSucceeded, []float64{0.9, 0.9, 0.9}, []int64{200, 400, 700}),
		onlineRun("s3", eval.OutcomeSucceeded, []float64{0.9, 0.9}, []int64{100, 200}),
	}
}

var onlinePolicy = overseer.Policy{Name: "pause at 0.3", PauseAtOrBelow: 0.3, OnTrackAt: 0.7, NeedsALookAt: 0.4, BreachConfidence: 0.7, BreachSeverity: 1.5}

// The gates in force, walked boundary by boundary: the judge's first
// pause and a budget's first reach, alone and together, with what
// stopping the failed runs there saves, by hand.
func TestInForceFindsTheFirstGateOfTheJudgeAndOfABudget(t *testing.T) {
	failedTokens := int64(400 + 1200 + 100)
	for _, tc := range []struct {
		name            string
		opts            eval.InForceOptions
		held, caught    int
		calls           float64
		callShare       float64
		savedTokens     int64
		savedCost       float64
		savedTime       time.Duration
		budgetsHeld     int // -1: no budget in force
		budgetsCaught   int
		budgetsSaved    int64
		relativeWords   bool
		advisoryRelSays bool
	}{
		{name: "the policy alone", held: 1, caught: 1, calls: 2, callShare: 0.5, savedTokens: 200, savedCost: 2, savedTime: 20 * time.Second, budgetsHeld: -1},
		// f2 reaches 500 tokens at its 2nd call (600), s2 at its 3rd (700).
		{name: "with a token budget", opts: eval.InForceOptions{Budget: overseer.Budget{Tokens: 500}},
			held: 2, caught: 2, calls: 2, callShare: 0.5, savedTokens: 200 + 600, savedCost: 2 + 2, savedTime: 40 * time.Second,
			budgetsHeld: 1, budgetsCaught: 1, budgetsSaved: 600},
		// 25 s is reached at the 3rd call (30 s) of every run that has one:
		// f1 is caught earlier by the judge, f2 there, s2 held there.
		{name: "with a time budget", opts: eval.InForceOptions{Budget: overseer.Budget{Elapsed: 25 * time.Second}},
			held: 2, caught: 2, calls: 2.5, callShare: 0.625, savedTokens: 200 + 300, savedCost: 2 + 1, savedTime: 30 * time.Second,
			budgetsHeld: 1, budgetsCaught: 2, budgetsSaved: 100 + 300},
		// A turn budget of 3 is the same as a time budget of 25 s here.
		{name: "with a turn budget", opts: eval.InForceOptions{Budget: overseer.Budget{Turns: 3}},
			held: 2, caught: 2, calls: 2.5, callShare: 0.625, savedTokens: 200 + 300, savedCost: 2 + 1, savedTime: 30 * time.Second,
			budgetsHeld: 1, budgetsCaught: 2, budgetsSaved: 100 + 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := eval.InForceOf(onlineRuns(), onlinePolicy, tc.opts)
			assert.Equal(t, 3, f.Succeeded)
			assert.Equal(t, 3, f.Failed)
			assert.Equal(t, tc.held, f.Held, "succeeded runs held")
			assert.Equal(t, tc.caught, f.Caught, "failed runs caught")
			assert.InDelta(t, tc.calls, float64(f.MedianCall), 1e-9, "median call of the first catch")
			assert.InDelta(t, tc.callShare, float64(f.MedianCallShare), 1e-9)
			assert.Equal(t, failedTokens, f.FailedTokens)
			assert.Equal(t, tc.savedTokens, f.SavedTokens)
			assert.InDelta(t, float64(tc.savedTokens)/float64(failedTokens), float64(f.SavedShare), 1e-9)
			assert.InDelta(t, tc.savedCost, f.SavedCostUSD, 1e-9)
			assert.InDelta(t, tc.savedCost/float64(4+4+2), float64(f.SavedCostShare), 1e-9)
			assert.Equal(t, tc.savedTime, f.SavedTime)
			assert.Equal(t, 100*time.Second, f.FailedTime)
			// The judge alone is the same whatever the budget.
			assert.Equal(t, 1, f.Judge.Held)
			assert.Equal(t, 1, f.Judge.Caught)
			assert.Equal(t, int64(200), f.Judge.SavedTokens)
			if tc.budgetsHeld < 0 {
				assert.Nil(t, f.Budgets)
				assert.Empty(t, f.Budget)
				return
			}
			require.NotNil(t, f.Budgets)
			assert.Equal(t, tc.budgetsHeld, f.Budgets.Held)
			assert.Equal(t, tc.budgetsCaught, f.Budgets.Caught)
			assert.Equal(t, tc.budgetsSaved, f.Budgets.SavedTokens)
			assert.Equal(t, tc.opts.Budget.String(), f.Budget)
		})
	}
}

// The median share of the tokens spent at the first catch reads each
// caught run's own total: f1 is caught at 200 of 400 tokens, f2 (by the
// budget) at 600 of 1200.
func TestInForceSaysTheShareOfSpendAtTheFirstCatch(t *testing.T) {
	f := eval.InForceOf(onlineRuns(), onlinePolicy, eval.InForceOptions{Budget: overseer.Budget{Tokens: 500}})
	assert.InDelta(t, 0.5, float64(f.MedianSpendShare), 1e-9)
	f = eval.InForceOf(onlineRuns(), onlinePolicy, eval.InForceOptions{Budget: overseer.Budget{Tokens: 1000}})
	// f1 at 200/400, f2 at 1200/1200 (reached at its last call: nothing saved).
	assert.InDelta(t, 0.75, float64(f.MedianSpendShare), 1e-9)
	assert.Equal(t, int64(200), f.SavedTokens)
}

// A relative budget in the policy opens a gate only where the team turns
// relative gates on; otherwise it is named as advisory and stops nothing.
func TestInForceCountsTheRelativeBudgetOnlyWhenItIsAGate(t *testing.T) {
	p := onlinePolicy
	p.Spend = &overseer.SpendBudget{Curve: []int64{100}, Factor: 3, MaxReached: 0.05, Jobs: 19} // reached at 300 tokens
	off := eval.InForceOf(onlineRuns(), p, eval.InForceOptions{})
	assert.Nil(t, off.Budgets)
	assert.Equal(t, 1, off.Held)
	assert.Equal(t, 1, off.Caught)
	assert.NotEmpty(t, off.RelativeAdvisory)
	assert.Empty(t, off.Relative)

	on := eval.InForceOf(onlineRuns(), p, eval.InForceOptions{RelativeGates: true})
	require.NotNil(t, on.Budgets)
	assert.NotEmpty(t, on.Relative)
	// f1 reaches 300 at its 3rd call, after its pause at the 2nd; f2 at its
	// 2nd (600); s2 at its 2nd (400).
	assert.Equal(t, 1, on.Budgets.Held)
	assert.Equal(t, 2, on.Budgets.Caught)
	assert.Equal(t, int64(100+600), on.Budgets.SavedTokens)
	assert.Equal(t, 2, on.Held)
	assert.Equal(t, 2, on.Caught)
	assert.Equal(t, int64(200+600), on.SavedTokens)
}

// At a fixed hold rate the judge's threshold on P is the largest that
// holds at most ⌊rate × n⌋ succeeded runs, the budgets' held ones counted,
// never splitting a tie.
func TestInForceAtFixedHoldRates(t *testing.T) {
	for _, tc := range []struct {
		name         string
		budget       overseer.Budget
		rate         float64
		threshold    float64 // NaN: none
		budgetsAlone bool
		held, caught int
	}{
		// ⌊0.05 × 3⌋ = 0: the threshold sits below s1's 0.25, at f1's 0.2.
		{name: "5% of 3 holds none", rate: 0.05, threshold: 0.2, held: 0, caught: 1},
		// ⌊0.34 × 3⌋ = 1: up to s1's 0.25, which catches f1 too.
		{name: "one of 3", rate: 0.34, threshold: 0.25, held: 1, caught: 1},
		// ⌊0.67 × 3⌋ = 2, but s2 and s3 tie at 0.9: the threshold stays at
		// 0.25, one held.
		{name: "a tie is never split", rate: 0.67, threshold: 0.25, held: 1, caught: 1},
		// The budget holds s2 already: ⌊0.05 × 3⌋ − 1 < 0.
		{name: "budgets alone hold more", budget: overseer.Budget{Tokens: 500}, rate: 0.05, threshold: math.NaN(), budgetsAlone: true, held: 1, caught: 1},
		// ⌊0.34 × 3⌋ − 1 = 0 beside the budget: below s1's 0.25 again;
		// f1 by the judge, f2 by the budget.
		{name: "with a budget", budget: overseer.Budget{Tokens: 500}, rate: 0.34, threshold: 0.2, held: 1, caught: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := eval.InForceOf(onlineRuns(), onlinePolicy, eval.InForceOptions{Budget: tc.budget, HoldRates: []float64{tc.rate}})
			require.Len(t, f.AtHoldRates, 1)
			h := f.AtHoldRates[0]
			assert.InDelta(t, tc.rate, h.Rate, 1e-12)
			if math.IsNaN(tc.threshold) {
				assert.True(t, math.IsNaN(float64(h.Threshold)))
			} else {
				assert.InDelta(t, tc.threshold, float64(h.Threshold), 1e-12)
			}
			assert.Equal(t, tc.budgetsAlone, h.BudgetsAlone)
			assert.Equal(t, tc.held, h.Held)
			assert.Equal(t, tc.caught, h.Caught)
			assert.LessOrEqual(t, h.Held, max(int(tc.rate*3), 1), "never more than the rate allows, or the budgets alone")
		})
	}
}

// In eval --json the figures are spend.in_force, with saved_share, held,
// succeeded, caught and failed at its top.
func TestInForceJSONFields(t *testing.T) {
	f := eval.InForceOf(onlineRuns(), onlinePolicy, eval.InForceOptions{HoldRates: eval.FixedFalsePauseRates})
	data, err := json.Marshal(eval.Spend{InForce: &f})
	require.NoError(t, err)
	var v struct {
		InForce map[string]any `json:"in_force"`
	}
	require.NoError(t, json.Unmarshal(data, &v))
	for _, k := range []string{"saved_share", "held", "succeeded", "caught", "failed", "judge", "at_hold_rates", "saved_cost_share", "saved_time_ns", "median_call_at_first_catch"} {
		assert.Contains(t, v.InForce, k)
	}
	assert.InDelta(t, 200.0/1700, v.InForce["saved_share"], 1e-4)
	assert.EqualValues(t, 1, v.InForce["held"])
	assert.EqualValues(t, 3, v.InForce["succeeded"])
	assert.NotEmpty(t, f.Sentences())
}

// The ranking at a fixed spend counts only the runs still running there:
// those that spent more in all, with their latest answer by then.
func TestCheckpointsAtSpendLeaveOutTheRunsThatEndedBefore(t *testing.T) {
	runs := onlineRuns()
	amounts := eval.SpendAmounts(runs)
	// The succeeded runs' totals are 200, 700 and 200: nearest-rank
	// quartiles 200, 200 (the same, once) and 700.
	assert.Equal(t, []int64{200, 700}, amounts)

	cps := eval.CheckpointsAtSpend(runs, []int64{250, 700, 5000})
	require.Len(t, cps, 3)
	// At 250 tokens: f1 (400 in all; P 0.2 at 200), f2 (1200; 0.9 at 100)
	// and s2 (700; 0.9 at 200) still run; f3, s1 and s3 ended at or before.
	assert.Equal(t, "250 tokens", cps[0].At)
	assert.Equal(t, int64(250), cps[0].Tokens)
	assert.Equal(t, 3, cps[0].Runs)
	assert.Equal(t, 2, cps[0].Failed)
	assert.False(t, cps[0].KnowsLength)
	// f1 (1 − 0.2) ranks above s2 (0.1); f2 ties with s2: (1 + 0.5) / 2.
	assert.InDelta(t, 0.75, float64(cps[0].AUROC), 1e-9)
	// At 700: only f2 (1200) still runs; s2 ended at exactly 700.
	assert.Equal(t, 1, cps[1].Runs)
	assert.Equal(t, 1, cps[1].Failed)
	assert.True(t, math.IsNaN(float64(cps[1].AUROC)), "one outcome: no AUROC")
	assert.Zero(t, cps[2].Runs, "nobody spent 5000")

	// A run that reported no tokens is never among them.
	none := onlineRun("n", eval.OutcomeFailed, []float64{0.1, 0.1}, []int64{0, 0})
	assert.Zero(t, eval.CheckpointsAtSpend([]eval.ScoredRun{none}, []int64{0})[0].Runs)
	assert.Nil(t, eval.SpendAmounts([]eval.ScoredRun{none}))
}

// The checkpoints at a fraction of each run are marked as knowing the
// run's length; those after a number of steps are not.
func TestFractionCheckpointsKnowTheRunsLength(t *testing.T) {
	for _, c := range eval.Checkpoints(onlineRuns()) {
		assert.Equal(t, c.At[len(c.At)-1] == '%', c.KnowsLength, c.At)
	}
}

// Score records what the run had spent at each boundary, as the plugin's
// budget check reads it: tokens, cost, turns and phase runs of the
// trajectory, and the durations so far.
func TestScoreRecordsTheSpendAtEachBoundary(t *testing.T) {
	rec := eval.Record{ID: "r-1", Outcome: eval.OutcomeFailed, Unit: eval.UnitPhase, Steps: []eval.Step{
		{Phase: "plan", Turns: 2, InputTokens: 100, OutputTokens: 10, CostUSD: 0.5, DurationMS: 1000},
		{Phase: "code", Turns: 3, InputTokens: 200, OutputTokens: 20, CostUSD: 0.25, DurationMS: 2000},
	}}
	scored, err := eval.Score(context.Background(), []eval.Record{rec}, eval.ScoreOptions{Judge: &overseer.LearnedJudge{}})
	require.NoError(t, err)
	require.Len(t, scored[0].Points, 2)
	assert.Equal(t, overseer.Budget{Tokens: 110, CostUSD: 0.5, Elapsed: time.Second, Turns: 2, PhaseRuns: 1}, scored[0].Points[0].Spent)
	assert.Equal(t, overseer.Budget{Tokens: 330, CostUSD: 0.75, Elapsed: 3 * time.Second, Turns: 5, PhaseRuns: 2}, scored[0].Points[1].Spent)

	// An agent's run replays as a loop: a model call and a tool call per
	// step, each a phase run; the step's tokens count at its model call.
	loop := eval.Record{ID: "l-1", Outcome: eval.OutcomeSucceeded, Steps: []eval.Step{
		{Phase: "read", InputTokens: 100, DurationMS: 1000},
		{Phase: "edit", InputTokens: 50, DurationMS: 1000},
	}}
	scored, err = eval.Score(context.Background(), []eval.Record{loop}, eval.ScoreOptions{Judge: &overseer.LearnedJudge{}})
	require.NoError(t, err)
	pts := scored[0].Points
	require.Len(t, pts, 4)
	last := pts[len(pts)-1].Spent
	assert.Equal(t, int64(150), last.Tokens)
	assert.Equal(t, 4, last.PhaseRuns)
	assert.Equal(t, int64(100), pts[0].Spent.Tokens)
	for i := 1; i < len(pts); i++ {
		assert.GreaterOrEqual(t, pts[i].Spent.Elapsed, pts[i-1].Spent.Elapsed)
	}
}

// recalibrate --curve ranks the held-out runs after each fixed number of
// steps among those still running, pooled over the folds, the mean over
// folds beside.
func TestRecalibrationCurveRanksTheRunsStillRunning(t *testing.T) {
	records := agentRuns(80, 3, 0.6)
	pts, err := eval.RecalibrationCurve(context.Background(), records, overseer.DefaultLearnedModel(), []int{40}, 4, eval.RecalibrateOptions{For: "T"})
	require.NoError(t, err)
	require.Len(t, pts, 1)
	p := pts[0]
	require.Zero(t, p.Refused, "every fold recalibrated")
	require.Equal(t, len(records), p.HeldOut)
	require.Len(t, p.Online, len(eval.CheckpointSteps))
	longer := 0
	failed := 0
	for _, r := range records {
		if r.NumSteps() > 10 {
			longer++
			if r.Outcome.Failed() {
				failed++
			}
		}
	}
	o := p.Online[0]
	assert.Equal(t, "10 steps", o.At)
	assert.Equal(t, longer, o.Runs, "the held-out runs still running after 10 steps")
	assert.Equal(t, failed, o.Failed)
	assert.Less(t, o.Runs, len(records), "some runs ended by then")
	assert.False(t, math.IsNaN(float64(o.AUROC)))
	assert.False(t, math.IsNaN(float64(o.MeanAUROC)))
	last := p.Online[len(p.Online)-1]
	assert.Equal(t, "40 steps", last.At)
	assert.Zero(t, last.Runs, "no run goes past 15 steps")
	assert.True(t, math.IsNaN(float64(last.AUROC)))
}
