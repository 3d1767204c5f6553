package eval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
)

// agentRuns builds jobs of phases (UnitPhase, as a CoroJob exports them)
// of an agent unlike the shipped model's: it
// succeeds in one run of successRate, and a failing run spends more output
// tokens per step (so the shipped model still ranks the runs).
func agentRuns(n int, seed uint64, successRate float64) []eval.Record {
	rng := rand.New(rand.NewPCG(seed, 11))
	phases := []string{"read", "edit", "test"}
	var out []eval.Record
	for i := range n {
		failed := rng.Float64() >= successRate
		rec := eval.Record{Format: eval.RecordFormat, ID: fmt.Sprintf("fam%d-%d", i%4, i), Unit: eval.UnitPhase, Outcome: eval.OutcomeSucceeded}
		for s := range 6 + rng.IntN(10) {
			out := int64(150 + rng.IntN(200))
			if failed {
				out += int64(rng.IntN(300))
			}
			rec.Steps = append(rec.Steps, eval.Step{Phase: phases[(s/2)%3], OutputTokens: out, InputTokens: int64(6000 + rng.IntN(4000))})
		}
		if failed {
			rec.Outcome = eval.OutcomeFailed
		}
		out = append(out, rec)
	}
	return out
}

func meanP(t *testing.T, runs []eval.ScoredRun) float64 {
	t.Helper()
	var sum float64
	var n int
	for _, r := range runs {
		for _, p := range r.Points {
			if p.HasP() {
				sum += p.OnObjective()
				n++
			}
		}
	}
	require.NotZero(t, n)
	return sum / float64(n)
}

func TestRecalibrateFitsPToTheAgentsSuccessRateAndKeepsTheRanking(t *testing.T) {
	ctx := context.Background()
	calib, held := agentRuns(40, 1, 0.2), agentRuns(200, 2, 0.2)
	shipped := overseer.DefaultLearnedModel()
	rec, err := eval.Recalibrate(calib, shipped, eval.RecalibrateOptions{For: "CoroJob"})
	require.NoError(t, err)

	r := rec.Recalibration
	require.NotNil(t, r)
	assert.Equal(t, "CoroJob", r.For)
	assert.Equal(t, shipped.Version, r.From)
	assert.Equal(t, 40, r.Runs)
	assert.Equal(t, overseer.StageRecalibrated, rec.Stage())
	assert.Contains(t, rec.Version, shipped.Version+"-cal-")
	for i, sm := range rec.SubModels {
		assert.Equal(t, shipped.SubModels[i].Features, sm.Features, "no weight is refitted")
	}

	before, err := eval.Score(ctx, held, eval.ScoreOptions{Judge: &overseer.LearnedJudge{Model: shipped}})
	require.NoError(t, err)
	after, err := eval.Score(ctx, held, eval.ScoreOptions{Judge: &overseer.LearnedJudge{Model: rec}})
	require.NoError(t, err)
	assert.Greater(t, meanP(t, before), 0.5, "the shipped model thinks this agent succeeds most of the time")
	assert.InDelta(t, 0.2, meanP(t, after), 0.1, "recalibrated, P is near the agent's success rate")

	b, a := eval.NewReport("before", before, overseer.Policy{}).Checkpoints[1], eval.NewReport("after", after, overseer.Policy{}).Checkpoints[1]
	require.Equal(t, "50%", a.At)
	assert.True(t, b.Misfit(), "before: Brier %v above the base rate's %v", b.Brier, b.BaseBrier)
	assert.LessOrEqual(t, float64(a.Brier), float64(a.BaseBrier)+0.01, "after: Brier near or below the base rate's")
	assert.InDelta(t, float64(b.AUROC), float64(a.AUROC), 0.02, "the ranking is the model's own")
}

func TestRecalibrateFitsTheSlopeOnlyWithEnoughOfEachOutcome(t *testing.T) {
	few, err := eval.Recalibrate(agentRuns(40, 3, 0.3), overseer.DefaultLearnedModel(), eval.RecalibrateOptions{For: "T"})
	require.NoError(t, err)
	assert.Equal(t, "intercept", few.Recalibration.SubModels[0].Fitted, "%+v", few.Recalibration.SubModels[0])

	many, err := eval.Recalibrate(agentRuns(200, 3, 0.4), overseer.DefaultLearnedModel(), eval.RecalibrateOptions{For: "T"})
	require.NoError(t, err)
	assert.Equal(t, "intercept and slope", many.Recalibration.SubModels[0].Fitted, "%+v", many.Recalibration.SubModels[0])
	assert.Greater(t, many.SubModels[0].Calibration.A, 0.0)
	assert.Equal(t, "none", many.Recalibration.SubModels[1].Fitted, "no run reached the structure sub-model")
}

