package eval_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/testsuite"
)

func TestRecordOfTrace(t *testing.T) {
	tr, err := eval.ParseTrace([]byte(miniTrace))
	require.NoError(t, err)
	rec := eval.RecordOfTrace(tr, false)
	require.NoError(t, rec.Validate())
	assert.Equal(t, eval.OutcomeFailed, rec.Outcome)
	assert.Equal(t, "demo__demo", rec.FamilyName())
	require.Len(t, rec.Steps, len(tr.Actions))
	bs := rec.Boundaries()
	// read (with the format error), test, edit, submit
	require.Len(t, bs, 4)
	phases := make([]string, len(bs))
	for i, b := range bs {
		phases[i] = b.Run.Phase
	}
	assert.Equal(t, []string{"read", "test", "edit", "submit"}, phases)
	assert.Equal(t, len(tr.Actions), bs[3].Steps, "the last boundary comes after every step")
}

func TestBoundariesOfSteps(t *testing.T) {
	rec := eval.Record{Format: eval.RecordFormat, ID: "r-1", Outcome: eval.OutcomeSucceeded, Steps: []eval.Step{
		{Failed: true, FailureCategory: "format"},           // joins the first phase run
		{Phase: "read", InputTokens: 100, OutputTokens: 10}, // read ×2
		{Phase: "read", InputTokens: 200, OutputTokens: 20, Failed: true},
		{Phase: "edit", CostUSD: 0.5, DurationMS: 1500}, // first edit: no rework
		{Phase: "test", Failed: true},                   // verify
		{Failed: true},                                  // joins the test run
		{Phase: "edit"},                                 // edit after a verified edit: rework
		{Phase: "submit", OutputMissing: true},
	}}
	require.NoError(t, rec.Validate())
	bs := rec.Boundaries()
	require.Len(t, bs, 5)
	assert.Equal(t, overseer.PhaseReport{Turns: 3, InputTokens: 300, OutputTokens: 30, FailedToolCategories: []string{"format", "read"}}, *bs[0].Report)
	assert.Equal(t, 3, bs[0].Steps)
	assert.Zero(t, bs[1].Report.Rework)
	assert.Equal(t, 1500_000_000, int(bs[1].Run.Duration))
	assert.Equal(t, []string{"test", "failed"}, bs[2].Report.FailedToolCategories)
	assert.Equal(t, 1, bs[3].Report.Rework)
	assert.True(t, bs[4].Report.OutputMissing)
	assert.Equal(t, 8, bs[4].Steps)

	// Replayed, an agent's run is the loop a team writes on Temporal: a
	// model call per step (the format error a failed one, with no tool
	// call after it), then the tool call it asked for.
	traj := eval.Replay(rec)
	require.Len(t, traj, 15)
	last := traj[14].Trajectory
	assert.Equal(t, overseer.ShapeAgentLoop, overseer.ShapeOf(last))
	assert.Equal(t, int64(300), last.InputTokens)
	assert.Equal(t, 7, last.Turns, "the model calls that answered")
	assert.Equal(t, 8, traj[14].Steps)
	assert.Equal(t, overseer.LoopStats{ModelCalls: 8, ToolCalls: 7, ModelFailures: 1, ToolFailures: 3, FailStreak: 0, MaxFailStreak: 2,
		SinceNew: 0}, last.Loop)
}

