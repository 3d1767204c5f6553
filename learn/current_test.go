package learn_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/learn"
	"github.com/corohq/temporal-overseer/overseer"
)

// A round on an agent loop's jobs weighs the judge that answers them in
// the plugin — the loop model under the policy's loop part — not the phase
// model the registry's fallback names; on jobs of phases, and once a loop
// model is current, it keeps what it was given.
func TestARoundOnLoopJobsWeighsTheLoopModel(t *testing.T) {
	shipped := learn.Current{Model: overseer.DefaultLearnedModel(), Policy: overseer.DefaultLearnedPolicy()}
	call := func(phase string) eval.Step { return eval.Step{Phase: phase} }
	loop := []eval.Record{{ID: "loop-1", Unit: eval.UnitCall, Steps: []eval.Step{call("llm"), call("run_tests"), call("llm")}}}
	declared := []eval.Record{{ID: "loop-2", Unit: eval.UnitCall, Shape: overseer.ShapeAgentLoop, Steps: []eval.Step{call("think"), call("act")}}}
	phases := []eval.Record{{ID: "job-1", Unit: eval.UnitCall, Steps: []eval.Step{call("spec"), call("code"), call("test")}}}

	for name, recs := range map[string][]eval.Record{"named as a model call": loop, "declared": declared} {
		got := shipped.ForRecords(recs)
		assert.Equal(t, overseer.DefaultLoopModel().Version, got.Model.Version, name)
		assert.Equal(t, shipped.Policy.ForShape(overseer.ShapeAgentLoop), got.Policy, name)
		assert.Equal(t, got, got.ForRecords(recs), "%s: a loop model stays", name)
	}
	assert.Equal(t, shipped, shipped.ForRecords(phases), "jobs of phases keep the phase model")
	assert.Equal(t, shipped, shipped.ForRecords(nil))
}

// A loop type recalibrated before a promise can be certified pauses on
// no P, and on the loop's own breach rule, not the default one, which
// fires earlier: the recalibration must not make it pause more.
func TestAnUncertifiedLoopPolicyKeepsTheLoopsRule(t *testing.T) {
	loopPolicy := overseer.DefaultLearnedPolicy().ForShape(overseer.ShapeAgentLoop)
	require.Greater(t, loopPolicy.BreachConfidence, overseer.DefaultPolicy().BreachConfidence, "the shipped loop rule pauses later than the default")
	p := eval.UncertifiedPolicy(nil, "stage 1", loopPolicy)
	assert.Equal(t, loopPolicy.BreachConfidence, p.BreachConfidence)
	assert.Equal(t, loopPolicy.BreachSeverity, p.BreachSeverity)
	assert.Zero(t, p.PauseAtOrBelow, "no pause on P")
	assert.Equal(t, overseer.DefaultPolicy().BreachConfidence, eval.UncertifiedPolicy(nil, "stage 1", overseer.Policy{}).BreachConfidence)
	require.NoError(t, p.Validate())
}
