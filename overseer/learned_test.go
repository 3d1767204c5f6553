package overseer_test

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/judge"
	"github.com/corohq/temporal-overseer/testsuite/judgetest"
)

func TestLearnedJudgeConformance(t *testing.T) {
	judgetest.Run(t, func(t *testing.T) *judgetest.Harness {
		return &judgetest.Harness{Judge: &overseer.LearnedJudge{}}
	})
}

// tokensModel says: the more output tokens per step, the less likely the
// run succeeds. It has one sub-model, so a trajectory without token counts
// is not assessed.
func tokensModel() *overseer.LearnedModel {
	return &overseer.LearnedModel{Format: overseer.LearnedModelFormat, Version: "tokens-v1",
		SubModels: []overseer.SubModel{tokensSubModel()}}
}

func tokensSubModel() overseer.SubModel {
	return overseer.SubModel{Name: "telemetry",
		Features:    []overseer.ModelFeature{{Name: "log_output_tokens_per_step", Mean: 5, Std: 1, Weight: -2}},
		Intercept:   1,
		Calibration: overseer.Calibration{Method: "platt", A: 1, B: 0}}
}

// familyModel falls back to the structure: the more failed tool calls per
// step, the less likely the run succeeds.
func familyModel() *overseer.LearnedModel {
	return &overseer.LearnedModel{Format: overseer.LearnedModelFormat, Version: "family-v1",
		SubModels: []overseer.SubModel{tokensSubModel(), {Name: "structure",
			Features:    []overseer.ModelFeature{{Name: "failed_tool_rate", Mean: 0.1, Std: 0.1, Weight: -1}},
			Calibration: overseer.Calibration{Method: "platt", A: 1, B: 0}}}}
}

func TestLearnedJudgeUsesTheRichestApplicableSubModel(t *testing.T) {
	record := func(p overseer.PhaseReport) overseer.Trajectory {
		var r overseer.TrajectoryRecorder
		r.RecordPhase(overseer.PhaseRun{Phase: "code"}, &p)
		return r.Trajectory()
	}
	tokens := record(overseer.PhaseReport{Turns: 10, OutputTokens: 10 * 3000})
	noTokens := record(overseer.PhaseReport{Turns: 10, FailedToolCategories: []string{"test", "test", "test"}})
	for _, tc := range []struct {
		name       string
		model      *overseer.LearnedModel
		traj       overseer.Trajectory
		wantModel  string
		wantBasis  string
		notAssesed bool
	}{
		{"tokens reported: the telemetry sub-model", familyModel(), tokens, "family-v1/telemetry", "telemetry sub-model: log_output_tokens_per_step; stage 0: not calibrated for this workflow type (learned from other runs)", false},
		{"no tokens: the structure sub-model", familyModel(), noTokens, "family-v1/structure", "structure sub-model: failed_tool_rate; stage 0: not calibrated for this workflow type (learned from other runs)", false},
		{"no tokens and no fallback: not assessed", tokensModel(), noTokens, "tokens-v1", "not assessed: the trajectory lacks the inputs of every sub-model (telemetry needs log_output_tokens_per_step)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := overseer.NewRequest("", overseer.DefaultObligations(), tc.traj)
			require.NoError(t, err)
			resp, err := (&overseer.LearnedJudge{Model: tc.model}).Decide(context.Background(), req)
			require.NoError(t, err)
			assert.Equal(t, tc.wantModel, resp.ModelVersion)
			a, err := overseer.ParseAnswers(req, resp, overseer.DefaultObligations())
			require.NoError(t, err)
			assert.Equal(t, tc.wantBasis, a.Basis)
			assert.Equal(t, tc.notAssesed, a.OnObjectiveUnknown)
			v := overseer.DefaultPolicy().Evaluate(a)
			if tc.notAssesed {
				assert.Equal(t, overseer.BandUnknown, v.Band, "no band without a basis")
				assert.False(t, v.Flagged, "P cannot pause when the judge had no basis for it")
				assert.Equal(t, []string{overseer.QuestionOffTrack}, resp.Abstained)
			} else {
				assert.NotEqual(t, overseer.BandUnknown, v.Band)
				assert.Less(t, a.OnObjective, 0.5, "both sub-models read this run as likely to fail")
			}
		})
	}
}

