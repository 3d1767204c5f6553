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
	assert.Equal(t, GateLabels{Aborts: 2, Relabelled: 1, Continues: 3, FalsePauses: 2, RunsWithFalsePause: 1, Unjudged: 5}, l,
		"records exported before the judgement keep the old rule: every continue not needed")
	assert.Equal(t, OutcomeFailed, recs[0].Outcome)
	assert.Equal(t, OutcomeSucceeded, recs[2].Outcome)
	assert.Contains(t, l.String(), "2 aborts at a gate (confirmed failures; 1 runs relabelled failed), 3 continues (0 judged needed), 2 of them judged not needed on jobs that then succeeded")
	assert.Contains(t, l.String(), "5 decisions exported before gates recorded whether the pause was needed are judged by the old rule")
	assert.Equal(t, "no reviewer decisions at gates in these runs", UseGateLabels(recs[4:]).String())
}

func TestUseGateLabelsReadsWhetherThePauseWasNeeded(t *testing.T) {
	yes, no := true, false
	cont := func(needed *bool, by string) GateDecision {
		return GateDecision{Phase: "code", By: "bo", Action: GateContinue, Needed: needed, NeededBy: by}
	}
	for _, tc := range []struct {
		name    string
		outcome Outcome
		gates   []GateDecision
		want    GateLabels
	}{
		{"a note that redirected a job that succeeded is no false pause", OutcomeSucceeded,
			[]GateDecision{cont(&yes, "continue with a note")},
			GateLabels{Continues: 1, NeededContinues: 1}},
		{"the reviewer's needed, without a note", OutcomeSucceeded,
			[]GateDecision{cont(&yes, "reviewer")},
			GateLabels{Continues: 1, NeededContinues: 1}},
		{"a continue without a note on a job that succeeded is a false pause", OutcomeSucceeded,
			[]GateDecision{cont(&no, "continue without a note")},
			GateLabels{Continues: 1, FalsePauses: 1, RunsWithFalsePause: 1}},
		{"a false alarm the reviewer called, with a note", OutcomeSucceeded,
			[]GateDecision{cont(&no, "reviewer")},
			GateLabels{Continues: 1, FalsePauses: 1, RunsWithFalsePause: 1}},
		{"one needed and one false pause on the same job", OutcomeSucceeded,
			[]GateDecision{cont(&yes, "reviewer"), cont(&no, "reviewer")},
			GateLabels{Continues: 2, NeededContinues: 1, FalsePauses: 1, RunsWithFalsePause: 1}},
		{"a false alarm on a job that failed later says no more than its outcome", OutcomeFailed,
			[]GateDecision{cont(&no, "reviewer")},
			GateLabels{Continues: 1}},
		{"exported before the judgement: the old rule", OutcomeSucceeded,
			[]GateDecision{cont(nil, "")},
			GateLabels{Continues: 1, FalsePauses: 1, RunsWithFalsePause: 1, Unjudged: 1}},
		{"an abort is needed and a confirmed failure", OutcomeSucceeded,
			[]GateDecision{{Phase: "code", By: "bo", Action: GateAbort, Needed: &yes, NeededBy: "redo or abort"}},
			GateLabels{Aborts: 1, Relabelled: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := []Record{{ID: "j-1", Outcome: tc.outcome, Steps: []Step{{Phase: "code"}}, Gates: tc.gates}}
			assert.Equal(t, tc.want, UseGateLabels(recs))
			assert.Equal(t, tc.want.FalsePauses, recs[0].FalsePauses())
		})
	}
}
