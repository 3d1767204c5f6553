package eval_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/judge"
)

// What stopping runs would have saved: a failed run paused at its second
// step saves what it spent after it; a succeeded run paused is held; a
// token budget set by the other families' succeeded runs saves what a
// run spent past it.
func TestSpendOfStopsAtTheFirstPauseAndAtABudget(t *testing.T) {
	steps := func(n int, tokens int64) []eval.Step {
		var out []eval.Step
		for range n {
			out = append(out, eval.Step{Phase: "edit", InputTokens: tokens})
		}
		return out
	}
	records := []eval.Record{
		{ID: "a-1", Outcome: eval.OutcomeFailed, Steps: steps(4, 100)},    // 400, paused at step 2
		{ID: "b-1", Outcome: eval.OutcomeSucceeded, Steps: steps(2, 100)}, // 200, paused at step 1
		{ID: "c-1", Outcome: eval.OutcomeSucceeded, Steps: steps(3, 100)}, // 300
		{ID: "d-1", Outcome: eval.OutcomeSucceeded, Steps: steps(1, 0)},   // no tokens: not counted
	}
	pausing := eval.Point{Steps: 0, Answers: overseer.Answers{OnObjective: 0.1}}
	fine := eval.Point{Answers: overseer.Answers{OnObjective: 0.9}}
	at := func(p eval.Point, step int) eval.Point { p.Steps = step; return p }
	scored := []eval.ScoredRun{
		{ID: "a-1", Points: []eval.Point{at(fine, 1), at(pausing, 2), at(pausing, 3)}},
		{ID: "b-1", Points: []eval.Point{at(pausing, 1), at(fine, 2)}},
		{ID: "c-1", Points: []eval.Point{at(fine, 1), at(fine, 3)}},
		{ID: "d-1", Points: []eval.Point{at(pausing, 1)}},
	}
	s, ok := eval.SpendOf(records, scored, overseer.DefaultPolicy(), eval.SpendMeasuresAuto)
	require.True(t, ok)
	assert.Equal(t, 3, s.Runs)
	assert.Equal(t, int64(400), s.FailedTokens)
	assert.Equal(t, int64(500), s.SucceededTokens)
	assert.InDelta(t, 400.0/900, s.FailedShare, 1e-9)
	assert.Equal(t, eval.SpendSaved{SavedTokens: 200, SavedShare: 0.5, Held: 1, Succeeded: 2}, s.Policy)
	// a-1's budget is the 95th percentile of b's and c's 200 and 300: 300,
	// so it saves 100; b-1's is c's 300 and c-1's b's 200, which c passes.
	assert.Equal(t, eval.SpendSaved{SavedTokens: 100, SavedShare: 0.25, Held: 1, Succeeded: 2}, s.Budget)
	assert.Equal(t, int64(266), s.BudgetTokens)

	_, ok = eval.SpendOf([]eval.Record{records[3]}, scored[3:], overseer.DefaultPolicy(), eval.SpendMeasuresAuto)
	assert.False(t, ok, "no run reported tokens")

	// PauseSpendOf is the policy's part alone (what train reports for the
	// policy certified in each fold).
	saved, failed := eval.PauseSpendOf(records, scored, overseer.DefaultPolicy())
	assert.Equal(t, s.Policy, saved)
	assert.Equal(t, s.FailedTokens, failed)
	saved, failed = eval.PauseSpendOf(records[1:], scored[1:], overseer.DefaultPolicy())
	assert.Equal(t, eval.SpendSaved{Held: 1, Succeeded: 2}, saved, "no failed run: nothing saved, one succeeded run held")
	assert.Zero(t, failed)
}