func TestRecalibrateRefuses(t *testing.T) {
	allSucceeded := agentRuns(40, 4, 1)
	for _, tc := range []struct {
		name    string
		records []eval.Record
		opts    eval.RecalibrateOptions
		want    string
	}{
		{"one outcome", allSucceeded, eval.RecalibrateOptions{For: "T"}, "recalibrate: the 40 runs all succeeded: recalibration needs runs of both outcomes"},
		{"too few", agentRuns(12, 5, 0.5), eval.RecalibrateOptions{For: "T"}, "recalibrate: 12 runs are too few: recalibration takes at least 30 closed runs of both outcomes; at this type's success rate (5 of 12 closed runs, 42%), stage 1 (recalibration) needs about 30 closed runs (30 of both outcomes; an agent loop 10 succeeded to read it against), stage 2 (a certified 5% false-pause promise) about 46 (19 succeeded, in expectation; 59 at 95% confidence: about 142), and a relative budget about 12 (5 succeeded; its 5% promise assumes their spend is log-normal until about 70, 29 succeeded)"},
		{"nobody's runs", agentRuns(40, 5, 0.5), eval.RecalibrateOptions{}, "recalibrate: say whose runs these are (the workflow type or agent)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := eval.Recalibrate(tc.records, overseer.DefaultLearnedModel(), tc.opts)
			require.ErrorIs(t, err, eval.ErrRecalibrate)
			assert.EqualError(t, err, tc.want)
		})
	}
}

func TestRecalibratedVerdictNamesItsStageAndStanding(t *testing.T) {
	rec, err := eval.Recalibrate(agentRuns(60, 6, 0.3), overseer.DefaultLearnedModel(), eval.RecalibrateOptions{For: "CoroJob", MinSlopeRuns: 1000})
	require.NoError(t, err)
	require.NotNil(t, rec.Reference)
	scored, err := eval.Score(context.Background(), agentRuns(1, 7, 0.3), eval.ScoreOptions{Judge: &overseer.LearnedJudge{Model: rec}})
	require.NoError(t, err)
	basis := scored[0].Points[0].Answers.Basis
	assert.Contains(t, basis, "telemetry sub-model: ")
	assert.Contains(t, basis, "; stage 1: recalibrated (intercept) on 60 CoroJob jobs; ")
	assert.Regexp(t, `(lower|higher) than \d+% of the last 60 CoroJob jobs at this point, (all \d+ of which (succeeded|failed)|\d+ of which succeeded)$`, basis)

	// The file a recalibration writes reads back as it was.
	data, err := json.Marshal(rec)
	require.NoError(t, err)
	back, err := overseer.ParseLearnedModel(data)
	require.NoError(t, err)
	again, err := json.Marshal(back)
	require.NoError(t, err)
	assert.JSONEq(t, string(data), string(again))
	assert.Equal(t, rec.Recalibration, back.Recalibration)
	assert.False(t, math.IsNaN(back.SubModels[0].Calibration.B))

	// A file written before the reference moved to the model kept it in
	// the recalibration: it still loads, with its reference where it is
	// now, so a version running jobs pinned still ranks their verdicts.
	var legacy map[string]any
	require.NoError(t, json.Unmarshal(data, &legacy))
	legacy["recalibration"].(map[string]any)["reference"] = legacy["reference"]
	delete(legacy, "reference")
	old, err := json.Marshal(legacy)
	require.NoError(t, err)
	fromOld, err := overseer.ParseLearnedModel(old)
	require.NoError(t, err)
	assert.Equal(t, rec.Reference, fromOld.Reference)
	assert.Equal(t, rec.Recalibration, fromOld.Recalibration)
	legacy["recalibration"].(map[string]any)["refrence"] = 1
	typo, err := json.Marshal(legacy)
	require.NoError(t, err)
	_, err = overseer.ParseLearnedModel(typo)
	assert.ErrorContains(t, err, `unknown field "refrence"`, "the recalibration is read as strictly as the model")
}

