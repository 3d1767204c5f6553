package eval_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
)

// budgetStopped are a job the judge kept On track that reached its token
// budget, continued with a raise and no note, and succeeded; and a failed
// job that only reached its budget, aborted there.
func budgetStopped() []eval.Record {
	notNeeded := false
	steps := func(n int) []eval.Step {
		out := make([]eval.Step, n)
		for i := range out {
			out[i] = eval.Step{Phase: "edit", InputTokens: 100}
		}
		return out
	}
	return []eval.Record{
		{ID: "raised-1", Outcome: eval.OutcomeSucceeded, Steps: steps(4),
			Gates: []eval.GateDecision{{Gate: "edit-1", After: 2, By: "ann", Action: eval.GateContinue, Needed: &notNeeded, Kind: overseer.GateKindBudget, WaitMS: 60_000}}},
		{ID: "spent-1", Outcome: eval.OutcomeFailed, Steps: steps(5),
			Gates: []eval.GateDecision{{Gate: "edit-1", After: 2, By: "ann", Action: eval.GateContinue, Kind: overseer.GateKindBudget, WaitMS: 60_000}}},
	}
}

// A budget's gate is no pause of the judge's: no false pause, no catch,
// no rescue or disruption; its stops are counted apart.
func TestBudgetGatesAreNotTheJudgesPauses(t *testing.T) {
	recs := budgetStopped()
	labels := eval.UseGateLabels(recs)
	assert.Zero(t, labels.FalsePauses, "a continue at a budget's gate is no false pause")
	assert.Zero(t, labels.Continues)
	assert.Equal(t, 2, labels.BudgetStops)
	assert.Equal(t, 2, labels.BudgetRaises)
	assert.Contains(t, labels.String(), "apart from the judge's pauses, 2 stops at a budget (2 continued with a raised budget, 0 aborted)")
	assert.Zero(t, recs[0].FalsePauses())
	assert.Empty(t, recs[0].JudgeGates())

	saved := eval.SavedOf(recs)
	assert.Zero(t, saved.PausedFailed, "the failed job was stopped by its budget, not caught by the judge")
	assert.Equal(t, eval.BudgetStops{Jobs: 2, Failed: 1, AfterFirstStop: 300, Raised: 2}, saved.Budgets)
	assert.Contains(t, saved.Sentence(), "budgets, apart from the judge: 2 jobs stopped at a budget (2 continued with a raised budget, 0 aborted after 0 tokens); the 1 failed of them spent 300 tokens after the first stop")

	rescue := eval.EstimateRescue("Job", recs)
	assert.Zero(t, rescue.Paused, "no paused job for the rescue estimate")
}

// Records exported before gates had a kind read as the judge's gates; a
// kind other than budget is refused in one sentence.
func TestAGatesKindIsReadAndChecked(t *testing.T) {
	var old eval.Record
	require.NoError(t, json.Unmarshal([]byte(`{"id":"j-1","outcome":"succeeded","steps":[{"phase":"a"}],"gates":[{"phase":"a","after":1,"by":"ann","action":"continue"}]}`), &old))
	assert.Len(t, old.JudgeGates(), 1)
	assert.Equal(t, 1, old.FalsePauses())

	bad := budgetStopped()[0]
	bad.Format, bad.Gates[0].Kind = eval.RecordFormat, "cost"
	err := bad.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `gate 0 has kind "cost": use "budget" for a gate a budget opened, or leave it out for the judge's`)
}