func TestAbstentionsTheOverseerRefuses(t *testing.T) {
	var r overseer.TrajectoryRecorder
	r.RecordPhase(overseer.PhaseRun{Phase: "code"}, nil)
	req, err := overseer.NewRequest("", overseer.DefaultObligations(), r.Trajectory())
	require.NoError(t, err)
	resp, err := overseer.HeuristicJudge{}.Decide(context.Background(), req)
	require.NoError(t, err)
	assert.Contains(t, resp.Basis, "heuristic rules")

	breachless := *resp
	breachless.Answers = maps.Clone(resp.Answers)
	delete(breachless.Answers, overseer.QuestionBreach)
	breachless.Abstained = []string{overseer.QuestionBreach}
	_, err = overseer.ParseAnswers(req, &breachless, overseer.DefaultObligations())
	assert.ErrorIs(t, err, jev.ErrInvalidAnswer)
	assert.ErrorContains(t, err, `only "off_track" may be abstained from`)

	both := *resp
	both.Abstained = []string{overseer.QuestionOffTrack}
	assert.ErrorContains(t, jev.Validate(req, &both), "answered and abstained")
	unknown := *resp
	unknown.Abstained = []string{"vibes"}
	assert.ErrorContains(t, jev.Validate(req, &unknown), `abstained "vibes": no such question`)
}

func ask(t *testing.T, j jev.Judge, obligations []string, traj overseer.Trajectory) overseer.Answers {
	t.Helper()
	req, err := overseer.NewRequest("", obligations, traj)
	require.NoError(t, err)
	resp, err := j.Decide(context.Background(), req)
	require.NoError(t, err)
	a, err := overseer.ParseAnswers(req, resp, obligations)
	require.NoError(t, err)
	return a
}

func TestLearnedJudgeAnswers(t *testing.T) {
	j := &overseer.LearnedJudge{Model: tokensModel()}
	record := func(phases ...overseer.PhaseReport) overseer.Trajectory {
		var r overseer.TrajectoryRecorder
		for i, p := range phases {
			r.RecordPhase(overseer.PhaseRun{Phase: []string{"read", "edit", "test"}[i%3]}, &p)
		}
		return r.Trajectory()
	}
	cheap := ask(t, j, overseer.DefaultObligations(), record(overseer.PhaseReport{Turns: 10, OutputTokens: 10 * 148})) // log1p(148) ≈ 5: the mean
	costly := ask(t, j, overseer.DefaultObligations(), record(overseer.PhaseReport{Turns: 10, OutputTokens: 10 * 3000}))
	unknown := ask(t, j, overseer.DefaultObligations(), record(overseer.PhaseReport{Turns: 10}))
	assert.InDelta(t, 0.731, cheap.OnObjective, 0.01, "σ(1) at the mean")
	assert.Less(t, costly.OnObjective, 0.1, "many tokens per step: unlikely to succeed")
	assert.True(t, unknown.OnObjectiveUnknown, "no token counts: not assessed, never the training mean")
	assert.Equal(t, overseer.BreachNone, costly.Breach, "the model's fears are P, not a breach")
	assert.Less(t, costly.Severity, 1.5, "without a breach the severity stays below Review")

	// A failure is shown; it escalates when the phase keeps failing.
	var failed overseer.TrajectoryRecorder
	for i, want := range []struct {
		confidence, blocked float64
		flagged             bool
	}{{0.30, 0.30, false}, {0.45, 0.55, false}, {0.60, 0.80, true}, {0.75, 0.97, true}} {
		failed.RecordPhase(overseer.PhaseRun{Phase: "code", Failed: true}, nil)
		a := ask(t, j, overseer.DefaultObligations(), failed.Trajectory())
		assert.Equal(t, "obligation[0]", a.Breach, "failure %d", i+1)
		assert.InDelta(t, want.confidence, a.BreachConfidence, 1e-9, "failure %d", i+1)
		assert.InDelta(t, want.blocked, a.Blocked, 1e-9, "failure %d", i+1)
		assert.Equal(t, want.flagged, overseer.DefaultPolicy().Evaluate(a).Flagged, "failure %d: the third in a row pauses", i+1)
	}
	// A failure the workflow handles (a saga's compensations run and
	// succeed) leaves no breach.
	failed.RecordPhase(overseer.PhaseRun{Phase: "refund"}, nil)
	a := ask(t, j, overseer.DefaultObligations(), failed.Trajectory())
	assert.Equal(t, overseer.BreachNone, a.Breach)

	var pingPong overseer.TrajectoryRecorder
	for i, lane := range []string{"feature", "refactor", "feature", "refactor", "feature"} {
		pingPong.SetLane(lane)
		pingPong.RecordPhase(overseer.PhaseRun{Phase: []string{"code", "test"}[i%2]}, nil)
	}
	a = ask(t, j, overseer.DefaultObligations(), pingPong.Trajectory())
	assert.Equal(t, "obligation[1]", a.Breach)

	var looping overseer.TrajectoryRecorder
	for range 3 {
		looping.SetWorkItem("W-1", "in_review")
		looping.SetWorkItem("W-1", "in_progress")
	}
	looping.RecordPhase(overseer.PhaseRun{Phase: "test"}, &overseer.PhaseReport{FailedToolCategories: []string{"test"}})
	a = ask(t, j, overseer.DefaultObligations(), looping.Trajectory())
	assert.Equal(t, "obligation[2]", a.Breach)
	looping.RecordPhase(overseer.PhaseRun{Phase: "test"}, &overseer.PhaseReport{})
	a = ask(t, j, overseer.DefaultObligations(), looping.Trajectory())
	assert.Equal(t, overseer.BreachNone, a.Breach, "the loop stopped failing")

	// A workflow type with one obligation never gets obligation[1] or [2].
	a = ask(t, j, []string{"Only this."}, pingPong.Trajectory())
	assert.Equal(t, overseer.BreachNone, a.Breach)
}

