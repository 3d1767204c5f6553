package overseer_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
)

// A model holding a number JSON has none for is refused by its encoder
// and by Validate in a sentence that names the number, not json's
// "unsupported value: NaN".
func TestLearnedModelWithANonFiniteNumberIsRefusedInOneSentence(t *testing.T) {
	tests := []struct {
		name   string
		spoil  func(m *overseer.LearnedModel)
		naming string
	}{
		{"a feature's weight", func(m *overseer.LearnedModel) { m.SubModels[0].Features[0].Weight = math.NaN() },
			`learned model: sub-model "telemetry"'s feature`},
		{"a calibration", func(m *overseer.LearnedModel) { m.SubModels[1].Calibration.B = math.Inf(1) },
			`learned model: sub-model "structure"'s intercept or calibration is not a finite number`},
		{"a re-standardisation figure", func(m *overseer.LearnedModel) {
			m.Recalibration = &overseer.Recalibration{For: "CoroJob", From: m.Version, Runs: 2, Succeeded: 1, Failed: 1,
				Restandardization: &overseer.Restandardization{Folds: 5, AUROCAsIs: math.NaN()}}
		}, "learned model: a figure of the recalibration's re-standardisation check (leave out one not measured) is not a finite number"},
		{"a reference quantile", func(m *overseer.LearnedModel) {
			q := make([]float64, 21)
			q[20] = math.NaN()
			m.Reference = &overseer.Reference{Points: []overseer.ReferencePoint{{FromPhaseRuns: 1, ToPhaseRuns: 1, Runs: 10, Quantiles: q}}}
		}, "learned model: a quantile of the reference at 1 phase runs is not a finite number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := overseer.DefaultLearnedModel()
			tt.spoil(m)
			_, err := json.Marshal(m)
			require.Error(t, err)
			assert.ErrorIs(t, err, overseer.ErrModel)
			assert.Contains(t, err.Error(), tt.naming)
			assert.NotContains(t, err.Error(), "unsupported value")
			err = m.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), "learned model: ")
			assert.NotContains(t, err.Error(), "NaN")
		})
	}
	// A model without one still encodes and reads back.
	data, err := json.Marshal(overseer.DefaultLearnedModel())
	require.NoError(t, err)
	_, err = overseer.ParseLearnedModel(data)
	assert.NoError(t, err)
}