// What oversight did on closed jobs: the failed jobs' share, what failed
// jobs spent after their first pause, the aborted jobs' spend, and the
// waits at gates.
func TestSavedOfAddsUpClosedJobsAndTheirGates(t *testing.T) {
	steps := func(n int, tokens int64) []eval.Step {
		var out []eval.Step
		for range n {
			out = append(out, eval.Step{Phase: "edit", InputTokens: tokens})
		}
		return out
	}
	records := []eval.Record{
		// Failed, paused after its first step, continued: 300 tokens after it.
		{ID: "a-1", Outcome: eval.OutcomeFailed, Steps: steps(4, 100),
			Gates: []eval.GateDecision{{After: 1, Action: eval.GateContinue, WaitMS: 60_000}}},
		// Aborted at a gate after two steps.
		{ID: "b-1", Outcome: eval.OutcomeFailed, Steps: steps(2, 50),
			Gates: []eval.GateDecision{{After: 2, Action: eval.GateAbort, WaitMS: 180_000}}},
		{ID: "c-1", Outcome: eval.OutcomeSucceeded, Steps: steps(3, 100),
			Gates: []eval.GateDecision{{After: 3, Action: eval.GateContinue, WaitMS: 120_000}}},
		{ID: "d-1", Outcome: eval.OutcomeSucceeded, Steps: steps(2, 0)}, // no tokens
	}
	s := eval.SavedOf(records)
	assert.Equal(t, eval.Saved{Jobs: 4, TokenJobs: 3, Failed: 2, FailedTokens: 500, AllTokens: 800, PausedFailed: 2, AfterFirstPause: 300,
		Aborted: 1, AbortedTokens: 100, Gates: 3, Waited: 6 * time.Minute, MedianWait: 2 * time.Minute}, s)
	assert.Equal(t, "failed jobs spent 500 of the 4 closed jobs' 800 tokens (62%); the 2 failed jobs that paused spent 300 tokens after the first pause "+
		"(what stopping there would have saved); reviewers aborted 1 at a gate, after 100 tokens; jobs waited 6m0s at 3 gates (median 2m0s)", s.Sentence())

	none := eval.SavedOf([]eval.Record{{ID: "e-1", Outcome: eval.OutcomeSucceeded, Steps: steps(2, 0)}})
	assert.Equal(t, "none of the 1 closed jobs reported tokens, so their spend cannot be added up; no job waited at a gate", none.Sentence())
	assert.Equal(t, "no closed jobs to add up", eval.SavedOf(nil).Sentence())
}

