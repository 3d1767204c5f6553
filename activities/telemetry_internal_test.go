package activities

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEachTurnResendsTheHistory(t *testing.T) {
	for _, phase := range DefaultPhases {
		t.Run(phase, func(t *testing.T) {
			kind := phaseKinds[phase]
			u := simulate("job", 1, phase, 2, false, 1, true)
			require.Len(t, u.output, len(u.input))
			assert.Equal(t, SystemPromptTokens+carriedContext(phase, 2), u.input[0], "the first turn sends the preamble and the carried context")
			for i := 1; i < len(u.input); i++ {
				assert.GreaterOrEqual(t, u.input[i]-u.input[i-1], u.output[i-1]+kind.observation.lo,
					"turn %d re-sends turn %d's output and observation", i, i-1)
			}
			for _, o := range u.output {
				assert.GreaterOrEqual(t, o, kind.output.lo)
				assert.LessOrEqual(t, o, kind.output.hi)
			}
		})
	}
}

func TestTheContextWindowBoundsATurn(t *testing.T) {
	u := simulate("job", 1, PhaseCode, 60, true, 30, false) // 60 runs carry far more than a window
	for _, in := range u.input {
		assert.Equal(t, int64(ContextWindowTokens), in)
	}
}

func TestCarriedContextGrows(t *testing.T) {
	for i := 1; i < len(DefaultPhases); i++ {
		assert.Greater(t, carriedContext(DefaultPhases[i], 1), carriedContext(DefaultPhases[i-1], 1),
			"%s carries %s's hand-off", DefaultPhases[i], DefaultPhases[i-1])
	}
	for _, phase := range DefaultPhases {
		assert.Greater(t, carriedContext(phase, 3), carriedContext(phase, 2), phase)
	}
	// The looping job's order: code#r, test#r, code#r+1.
	prev := int64(-1)
	for r := 1; r <= 7; r++ {
		for _, phase := range []string{PhaseCode, PhaseTest} {
			c := carriedContext(phase, r)
			assert.Greater(t, c, prev, "%s#%d", phase, r)
			prev = c
		}
	}
	assert.Zero(t, carriedContext(PhaseSpec, 1))
	assert.Zero(t, carriedContext("unknown", 3))
}

func TestTheSeedCoversJobPhaseRunAndAttempt(t *testing.T) {
	base := simulate("job", 1, PhaseCode, 1, true, 0, false)
	assert.Equal(t, base, simulate("job", 1, PhaseCode, 1, true, 0, false))
	for name, u := range map[string]usage{
		"job":     simulate("other", 1, PhaseCode, 1, true, 0, false),
		"attempt": simulate("job", 2, PhaseCode, 1, true, 0, false),
		"run":     simulate("job", 1, PhaseCode, 2, true, 0, false),
		"phase":   simulate("job", 1, PhaseReview, 1, true, 0, false),
	} {
		assert.NotEqual(t, base.output, u.output, "another %s draws other numbers", name)
	}
}
