package judge_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer/judge"
)

// One factor bounds every measure a relative budget covers; a measure it
// has no curve of, or one the job does not report, is never compared.
func TestSpendBudgetReachedOnAnyMeasureItCovers(t *testing.T) {
	b := judge.SpendBudget{Curve: []int64{100, 200}, TurnsCurve: []int64{1, 2}, PhaseTimeCurve: []time.Duration{time.Minute, 2 * time.Minute},
		Factor: 2, MaxReached: 0.05, Jobs: 20}
	require.NoError(t, b.Validate())
	assert.Equal(t, []string{"tokens", "turns", "time"}, b.Covers())
	tests := []struct {
		name    string
		spent   judge.Spent
		measure string
		reached string
	}{
		{"typical", judge.Spent{Tokens: 150, Turns: 2, PhaseTime: 90 * time.Second, PhaseRuns: 2}, "turns", ""},
		{"tokens", judge.Spent{Tokens: 450, Turns: 2, PhaseTime: time.Minute, PhaseRuns: 2}, "tokens",
			"spent 450 tokens by phase run 2, 2.2× what the type's succeeded jobs typically had (200 tokens); at most 5% of jobs like them reach 2.0×"},
		{"time", judge.Spent{Tokens: 100, Turns: 1, PhaseTime: 10 * time.Minute, PhaseRuns: 1}, "time",
			"spent 10m0s in phases by phase run 1, 10.0× what the type's succeeded jobs typically had (1m0s in phases); at most 5% of jobs like them reach 2.0×"},
		{"turns past the curve's end", judge.Spent{Tokens: 300, Turns: 5, PhaseTime: 2 * time.Minute, PhaseRuns: 9}, "turns",
			"spent 5 turns by phase run 9, 2.5× what the type's succeeded jobs typically had (2 turns); at most 5% of jobs like them reach 2.0×"},
		{"nothing reported", judge.Spent{PhaseRuns: 3}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, measure := b.Ratio(tt.spent)
			assert.Equal(t, tt.measure, measure)
			assert.Equal(t, tt.reached, b.Reached(tt.spent))
		})
	}
	assert.Equal(t, []string{"tokens", "turns"}, b.Unreported(judge.Spent{PhaseTime: time.Second, PhaseRuns: 1}))
	assert.Empty(t, b.Unreported(judge.Spent{}), "before a phase ran nothing is unchecked")

	tokensOnly := judge.SpendBudget{Curve: []int64{100}, Factor: 2, MaxReached: 0.05, Jobs: 20}
	assert.Empty(t, tokensOnly.Reached(judge.Spent{Tokens: 100, PhaseTime: time.Hour, PhaseRuns: 1}), "time is not covered")
	assert.Equal(t, "2.0× the succeeded jobs' tokens, turns or time at the same phase run (at most 5% of jobs like them reach it; calibrated on 20)", b.String())
}

// A budget learned before turns and time were covered reads as it did:
// its curve is the tokens'.
func TestSpendBudgetReadsABudgetOfTokensAlone(t *testing.T) {
	var b judge.SpendBudget
	require.NoError(t, json.Unmarshal([]byte(`{"curve":[100,300],"factor":2.2,"max_reached":0.05,"jobs":25}`), &b))
	require.NoError(t, b.Validate())
	assert.Equal(t, []string{"tokens"}, b.Covers())
	assert.NotEmpty(t, b.Reached(judge.Spent{Tokens: 700, PhaseRuns: 2}))
}

// A budget learned from few succeeded jobs compares what a job spent in
// all, and its promise says what it assumes.
func TestSpendBudgetInAllSaysWhatItAssumes(t *testing.T) {
	b := judge.SpendBudget{Curve: []int64{1000}, Factor: 3, MaxReached: 0.05, Jobs: 6, Assumes: judge.SpendAssumesLogNormal}
	require.NoError(t, b.Validate())
	assert.Empty(t, b.Reached(judge.Spent{Tokens: 2999, PhaseRuns: 40}))
	assert.Equal(t, "spent 3000 tokens by phase run 2, 3.0× what the type's succeeded jobs typically spent in all (1000 tokens); "+
		"at most 5% of jobs like them reach 3.0×, if their spend is log-normal", b.Reached(judge.Spent{Tokens: 3000, PhaseRuns: 2}))
	assert.Equal(t, "3.0× the succeeded jobs' typical tokens in all (at most 5% of jobs like them reach it, if their spend is log-normal; learned from 6)", b.String())
}

func TestSpendBudgetValidate(t *testing.T) {
	tests := []struct {
		name string
		b    judge.SpendBudget
		err  string
	}{
		{"no curve", judge.SpendBudget{Factor: 2, MaxReached: 0.05}, "invalid relative budget: it has no curve of the succeeded jobs' tokens, turns or time in phases"},
		{"time decreases", judge.SpendBudget{PhaseTimeCurve: []time.Duration{2, 1}, Factor: 2, MaxReached: 0.05},
			"invalid relative budget: the time curve must not decrease or be negative (at phase run 2)"},
		{"no factor", judge.SpendBudget{TurnsCurve: []int64{1}, MaxReached: 0.05}, "invalid relative budget: factor 0 is not a positive number"},
		{"unknown assumption", judge.SpendBudget{Curve: []int64{1}, Factor: 2, MaxReached: 0.05, Assumes: "normal"},
			`invalid relative budget: assumes "normal": give "log-normal" or leave it out`},
		{"log-normal by phase run", judge.SpendBudget{Curve: []int64{1, 2}, Factor: 2, MaxReached: 0.05, Assumes: judge.SpendAssumesLogNormal},
			"invalid relative budget: a log-normal budget compares totals: its tokens curve must be one value, not 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.b.Validate()
			require.ErrorIs(t, err, judge.ErrInvalidSpendBudget)
			assert.EqualError(t, err, tt.err)
		})
	}
}
