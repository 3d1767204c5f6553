package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
)

// `overseer train` reports the catches at 1% and 5% of succeeded runs
// paused on held-out runs only; `overseer eval` reports them per workflow
// type and shape with what the policy would do as rescue against
// disruption, for runs replayed as agent loops or recast as phases.
func TestCatchesAtFixedRatesAndRecordedPauses(t *testing.T) {
	dir := t.TempDir()
	train, test := filepath.Join(dir, "train.csv"), filepath.Join(dir, "test.csv")
	lettersCSV(t, train, []string{"alpha", "beta", "gamma", "delta"})
	lettersCSV(t, test, []string{"omega", "sigma"})
	model := filepath.Join(dir, "model.json")

	code, out, errOut := runCLI("train", "--traces", train, "--out", model, "--folds", "4")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "held-out catches at a fixed false-pause rate")
	assert.Contains(t, out, "each fold model on its held-out runs, summed")

	code, out, errOut = runCLI("train", "--traces", train, "--out", model, "--folds", "4", "--json")
	require.Equal(t, 0, code, errOut)
	var tr struct {
		Catches struct {
			Folds []struct {
				Rate      float64 `json:"rate"`
				Succeeded int     `json:"succeeded"`
				Failed    int     `json:"failed"`
			} `json:"summed_over_folds"`
		} `json:"cv_catches_at_fixed_false_pause_rate"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &tr), out)
	// The pooled report's policy is the one each fold certified, applied
	// to its held-out runs: the figures of cv_policy, never a zero
	// policy's.
	var pooled struct {
		Pooled struct {
			PolicyName string          `json:"policy_name"`
			Policy     json.RawMessage `json:"policy"`
		} `json:"cv_pooled"`
		CVPolicy json.RawMessage `json:"cv_policy"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &pooled))
	assert.Equal(t, "the policy certified in each fold, applied to its held-out runs", pooled.Pooled.PolicyName)
	assert.JSONEq(t, string(pooled.CVPolicy), string(pooled.Pooled.Policy))
	require.Len(t, tr.Catches.Folds, 2)
	assert.Equal(t, []float64{0.01, 0.05}, []float64{tr.Catches.Folds[0].Rate, tr.Catches.Folds[1].Rate})
	assert.Equal(t, [2]int{16, 16}, [2]int{tr.Catches.Folds[0].Succeeded, tr.Catches.Folds[0].Failed}, "every run held out once")

	// A model of one's own without a policy pauses nothing, and says so.
	code, out, errOut = runCLI("eval", "--traces", test, "--judge", "learned", "--model", model)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `policy "no policy certified for this model: it shows bands and pauses nothing (overseer calibrate --model FILE certifies one)"`)
	assert.Contains(t, out, "pauses 0.0% of succeeded runs (0 of 8) and catches 0.0% of failed runs (0 of 8)")

	// With the default thresholds given as a policy file, the recorded
	// pauses.
	fixed := filepath.Join(dir, "fixed-policy.json")
	b, err := overseer.MarshalPolicy(overseer.DefaultPolicy(), nil)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(fixed, b, 0o644))
	code, out, errOut = runCLI("eval", "--traces", test, "--judge", "learned", "--model", model, "--policy", fixed)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "catches at a fixed false-pause rate")
	assert.Contains(t, out, "CAUGHT AT 1% OF SUCCEEDED PAUSED")
	assert.Contains(t, out, "letters  agent_loop  16    8")
	assert.Contains(t, out, "should pauses be on?")
	assert.Contains(t, out, "letters (agent_loop): the policy flags 6 of 16 runs: 6 of 8 failed runs (potential rescues) and 0 of 8 succeeded runs")
	assert.Contains(t, out, "p 1: every flagged run failed, so a pause here can only rescue")

	code, out, errOut = runCLI("eval", "--traces", test, "--as-phases", "--json")
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Catches []struct {
			Type  string `json:"type"`
			Shape string `json:"shape"`
			Runs  int    `json:"runs"`
		} `json:"catches_at_fixed_false_pause_rate"`
		Pauses []struct {
			Shape    string `json:"shape"`
			Flagged  int    `json:"flagged"`
			Sentence string `json:"sentence"`
		} `json:"pauses_rescue_or_disruption"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Len(t, rep.Catches, 1)
	assert.Equal(t, "letters", rep.Catches[0].Type)
	assert.Equal(t, "phases", rep.Catches[0].Shape, "--as-phases recasts the agents' runs")
	assert.Equal(t, 16, rep.Catches[0].Runs)
	require.Len(t, rep.Pauses, 1)
	assert.NotEmpty(t, rep.Pauses[0].Sentence)
}
