package eval_test

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
)

// scoredRuns makes one-boundary runs with the given P, succeeded then
// failed.
func scoredRuns(succeeded, failed []float64) []eval.ScoredRun {
	var out []eval.ScoredRun
	add := func(ps []float64, o eval.Outcome) {
		for _, p := range ps {
			out = append(out, eval.ScoredRun{ID: fmt.Sprint(len(out)), Outcome: o, Steps: 1,
				Points: []eval.Point{{Steps: 1, Answers: overseer.Answers{OnObjective: p}}}})
		}
	}
	add(succeeded, eval.OutcomeSucceeded)
	add(failed, eval.OutcomeFailed)
	return out
}

func spread(n int, from, step float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = from + step*float64(i)
	}
	return out
}

func TestCatchesAtFixedFalsePauseRates(t *testing.T) {
	failed := []float64{0.10, 0.30, 0.45, 0.51, 0.60}
	tied := append([]float64{0.50}, spread(19, 0.50, 0.02)...) // the two lowest succeeded runs tie at 0.50
	for _, tc := range []struct {
		name              string
		succeeded         []float64
		rate              float64
		threshold         float64
		paused, caught    int
		catch             float64
		undefinedThreshol bool
	}{
		// 20 succeeded runs: 1% allows none, so the threshold sits below
		// the lowest succeeded P (0.50): the highest P under it, 0.45.
		{"1% of 20 allows none", spread(20, 0.50, 0.02), 0.01, 0.45, 0, 3, 0.6, false},
		// 5% of 20 allows one: the threshold is the highest P under the
		// second lowest succeeded run (0.52): the failed run at 0.51.
		{"5% of 20 allows one", spread(20, 0.50, 0.02), 0.05, 0.51, 1, 4, 0.8, false},
		// A tie at the limit is never split: pausing one of the two runs at
		// 0.50 would pause both, above the rate.
		{"a tie at the limit", tied, 0.05, 0.45, 0, 3, 0.6, false},
		{"no succeeded run", nil, 0.05, 0, 0, 0, math.NaN(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := eval.CatchesAt(scoredRuns(tc.succeeded, failed), []float64{tc.rate})
			require.Len(t, c, 1)
			if tc.undefinedThreshol {
				assert.True(t, math.IsNaN(float64(c[0].Threshold)))
				assert.True(t, math.IsNaN(float64(c[0].Catch)))
				assert.Equal(t, "–", c[0].String())
				return
			}
			assert.InDelta(t, tc.threshold, float64(c[0].Threshold), 1e-9)
			assert.Equal(t, tc.paused, c[0].Paused)
			assert.LessOrEqual(t, float64(c[0].Paused), tc.rate*float64(c[0].Succeeded), "never more succeeded runs paused than the rate allows")
			assert.Equal(t, tc.caught, c[0].Caught)
			assert.Equal(t, len(failed), c[0].Failed)
			assert.InDelta(t, tc.catch, float64(c[0].Catch), 1e-9)
		})
	}

	// Two folds' catches add their counts.
	a := eval.CatchesAt(scoredRuns(spread(20, 0.50, 0.02), failed), eval.FixedFalsePauseRates)
	sum := eval.SumCatches(a, a)
	require.Len(t, sum, 2)
	assert.Equal(t, [4]int{40, 0, 10, 6}, [4]int{sum[0].Succeeded, sum[0].Paused, sum[0].Failed, sum[0].Caught})
	assert.Equal(t, [4]int{40, 2, 10, 8}, [4]int{sum[1].Succeeded, sum[1].Paused, sum[1].Failed, sum[1].Caught})
	assert.Equal(t, "80.0% (8 of 10; 2 of 40 paused)", sum[1].String())
}

// The catches are grouped by workflow type (a record's Agent) and shape.
func TestCatchesByGroup(t *testing.T) {
	runs := scoredRuns(spread(20, 0.50, 0.02), []float64{0.10, 0.30, 0.45, 0.51, 0.60})
	recs := make([]eval.Record, len(runs))
	for i, r := range runs {
		recs[i] = eval.Record{ID: r.ID, Outcome: r.Outcome, Agent: "CoroJob", Unit: eval.UnitPhase}
		if i%2 == 1 {
			recs[i].Agent, recs[i].Unit = "", eval.UnitStep
		}
	}
	g := eval.CatchesByGroup(recs, runs, eval.FixedFalsePauseRates)
	require.Len(t, g, 2)
	assert.Equal(t, [2]string{"CoroJob", "unnamed"}, [2]string{g[0].Type, g[1].Type})
	assert.Equal(t, [2]overseer.Shape{overseer.ShapePhases, overseer.ShapeAgentLoop}, [2]overseer.Shape{g[0].Shape, g[1].Shape})
	assert.Equal(t, len(runs), g[0].Runs+g[1].Runs)
}