// A relative budget is learned from succeeded runs with tokens, the curve
// from one half of their task families and the factor from the other's,
// and refused in one sentence when too few back it; learned from the
// other families, it is reached by the runs that spend far more than the
// succeeded ones by the same step.
func TestSpendBudgetOfAndRelativeSpendOf(t *testing.T) {
	run := func(id string, outcome eval.Outcome, steps int, perStep int64) eval.Record {
		rec := eval.Record{ID: id, Outcome: outcome, Task: eval.Task{Family: id[:2]}}
		for range steps {
			rec.Steps = append(rec.Steps, eval.Step{Phase: "edit", InputTokens: perStep})
		}
		return rec
	}
	var records []eval.Record
	for f := range 6 {
		for i := range 10 {
			// Succeeded runs spend 100 to 190 tokens a step.
			records = append(records, run(fmt.Sprintf("f%d-%d", f, i), eval.OutcomeSucceeded, 5+i%3, int64(100+10*i)))
		}
		// A failed run that spends ten times as much.
		records = append(records, run(fmt.Sprintf("f%d-x", f), eval.OutcomeFailed, 8, 1500))
	}
	b, err := eval.SpendBudgetOf(records, eval.SpendBudgetMaxReached, eval.SpendMeasuresAll)
	require.NoError(t, err)
	require.NoError(t, b.Validate())
	assert.Equal(t, 30, b.Jobs, "three families calibrate")
	assert.InDelta(t, 145, b.At(1), 10, "the median succeeded run's first step")
	assert.Greater(t, b.Factor, 1.0)
	assert.Less(t, b.Factor, 2.0, "the succeeded runs stay within 2× the median")

	rel := eval.RelativeSpendOf(records, eval.SpendMeasuresAuto)
	assert.Equal(t, 66, rel.Runs)
	assert.Equal(t, 60, rel.Succeeded)
	assert.LessOrEqual(t, rel.Held, 6, "few succeeded runs reach a budget their likes set")
	assert.Greater(t, rel.SavedShare, 0.8, "each failed run is stopped at its first step")
	assert.Empty(t, rel.Refused)

	_, err = eval.SpendBudgetOf(records, 0.5, eval.SpendMeasuresAll)
	assert.EqualError(t, err, "relative budget: a promise of 0.5 is not a share in (0, 0.5): give the share of jobs like the succeeded ones it may reach, such as 0.05")

	_, err = eval.SpendBudgetOf(records[:4], eval.SpendBudgetMaxReached, eval.SpendMeasuresAll)
	require.ErrorIs(t, err, eval.ErrTooFewForSpendBudget)
	assert.EqualError(t, err, "too few succeeded jobs with tokens, turns or time for a relative budget: a promise of 5% needs 10 to fit and 19 to calibrate on, from two task families or more, "+
		"or 5 if their spend is log-normal; there are 4, from 1 task family; at the success rate of these 4 runs (4 succeeded), that is about 5 closed runs (29 without assuming it)")

	// Fewer succeeded runs than the split needs back a budget of their
	// totals that assumes their spend is log-normal, said in the budget.
	few := append(slices.Clone(records[:11]), records[11:21]...)
	b, err = eval.SpendBudgetOf(few, eval.SpendBudgetMaxReached, eval.SpendMeasuresAll)
	require.NoError(t, err)
	require.NoError(t, b.Validate())
	assert.Equal(t, 20, b.Jobs)
	assert.Equal(t, judge.SpendAssumesLogNormal, b.Assumes)
	assert.InDelta(t, eval.SpendBudgetMaxReached, b.MaxReached, 1e-9, "the promise asked, under its assumption")
	assert.Len(t, b.Curve, 1, "a budget of totals")
	assert.Contains(t, b.String(), "in all (at most 5% of jobs like them reach it, if their spend is log-normal; learned from 20)")
	failed := few[10] // f0-x: 8 steps of 1500 tokens
	require.True(t, failed.Outcome.Failed())
	assert.NotEmpty(t, b.Reached(judge.Spent{Tokens: 8 * 1500, PhaseRuns: 16}), "ten times the succeeded runs' spend reaches it")
	assert.Empty(t, b.Reached(judge.Spent{Tokens: b.At(1), PhaseRuns: 16}), "a typical total does not")

	// Learned from the other family alone, each family's budget is one of
	// totals, and the grouped figure says so.
	rel = eval.RelativeSpendOf(few, eval.SpendMeasuresAuto)
	assert.Equal(t, 2, rel.LogNormal)
	assert.Contains(t, rel.Sentence(), "for 2 task families, too few to split, the budget compares totals, and its promise holds if their spend is log-normal")
}

// A budget learned from a few jobs whose spend is log-normal is reached by
// about the share of new ones it promises: drawn 4,000 times, six jobs each
// and the next one judged against their budget.
func TestALogNormalBudgetKeepsItsPromiseWhereItsAssumptionHolds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	job := func(i int, tokens float64) eval.Record {
		return eval.Record{ID: fmt.Sprintf("f%d-%d", i%3, i), Outcome: eval.OutcomeSucceeded, Task: eval.Task{Family: fmt.Sprintf("f%d", i%3)},
			Steps: []eval.Step{{Phase: "edit", InputTokens: int64(tokens)}}}
	}
	const draws = 4000
	reached := 0
	for range draws {
		var records []eval.Record
		for i := range 6 {
			records = append(records, job(i, math.Exp(12+0.8*rng.NormFloat64())))
		}
		b, err := eval.SpendBudgetOf(records, eval.SpendBudgetMaxReached, eval.SpendMeasuresAuto)
		require.NoError(t, err)
		require.Equal(t, judge.SpendAssumesLogNormal, b.Assumes)
		if b.Reached(judge.Spent{Tokens: int64(math.Exp(12 + 0.8*rng.NormFloat64())), PhaseRuns: 1}) != "" {
			reached++
		}
	}
	// 5 % of 4,000 is 200, give or take 14 (one standard deviation).
	assert.InDelta(t, 200, reached, 45, "new jobs like them reach it at about its promise")
}

