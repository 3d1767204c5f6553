package eval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/testsuite"
)

// familyRuns builds n runs of each family, newest first; failed says which
// families' runs all failed (every other family's all succeeded): one
// outcome per family, which a fold's held-out runs then never mix.
func familyRuns(families, n int, failed func(family int) bool) []eval.Record {
	phases := []string{"read", "edit", "test"}
	var out []eval.Record
	for i := range n {
		for f := range families {
			rec := eval.Record{Format: eval.RecordFormat, ID: fmt.Sprintf("fam%d-%d", f, i), Unit: eval.UnitStep, Outcome: eval.OutcomeSucceeded}
			for s := range 6 + (i+f)%5 {
				tokens := int64(150 + 37*((i*7+s*3+f)%11))
				rec.Steps = append(rec.Steps, eval.Step{Phase: phases[(s/2)%3], OutputTokens: tokens, InputTokens: int64(6000 + 100*s), Failed: (i+s)%4 == 0})
			}
			if failed(f) {
				rec.Outcome = eval.OutcomeFailed
			}
			out = append(out, rec)
		}
	}
	return out
}

// A fold whose training runs hold one outcome cannot fit any sub-model:
// Train refuses in one sentence that says why of each, not a Go map. (The
// failed family is the largest, so the first outer fold holds it out.)
func TestTrainRefusesAFoldWithOneOutcomeInOneSentence(t *testing.T) {
	runs := familyRuns(3, 8, func(f int) bool { return f == 2 })
	for _, r := range familyRuns(3, 12, func(int) bool { return true })[24:] {
		if r.FamilyName() == "fam2" {
			runs = append(runs, r)
		}
	}
	_, err := eval.Train(context.Background(), runs, eval.TrainOptions{})
	require.Error(t, err)
	assert.ErrorIs(t, err, eval.ErrTrain)
	testsuite.OneSentence(t, err.Error())
	assert.Contains(t, err.Error(), "no sub-model can be fitted: telemetry: ")
	assert.Contains(t, err.Error(), "; structure: ")
}

// Stage 1 on runs of one outcome per family: no fold of the
// re-standardisation check can measure an AUROC, and the recalibrated
// model must still encode (it did not: json: unsupported value: NaN).
func TestRecalibrateOnOneOutcomePerFamilyEncodes(t *testing.T) {
	runs := familyRuns(5, 8, func(f int) bool { return f >= 3 })
	m, err := eval.Recalibrate(runs, overseer.DefaultLearnedModel(), eval.RecalibrateOptions{For: "CoroJob"})
	require.NoError(t, err)
	data, err := json.Marshal(m)
	require.NoError(t, err)
	back, err := overseer.ParseLearnedModel(data)
	require.NoError(t, err)
	require.NotNil(t, back.Recalibration.Restandardization)
	assert.False(t, back.Recalibration.Restandardization.Chosen, "without a measured AUROC, re-standardisation cannot show it ranks no worse")
	assert.False(t, strings.Contains(string(data), "NaN"))
}