// job is a closed job for the rescue estimate: paused at a gate judged
// needed or not, or flagged and left alone (observe mode).
func job(id int, paused, needed, failed bool, action string) eval.Record {
	rec := eval.Record{Format: eval.RecordFormat, ID: fmt.Sprintf("job-%d", id), Outcome: eval.OutcomeSucceeded, Unit: eval.UnitPhase,
		Steps: []eval.Step{{Phase: "code", Assessment: &eval.RecordedAssessment{OnObjective: 0.3, Flagged: true}}}}
	if failed {
		rec.Outcome = eval.OutcomeFailed
	}
	if paused {
		n := needed
		rec.Gates = []eval.GateDecision{{Phase: "code", After: 1, By: "ana", Action: action, Needed: &n, WaitMS: 6 * 60000}}
	}
	return rec
}

// jobs builds: needed pauses (rescued of them succeed, the others fail),
// pauses judged not needed (disrupted of them fail), and flagged jobs left
// alone (observedFailed of them fail).
func jobsFor(needed, rescued, notNeeded, disrupted, observed, observedFailed int) []eval.Record {
	var out []eval.Record
	for i := range needed {
		out = append(out, job(len(out), true, true, i >= rescued, eval.GateContinue))
	}
	for i := range notNeeded {
		out = append(out, job(len(out), true, false, i < disrupted, eval.GateContinue))
	}
	for i := range observed {
		out = append(out, job(len(out), false, false, i < observedFailed, ""))
	}
	// A job never flagged says nothing about pauses.
	quiet := job(len(out), false, false, true, "")
	quiet.Steps[0].Assessment.Flagged = false
	return append(out, quiet)
}

func TestEstimateRescue(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name                                 string
		recs                                 []eval.Record
		verdict                              string
		p, r, d, threshold                   float64
		rescued, disrupted, paused, observed int
		minutesPerRescue                     float64
		sentence                             string
	}{
		{"helps", jobsFor(8, 4, 2, 0, 10, 5), eval.RescueHelps, 0.5, 0.8, 0, 0, 4, 0, 10, 10, 15,
			"pauses here were needed 8 times in 10 (8 of 10 paused jobs); p 0.500 > d/(r+d) 0.000: pausing helps (rescue r 0.800"},
		{"hurts", jobsFor(2, 0, 8, 4, 10, 2), eval.RescueHurts, 0.2, 0, 0.5, 1, 0, 4, 10, 10, nan,
			"pauses here were needed 2 times in 10 (2 of 10 paused jobs); p 0.200 < d/(r+d) 1.000: pausing hurts: keep observing"},
		{"unclear", jobsFor(5, 3, 5, 2, 10, 5), eval.RescueUnclear, 0.5, 0.6, 0.4, 0.4, 3, 2, 10, 10, 20,
			"pauses here were needed 5 times in 10 (5 of 10 paused jobs); p 0.500 > d/(r+d) 0.400: not yet clear whether pausing helps"},
		// r is capped at 1: more needed pauses succeeded than the observed
		// failure rate says were heading to failure.
		{"capped", jobsFor(10, 9, 0, 0, 10, 5), eval.RescueHelps, 0.5, 1, 0, 0, 9, 0, 10, 10, 60.0 / 9, ""},
		{"too few gates", jobsFor(3, 2, 1, 0, 10, 5), eval.RescueTooFew, nan, nan, nan, nan, 2, 0, 4, 10, 12,
			"keep observing: 4 labelled gates are too few to say whether pausing Job helps (need 10)"},
		{"too few left alone", jobsFor(8, 4, 4, 1, 3, 1), eval.RescueTooFew, nan, nan, nan, nan, 4, 1, 12, 3, 18,
			"keep observing: 3 flagged jobs in observe mode are too few to say how flagged Job jobs end without a pause (need 10; pauses were judged needed on 8 of 12 paused jobs)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := eval.EstimateRescue("Job", tc.recs)
			assert.Equal(t, tc.verdict, e.Verdict)
			assert.Equal(t, [4]int{tc.rescued, tc.disrupted, tc.paused, tc.observed}, [4]int{e.Rescued, e.Disrupted, e.Paused, e.Observed})
			numEq(t, tc.minutesPerRescue, e.MinutesPerRescue, "minutes per rescue")
			if tc.sentence != "" {
				assert.Contains(t, e.Sentence, tc.sentence)
			}
			if tc.verdict == eval.RescueTooFew {
				assert.True(t, math.IsNaN(float64(e.MarginLow)), "no interval below the minimum")
			}
			numEq(t, tc.p, e.P, "p")
			numEq(t, tc.r, e.R, "r")
			numEq(t, tc.d, e.D, "d")
			numEq(t, tc.threshold, e.Threshold, "d/(r+d)")
			if tc.verdict == eval.RescueTooFew {
				return
			}
			for _, x := range []struct {
				name         string
				v, low, high eval.Num
			}{{"p", e.P, e.PLow, e.PHigh}, {"r", e.R, e.RLow, e.RHigh}, {"d", e.D, e.DLow, e.DHigh}, {"margin", e.Margin, e.MarginLow, e.MarginHigh}} {
				assert.LessOrEqual(t, float64(x.low), float64(x.v), x.name)
				assert.GreaterOrEqual(t, float64(x.high), float64(x.v), x.name)
			}
			again, err := json.Marshal(eval.EstimateRescue("Job", tc.recs))
			require.NoError(t, err)
			first, err := json.Marshal(e)
			require.NoError(t, err)
			assert.JSONEq(t, string(first), string(again), "the same jobs give the same intervals (fixed seed)")
		})
	}
}