func TestReadRecordsRefusesBadInput(t *testing.T) {
	good := `{"format":"overseer-run/v1","id":"a-1","outcome":"succeeded","steps":[{"phase":"edit"}]}`
	for _, tc := range []struct {
		name, input, want string
	}{
		{"unknown field", `{"format":"overseer-run/v1","id":"a-1","outcome":"failed","stepz":[]}`, `line 1: invalid run record: json: unknown field "stepz"`},
		{"no outcome", `{"format":"overseer-run/v1","id":"a-1","steps":[{"phase":"edit"}]}`, `record "a-1" has no outcome`},
		{"bad outcome", `{"format":"overseer-run/v1","id":"a-1","outcome":"ok","steps":[{"phase":"edit"}]}`, `outcome "ok": use succeeded, failed or blocked`},
		{"other version", `{"format":"overseer-run/v2","id":"a-1","outcome":"failed","steps":[{"phase":"edit"}]}`, `format "overseer-run/v2", want "overseer-run/v1"`},
		{"no steps", `{"format":"overseer-run/v1","id":"a-1","outcome":"failed","steps":[]}`, `has no steps`},
		{"phaseless success", `{"format":"overseer-run/v1","id":"a-1","outcome":"failed","steps":[{"cost_usd":1}]}`, `step 0 has no phase`},
		{"second line", good + "\n" + `{"format":"overseer-run/v1"}`, `line 2:`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := eval.ReadRecords(strings.NewReader(tc.input))
			require.Error(t, err)
			assert.ErrorIs(t, err, eval.ErrInvalidRecord)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	recs, err := eval.ReadRecords(strings.NewReader("\n" + good + "\n\n"))
	require.NoError(t, err)
	require.Len(t, recs, 1)
}

func TestLoadRunsErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.jsonl")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	_, err := eval.LoadRuns(empty, "")
	assert.ErrorIs(t, err, eval.ErrNoRuns)

	_, err = eval.LoadRuns(empty, "parquet")
	assert.ErrorIs(t, err, eval.ErrUnknownFormat)
	assert.Contains(t, err.Error(), "use records")

	odd := filepath.Join(dir, "runs.txt")
	require.NoError(t, os.WriteFile(odd, []byte("x"), 0o644))
	_, err = eval.LoadRuns(odd, "")
	assert.ErrorIs(t, err, eval.ErrUnknownFormat)

	dup := filepath.Join(dir, "dup.jsonl")
	line := `{"format":"overseer-run/v1","id":"a-1","outcome":"failed","steps":[{"phase":"edit"}]}` + "\n"
	require.NoError(t, os.WriteFile(dup, []byte(line+line), 0o644))
	_, err = eval.LoadRuns(dup, "")
	assert.ErrorContains(t, err, `run id "a-1" appears twice`)
}

func TestWriteRecordsRoundTrip(t *testing.T) {
	recs := []eval.Record{{ID: "x-1", Outcome: eval.OutcomeBlocked, Unit: eval.UnitPhase, Task: eval.Task{Family: "x"},
		Steps: []eval.Step{{Phase: "code", Turns: 3, InputTokens: 10, Assessment: &eval.RecordedAssessment{OnObjective: 0.4, Flagged: true}}}}}
	var b strings.Builder
	require.NoError(t, eval.WriteRecords(&b, recs))
	back, err := eval.ReadRecords(strings.NewReader(b.String()))
	require.NoError(t, err)
	recs[0].Format = eval.RecordFormat
	assert.Equal(t, recs, back)
	assert.Equal(t, 3, back[0].NumSteps())
	assert.True(t, back[0].Outcome.Failed(), "blocked counts as failed")
}

func TestFamilyOf(t *testing.T) {
	for id, want := range map[string]string{
		"django__django-11099": "django__django", "job-17": "job", "sympy__sympy-20590": "sympy__sympy", "solo": "solo", "42": "42",
	} {
		assert.Equal(t, want, eval.FamilyOf(id), id)
	}
}

// run builds a scored run whose answers are ps at steps 1, 2, …
func run(id string, failed bool, ps ...float64) eval.ScoredRun {
	r := eval.ScoredRun{ID: id, Family: id, Outcome: eval.OutcomeSucceeded, Steps: len(ps)}
	if failed {
		r.Outcome = eval.OutcomeFailed
	}
	for i, p := range ps {
		r.Points = append(r.Points, eval.Point{Steps: i + 1, Answers: overseer.Answers{OnObjective: p, Breach: overseer.BreachNone}})
	}
	return r
}

func TestCheckpointsHandComputed(t *testing.T) {
	runs := []eval.ScoredRun{
		run("f1", true, 0.5, 0.3, 0.2, 0.1), // at 50%: 0.3
		run("f2", true, 0.5, 0.6, 0.7, 0.9), // 0.6
		run("s1", false, 0.5, 0.8, 0.8, 0.9),
		run("s2", false, 0.5, 0.4, 0.2, 0.9),
	}
	var half eval.Checkpoint
	for _, c := range eval.Checkpoints(runs) {
		if c.At == "50%" {
			half = c
		}
	}
	require.Equal(t, "50%", half.At)
	assert.Equal(t, 4, half.Runs)
	assert.Equal(t, 2, half.Failed)
	// Scores 1−P: failed 0.7, 0.4; succeeded 0.2, 0.6 → pairs won: (0.7>0.2,0.7>0.6,0.4>0.2) = 3 of 4.
	assert.InDelta(t, 0.75, float64(half.AUROC), 1e-9)
	// Brier of P as P(success): f1 0.09, f2 0.36, s1 0.04, s2 0.36 → 0.2125.
	assert.InDelta(t, 0.2125, float64(half.Brier), 1e-9)
	// At a 5% budget with 2 succeeded runs no succeeded run may be flagged:
	// P ≤ t below 0.4 → catches f1 (0.3) only.
	assert.InDelta(t, 0.5, float64(half.CatchAt5), 1e-9)
	var b0306 eval.Bin
	for _, b := range half.Reliability {
		if b.Lo <= 0.35 && 0.35 < b.Hi {
			b0306 = b
		}
	}
	assert.Equal(t, 1, b0306.Runs)
	assert.InDelta(t, 0.0, float64(b0306.Observed), 1e-9)

	for _, c := range eval.Checkpoints(runs) {
		if c.At == "10 steps" {
			assert.Zero(t, c.Runs, "no run is longer than 10 steps")
			assert.True(t, math.IsNaN(float64(c.AUROC)))
		}
	}
}

func TestPolicyRatesAndCalibrate(t *testing.T) {
	runs := []eval.ScoredRun{
		run("f1", true, 0.9, 0.2, 0.9, 0.9),
		run("f2", true, 0.9, 0.9, 0.9, 0.35),
		run("f3", true, 0.9, 0.9, 0.9, 0.9),
		run("s1", false, 0.9, 0.5, 0.9, 0.9),
		run("s2", false, 0.9, 0.9, 0.3, 0.9),
		run("s3", false, 0.9, 0.9, 0.9, 0.9),
		run("s4", false, 0.9, 0.9, 0.9, 0.9),
	}
	p := overseer.DefaultPolicy() // pauses at or below 0.25
	rates := eval.PolicyRatesOf(runs, p)
	assert.Equal(t, 1, rates.Catches)
	assert.Zero(t, rates.FalsePauses)
	assert.InDelta(t, 1.0/3, float64(rates.CatchRate), 1e-9)
	assert.InDelta(t, 0.5, float64(rates.MedianFirstPauseAt), 1e-9, "f1 is paused after 2 of its 4 steps")

	for _, b := range []float64{0, 1, -0.1, 1.5, math.NaN()} {
		_, err := eval.Calibrate(runs, b, overseer.PromiseConfident)
		assert.ErrorIs(t, err, eval.ErrBudget, "budget %v", b)
	}
	_, err := eval.Calibrate(runs[:3], 0.05, overseer.PromiseConfident)
	assert.ErrorIs(t, err, eval.ErrNoRuns, "only failed runs")
}

func TestClopperPearsonBounds(t *testing.T) {
	// With none of n paused, the 95% upper bound is 1 − 0.05^(1/n).
	for _, n := range []int{1, 10, 59, 200} {
		assert.InDelta(t, 1-math.Pow(0.05, 1/float64(n)), eval.UpperBound(0, n, 0.95), 1e-9, "n=%d", n)
	}
	assert.Equal(t, 59, eval.RunsNeeded(0.05, 0.95), "5% at 95% takes 59 succeeded runs with none paused")
	assert.Equal(t, 299, eval.RunsNeeded(0.01, 0.95))
	// Reference values (R: binom.test(k, n, alternative="less")$conf.int).
	assert.InDelta(t, 0.04586, eval.UpperBound(4, 197, 0.95), 1e-5)
	assert.InDelta(t, 0.0236, eval.LowerBound(9, 197, 0.95), 1e-3)
	assert.Equal(t, 1.0, eval.UpperBound(5, 5, 0.95))
	assert.Zero(t, eval.LowerBound(0, 50, 0.95))
	for k := 1; k < 20; k++ {
		assert.Greater(t, eval.UpperBound(k, 100, 0.95), eval.UpperBound(k-1, 100, 0.95), "more pauses, a higher bound")
		assert.Less(t, eval.LowerBound(k, 100, 0.95), float64(k)/100)
	}
}

// promiseRuns are nSucceeded succeeded runs whose lowest P is spread evenly
// over [0.30, 0.90) and nFailed failed runs spread over [0.10, 0.70).
func promiseRuns(nSucceeded, nFailed int) []eval.ScoredRun {
	var runs []eval.ScoredRun
	for i := range nSucceeded {
		low := 0.30 + 0.60*float64(i)/float64(nSucceeded)
		runs = append(runs, run(fmt.Sprintf("s%d", i), false, 0.95, low, 0.95, 0.95))
	}
	for i := range nFailed {
		low := 0.10 + 0.60*float64(i)/float64(nFailed)
		runs = append(runs, run(fmt.Sprintf("f%d", i), true, 0.95, low, 0.95, 0.95))
	}
	return runs
}

func TestCalibrateCertifiesTheUpperBound(t *testing.T) {
	runs := promiseRuns(200, 50)
	cal, err := eval.Calibrate(runs, 0.05, overseer.PromiseConfident)
	require.NoError(t, err)
	// 200 succeeded runs: at most 5 false pauses keep the 95% bound within
	// 5% (UpperBound(5,200) ≈ 0.052 > 0.05 would not; 4 → 0.043).
	assert.Equal(t, eval.UpperBound(cal.Rates.FalsePauses, 200, 0.95), cal.UpperBound)
	assert.LessOrEqual(t, cal.UpperBound, 0.05, "the bound, not the point estimate, is within the budget")
	assert.Greater(t, eval.UpperBound(cal.Rates.FalsePauses+1, 200, 0.95), 0.05, "the threshold is as high as the bound allows")
	assert.Less(t, float64(cal.Rates.FalsePauseRate), 0.05)
	assert.Positive(t, cal.Rates.Catches)
	pr := cal.Policy.Promise
	assert.True(t, pr.Certified())
	assert.Equal(t, overseer.Promise{Kind: overseer.PromiseConfident, MaxFalsePause: 0.05, Confidence: 0.95, SucceededRuns: 200, FalsePauses: cal.Rates.FalsePauses,
		UpperBound: math.Round(cal.UpperBound*1e4) / 1e4, FailedRuns: 50, Catches: cal.Rates.Catches}, pr)
	require.NoError(t, cal.Policy.Validate())

	// Bands from operating points: Off track at the pause threshold, On
	// track where about 20% of the succeeded runs fall below at mid-run
	// (their second point of four).
	p := cal.Policy
	assert.InDelta(t, p.PauseAtOrBelow+0.001, p.NeedsALookAt, 1e-9, "a paused job shows Off track")
	below := 0
	for _, r := range runs[:200] {
		if r.Points[1].OnObjective() < p.OnTrackAt {
			below++
		}
	}
	assert.InDelta(t, 0.20, float64(below)/200, 0.01, "about 20%% of succeeded runs below On track at mid-run")
	assert.Greater(t, p.OnTrackAt-p.NeedsALookAt, 0.05, "Needs a look is a band, not a line")

	// The table: a budget 200 runs cannot certify has no threshold (1%
	// takes 299), and a larger budget never pauses less.
	require.Len(t, cal.Table, 5)
	assert.True(t, math.IsNaN(float64(cal.Table[0].Threshold)), "1%% needs 299 succeeded runs")
	for i := 2; i < len(cal.Table); i++ {
		assert.GreaterOrEqual(t, float64(cal.Table[i].Threshold), float64(cal.Table[i-1].Threshold))
	}
}

func TestCalibrateRefusesWhatTheRunsCannotSupport(t *testing.T) {
	_, err := eval.Calibrate(promiseRuns(33, 20), 0.05, overseer.PromiseConfident)
	require.ErrorIs(t, err, eval.ErrUncertifiable)
	assert.EqualError(t, err, "calibrate: false-pause promise cannot be certified: 33 succeeded runs cannot show a false-pause rate within 5.0% at 95% confidence (with none paused the bound is 8.7%); it takes at least 59 succeeded runs")

	// Enough runs, but the breach rule alone pauses too many of them.
	runs := promiseRuns(100, 20)
	for i := range runs {
		runs[i].Points[0].Answers.Breach = "obligation[0]"
		runs[i].Points[0].Answers.BreachConfidence = 1
		runs[i].Points[0].Answers.Severity = 3
	}
	_, err = eval.Calibrate(runs, 0.05, overseer.PromiseConfident)
	require.ErrorIs(t, err, eval.ErrUncertifiable)
	assert.ErrorContains(t, err, "the judge's breach answers alone pause more than the 1 of 100 succeeded runs a 5.0% promise allows")
}

func TestNotAssessedPointsCarryNoP(t *testing.T) {
	r := run("s1", false, 0.9, 0.1, 0.9)
	r.Points[1].Answers.OnObjectiveUnknown = true
	r.Points[1].Answers.OnObjective = 0
	assert.False(t, r.Points[1].HasP())
	rates := eval.PolicyRatesOf([]eval.ScoredRun{r}, overseer.DefaultPolicy())
	assert.Zero(t, rates.FalsePauses, "an unknown P is never a pause")
	cps := eval.Checkpoints([]eval.ScoredRun{r, run("f1", true, 0.2, 0.2, 0.2)})
	assert.Equal(t, 2, cps[1].Runs, "at 50%% the run still answers with its earlier P")
}

// synthetic builds agents' runs (replayed as agent loops) in which a
// failed run spends many more output tokens per step than a succeeded
// one; nothing else tells them apart.
func synthetic(n int, seed uint64) []eval.Record {
	rng := rand.New(rand.NewPCG(seed, 7))
	phases := []string{"read", "edit", "test"}
	var out []eval.Record
	for i := range n {
		failed := i%3 == 0
		rec := eval.Record{Format: eval.RecordFormat, ID: fmt.Sprintf("fam%d-%d", i%5, i), Outcome: eval.OutcomeSucceeded}
		if failed {
			rec.Outcome = eval.OutcomeFailed
		}
		steps := 8 + rng.IntN(8)
		for s := range steps {
			out := int64(100 + rng.IntN(50))
			if failed {
				out *= 4
			}
			rec.Steps = append(rec.Steps, eval.Step{Phase: phases[(s/2)%3], OutputTokens: out, InputTokens: int64(1000 + rng.IntN(500))})
		}
		out = append(out, rec)
	}
	return out
}

func TestTrainFindsTheSeparatingFeature(t *testing.T) {
	recs := synthetic(90, 1)
	res, err := eval.Train(context.Background(), recs, eval.TrainOptions{})
	require.NoError(t, err)
	require.NoError(t, res.Model.Validate())
	assert.Greater(t, res.MeanAUROC["50%"], 0.95, "held-out families are told apart")
	assert.Equal(t, overseer.ShapeAgentLoop, res.Model.Shape, "fit on agents' runs replayed as loops")
	require.NotEmpty(t, res.Model.SubModels)
	assert.Equal(t, eval.SubModelTelemetry, res.Model.SubModels[0].Name, "richest first")
	assert.Contains(t, strings.Join(res.Model.SubModels[0].FeatureNames(), ","), "output_tokens", "the model uses the separating feature")
	for _, sm := range res.Model.SubModels[1:] {
		for _, f := range sm.FeatureNames() {
			assert.False(t, overseer.IsTelemetryFeature(f), "the structure sub-model reads no telemetry: %s", f)
		}
	}
	require.NotEmpty(t, res.SubModels)
	assert.Greater(t, res.SubModels[0].MeanAUROC["50%"], 0.95)
	for _, sm := range res.SubModels[1:] {
		assert.Less(t, sm.MeanAUROC["50%"], 0.8, "structure alone cannot tell these runs apart")
	}
	assert.Equal(t, 5, res.Folds)
	assert.Len(t, res.CV, 90, "every run scored out of fold")
	// Beside each certified policy, the held-out runs at the fixed hold
	// rates, as eval prints them: never more succeeded runs held than the
	// rate allows.
	require.NotEmpty(t, res.CVByKind)
	checked := 0
	for _, k := range res.CVByKind {
		if k.InForce.Succeeded == 0 {
			continue
		}
		checked++
		require.Len(t, k.InForce.AtHoldRates, len(eval.FixedFalsePauseRates))
		for _, h := range k.InForce.AtHoldRates {
			assert.LessOrEqual(t, h.Held, int(h.Rate*float64(h.Succeeded)+1e-9), "at %g%%", 100*h.Rate)
		}
		assert.Len(t, k.InForce.HoldRateSentences(), len(eval.FixedFalsePauseRates))
	}
	assert.Positive(t, checked, "a policy was certified and walked")

	// The model reads a fresh run's trajectory like the training did.
	judge := &overseer.LearnedJudge{Model: res.Model}
	scored, err := eval.Score(context.Background(), synthetic(30, 2), eval.ScoreOptions{Judge: judge})
	require.NoError(t, err)
	rep := eval.NewReport("learned", scored, overseer.DefaultPolicy())
	assert.Equal(t, res.Model.Version+"/"+eval.SubModelTelemetry, rep.Model)
	assert.Greater(t, float64(rep.Checkpoints[1].AUROC), 0.95)
	assert.Zero(t, rep.JudgeErrors)

	_, err = eval.Train(context.Background(), nil, eval.TrainOptions{})
	assert.ErrorIs(t, err, eval.ErrNoRuns)
	one := synthetic(9, 3)
	for i := range one {
		one[i].Task.Family = "same"
	}
	_, err = eval.Train(context.Background(), one, eval.TrainOptions{})
	assert.ErrorContains(t, err, "at least three task families")
	assert.ErrorContains(t, err, fmt.Sprintf("these %d runs are of 1 (same)", len(one)), "the refusal names the families")
}

func TestScoreKeepsJudgeErrors(t *testing.T) {
	failing := jev.JudgeFunc(func(context.Context, jev.Request) (*jev.Response, error) { return nil, errors.New("judge down") })
	scored, err := eval.Score(context.Background(), synthetic(3, 4), eval.ScoreOptions{Judge: failing})
	require.NoError(t, err)
	rep := eval.NewReport("down", scored, overseer.DefaultPolicy())
	assert.Equal(t, rep.Boundaries, rep.JudgeErrors)
	assert.Zero(t, rep.Policy.Catches+rep.Policy.FalsePauses, "an error is never a pause")
}

// The shipped default judge and policy meet the safe-defaults promise on
// the shared sample (at most 5% of the succeeded runs paused), and its
// bands mean something there: at 50% of the runs, On track holds most
// succeeded runs, Needs a look 10–30% of them, Off track at most 5%.
func TestDefaultJudgeOnSharedSample(t *testing.T) {
	dir := testsuite.SharedTraces(t, "mini-swe-agent-gemini-3-pro")
	recs, err := eval.LoadRuns(dir, "")
	require.NoError(t, err)
	scored, err := eval.Score(context.Background(), recs, eval.ScoreOptions{Judge: &overseer.LearnedJudge{}})
	require.NoError(t, err)
	// Replayed as agent loops, the runs are judged by the loop model and
	// held to its thresholds, as a live loop is.
	p := overseer.DefaultLearnedPolicy().ForShape(eval.ShapeOfRecords(recs))
	require.NotNil(t, overseer.DefaultLearnedPolicy().Loop)
	assert.Equal(t, *overseer.DefaultLearnedPolicy().Loop, p)
	rep := eval.NewReport("learned", scored, p)
	assert.LessOrEqual(t, float64(rep.Policy.FalsePauseRate), 0.05)
	assert.Greater(t, float64(rep.Policy.CatchRate), 0.0)
	// The shipped loop model reads a run against the type's own succeeded
	// runs and carries none: at stage 0 the agent-loop rules answer.
	assert.Equal(t, overseer.DefaultLoopModel().Version+"/agent-loop", rep.Model, "no type's succeeded runs yet")
	assert.True(t, p.Promise.Certified())

	bands := map[overseer.Band]int{}
	succeeded := 0
	for _, r := range scored {
		if r.Failed() {
			continue
		}
		succeeded++
		var at *eval.Point
		for i := range r.Points {
			if float64(r.Points[i].Steps) <= 0.5*float64(r.Steps) && r.Points[i].HasP() {
				at = &r.Points[i]
			}
		}
		if at != nil {
			bands[p.Evaluate(at.Answers).Band]++
		}
	}
	share := func(b overseer.Band) float64 { return float64(bands[b]) / float64(succeeded) }
	t.Logf("succeeded runs at 50%%: on track %.3f, needs a look %.3f, off track %.3f", share(overseer.BandOnTrack), share(overseer.BandNeedsALook), share(overseer.BandOffTrack))
	assert.Greater(t, share(overseer.BandOnTrack), 0.5)
	assert.LessOrEqual(t, share(overseer.BandOffTrack), 0.05)
}

func TestCheckPromise(t *testing.T) {
	for _, tc := range []struct {
		name               string
		paused, succeeded  int
		budget             float64
		want, wantSentence string
	}{
		{"no promise", 3, 100, 0, eval.PromiseUncertified, "makes no false-pause promise"},
		{"holds", 1, 200, 0.05, eval.PromiseHolds, "holds on these runs: 1 of 200"},
		{"too few to confirm", 0, 20, 0.05, eval.PromiseConsistent, "20 succeeded runs are too few to confirm it (it takes 59)"},
		{"above, within sampling error", 7, 100, 0.05, eval.PromiseAbove, "within sampling error: 7 of 100"},
		{"broken", 21, 100, 0.05, eval.PromiseBroken, "BROKEN on these runs: 21 of 100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := eval.CheckPromise(eval.PolicyRates{Succeeded: tc.succeeded, FalsePauses: tc.paused}, tc.budget)
			assert.Equal(t, tc.want, c.Verdict)
			assert.Contains(t, c.String(), tc.wantSentence)
		})
	}
}

