package eval_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
)

// An agent loop ends on the worst band of its last assessments, a job of
// phases on its last verdict; both are counted beside the last verdict's.
func TestEndingsOf(t *testing.T) {
	at := func(ps ...float64) []eval.Point {
		var out []eval.Point
		for i, p := range ps {
			out = append(out, eval.Point{Steps: i + 1, Answers: overseer.Answers{OnObjective: p, Breach: overseer.BreachNone}})
		}
		return out
	}
	scored := []eval.ScoredRun{
		{ID: "ok", Outcome: eval.OutcomeSucceeded, Points: at(0.9, 0.9, 0.9)},
		{ID: "submitted", Outcome: eval.OutcomeFailed, Points: at(0.9, 0.1, 0.9)}, // its submission worked
		{ID: "no answers", Outcome: eval.OutcomeFailed, Points: []eval.Point{{Err: "judge down"}}},
	}
	policy := overseer.DefaultPolicy()
	loop := eval.EndingsOf(scored, policy, overseer.ShapeAgentLoop)
	assert.Equal(t, map[overseer.Band]int{overseer.BandOnTrack: 1}, loop.Succeeded)
	assert.Equal(t, map[overseer.Band]int{overseer.BandOffTrack: 1}, loop.Failed)
	assert.Equal(t, map[overseer.Band]int{overseer.BandOnTrack: 1}, loop.LastFailed)
	assert.Equal(t, "succeeded runs end 1 On track, 0 Needs a look, 0 Off track; failed runs end 0 On track, 0 Needs a look, 1 Off track", loop.Sentences()[0])

	phases := eval.EndingsOf(scored, policy, overseer.ShapePhases)
	assert.Equal(t, map[overseer.Band]int{overseer.BandOnTrack: 1}, phases.Failed, "a job of phases ends on its last verdict")
	assert.Len(t, phases.Sentences(), 1)
}