// narrowRuns builds runs of an agent whose context per step tells failing
// runs apart (they carry 10% more), but within a spread far narrower than
// the shipped model learned from; its output per step is constant.
func narrowRuns(n int, seed uint64) []eval.Record {
	rng := rand.New(rand.NewPCG(seed, 5))
	var out []eval.Record
	for i := range n {
		failed := rng.Float64() < 0.4
		rec := eval.Record{Format: eval.RecordFormat, ID: fmt.Sprintf("fam%d-%d", i%5, i), Unit: eval.UnitPhase, Outcome: eval.OutcomeSucceeded}
		in := int64(6000 + rng.IntN(400))
		if failed {
			in += 600
			rec.Outcome = eval.OutcomeFailed
		}
		steps := 8 + rng.IntN(6)
		for s := 0; s < steps; s += 2 { // phase runs of two turns each
			turns := min(2, steps-s)
			rec.Steps = append(rec.Steps, eval.Step{Phase: []string{"read", "edit", "test"}[(s/2)%3], Turns: turns,
				OutputTokens: 200 * int64(turns), InputTokens: in * int64(turns)})
		}
		out = append(out, rec)
	}
	return out
}

func TestRecalibrateRestandardisesTheFeaturesOnlyWhenItCrossValidatesBetter(t *testing.T) {
	ctx := context.Background()
	shipped := overseer.DefaultLearnedModel()
	noStd := eval.RecalibrateOptions{For: "CoroJob", MinSlopeRuns: 1000}

	// The signal within the model's own spread: re-standardising would
	// amplify the input tokens' noise, and the check keeps the model's.
	kept, err := eval.Recalibrate(agentRuns(60, 6, 0.3), shipped, noStd)
	require.NoError(t, err)
	c := kept.Recalibration.Restandardization
	require.NotNil(t, c)
	assert.False(t, c.Chosen, "%+v", *c)
	assert.Equal(t, 4, c.Folds, "one fold per task family")
	assert.Less(t, c.AUROCRestandardized, c.AUROCAsIs, "it would rank worse: %+v", *c)
	for i, sm := range kept.SubModels {
		assert.Equal(t, shipped.SubModels[i].Features, sm.Features)
	}

	// The signal in a spread far narrower than the model's: read on the
	// agent's own scale, P tells its runs apart, and the check takes it.
	chosen, err := eval.Recalibrate(narrowRuns(60, 1), shipped, noStd)
	require.NoError(t, err)
	c = chosen.Recalibration.Restandardization
	require.NotNil(t, c)
	assert.True(t, c.Chosen, "%+v", *c)
	assert.Less(t, c.BrierRestandardized, c.BrierAsIs-0.001)
	assert.GreaterOrEqual(t, c.AUROCRestandardized, c.AUROCAsIs)
	tele := chosen.SubModels[0]
	require.Equal(t, "log_input_tokens_per_step", tele.Features[0].Name)
	assert.NotEqual(t, shipped.SubModels[0].Features[0].Std, tele.Features[0].Std, "the input tokens' spread is the agent's")
	assert.Equal(t, shipped.SubModels[0].Features[0].Weight, tele.Features[0].Weight, "no weight is refitted")
	assert.Equal(t, shipped.SubModels[0].Features[1], tele.Features[1], "a feature constant on these runs keeps the model's figures")

	held := narrowRuns(200, 2)
	scored, err := eval.Score(ctx, held, eval.ScoreOptions{Judge: &overseer.LearnedJudge{Model: chosen}})
	require.NoError(t, err)
	after := eval.NewReport("after", scored, overseer.Policy{}).Checkpoints[1]
	require.Equal(t, "50%", after.At)
	assert.Less(t, float64(after.Brier), float64(after.BaseBrier), "on new runs of the agent it beats the base rate")
	assert.Contains(t, scored[0].Points[0].Answers.Basis, "; stage 1: recalibrated (intercept, features re-standardised) on 60 CoroJob jobs")
}

