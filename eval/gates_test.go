package eval

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestUseGateLabels(t *testing.T) {
	steps := []Step{{Phase: "plan"}, {Phase: "code"}}
	recs := []Record{
		// Completed after a reviewer aborted? Not possible in the plugin, but
		// a label says so: the abort wins.
		{ID: "a-1", Outcome: OutcomeSucceeded, Steps: steps, Gates: []GateDecision{{Phase: "plan", After: 1, By: "ana", Action: GateAbort}}},
		{ID: "b-1", Outcome: OutcomeFailed, Steps: steps, Gates: []GateDecision{{Phase: "plan", After: 1, By: "ana", Action: GateAbort}}},
		// Continued twice, then succeeded: two recorded false pauses.
		{ID: "c-1", Outcome: OutcomeSucceeded, Steps: steps, Gates: []GateDecision{{Phase: "plan", By: "bo", Action: GateContinue}, {Phase: "code", By: "bo", Action: GateContinue}}},
		// Continued, then failed: nothing more than the outcome.
		{ID: "d-1", Outcome: OutcomeFailed, Steps: steps, Gates: []GateDecision{{Phase: "plan", By: "bo", Action: GateContinue}}},
		{ID: "e-1", Outcome: OutcomeSucceeded, Steps: steps},
	}
	l := UseGateLabels(recs)
	assert.Equal(t, GateLabels{Aborts: 2, Relabelled: 1, Continues: 3, FalsePauses: 2, RunsWithFalsePause: 1}, l)
	assert.Equal(t, OutcomeFailed, recs[0].Outcome)
	assert.Equal(t, OutcomeSucceeded, recs[2].Outcome)
	assert.Contains(t, l.String(), "2 aborts at a gate (confirmed failures; 1 runs relabelled failed), 3 continues, 2 of them on jobs that then succeeded")
	assert.Equal(t, "no reviewer decisions at gates in these runs", UseGateLabels(recs[4:]).String())
}