func TestCalibrateExpectedPromiseIsSplitConformal(t *testing.T) {
	for _, tc := range []struct {
		succeeded, wantPaused int
	}{
		// ⌊(n+1)·5%⌋ − 1 of the n succeeded runs may be paused: a new run
		// then falls below the threshold with probability at most 5 %.
		{19, 0}, {39, 1}, {200, 9},
	} {
		cal, err := eval.Calibrate(promiseRuns(tc.succeeded, 20), 0.05, overseer.PromiseExpected)
		require.NoError(t, err, "%d succeeded runs", tc.succeeded)
		assert.Equal(t, tc.wantPaused, cal.Rates.FalsePauses, "%d succeeded runs", tc.succeeded)
		assert.LessOrEqual(t, float64(cal.Rates.FalsePauses+1)/float64(tc.succeeded+1), 0.05)
		pr := cal.Policy.Promise
		assert.Equal(t, overseer.PromiseExpected, pr.Kind)
		assert.Zero(t, pr.Confidence)
		assert.Contains(t, pr.String(), "in expectation on new runs like these")
		require.NoError(t, cal.Policy.Validate())
	}
	// Fewer than 19 succeeded runs cannot place any threshold on P.
	_, err := eval.Calibrate(promiseRuns(18, 20), 0.05, overseer.PromiseExpected)
	require.ErrorIs(t, err, eval.ErrUncertifiable)
	assert.EqualError(t, err, "calibrate: false-pause promise cannot be certified: 18 succeeded runs cannot place a threshold that pauses a new run with probability at most 5.0%; it takes at least 19 succeeded runs")

	// It buys more catches than the confidence bound on the same runs.
	runs := promiseRuns(200, 50)
	conf, err := eval.Calibrate(runs, 0.05, overseer.PromiseConfident)
	require.NoError(t, err)
	exp, err := eval.Calibrate(runs, 0.05, overseer.PromiseExpected)
	require.NoError(t, err)
	assert.Greater(t, exp.Rates.Catches, conf.Rates.Catches)
}

