package eval

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// foldedDataset is runs of one sample each in task families whose failure
// rates differ widely, with one feature that weakly separates a family's failed
// runs from its succeeded ones by the same margin in every family and says
// nothing of which family a run is in.
func foldedDataset(t *testing.T) (*dataset, [][]int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	failRates := []float64{0.05, 0.6, 0.1, 0.5, 0.15, 0.45}
	ds := &dataset{atSelection: make([][]int, len(selectionFractions))}
	folds := make([][]int, len(failRates))
	for f, rate := range failRates {
		for range 80 {
			failed := rng.Float64() < rate
			x := rng.NormFloat64()
			if failed {
				x -= 0.6
			}
			run := len(ds.byRun)
			ds.byRun = append(ds.byRun, []int{len(ds.samples)})
			for k := range ds.atSelection {
				ds.atSelection[k] = append(ds.atSelection[k], len(ds.samples))
			}
			ds.samples = append(ds.samples, sample{x: []float64{x}, y: !failed, weight: 1})
			folds[f] = append(folds[f], run)
		}
	}
	return ds, folds
}

// Scores pooled over the folds of a cross-validation grouped by family are
// what a Platt map and a pause threshold are fitted on. A fold's model is
// fitted without the held-out families, so its base rate rises with their
// failure rate; left so, the pooled scores rank families against their
// outcomes and the map fitted on them reads a feature that separates every
// family's runs as nearly no signal. At the pool's base rate, each fold's
// model scores like the model fitted on all of them: the map's slope is
// near 1 (the scores are already calibrated log-odds).
func TestOutOfFoldScoresAreAtThePoolsBaseRate(t *testing.T) {
	ds, folds := foldedDataset(t)
	scores, _, err := crossValidate(ds, folds, []string{"x"}, []int{0}, 1)
	require.NoError(t, err)
	var s, w []float64
	var y []bool
	for i := range ds.samples {
		s, y, w = append(s, scores[i]), append(y, ds.samples[i].y), append(w, 1)
	}
	a, _, err := fitPlatt(s, y, w)
	require.NoError(t, err)
	assert.InDelta(t, 1, a, 0.3, "the Platt slope on the pooled out-of-fold scores")

	rate := successRate(ds, samplesOf(ds, slices.Concat(folds...)))
	for f := range folds {
		train := samplesOf(ds, otherFolds(folds, f))
		ft, err := fitOn(ds, train, []string{"x"}, []int{0}, 1)
		require.NoError(t, err)
		ft = ft.atBaseRate(ds, train, rate)
		var mean float64
		for _, i := range train {
			mean += sigmoid(ft.score(ds.samples[i].x))
		}
		assert.InDelta(t, rate, mean/float64(len(train)), 1e-6, "fold %d's mean predicted success", f+1)
	}
}
