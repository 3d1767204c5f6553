package learn

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
)

// synthetic builds jobs, newest first (as exported from Temporal: their
// phase runs), in which a failed job spends many more output tokens per step
// than a succeeded one; flip makes that share of the labels wrong.
func synthetic(n int, seed uint64, flip float64) []eval.Record {
	rng := rand.New(rand.NewPCG(seed, 7))
	phases := []string{"read", "edit", "test"}
	var out []eval.Record
	for i := range n {
		failed := i%3 == 0
		rec := eval.Record{Format: eval.RecordFormat, ID: fmt.Sprintf("fam%d-%d", i%5, i), Unit: eval.UnitStep, Outcome: eval.OutcomeSucceeded}
		steps := 8 + rng.IntN(8)
		for s := range steps {
			tokens := int64(100 + rng.IntN(50))
			if failed {
				tokens *= 4
			}
			rec.Steps = append(rec.Steps, eval.Step{Phase: phases[(s/2)%3], OutputTokens: tokens, InputTokens: int64(1000 + rng.IntN(500))})
		}
		if rng.Float64() < flip {
			failed = !failed
		}
		if failed {
			rec.Outcome = eval.OutcomeFailed
		}
		out = append(out, rec.AsPhases())
	}
	return out
}

func TestReadySaysHowManyMoreRunsItNeeds(t *testing.T) {
	r := Ready(synthetic(30, 1, 0), DecideOptions{Promise: overseer.PromiseConfident})
	assert.False(t, r.Ready)
	assert.Equal(t, 59, r.RunsNeeded)
	assert.Equal(t, 16, r.TrainSucceeded)
	assert.Equal(t, "30 labelled runs (20 succeeded, 10 failed, 5 task families): a 5% false-pause promise at 95% confidence takes 59 succeeded runs to train on and 3 task families; needs about 54 more succeeded runs (43 to train on beyond the newest 20% held out)", r.Sentence)

	// The default, a promise in expectation, is within reach sooner.
	r = Ready(synthetic(30, 1, 0), DecideOptions{})
	assert.Equal(t, 19, r.RunsNeeded)
	assert.Equal(t, "30 labelled runs (20 succeeded, 10 failed, 5 task families): a 5% false-pause promise in expectation takes 19 succeeded runs to train on and 3 task families; needs about 4 more succeeded runs (3 to train on beyond the newest 20% held out)", r.Sentence)

	two := synthetic(150, 1, 0)
	for i := range two {
		two[i].Task.Family = fmt.Sprint(i % 2)
	}
	r = Ready(two, DecideOptions{})
	assert.False(t, r.Ready)
	assert.Contains(t, r.Sentence, "needs runs of 1 more task families")

	r = Ready(synthetic(150, 1, 0), DecideOptions{})
	assert.True(t, r.Ready, r.Sentence)
}

func TestDecidePromotesABetterCandidate(t *testing.T) {
	// The shipped model, fitted on other agents, cannot tell these runs apart.
	cur := Current{Model: overseer.DefaultLearnedModel(), Policy: overseer.DefaultLearnedPolicy()}
	d, err := Decide(context.Background(), synthetic(150, 1, 0), cur, DecideOptions{Version: "cand-good", For: "CoroJob"})
	require.NoError(t, err)
	assert.True(t, d.Promote, d.Reason)
	assert.Equal(t, "cand-good", d.Version)
	m, err := overseer.ParseLearnedModel(d.Model)
	require.NoError(t, err)
	assert.Equal(t, overseer.StageRefit, m.Stage(), "a refit on the type's jobs is stage 3")
	assert.Equal(t, "stage 3: refitted on CoroJob jobs", m.StageSentence("telemetry", "CoroJob"))
	assert.Equal(t, 30, d.Figures.HeldOut)
	assert.Equal(t, 120, d.Figures.Trained)
	require.True(t, d.Figures.RankedOnline(), "these runs are long enough to rank after 10 steps")
	assert.GreaterOrEqual(t, d.Figures.CandidateAUROCSteps, d.Figures.CurrentAUROCSteps)
	require.NotNil(t, d.Figures.Promise)
	assert.NotContains(t, []string{eval.PromiseBroken, eval.PromiseAbove}, d.Figures.Promise.Verdict)
	assert.Contains(t, d.Reason, "promote cand-good: ")
	_, err = overseer.ParseLearnedModel(d.Model)
	require.NoError(t, err)
	_, err = overseer.ParsePolicy(d.Policy)
	require.NoError(t, err)

	// The relative verdict goes on at stage 3: the refit carries its
	// answers among the type's 150 jobs, and a verdict names both.
	require.NotNil(t, m.Reference, "a refit carries a reference")
	assert.Equal(t, 150, m.Reference.Points[0].Runs)
	scored, err := eval.Score(context.Background(), synthetic(1, 7, 0), eval.ScoreOptions{Judge: &overseer.LearnedJudge{Model: m}})
	require.NoError(t, err)
	basis := scored[0].Points[0].Answers.Basis
	assert.Contains(t, basis, "; stage 3: refitted on CoroJob jobs; ")
	assert.Regexp(t, `(lower|higher) than \d+% of the last 150 CoroJob jobs at this point, (all \d+ of which (succeeded|failed)|\d+ of which succeeded)$`, basis)
}