func TestBudgetPolicyPausesAtMostTheShareOfJobs(t *testing.T) {
	runs := promiseRuns(30, 20) // 50 jobs
	p, err := eval.BudgetPolicy(runs, 0.10, overseer.DefaultPolicy())
	require.NoError(t, err)
	require.NoError(t, p.Validate())
	assert.Equal(t, overseer.PauseBudget{MaxShare: 0.10, Jobs: 50, Paused: 5}, p.PauseBudget)
	r := eval.PolicyRatesOf(runs, p)
	assert.Equal(t, 5, r.FalsePauses+r.Catches, "5 of 50 jobs pause, whatever their outcome")
	assert.False(t, p.Promise.Certified(), "a budget is no false-pause promise")
	assert.Contains(t, p.Guarantee(), "a pause budget, not a false-pause promise: pauses at most 10.0% of jobs")
	data, err := overseer.MarshalPolicy(p, nil)
	require.NoError(t, err)
	back, err := overseer.ParsePolicy(data)
	require.NoError(t, err)
	assert.Equal(t, p, back)

	_, err = eval.BudgetPolicy(runs[:12], 0.10, overseer.DefaultPolicy())
	require.ErrorIs(t, err, eval.ErrPauseBudget)
	assert.EqualError(t, err, "pause budget: 12 recent jobs are too few to set a pause budget on; it takes at least 20")
	both := p
	both.Promise = overseer.Promise{Kind: overseer.PromiseExpected, MaxFalsePause: 0.05, SucceededRuns: 30}
	assert.EqualError(t, both.Validate(), "overseer: policy has both a false-pause promise and a pause budget; keep one")
}