func TestLearnedModelFiles(t *testing.T) {
	m := overseer.DefaultLearnedModel()
	require.NoError(t, m.Validate())
	assert.NotEmpty(t, m.Training, "the shipped model says what it was trained on")
	require.NotEmpty(t, m.SubModels)
	for _, sm := range m.SubModels {
		for _, f := range sm.Features {
			assert.False(t, overseer.IsCumulativeFeature(f.Name), "the shipped model uses rates only, got %s", f.Name)
		}
	}
	last := m.SubModels[len(m.SubModels)-1]
	for _, f := range last.Features {
		assert.False(t, overseer.IsTelemetryFeature(f.Name), "the last sub-model reads the structure alone, so a job without telemetry is still judged; got %s", f.Name)
	}

	good, err := json.Marshal(tokensModel())
	require.NoError(t, err)
	sub, err := json.Marshal(tokensSubModel())
	require.NoError(t, err)
	for _, tc := range []struct{ name, from, to, want string }{
		{"other version", overseer.LearnedModelFormat, "overseer-learned-model/v0", "retrain the model"},
		{"unknown feature", "log_output_tokens_per_step", "vibes", `unknown feature "vibes"`},
		{"zero std", `"std":1`, `"std":0`, "positive std"},
		{"other calibration", `"platt"`, `"isotonic"`, "calibration must be"},
		{"unknown field", `"intercept"`, `"intercept_":1,"intercept"`, "unknown field"},
		{"no sub-models", `"sub_models":[` + string(sub) + `]`, `"sub_models":[]`, "no sub-models"},
		{"unnamed sub-model", `"name":"telemetry"`, `"name":""`, "sub-model names must be set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := overseer.LoadLearnedModel(writeTemp(t, strings.Replace(string(good), tc.from, tc.to, 1)))
			require.Error(t, err)
			assert.ErrorIs(t, err, overseer.ErrModel)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	path := filepath.Join(t.TempDir(), "model.json")
	require.NoError(t, os.WriteFile(path, good, 0o644))
	back, err := overseer.LoadLearnedModel(path)
	require.NoError(t, err)
	assert.Equal(t, tokensModel(), back)
	_, err = overseer.LoadLearnedModel(filepath.Join(t.TempDir(), "missing.json"))
	assert.ErrorIs(t, err, overseer.ErrModel)
}

func TestPolicyFiles(t *testing.T) {
	p := overseer.DefaultPolicy()
	p.Name, p.PauseAtOrBelow = "team", 0.3
	p.Spend = &overseer.SpendBudget{Curve: []int64{100, 250}, Factor: 2.5, MaxReached: 0.05, Jobs: 30}
	data, err := overseer.MarshalPolicy(p, map[string]any{"max_false_pause": 0.05})
	require.NoError(t, err)
	back, err := overseer.LoadPolicy(writeTemp(t, string(data)))
	require.NoError(t, err)
	assert.Equal(t, p, back)

	// The policy in force of a model nobody certified pauses nothing, read
	// back from its file too.
	uncertified := judge.UncertifiedModelPolicy()
	uncertified.Spend = p.Spend
	data2, err := overseer.MarshalPolicy(uncertified, nil)
	require.NoError(t, err)
	back, err = overseer.LoadPolicy(writeTemp(t, string(data2)))
	require.NoError(t, err)
	assert.True(t, back.NoPause)
	assert.False(t, back.Evaluate(overseer.Answers{OnObjective: 0.01}).Flagged)

	def := overseer.DefaultLearnedPolicy()
	require.NoError(t, def.Validate())
	assert.NotEmpty(t, def.Name)

	for _, tc := range []struct{ name, from, to, want string }{
		{"other version", "overseer-policy/v1", "overseer-policy/v9", `format "overseer-policy/v9"`},
		{"missing threshold", `"pause_at_or_below": 0.3,`, ``, "pause_at_or_below is missing"},
		{"misspelled field", `"pause_at_or_below"`, `"pause_at_or_bellow"`, `unknown field "pause_at_or_bellow"`},
		{"out of range", `"pause_at_or_below": 0.3`, `"pause_at_or_below": 1.3`, "want a probability in [0,1]"},
		{"not json", `{`, `[`, "policy file"},
		{"a relative budget whose curve decreases", `"curve": [
      100,
      250
    ]`, `"curve": [250, 100]`, "spend_budget: invalid relative budget: the tokens curve must not decrease"},
		{"a relative budget without a promise", `"max_reached": 0.05`, `"max_reached": 0`, "max_reached 0 is not a share in (0,1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := overseer.LoadPolicy(writeTemp(t, strings.Replace(string(data), tc.from, tc.to, 1)))
			require.Error(t, err)
			assert.ErrorIs(t, err, overseer.ErrPolicy)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestPolicyFor(t *testing.T) {
	assert.Equal(t, overseer.DefaultLearnedPolicy(), overseer.PolicyFor(&overseer.LearnedJudge{}), "the shipped model has its calibrated policy")
	assert.Equal(t, judge.UncertifiedModelPolicy(), overseer.PolicyFor(&overseer.LearnedJudge{Model: tokensModel()}), "a model of your own needs your own policy: until it has one, it pauses nothing")
	assert.Equal(t, overseer.DefaultPolicy(), overseer.PolicyFor(overseer.HeuristicJudge{}))
}

func TestPhaseKindOf(t *testing.T) {
	for name, want := range map[string]overseer.PhaseKind{
		"edit": overseer.PhaseKindEdit, "Code": overseer.PhaseKindEdit, "implement-api": overseer.PhaseKindEdit,
		"test": overseer.PhaseKindVerify, "verify": overseer.PhaseKindVerify, "checks": overseer.PhaseKindVerify,
		"read": overseer.PhaseKindOther, "review": overseer.PhaseKindOther, "": overseer.PhaseKindOther,
	} {
		assert.Equal(t, want, overseer.PhaseKindOf(name), name)
	}
}

func TestTokensInTheTrajectory(t *testing.T) {
	var r overseer.TrajectoryRecorder
	r.RecordPhase(overseer.PhaseRun{Phase: "code"}, &overseer.PhaseReport{Turns: 2, InputTokens: 1000, OutputTokens: 50})
	r.RecordPhase(overseer.PhaseRun{Phase: "test"}, &overseer.PhaseReport{Turns: 1, InputTokens: 500, OutputTokens: -5})
	tr := r.Trajectory()
	assert.Equal(t, int64(1500), tr.InputTokens)
	assert.Equal(t, int64(50), tr.OutputTokens, "a negative count is ignored")
	assert.Equal(t, int64(1000), tr.RecentPhases[0].InputTokens)
	assert.Contains(t, tr.Digest(), "tokens 1500 in, 50 out")
}

// writeTemp writes data to a file of the test's own and returns its path.
func writeTemp(t *testing.T, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "file.json")
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
	return path
}

// The job's workflow type reaches the judge wherever it runs, so a verdict
// of an uncalibrated model names the type it is not calibrated for.
func TestLearnedVerdictNamesTheJobsWorkflowType(t *testing.T) {
	for _, placement := range []overseer.Placement{overseer.PlacementWorkflow, overseer.PlacementLocalActivity} {
		t.Run(string(placement), func(t *testing.T) {
			h := newHarness(t, overseer.Options{Judge: &overseer.LearnedJudge{}, Placement: placement})
			h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
			require.NoError(t, h.env.GetWorkflowError())
			s := h.status(t)
			require.NotEmpty(t, s.Assessments)
			for _, a := range s.Assessments {
				require.NotNil(t, a.Answers, "assessment at %s", a.Phase)
				assert.Contains(t, a.Answers.Basis, "stage 0: not calibrated for phasesWorkflow (learned from other runs)")
			}
		})
	}
}
