package bench

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Paired ratios divide each round by its own baseline: a server that
// slows over a run moves both and cancels out, where the ratio of the
// medians does not.
func TestPairedStatDividesRoundByRound(t *testing.T) {
	variant := []float64{1, 4, 9}  // the server slows from round to round
	baseline := []float64{1, 2, 6} // and the baseline with it
	got := pairedStat(variant, baseline)
	assert.Equal(t, Stat{Median: 1.5, Min: 1, Max: 2, N: 3}, got)
	assert.NotEqual(t, statOf(variant).Median/statOf(baseline).Median, got.Median, "the ratio of the medians is another figure")
	assert.Equal(t, Stat{Median: 2, Min: 2, Max: 2, N: 1}, pairedStat([]float64{4}, []float64{2, 3}), "only the rounds both ran")
	assert.Equal(t, "1.500 [1.00–2.00]", pairedCell(got))
	assert.Equal(t, "–", pairedCell(Stat{}))
}
