package overseer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
)

// TestAPausedJobReadsAsOneToLookAt: the band a paused job is shown in is
// never On track, and its headline leads with why it is paused.
func TestAPausedJobReadsAsOneToLookAt(t *testing.T) {
	for _, tc := range []struct {
		last, shown overseer.Band
	}{
		{overseer.BandOnTrack, overseer.BandNeedsALook},
		{overseer.BandNeedsALook, overseer.BandNeedsALook},
		{overseer.BandOffTrack, overseer.BandOffTrack},
		{overseer.BandUnknown, overseer.BandNeedsALook},
	} {
		assert.Equal(t, tc.shown, overseer.PausedBand(tc.last), "%s", tc.last)
	}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	s := overseer.Status{Paused: true, Assessed: true, Band: overseer.BandOnTrack, OnObjective: 0.75, Gates: []overseer.Gate{
		{ID: "code-2", Phase: "code", PausedAt: at.Add(time.Hour), Evidence: []string{"later"}},
		{ID: "code-1", Phase: "code", PausedAt: at, Reason: "breach of obligation[2] (confidence 0.81), severity 2.0",
			Evidence: []string{"test ran 4 times in the last 8 phase runs"}},
	}}
	assert.Equal(t, "test ran 4 times in the last 8 phase runs", s.PauseWhy(), "the oldest open gate's first line of evidence")
	assert.Equal(t, "Paused: test ran 4 times in the last 8 phase runs (Needs a look; the last assessment said 75%)", s.Headline())
	s.Paused = false
	assert.Equal(t, "On track, 75%", s.Headline())

	ev := overseer.GateEvent{Kind: overseer.GateOpened, WorkflowID: "job-1", Gate: "code-1", Phase: "code",
		Reason: "breach", Evidence: []string{"test ran 4 times in the last 8 phase runs"}}
	assert.Equal(t, "Job job-1 is paused after phase code: test ran 4 times in the last 8 phase runs; it waits for a person at gate code-1.", ev.Sentence())
	// An agent loop's gate opens after a call.
	loop := overseer.GateEvent{Kind: overseer.GateOpened, WorkflowID: "job-2", Gate: "run_tests-1", Phase: "run_tests", Shape: overseer.ShapeAgentLoop,
		Reason: "breach", Evidence: []string{"run_tests failed each of its last 4 calls"}}
	assert.Equal(t, "Job job-2 is paused after call run_tests: run_tests failed each of its last 4 calls; it waits for a person at gate run_tests-1.", loop.Sentence())

	// A budget's gate says so, and its resume names the raised budget.
	budget := overseer.GateEvent{Kind: overseer.GateOpened, WorkflowID: "job-1", Gate: "code-3", Phase: "code", GateKind: overseer.GateKindBudget,
		Reason: "budget: the job spent 2400 tokens of its budget of 2000 tokens (120%)", Evidence: []string{"the job spent 2400 tokens of its budget of 2000 tokens (120%)"}}
	assert.Equal(t, "Job job-1 reached its budget after phase code: the job spent 2400 tokens of its budget of 2000 tokens (120%); it waits at gate code-3 for a raised budget or an abort.", budget.Sentence())
	budget.Kind, budget.By, budget.Wait, budget.RaisedBudget = overseer.GateResumed, "alice", 90*time.Second, &overseer.Budget{Tokens: 5000}
	assert.Equal(t, "Job job-1 was resumed at gate code-3 by alice with a raised budget (5000 tokens) after 1m30s.", budget.Sentence())
}

// TestAVerdictNamesTheStageItsPolicyGives: a recalibrated model whose run
// pins a certified promise is at stage 2, as learn status says; without a
// certified promise it stays at stage 1, and other stages are untouched.
func TestAVerdictNamesTheStageItsPolicyGives(t *testing.T) {
	const basis = "telemetry sub-model: log_input_tokens_per_step; stage 1: recalibrated (intercept) on 34 CoroJob jobs; lower than 92% of the last 34 CoroJob jobs at this point"
	certified := overseer.DefaultLearnedPolicy()
	require.True(t, certified.Promise.Certified())
	assert.Equal(t, "telemetry sub-model: log_input_tokens_per_step; stage 2: recalibrated (intercept) on 34 CoroJob jobs, with a certified pause policy; lower than 92% of the last 34 CoroJob jobs at this point",
		overseer.StagedBasis(basis, certified))
	assert.Equal(t, "telemetry sub-model, stage 2", overseer.ShortBasis(overseer.StagedBasis(basis, certified)))
	assert.Equal(t, basis, overseer.StagedBasis(basis, overseer.DefaultPolicy()), "no certified promise: stage 1")
	stage0 := "telemetry sub-model: x; stage 0: not calibrated for CoroJob (learned from other runs)"
	assert.Equal(t, stage0, overseer.StagedBasis(stage0, certified))
}

// TestAStandingSaysWhatItsReferenceHolds: at a point only succeeded jobs
// reached, a low rank says so rather than alarm; a mixed reference says
// how many succeeded; a reference from before outcomes were kept says
// neither.
func TestAStandingSaysWhatItsReferenceHolds(t *testing.T) {
	var runs [][]overseer.PointP
	for i := range 20 {
		failed := i%2 == 0 // every answer of a run carries its outcome
		runs = append(runs, []overseer.PointP{{PhaseRuns: 1, P: 0.5, Failed: failed}, {PhaseRuns: 12, P: 0.80 + float64(i)/200, Failed: failed}})
	}
	ref := overseer.NewReference(runs)
	require.NotNil(t, ref)
	s, ok := ref.Standing(1, 0.4)
	require.True(t, ok)
	assert.Equal(t, "lower than 100% of the last 20 CoroJob jobs at this point, 10 of which succeeded", s.Sentence("CoroJob"))

	var succeeded [][]overseer.PointP
	for i := range 20 {
		succeeded = append(succeeded, []overseer.PointP{{PhaseRuns: 30, P: 0.80 + float64(i)/200}})
	}
	ref = overseer.NewReference(succeeded)
	s, ok = ref.Standing(30, 0.79)
	require.True(t, ok)
	assert.Equal(t, "lower than 100% of the last 20 CoroJob jobs at this point, all 20 of which succeeded", s.Sentence("CoroJob"))

	s.Failed = nil // a reference kept before outcomes were
	assert.Equal(t, "lower than 100% of the last 20 CoroJob jobs at this point", s.Sentence("CoroJob"))
}
