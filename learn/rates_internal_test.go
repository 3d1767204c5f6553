package learn

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
)

// When the current model's promise cannot be read, the sentence says so,
// and not that the policy makes none.
func TestRatesSayThePromiseCouldNotBeRead(t *testing.T) {
	got := measureRates([]eval.Record{{}, {}}, 0, "", overseer.Promise{}, errors.New("registry unreachable"))
	assert.Equal(t, 2, got.Jobs)
	assert.Nil(t, got.Check)
	assert.Contains(t, got.Sentence, "; the current model's promise could not be read: registry unreachable")
	assert.NotContains(t, got.Sentence, "makes no false-pause promise")
}

// A promoted policy carries the relative budget, everything else kept.
func TestWithSpendBudgetKeepsThePolicyAndAddsTheBudget(t *testing.T) {
	p := overseer.DefaultLearnedPolicy()
	raw, err := overseer.MarshalPolicy(p, map[string]any{"how": "calibrated"})
	require.NoError(t, err)
	sb := overseer.SpendBudget{Curve: []int64{100, 300}, Factor: 2.2, MaxReached: 0.05, Jobs: 25}
	got, err := withSpendBudget(raw, sb)
	require.NoError(t, err)
	back, err := overseer.ParsePolicy(got)
	require.NoError(t, err)
	require.NotNil(t, back.Spend)
	assert.Equal(t, sb, *back.Spend)
	back.Spend = nil
	assert.Equal(t, p, back)
	assert.Contains(t, string(got), `"how": "calibrated"`, "the calibration kept with the policy")
}