// A relative budget of all measures covers each one every succeeded run
// reported: tokens, turns and time in phases, with one factor over the
// highest ratio; by default, tokens where they were reported, else the
// others. A failed run whose tokens stay typical but whose calls take ten
// times as long reaches it on time; without durations, the budget does
// not cover time and the same run is never caught.
func TestRelativeBudgetCoversTurnsAndTime(t *testing.T) {
	run := func(id string, outcome eval.Outcome, steps int, perStep int64, ms int64) eval.Record {
		rec := eval.Record{ID: id, Outcome: outcome, Task: eval.Task{Family: id[:2]}}
		for range steps {
			rec.Steps = append(rec.Steps, eval.Step{Phase: "edit", InputTokens: perStep, DurationMS: ms})
		}
		return rec
	}
	build := func(ms func(i int) int64, slowMS int64) []eval.Record {
		var records []eval.Record
		for f := range 6 {
			for i := range 10 {
				records = append(records, run(fmt.Sprintf("f%d-%d", f, i), eval.OutcomeSucceeded, 5+i%3, int64(100+10*i), ms(i)))
			}
			// A failed run: typical tokens, but each call takes long.
			records = append(records, run(fmt.Sprintf("f%d-x", f), eval.OutcomeFailed, 7, 150, slowMS))
		}
		return records
	}
	timed := build(func(i int) int64 { return int64(1000 + 100*i) }, 20_000)
	b, err := eval.SpendBudgetOf(timed, eval.SpendBudgetMaxReached, eval.SpendMeasuresAll)
	require.NoError(t, err)
	require.NoError(t, b.Validate())
	assert.Contains(t, b.Covers(), "tokens")
	assert.Contains(t, b.Covers(), "time")
	assert.NotEmpty(t, b.PhaseTimeCurve)
	rel := eval.RelativeSpendOf(timed, eval.SpendMeasuresAll)
	assert.Equal(t, 6, rel.Runs-rel.Succeeded)
	assert.Greater(t, rel.SavedShare, 0.5, "the slow failed runs are stopped early on time")
	assert.LessOrEqual(t, rel.Held, 6)
	assert.Contains(t, rel.Covers, "time")

	// By default, tokens where the runs reported them, else the others.
	b, err = eval.SpendBudgetOf(timed, eval.SpendBudgetMaxReached, eval.SpendMeasuresAuto)
	require.NoError(t, err)
	assert.Equal(t, []string{"tokens"}, b.Covers())
	var tokenless []eval.Record
	for _, rec := range timed {
		rec.Steps = slices.Clone(rec.Steps)
		for i := range rec.Steps {
			rec.Steps[i].InputTokens = 0
		}
		tokenless = append(tokenless, rec)
	}
	b, err = eval.SpendBudgetOf(tokenless, eval.SpendBudgetMaxReached, eval.SpendMeasuresAuto)
	require.NoError(t, err)
	assert.Contains(t, b.Covers(), "time")
	assert.NotContains(t, b.Covers(), "tokens")
	// One succeeded run without tokens is left out of a budget of tokens;
	// a few with tokens among many without are too few for one, and say so.
	mixed := slices.Clone(timed)
	mixed[0] = tokenless[0]
	b, err = eval.SpendBudgetOf(mixed, eval.SpendBudgetMaxReached, eval.SpendMeasuresAuto)
	require.NoError(t, err)
	assert.Equal(t, []string{"tokens"}, b.Covers())
	mostlyTokenless := slices.Clone(tokenless)
	mostlyTokenless[0] = timed[0]
	_, err = eval.SpendBudgetOf(mostlyTokenless, eval.SpendBudgetMaxReached, eval.SpendMeasuresAuto)
	require.ErrorIs(t, err, eval.ErrTooFewForSpendBudget)

	untimed := build(func(int) int64 { return 0 }, 0)
	b, err = eval.SpendBudgetOf(untimed, eval.SpendBudgetMaxReached, eval.SpendMeasuresAll)
	require.NoError(t, err)
	assert.Empty(t, b.PhaseTimeCurve, "no run reported time")
	assert.NotContains(t, b.Covers(), "time")
	rel = eval.RelativeSpendOf(untimed, eval.SpendMeasuresAll)
	assert.Zero(t, rel.SavedTokens, "typical tokens: nothing but time tells them apart")
}

