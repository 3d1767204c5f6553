package eval

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A redo is a reviewer's label: the phase's result was rejected. It is a
// needed pause, never a false one, and it is counted and said.
func TestUseGateLabelsCountsRedos(t *testing.T) {
	yes := true
	steps := []Step{{Phase: "plan"}, {Phase: "code"}, {Phase: "code"}}
	recs := []Record{
		// Redone, then continued without a note, then succeeded: the redo
		// is no false pause; the continue judged not needed is one.
		{Format: RecordFormat, ID: "r-1", Outcome: OutcomeSucceeded, Steps: steps, Gates: []GateDecision{
			{Gate: "code-1", Phase: "code", After: 2, By: "ana", Action: GateRedo, Needed: &yes, NeededBy: "redo or abort"},
			{Gate: "code-2", Phase: "code", After: 3, By: "ana", Action: GateContinue, Needed: new(false), NeededBy: "continue without a note"},
		}},
		// Redone twice, then failed.
		{Format: RecordFormat, ID: "r-2", Outcome: OutcomeFailed, Steps: steps, Gates: []GateDecision{
			{Gate: "code-1", Phase: "code", By: "bo", Action: GateRedo},
			{Gate: "code-2", Phase: "code", By: "bo", Action: GateRedo},
		}},
	}
	for _, r := range recs {
		assert.NoError(t, r.Validate(), "a redo is a valid gate action in a run record")
	}
	bad := recs[1]
	bad.Gates = []GateDecision{{Phase: "code", By: "bo", Action: "skip"}}
	assert.ErrorContains(t, bad.Validate(), `gate 0 has action "skip": use continue, redo or abort`)
	l := UseGateLabels(recs)
	assert.Equal(t, 3, l.Redos)
	assert.Equal(t, 2, l.RunsRedone)
	assert.Equal(t, 1, l.RedoneSucceeded)
	assert.Equal(t, 1, l.FalsePauses, "the continue, not the redo")
	assert.Equal(t, 1, recs[0].FalsePauses())
	assert.Equal(t, OutcomeSucceeded, recs[0].Outcome, "a redo leaves the outcome its own")
	assert.True(t, l.Any())
	assert.Contains(t, l.String(), "3 redos (a phase's result the reviewer rejected: needed pauses, never false ones, on 2 runs, 1 of which then succeeded)")

	only := UseGateLabels([]Record{{ID: "r-3", Outcome: OutcomeSucceeded, Steps: steps,
		Gates: []GateDecision{{Phase: "code", By: "ana", Action: GateRedo}}}})
	assert.True(t, only.Any(), "a redo alone is a reviewer's decision")
	assert.Zero(t, only.FalsePauses)
}