func TestDecideRefusesAWorseCandidateWithItsFigures(t *testing.T) {
	ctx := context.Background()
	// The current model was fitted on clean labels; the candidate trains on
	// runs with nearly half their labels wrong, and both are measured on
	// the newest runs, labelled right.
	good, err := eval.Train(ctx, synthetic(120, 2, 0), eval.TrainOptions{Version: "current-good"})
	require.NoError(t, err)
	cal, err := eval.Calibrate(good.CalibrationRuns, 0.05, overseer.PromiseConfident)
	require.NoError(t, err)
	cur := Current{Model: good.Model, Policy: cal.Policy}
	records := synthetic(30, 4, 0)
	for _, r := range synthetic(120, 3, 0.45) {
		r.ID = "old-" + r.ID
		records = append(records, r)
	}
	d, err := Decide(ctx, records, cur, DecideOptions{Version: "cand-noisy"})
	require.NoError(t, err)
	assert.False(t, d.Promote)
	assert.Contains(t, d.Reason, "refused cand-noisy: ")
	assert.Contains(t, d.Reason, "against the current model current-good's")
	assert.Equal(t, "current-good", d.Figures.Current)
	// It is refused on the ranking a live judge gets, among the runs still
	// running after 10 steps; the sentence names the 50 % figure as one
	// that knows each run's length, and nothing rests on it.
	assert.Less(t, d.Figures.CandidateAUROCSteps, d.Figures.CurrentAUROCSteps)
	assert.Contains(t, d.Reason, "refused cand-noisy: it ranks worse after 10 steps among the runs still running then: on the 30 newest runs, AUROC after 10 steps, among the runs still running then, ")
	assert.Contains(t, d.Reason, fmt.Sprintf("; at 50%% of each run (which knows the run's length) %.3f against %.3f", d.Figures.CandidateAUROC, d.Figures.CurrentAUROC))
	assert.False(t, math.IsNaN(d.Figures.CandidateAUROCSteps) && math.IsNaN(d.Figures.CurrentAUROCSteps), "measured after 10 steps")
	t.Log(d.Reason)
}

func TestDecideNeedsEnoughRuns(t *testing.T) {
	_, err := Decide(context.Background(), synthetic(30, 1, 0), Current{Model: overseer.DefaultLearnedModel()}, DecideOptions{})
	assert.ErrorIs(t, err, ErrNotReady)
}

// Ready counts what a refit needs where it needs it: failed runs and
// task families among the older runs a candidate trains on, both
// outcomes among the newest it is measured on. Runs that have enough of
// each only over all of them are not ready (a refit would refuse them
// with "no candidate could be fitted" or an AUROC it cannot measure).
func TestReadyCountsWhatTheTrainingAndHeldOutRunsHold(t *testing.T) {
	ctx := context.Background()
	cur := Current{Model: overseer.DefaultLearnedModel(), Policy: overseer.DefaultLearnedPolicy()}
	const held = 30 // the newest 20 % of 150
	for _, tc := range []struct {
		name  string
		apply func(i int, r *eval.Record)
		want  string
	}{
		{"failed runs only among the newest", func(i int, r *eval.Record) {
			if i >= held {
				r.Outcome = eval.OutcomeSucceeded
			}
		}, "needs failed runs both among the newest and the older runs"},
		{"a task family only among the newest", func(i int, r *eval.Record) {
			r.Task.Family = fmt.Sprint("older-", i%2)
			if i < held {
				r.Task.Family = "new-repository"
			}
		}, "needs runs of 1 more task families among the older runs"},
		{"no succeeded run among the newest", func(i int, r *eval.Record) {
			if i < held {
				r.Outcome = eval.OutcomeFailed
			}
		}, "needs succeeded runs among the newest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := synthetic(150, 1, 0)
			for i := range recs {
				tc.apply(i, &recs[i])
			}
			r := Ready(recs, DecideOptions{})
			assert.False(t, r.Ready, r.Sentence)
			assert.Contains(t, r.Sentence, tc.want)
			_, err := Decide(ctx, recs, cur, DecideOptions{})
			assert.ErrorIs(t, err, ErrNotReady)
		})
	}
}

// A refit is compared on the ranking after 10 steps: worse there is
// refused, unmeasurable for the candidate where the current model was
// measured is refused too, and unmeasurable for the current model leaves
// the ranking uncompared (the round says so); the 50 % figure never
// decides.
func TestFiguresRankOnline(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name                string
		cand, cur, c50, u50 float64
		ranked, worse       bool
	}{
		{"better online, worse at 50%", 0.62, 0.60, 0.50, 0.70, true, false},
		{"worse online, better at 50%", 0.58, 0.60, 0.80, 0.70, true, true},
		{"candidate unmeasurable", nan, 0.60, 0.80, 0.70, false, true},
		{"neither measurable", nan, nan, 0.40, 0.70, false, false},
		{"current unmeasurable", 0.55, nan, 0.40, 0.70, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := Figures{CandidateAUROCSteps: tc.cand, CurrentAUROCSteps: tc.cur, CandidateAUROC: tc.c50, CurrentAUROC: tc.u50}
			assert.Equal(t, tc.ranked, f.RankedOnline())
			assert.Equal(t, tc.worse, f.RanksWorseOnline())
		})
	}
}
