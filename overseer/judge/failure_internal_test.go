package judge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// P(on objective) moves with a phase that keeps failing, not with one or
// two failures: from the third, the model's odds halved for every failure
// after the first.
func TestFailureAdjustedP(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want float64
	}{{0, 0.81}, {1, 0.81}, {2, 0.81}, {3, 0.516}, {4, 0.347}, {6, 0.117}} {
		assert.InDelta(t, tc.want, failureAdjusted(0.81, tc.n), 0.001, "after %d failures", tc.n)
	}
}

func TestFailureRepeats(t *testing.T) {
	ok := func(p string) trajectory.PhaseRun { return trajectory.PhaseRun{Phase: p} }
	bad := func(p string) trajectory.PhaseRun { return trajectory.PhaseRun{Phase: p, Failed: true} }
	for _, tc := range []struct {
		name string
		runs []trajectory.PhaseRun
		want int
	}{
		{"nothing ran", nil, 0},
		{"the last run succeeded", []trajectory.PhaseRun{bad("code"), ok("code")}, 0},
		{"one failure", []trajectory.PhaseRun{ok("spec"), bad("code")}, 1},
		{"the same phase three times in a row", []trajectory.PhaseRun{bad("code"), bad("code"), bad("code")}, 3},
		{"a success of the phase breaks the count", []trajectory.PhaseRun{bad("code"), ok("code"), bad("code")}, 1},
		{"other phases between its failures", []trajectory.PhaseRun{ok("model"), bad("tool"), ok("model"), bad("tool"), ok("model"), bad("tool")}, 3},
		{"different phases failing in a row", []trajectory.PhaseRun{ok("spec"), bad("code"), bad("test")}, 2},
		{"a saga's compensation after a failure", []trajectory.PhaseRun{ok("reserve"), bad("charge"), ok("release")}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r trajectory.TrajectoryRecorder
			for _, run := range tc.runs {
				r.RecordPhase(run, nil)
			}
			assert.Equal(t, tc.want, FailureRepeats(r.Trajectory()))
		})
	}
}

// A policy that pauses nothing shows the band and flags nothing, however
// low P or however confident a breach.
func TestUncertifiedModelPolicyPausesNothing(t *testing.T) {
	p := UncertifiedModelPolicy()
	require.NoError(t, p.Validate())
	v := p.Evaluate(trajectory.Answers{OnObjective: 0.01, Breach: "obligation[0]", BreachConfidence: 1, Severity: 3})
	assert.False(t, v.Flagged)
	assert.Equal(t, BandOffTrack, v.Band)
	assert.Equal(t, "pauses nothing: no policy certified for the model", p.Guarantee())
}