// TestAPauseOnTiedScoresSaysWhyNothingPauses: when the lowest P is shared
// by more runs than a budget or a promise lets pause (a structure
// sub-model scores many runs alike), no threshold on P can pause some and
// spare the rest: the budget refuses in one sentence that says so, and a
// calibration says it beside a policy that pauses on no P.
func TestAPauseOnTiedScoresSaysWhyNothingPauses(t *testing.T) {
	var runs []eval.ScoredRun
	for i := range 40 {
		runs = append(runs, run(fmt.Sprintf("s%d", i), false, 0.95, 0.42, 0.95, 0.95))
	}
	for i := range 10 {
		runs = append(runs, run(fmt.Sprintf("f%d", i), true, 0.95, 0.42, 0.95, 0.95))
	}
	_, err := eval.BudgetPolicy(runs, 0.10, overseer.DefaultPolicy())
	require.ErrorIs(t, err, eval.ErrPauseBudget)
	assert.EqualError(t, err, "pause budget: 50 of the 50 jobs share the lowest P(on objective), 0.420, so a threshold on P that pauses one pauses all 50, more than the 5 the budget allows: P pauses no job (the breach rules still do)")

	// A calibration that could pause on no P catches nothing: refused,
	// saying why.
	_, err = eval.Calibrate(runs, 0.05, overseer.PromiseExpected)
	require.ErrorIs(t, err, eval.ErrUncertifiable)
	assert.ErrorContains(t, err, "40 of the 40 succeeded runs share the lowest P(on objective), 0.420")
	assert.ErrorContains(t, err, "keep the policy in force")

	var cal eval.Calibration

	// Distinct scores place a threshold, and say nothing of ties.
	cal, err = eval.Calibrate(promiseRuns(200, 50), 0.05, overseer.PromiseExpected)
	require.NoError(t, err)
	assert.Empty(t, cal.NoPauseOnP)
}

