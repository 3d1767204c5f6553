package eval_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
)

// A loop model recalibrated on a type's runs reads each of them against
// the type's succeeded runs, itself among them, with a map fitted on it.
// Scored out of fold, each run is read by the model recalibrated on the
// other task families' runs alone, as a new run would be; a pause
// threshold certified on these scores holds for new runs.
func TestOutOfFoldScoresReadNoRunAgainstItself(t *testing.T) {
	ctx := context.Background()
	runs := loopRuns(60, 7, 20) // four task families of 15 runs, a third failed
	opts := eval.RecalibrateOptions{For: "Loop"}
	model, err := eval.Recalibrate(runs, overseer.DefaultLoopModel(), opts)
	require.NoError(t, err)

	assert.True(t, eval.ReadsAgainstItsRuns(model, runs), "recalibrated on these runs")
	assert.False(t, eval.ReadsAgainstItsRuns(model, loopRuns(60, 8, 20)), "other runs of the type")
	assert.False(t, eval.ReadsAgainstItsRuns(overseer.DefaultLoopModel(), runs), "the shipped model reads no type's runs")

	oof, err := eval.OutOfFoldScores(ctx, runs, model, opts, eval.ScoreOptions{})
	require.NoError(t, err)
	assert.Equal(t, 4, oof.Folds, "one fold a family")
	assert.Zero(t, oof.Unscored)
	require.Len(t, oof.Runs, len(runs))
	for i, r := range oof.Runs {
		assert.Equal(t, runs[i].ID, r.ID, "in input order")
	}

	for _, r := range oof.Runs {
		for _, p := range r.Points {
			if p.HasP() {
				require.Contains(t, p.Answers.Basis, "recalibrated (intercept and slope) on 45 Loop jobs", "%s: by the model recalibrated on the other three families", r.ID)
			}
		}
	}
	inSample, err := eval.Score(ctx, runs[:1], eval.ScoreOptions{Judge: &overseer.LearnedJudge{Model: model}})
	require.NoError(t, err)
	assert.Contains(t, inSample[0].Points[len(inSample[0].Points)-1].Answers.Basis, "on 60 Loop jobs", "in sample, by the model recalibrated on it")

	// Too few succeeded runs outside every fold: no out-of-fold score.
	few := loopRuns(60, 9, 20)
	for i := range few[:50] {
		few[i].Outcome = eval.OutcomeFailed // 7 succeeded runs are left
	}
	_, err = eval.OutOfFoldScores(ctx, few, model, opts, eval.ScoreOptions{})
	require.ErrorIs(t, err, eval.ErrNoOutOfFoldScores)
	assert.ErrorContains(t, err, "too few to take them from")

	// Every succeeded run in one family: its fold has no reference to be
	// read against, and the runs scored are all failed, which certify
	// nothing.
	oneFamily := loopRuns(60, 10, 20)
	for i := range oneFamily {
		if oneFamily[i].FamilyName() != "fam0" {
			oneFamily[i].Outcome = eval.OutcomeFailed
		}
	}
	_, err = eval.OutOfFoldScores(ctx, oneFamily, model, opts, eval.ScoreOptions{})
	require.ErrorIs(t, err, eval.ErrNoOutOfFoldScores)
	assert.ErrorContains(t, err, "15 runs were left out (their fold's others too few to recalibrate on), and the 45 scored are 0 succeeded and 45 failed")
}