// An abort is a confirmed failure whatever the close status said: a pause
// judged not needed and then aborted is a disruption.
func TestEstimateRescueCountsAnAbortAsAFailure(t *testing.T) {
	recs := jobsFor(0, 0, 0, 0, 10, 5)
	recs = append(recs, job(100, true, false, false, eval.GateAbort))
	e := eval.EstimateRescue("Job", recs)
	assert.Equal(t, 1, e.Disrupted)
}

// Gates exported before the judgement existed are judged by the old rule,
// and the sentence says how many.
func TestEstimateRescueSaysUnjudgedGates(t *testing.T) {
	recs := jobsFor(8, 4, 2, 0, 10, 5)
	recs[0].Gates[0].Needed, recs[0].Gates[0].Action = nil, eval.GateRedo // needed by the old rule
	e := eval.EstimateRescue("Job", recs)
	assert.Equal(t, 1, e.Unjudged)
	assert.Equal(t, 8, e.Needed)
	assert.Contains(t, e.Sentence, "; 1 paused job was exported before gates recorded whether the pause was needed, judged by the old rule")
}

func numEq(t *testing.T, want float64, got eval.Num, name string) {
	t.Helper()
	if math.IsNaN(want) {
		assert.True(t, math.IsNaN(float64(got)), "%s: want undefined, got %v", name, got)
		return
	}
	assert.InDelta(t, want, float64(got), 1e-9, name)
}

// On recorded runs the policy's flags split into potential rescues and
// potential disruptions; p is the failure rate among the flagged runs.
func TestRecordedPausesByGroup(t *testing.T) {
	// Flagged: P at or below 0.25. 12 flagged: 9 failed, 3 succeeded.
	var succ, fail []float64
	succ = append(spread(3, 0.1, 0.01), spread(17, 0.8, 0)...)
	fail = append(spread(9, 0.1, 0.01), spread(1, 0.8, 0)...)
	runs := scoredRuns(succ, fail)
	recs := make([]eval.Record, len(runs))
	for i, r := range runs {
		recs[i] = eval.Record{ID: r.ID, Outcome: r.Outcome, Agent: "CoroJob", Unit: eval.UnitPhase}
	}
	g := eval.RecordedPausesByGroup(recs, runs, overseer.Policy{PauseAtOrBelow: 0.25, BreachConfidence: 0.5, BreachSeverity: 1.5})
	require.Len(t, g, 1)
	assert.Equal(t, [4]int{12, 9, 3, 30}, [4]int{g[0].Flagged, g[0].FlaggedFailed, g[0].FlaggedSucceeded, g[0].Runs})
	numEq(t, 0.75, g[0].P, "p")
	numEq(t, 1.0/3, g[0].RescueNeededPerD, "(1−p)/p")
	assert.LessOrEqual(t, float64(g[0].PLow), 0.75)
	assert.GreaterOrEqual(t, float64(g[0].PHigh), 0.75)
	assert.Contains(t, g[0].Sentence, "r cannot be observed on recorded runs")
	assert.Contains(t, g[0].Sentence, "more than 0.33")
	assert.NotContains(t, g[0].Sentence, "too few")
}
