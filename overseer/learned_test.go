package overseer_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/testsuite/judgetest"
)

func TestLearnedJudgeConformance(t *testing.T) {
	judgetest.Run(t, func(t *testing.T) *judgetest.Harness {
		return &judgetest.Harness{Judge: &overseer.LearnedJudge{}}
	})
}

// tokensModel says: the more output tokens per step, the less likely the
// run succeeds.
func tokensModel() *overseer.LearnedModel {
	return &overseer.LearnedModel{Format: overseer.LearnedModelFormat, Version: "tokens-v1",
		Features:    []overseer.ModelFeature{{Name: "log_output_tokens_per_step", Mean: 5, Std: 1, Weight: -2}},
		Intercept:   1,
		Calibration: overseer.Calibration{Method: "platt", A: 1, B: 0}}
}

func ask(t *testing.T, j jev.Judge, obligations []string, traj overseer.Trajectory) overseer.Answers {
	t.Helper()
	req, err := overseer.NewRequest(obligations, traj)
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
	assert.InDelta(t, cheap.OnObjective, unknown.OnObjective, 0.005, "no token counts: the feature takes its training mean")
	assert.Equal(t, overseer.BreachNone, costly.Breach, "the model's fears are P, not a breach")
	assert.Less(t, costly.Severity, 1.5, "without a breach the severity stays below Review")

	var failed overseer.TrajectoryRecorder
	failed.RecordPhase(overseer.PhaseRun{Phase: "code", Failed: true}, nil)
	failed.RecordPhase(overseer.PhaseRun{Phase: "code", Failed: true}, nil)
	a := ask(t, j, overseer.DefaultObligations(), failed.Trajectory())
	assert.Equal(t, "obligation[0]", a.Breach)
	assert.InDelta(t, 0.75, a.BreachConfidence, 1e-9)
	assert.InDelta(t, 0.55, a.Blocked, 1e-9)
	assert.True(t, overseer.DefaultPolicy().Evaluate(a).Flagged, "two failed phases in a row pause")

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
	for _, f := range m.Features {
		assert.False(t, overseer.IsCumulativeFeature(f.Name), "the shipped model uses rates only, got %s", f.Name)
	}

	good, err := json.Marshal(tokensModel())
	require.NoError(t, err)
	for _, tc := range []struct{ name, from, to, want string }{
		{"other version", overseer.LearnedModelFormat, "overseer-learned-model/v0", "retrain the model"},
		{"unknown feature", "log_output_tokens_per_step", "vibes", `unknown feature "vibes"`},
		{"zero std", `"std":1`, `"std":0`, "positive std"},
		{"other calibration", `"platt"`, `"isotonic"`, "calibration must be"},
		{"unknown field", `"intercept"`, `"intercept_":1,"intercept"`, "unknown field"},
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
	data, err := overseer.MarshalPolicy(p, map[string]any{"max_false_pause": 0.05})
	require.NoError(t, err)
	back, err := overseer.LoadPolicy(writeTemp(t, string(data)))
	require.NoError(t, err)
	assert.Equal(t, p, back)

	def := overseer.DefaultLearnedPolicy()
	require.NoError(t, def.Validate())
	assert.NotEmpty(t, def.Name)

	for _, tc := range []struct{ name, from, to, want string }{
		{"other version", "overseer-policy/v1", "overseer-policy/v9", `format "overseer-policy/v9"`},
		{"missing threshold", `"pause_at_or_below": 0.3,`, ``, "pause_at_or_below is missing"},
		{"misspelled field", `"pause_at_or_below"`, `"pause_at_or_bellow"`, `unknown field "pause_at_or_bellow"`},
		{"out of range", `"pause_at_or_below": 0.3`, `"pause_at_or_below": 1.3`, "want a probability in [0,1]"},
		{"not json", `{`, `[`, "policy file"},
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
	assert.Equal(t, overseer.DefaultPolicy(), overseer.PolicyFor(&overseer.LearnedJudge{Model: tokensModel()}), "a model of your own needs your own policy")
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
