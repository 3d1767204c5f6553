package learn

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
)

func exportOf(t *testing.T, records []eval.Record, opts DecideOptions) ExportOutput {
	t.Helper()
	a := &Activities{Records: func(context.Context, string, string, time.Time) ([]eval.Record, error) { return records, nil }}
	out, err := a.Export(context.Background(), ExportInput{Type: "CoroJob", Options: opts})
	require.NoError(t, err)
	return out
}

// A round with a few jobs names the type's stage and what the next one
// needs, and never advises the command that just refused.
func TestFewJobsNameTheStageAndTheNextStep(t *testing.T) {
	out := exportOf(t, synthetic(4, 1, 0), DecideOptions{})
	r := out.Readiness
	assert.False(t, r.Ready)
	assert.False(t, r.Recalibrate)
	assert.Equal(t, overseer.StageUncalibrated, r.Stage)
	assert.Equal(t, "CoroJob is at stage 0, not calibrated for the type: stage 1 (recalibration) needs 30 closed jobs of both outcomes; 4 have closed; "+
		"a refit (stage 3) needs about 22 more succeeded runs (17 to train on beyond the newest 20% held out) and succeeded runs among the newest", r.Next)
	assert.NotContains(t, r.Next+out.Rates.Sentence, "overseer learn run")

	// Enough for stage 1, not for a refit that keeps a promise at 95%.
	out = exportOf(t, synthetic(40, 1, 0), DecideOptions{Promise: overseer.PromiseConfident})
	assert.True(t, out.Readiness.Recalibrate)
	assert.Contains(t, out.Readiness.Next, "this round recalibrates on the 40 closed CoroJob jobs (stage 1); a refit (stage 3) needs about")

	// Enough for a refit with the default promise.
	out = exportOf(t, synthetic(40, 1, 0), DecideOptions{})
	assert.True(t, out.Readiness.Ready)
	assert.Equal(t, "this round refits on the type's jobs (stage 3)", out.Readiness.Next)
}

// Stage 1 recalibrates the current model on the type's jobs and promotes
// it when its probabilities fit them better; the candidate names the type,
// and its policy is certified when the jobs allow a promise.
func TestRecalibrationPromotesStageOne(t *testing.T) {
	cur := Current{Model: overseer.DefaultLearnedModel(), Policy: overseer.DefaultLearnedPolicy()}
	for _, tc := range []struct {
		name  string
		runs  int
		stage int
	}{
		{"30 jobs certify a promise in expectation", 30, overseer.StageCertified},
		{"90 jobs", 90, overseer.StageCertified},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := DecideRecalibration(context.Background(), synthetic(tc.runs, 2, 0), cur, "CoroJob", DecideOptions{})
			require.NoError(t, err)
			assert.True(t, d.Promote, d.Reason)
			assert.Equal(t, tc.stage, d.Figures.Stage)
			assert.Less(t, d.Figures.CandidateBrier, d.Figures.CurrentBrier)
			assert.Contains(t, d.Reason, "promote "+d.Version)
			m, err := overseer.ParseLearnedModel(d.Model)
			require.NoError(t, err)
			require.NotNil(t, m.Recalibration)
			assert.Equal(t, "CoroJob", m.Recalibration.For)
			p, err := overseer.ParsePolicy(d.Policy)
			require.NoError(t, err)
			assert.Equal(t, tc.stage == overseer.StageCertified, p.Promise.Certified())
			assert.Equal(t, StageOf(Current{Model: m, Policy: p}), tc.stage)
		})
	}

	// With a confidence promise, 30 jobs certify none: bands, no pause on P.
	d, err := DecideRecalibration(context.Background(), synthetic(30, 2, 0), cur, "CoroJob", DecideOptions{Promise: overseer.PromiseConfident})
	require.NoError(t, err)
	assert.True(t, d.Promote, d.Reason)
	assert.Equal(t, overseer.StageRecalibrated, d.Figures.Stage)
	assert.Contains(t, d.Reason, "no pause on P until a promise can be certified")
	p, err := overseer.ParsePolicy(d.Policy)
	require.NoError(t, err)
	assert.Zero(t, p.PauseAtOrBelow)

	// With a pause budget, the uncertified policy pauses at most that share
	// of jobs, said as a reviewer-load control.
	bd, err := DecideRecalibration(context.Background(), synthetic(30, 2, 0), cur, "CoroJob", DecideOptions{Promise: overseer.PromiseConfident, PauseBudget: 0.1})
	require.NoError(t, err)
	bp, err := overseer.ParsePolicy(bd.Policy)
	require.NoError(t, err)
	assert.Equal(t, 0.1, bp.PauseBudget.MaxShare)
	assert.Equal(t, 30, bp.PauseBudget.Jobs)
	assert.LessOrEqual(t, bp.PauseBudget.Paused, 3)
	assert.Contains(t, bd.Reason, "a pause budget, not a false-pause promise: pauses at most 10.0% of jobs")

	// Recalibrated on these jobs already: nothing to do until more close.
	m, err := overseer.ParseLearnedModel(d.Model)
	require.NoError(t, err)
	ok, why := recalibrationReady(synthetic(30, 2, 0), Current{Model: m, Policy: p})
	assert.False(t, ok)
	assert.Equal(t, "it is recalibrated on 30 jobs already; it recalibrates again when more have closed", why)
}

// A loop type's stage 1 reads each job against the type's own succeeded
// jobs, so the candidate's pauses are certified on each job scored by it
// recalibrated without the job's task family (eval.OutOfFoldScores), not
// on its own scores of the jobs it read itself among.
func TestALoopTypesStageOneIsCertifiedOutOfFold(t *testing.T) {
	ctx := context.Background()
	var records []eval.Record
	for i := range 120 {
		rec := eval.Record{Format: eval.RecordFormat, ID: fmt.Sprintf("fam%d-%d", i%5, i), Outcome: eval.OutcomeSucceeded}
		steps := 20 + (i*7)%13
		if i%3 == 0 {
			rec.Outcome, steps = eval.OutcomeFailed, 2*steps+i%17
		}
		for s := range steps {
			rec.Steps = append(rec.Steps, eval.Step{Phase: []string{"read", "edit", "test"}[s%3], InputTokens: 2000, OutputTokens: 150})
		}
		records = append(records, rec)
	}
	cur := Current{Model: overseer.DefaultLoopModel(), Policy: overseer.DefaultLearnedPolicy()}
	d, err := DecideRecalibration(ctx, records, cur, "Loop", DecideOptions{})
	require.NoError(t, err)
	require.NotNil(t, d.Figures.Calibration, d.Figures.CalibrationError)

	model, err := overseer.ParseLearnedModel(d.Model)
	require.NoError(t, err)
	oof, err := eval.OutOfFoldScores(ctx, records, model, eval.RecalibrateOptions{For: "Loop"}, eval.ScoreOptions{})
	require.NoError(t, err)
	want, err := eval.Calibrate(oof.Runs, DefaultBudget, overseer.PromiseExpected)
	require.NoError(t, err)
	inSample, err := eval.Score(ctx, records, eval.ScoreOptions{Judge: &overseer.LearnedJudge{Model: model}})
	require.NoError(t, err)
	flattered, err := eval.Calibrate(inSample, DefaultBudget, overseer.PromiseExpected)
	require.NoError(t, err)
	require.NotEqual(t, flattered.Policy.PauseAtOrBelow, want.Policy.PauseAtOrBelow, "the runs tell the two apart")
	assert.Equal(t, want.Policy.PauseAtOrBelow, d.Figures.Calibration.Policy.PauseAtOrBelow, "certified out of fold")
}