// A job of phases runs a few unlike phases, so its relative budget
// compares totals: a task family whose first phase spends eight times the
// others' (and the same in all) is not held at its first phase, as a
// curve by phase run would hold it; a failed job that spends four times
// as much in all is caught. An agent loop's budget keeps its curve by
// phase run.
func TestAJobOfPhasesBudgetComparesTotals(t *testing.T) {
	job := func(id string, outcome eval.Outcome, unit eval.Unit, tokens ...int64) eval.Record {
		rec := eval.Record{ID: id, Outcome: outcome, Unit: unit, Task: eval.Task{Family: id[:2]}}
		for i, n := range tokens {
			rec.Steps = append(rec.Steps, eval.Step{Phase: []string{"plan", "implement", "test", "review"}[i%4], InputTokens: n})
		}
		return rec
	}
	build := func(unit eval.Unit) []eval.Record {
		var records []eval.Record
		for f := range 6 {
			for i := range 10 {
				spread := int64(10 * i)
				id := fmt.Sprintf("f%d-%d", f, i)
				if f == 0 {
					// Family f0 plans long and implements short: the same in all.
					records = append(records, job(id, eval.OutcomeSucceeded, unit, 800+spread, 100, 300, 100))
					continue
				}
				records = append(records, job(id, eval.OutcomeSucceeded, unit, 100+spread, 800, 300, 100))
			}
			records = append(records, job(fmt.Sprintf("f%d-x", f), eval.OutcomeFailed, unit, 400, 3200, 1200, 400))
		}
		return records
	}
	phases := build(eval.UnitPhase)
	b, err := eval.SpendBudgetOf(phases, eval.SpendBudgetMaxReached, eval.SpendMeasuresAuto)
	require.NoError(t, err)
	require.NoError(t, b.Validate())
	assert.Len(t, b.Curve, 1, "a budget of totals")
	assert.Empty(t, b.Assumes, "split conformal: its promise assumes nothing")
	assert.True(t, b.InTotal())
	assert.Contains(t, b.String(), "typical tokens in all (at most 5% of jobs like them reach it; calibrated on")

	rel := eval.RelativeSpendOf(phases, eval.SpendMeasuresAuto)
	assert.Zero(t, rel.Held, "no succeeded job of phases is held for a long first phase")
	assert.Equal(t, 6, rel.Caught, "each failed job spends four times as much in all")
	assert.Equal(t, rel.Learned, rel.InTotal)
	assert.Contains(t, rel.Sentence(), "their median tokens in all on average")

	loops, err := eval.SpendBudgetOf(build(eval.UnitStep), eval.SpendBudgetMaxReached, eval.SpendMeasuresAuto)
	require.NoError(t, err)
	assert.Greater(t, len(loops.Curve), 1, "an agent loop's budget is a curve by phase run")
	assert.False(t, loops.InTotal())
	assert.Contains(t, loops.String(), "at the same phase run")
}
