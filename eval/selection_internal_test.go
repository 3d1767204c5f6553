package eval

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestFeatureSelectionKeepsTheSmallestSetWithinOneStandardErrorOfTheBest(t *testing.T) {
	tests := []struct {
		name  string
		steps []cvCriterion
		want  int
	}{
		{"a second feature that wins by less than the folds' spread is left out", []cvCriterion{{0.66, 0.01}, {0.67, 0.02}}, 0},
		{"a second feature that wins by more is kept", []cvCriterion{{0.60, 0.01}, {0.66, 0.02}}, 1},
		{"the best need not be the last", []cvCriterion{{0.55, 0.01}, {0.64, 0.01}, {0.645, 0.02}, {0.62, 0.01}}, 1},
		{"with no spread, the best", []cvCriterion{{0.60, 0}, {0.62, 0}}, 1},
		{"one step", []cvCriterion{{0.5, 0}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, smallestWithinOneSE(tt.steps))
		})
	}
}

func TestCriterionOfIsTheMeanOverFoldsAndItsStandardError(t *testing.T) {
	c := criterionOf([]float64{0.6, 0.7, 0.8})
	assert.InDelta(t, 0.7, c.mean, 1e-12)
	assert.InDelta(t, 0.1/math.Sqrt(3), c.se, 1e-12) // sample sd 0.1 over 3 folds
	assert.Equal(t, cvCriterion{mean: 0.5}, criterionOf(nil), "no fold with both outcomes reads as chance")
	assert.Equal(t, cvCriterion{mean: 0.6}, criterionOf([]float64{0.6}))
}
