package judge_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer/judge"
)

// succeededRuns are n runs of 10, 11, … turns, using 1,000 input and 100
// output tokens a turn.
func succeededRuns(n int) [][]judge.TurnTokens {
	runs := make([][]judge.TurnTokens, n)
	for i := range runs {
		for k := range 10 + i {
			runs[i] = append(runs[i], judge.TurnTokens{Input: int64(1000 * (k + 1)), Output: int64(100 * (k + 1))})
		}
	}
	return runs
}

func TestNewLoopReference(t *testing.T) {
	_, err := judge.NewLoopReference(succeededRuns(judge.MinLoopReferenceRuns - 1))
	require.ErrorIs(t, err, judge.ErrLoopReference)
	assert.EqualError(t, err, "loop reference: 9 succeeded runs are too few: it takes at least 10")

	ref, err := judge.NewLoopReference(succeededRuns(11)) // 10 to 20 turns
	require.NoError(t, err)
	assert.Equal(t, 11, ref.Runs)
	require.Len(t, ref.Turns, 21)
	assert.Equal(t, []float64{10, 15, 20}, []float64{ref.Turns[0], ref.MedianTurns(), ref.Turns[20]})
	require.Len(t, ref.InputTokens, 20, "a value per turn up to the longest run")
	assert.Equal(t, int64(1000), ref.InputTokens[0])
	assert.Equal(t, int64(15000), ref.InputTokens[14], "by turn 15 every run still running has used 15,000, the ended ones their totals")
	assert.Equal(t, int64(15000), ref.InputTokens[19], "past the median run's end the median is of totals")
	for i := 1; i < len(ref.OutputTokens); i++ {
		assert.GreaterOrEqual(t, ref.OutputTokens[i], ref.OutputTokens[i-1], "never decreasing")
	}

	silent := succeededRuns(10)
	for i := range silent {
		for k := range silent[i] {
			silent[i][k] = judge.TurnTokens{}
		}
	}
	ref, err = judge.NewLoopReference(silent)
	require.NoError(t, err)
	assert.Empty(t, ref.InputTokens, "an agent that reports no tokens gives no token curve")
	assert.Empty(t, ref.OutputTokens)
}

// A model file carries its reference, and one whose reference cannot be
// read is refused in one sentence.
func TestLoopReferenceInAModelFile(t *testing.T) {
	ref, err := judge.NewLoopReference(succeededRuns(12))
	require.NoError(t, err)
	m := judge.DefaultLoopModel()
	require.True(t, m.NeedsLoopReference(), "the shipped loop model reads runs against a type's succeeded runs")
	require.Nil(t, m.LoopReference, "and carries none of its own")
	m.LoopReference = ref
	data, err := json.Marshal(m)
	require.NoError(t, err)
	back, err := judge.ParseLearnedModel(data)
	require.NoError(t, err)
	assert.Equal(t, ref, back.LoopReference)

	ref.InputTokens[3] = 1
	data, err = json.Marshal(m)
	require.NoError(t, err)
	_, err = judge.ParseLearnedModel(data)
	require.ErrorIs(t, err, judge.ErrModel)
	assert.ErrorIs(t, err, judge.ErrLoopReference)
	assert.ErrorContains(t, err, "its input tokens must not decrease or be negative (at turn 4)")
}