// A threshold that keeps the promise only by catching nothing is no
// policy: calibrate refuses and says to keep the one in force.
func TestCalibrateRefusesAPolicyThatCatchesNothing(t *testing.T) {
	// 19 succeeded runs allow no pause of an expected 5 % promise beyond
	// the lowest; the failed runs all score above every succeeded one.
	succeeded := spread(19, 0.10, 0.01)
	failed := spread(10, 0.50, 0.01)
	_, err := eval.Calibrate(scoredRuns(succeeded, failed), 0.05, overseer.PromiseExpected)
	require.ErrorIs(t, err, eval.ErrUncertifiable)
	assert.ErrorContains(t, err, "catch no failed run; keep the policy in force")
	assert.ErrorContains(t, err, "(the best pauses at P ≤ 0.000)")
}

// A pause budget holds the breach rule too: its confidence floor rises
// until the rule fits; when even a floor of 1 pauses too many, the refusal
// says the budget that would fit.
func TestAPauseBudgetHoldsTheBreachRule(t *testing.T) {
	runs := scoredRuns(spread(60, 0.30, 0.01), spread(40, 0.05, 0.005))
	for i := range runs[:30] {
		runs[i].Points[0].Answers.Breach, runs[i].Points[0].Answers.BreachConfidence, runs[i].Points[0].Answers.Severity = "obligation[0]", 0.6, 3
	}
	p, err := eval.BudgetPolicy(runs, 0.10, overseer.DefaultPolicy())
	require.NoError(t, err, "the breach floor rises above the answers' 0.6")
	assert.Equal(t, 0.7, p.BreachConfidence)
	assert.LessOrEqual(t, p.PauseBudget.Paused, 10)

	for i := range runs[:30] {
		runs[i].Points[0].Answers.BreachConfidence = 1
	}
	_, err = eval.BudgetPolicy(runs, 0.10, overseer.DefaultPolicy())
	require.ErrorIs(t, err, eval.ErrPauseBudget)
	assert.ErrorContains(t, err, "even at breach confidence 1, the judge's breach answers alone pause 30 of the 100 jobs (30.0%), more than 10.0%; give a budget of at least 30.0%")
}