func TestRecalibrationsOfTwoTypesOnAlikeRunsHaveVersionsOfTheirOwn(t *testing.T) {
	runs := agentRuns(40, 1, 0.2)
	a, err := eval.Recalibrate(runs, overseer.DefaultLearnedModel(), eval.RecalibrateOptions{For: "CoroJob"})
	require.NoError(t, err)
	b, err := eval.Recalibrate(runs, overseer.DefaultLearnedModel(), eval.RecalibrateOptions{For: "OtherJob"})
	require.NoError(t, err)
	again, err := eval.Recalibrate(runs, overseer.DefaultLearnedModel(), eval.RecalibrateOptions{For: "CoroJob"})
	require.NoError(t, err)
	assert.Equal(t, a.SubModels, b.SubModels, "the same maps")
	assert.NotEqual(t, a.Version, b.Version, "the registry refuses one version naming two models")
	assert.Equal(t, a.Version, again.Version, "the version is a function of what was done")
}

// loopRuns are agent runs (replayed as agent loops) of one workflow type:
// a succeeded run takes about turns turns, a failed one about three times
// as many.
func loopRuns(n int, seed uint64, turns int) []eval.Record {
	rng := rand.New(rand.NewPCG(seed, 13))
	var out []eval.Record
	for i := range n {
		failed := i%3 == 0
		rec := eval.Record{Format: eval.RecordFormat, ID: fmt.Sprintf("fam%d-%d", i%4, i), Outcome: eval.OutcomeSucceeded}
		steps := turns + rng.IntN(turns/2+1)
		if failed {
			rec.Outcome, steps = eval.OutcomeFailed, 3*steps
		}
		for s := range steps {
			rec.Steps = append(rec.Steps, eval.Step{Phase: []string{"read", "edit", "test"}[s%3], InputTokens: 2000, OutputTokens: 150})
		}
		out = append(out, rec)
	}
	return out
}

// A loop type's first recalibration gives the shipped loop model the
// type's own succeeded runs to read its runs against: before it, the
// agent-loop rules answer; after it, the model does, and the same turn
// count reads late for a type whose succeeded runs are short and early for
// one whose runs are long.
func TestRecalibratingALoopTypeGivesItItsOwnSucceededRuns(t *testing.T) {
	ctx := context.Background()
	shipped := overseer.DefaultLoopModel()
	short, err := eval.Recalibrate(loopRuns(45, 1, 10), shipped, eval.RecalibrateOptions{For: "ShortLoop"})
	require.NoError(t, err)
	long, err := eval.Recalibrate(loopRuns(45, 2, 100), shipped, eval.RecalibrateOptions{For: "LongLoop"})
	require.NoError(t, err)
	require.NotNil(t, short.LoopReference)
	assert.Equal(t, 30, short.LoopReference.Runs, "the type's succeeded runs")
	assert.InDelta(t, 12, short.LoopReference.MedianTurns(), 3)
	assert.InDelta(t, 125, long.LoopReference.MedianTurns(), 30)

	probe := loopRuns(3, 3, 30)[1:2] // a succeeded run of about 30 turns
	pAt := func(m *overseer.LearnedModel) eval.Point {
		scored, err := eval.Score(ctx, probe, eval.ScoreOptions{Judge: &overseer.LearnedJudge{LoopModel: m}})
		require.NoError(t, err)
		points := scored[0].Points
		return points[len(points)-1]
	}
	before, atShort, atLong := pAt(shipped), pAt(short), pAt(long)
	assert.Contains(t, before.Answers.Basis, "which it has none of yet")
	assert.Contains(t, atShort.Answers.Basis, "stage 1: recalibrated")
	assert.Less(t, atShort.OnObjective(), atLong.OnObjective(), "30 turns against succeeded runs of about 12 and of about 125")

	_, err = eval.Recalibrate(loopRuns(45, 4, 10)[:33], shipped, eval.RecalibrateOptions{For: "FewSucceeded"})
	require.NoError(t, err, "22 succeeded runs are enough")
	few := loopRuns(45, 5, 10)
	for i := range few[:36] {
		few[i].Outcome = eval.OutcomeFailed // 6 succeeded runs are left
	}
	_, err = eval.Recalibrate(few, shipped, eval.RecalibrateOptions{For: "FewSucceeded"})
	require.ErrorIs(t, err, eval.ErrRecalibrate)
	assert.ErrorContains(t, err, "reads an agent loop against the type's own succeeded runs, and 6 succeeded runs are too few to take them from: it takes at least 10")
}
