package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/cmd/overseer/cli"
	"github.com/corohq/temporal-overseer/cmd/overseer/cli/clitest"
	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = cli.Main(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// lettersCSV writes a phase-letter CSV of runs of the given families:
// succeeded runs read, edit and verify once; failed runs fail steps and go
// round edit and verify again and again.
func lettersCSV(t *testing.T, path string, families []string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("id,outcome,sequence\n")
	for _, f := range families {
		for i := range 8 {
			switch i % 2 {
			case 0:
				fmt.Fprintf(&b, "%s-%d,succeeded,%s\n", f, i, "RRS"+strings.Repeat("R", i%3)+"PEVVG")
			default:
				fmt.Fprintf(&b, "%s-%d,failed,%s\n", f, i, "RSXP"+strings.Repeat("EXVX", 2+i%3)+"H")
			}
		}
	}
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
}

// TestTrainEvalOnLetters trains on some task families of a letters CSV and
// evaluates on the others, as a user would with another agent's runs.
func TestTrainEvalOnLetters(t *testing.T) {
	dir := t.TempDir()
	train, test := filepath.Join(dir, "train.csv"), filepath.Join(dir, "test.csv")
	lettersCSV(t, train, []string{"alpha", "beta", "gamma", "delta"})
	lettersCSV(t, test, []string{"omega", "sigma"})
	model, policy := filepath.Join(dir, "model.json"), filepath.Join(dir, "policy.json")

	code, out, errOut := runCLI("train", "--traces", train, "--out", model, "--folds", "4")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "trained on 32 runs (16 succeeded, 16 failed) of 4 task families")
	_, err := overseer.LoadLearnedModel(model)
	require.NoError(t, err)

	code, out, errOut = runCLI("eval", "--traces", test, "--judge", "learned", "--model", model, "--json")
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Runs        int `json:"runs"`
		Failed      int `json:"failed"`
		Checkpoints []struct {
			At    string   `json:"at"`
			AUROC *float64 `json:"auroc"`
		} `json:"checkpoints"`
		Policy map[string]any `json:"policy"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.Equal(t, 16, rep.Runs)
	assert.Equal(t, 8, rep.Failed)
	found := false
	for _, c := range rep.Checkpoints {
		if c.At == "50%" {
			found = true
			require.NotNil(t, c.AUROC)
			// Failed runs fail steps and loop: a model that learned anything
			// ranks them below the succeeded ones on families it never saw.
			assert.Greater(t, *c.AUROC, 0.9)
		}
	}
	assert.True(t, found, "a checkpoint at 50%%")
	assert.Contains(t, rep.Policy, "false_pause_rate")
	assert.Contains(t, rep.Policy, "catch_rate")

	// 8 succeeded runs cannot certify 5%, in expectation (the default) or
	// at 95%: one sentence, exit 1. The policy file keeps the policy in
	// force (none pauses for a team's own model) with the relative budget
	// the 8 back if their spend is log-normal.
	code, out, errOut = runCLI("calibrate", "--traces", test, "--judge", "learned", "--model", model, "--out", policy)
	assert.Equal(t, 1, code)
	assert.Equal(t, "overseer calibrate: calibrate: false-pause promise cannot be certified: 8 succeeded runs cannot place a threshold that pauses a new run with probability at most 5.0%; it takes at least 19 succeeded runs\n", errOut)
	assert.Contains(t, out, "if their spend is log-normal; learned from 8)")
	clitest.KeptInForce(t, out, policy)
	code, _, errOut = runCLI("calibrate", "--traces", test, "--judge", "learned", "--model", model, "--out", policy, "--promise", "confidence")
	assert.Equal(t, 1, code)
	assert.Equal(t, "overseer calibrate: calibrate: false-pause promise cannot be certified: 8 succeeded runs cannot show a false-pause rate within 5.0% at 95% confidence (with none paused the bound is 31.2%); it takes at least 59 succeeded runs\n", errOut)

	// A budget they can support: the policy file records its promise.
	code, out, errOut = runCLI("calibrate", "--traces", test, "--judge", "learned", "--model", model, "--out", policy, "--max-false-pause", "0.4")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "policy written to "+policy)
	assert.Contains(t, out, "promise: pauses at most 40.0% of succeeded runs")
	p, err := overseer.LoadPolicy(policy)
	require.NoError(t, err)
	assert.True(t, p.Promise.Certified())
	assert.Equal(t, 8, p.Promise.SucceededRuns)
}

// TestEvalSaysWhenRunsBreakThePromise: a policy that promises at most 5%
// false pauses and pauses every run is reported broken, with exit 1 after
// the report.
func TestEvalSaysWhenRunsBreakThePromise(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs.csv")
	lettersCSV(t, runs, []string{"alpha", "beta", "gamma"})
	p := overseer.DefaultPolicy()
	p.PauseAtOrBelow, p.NeedsALookAt, p.OnTrackAt = 0.99, 0.995, 0.995
	p.Promise = overseer.Promise{MaxFalsePause: 0.05, Confidence: 0.95, SucceededRuns: 100, UpperBound: 0.03, FailedRuns: 10}
	data, err := overseer.MarshalPolicy(p, nil)
	require.NoError(t, err)
	policy := filepath.Join(dir, "policy.json")
	require.NoError(t, os.WriteFile(policy, data, 0o644))

	code, out, errOut := runCLI("eval", "--traces", runs, "--judge", "heuristic", "--policy", policy)
	assert.Equal(t, 1, code)
	assert.Contains(t, out, "the promise of at most 5.0% false pauses is BROKEN on these runs: 12 of 12 succeeded runs paused")
	assert.Equal(t, "overseer eval: false-pause promise broken: 12 of 12 succeeded runs paused against at most 5.0%: recalibrate on these runs (overseer calibrate)\n", errOut)

	// The same runs under the heuristic judge's own thresholds: no promise
	// to break, exit 0.
	code, out, errOut = runCLI("eval", "--traces", runs, "--judge", "heuristic")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "the policy makes no false-pause promise")
}

// TestDecisionBadInput: bad input exits non-zero with one sentence.
func TestDecisionBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	letters := filepath.Join(dir, "runs.csv")
	lettersCSV(t, letters, []string{"alpha", "beta", "gamma"})
	noOutcome := write("no-outcome.jsonl", `{"format":"overseer-run/v1","id":"a-1","steps":[{"phase":"read"}]}`+"\n")
	empty := write("empty.jsonl", "")
	oldModel := write("old-model.json", `{"format":"overseer-learned-model/v0","version":"old"}`)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "mixed", "trajs"), 0o755))
	write(filepath.Join("mixed", "trajs", "a-1.traj.json"), "{}")
	write(filepath.Join("mixed", "trajs", "a-2.traj"), "{}")

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown format", []string{"eval", "--traces", letters, "--format", "csv2"}, 1, `unknown run format "csv2": use records, mini-swe-agent-1, swe-agent, openai-chat, letters`},
		{"two formats in one directory", []string{"eval", "--traces", filepath.Join(dir, "mixed")}, 1, "holds runs of 2 formats, mini-swe-agent-1 (trajs/*.traj.json) and swe-agent (trajs/*.traj): pass --format mini-swe-agent-1 or --format swe-agent"},
		{"unknown extension", []string{"train", "--traces", write("runs.txt", "x"), "--out", filepath.Join(dir, "m.json")}, 1, "cannot tell the format"},
		{"record without outcome", []string{"eval", "--traces", noOutcome}, 1, `record "a-1" has no outcome: set outcome to succeeded, failed or blocked`},
		{"letters without outcome", []string{"eval", "--traces", write("bad.csv", "id,outcome,sequence\na-1,,RE\n")}, 1, "row 2 column outcome: the run has no outcome"},
		{"bad letter", []string{"eval", "--traces", write("bad2.csv", "id,outcome,sequence\na-1,failed,RQE\n")}, 1, "row 2 column sequence: character 2 is 'Q'"},
		{"empty input", []string{"train", "--traces", empty, "--out", filepath.Join(dir, "m.json")}, 1, "no runs in " + empty},
		{"model of another format version", []string{"eval", "--traces", letters, "--judge", "learned", "--model", oldModel}, 2, `format "overseer-learned-model/v0" is not "overseer-learned-model/v2"`},
		{"budget 0", []string{"calibrate", "--traces", letters, "--max-false-pause", "0"}, 2, "--max-false-pause 0: give a share in (0,1)"},
		{"budget 1.5", []string{"calibrate", "--traces", letters, "--max-false-pause", "1.5"}, 2, "--max-false-pause 1.5: give a share in (0,1)"},
		{"train budget 1.5", []string{"train", "--traces", letters, "--out", filepath.Join(dir, "m.json"), "--max-false-pause", "1.5"}, 2, "--max-false-pause 1.5: give a share in (0,1)"},
		{"recalibrate on one outcome", []string{"recalibrate", "--traces", write("good.csv", "id,outcome,sequence\na-1,succeeded,RE\nb-1,succeeded,RE\n"), "--out", filepath.Join(dir, "m.json")}, 1, "recalibrate: the 2 runs all succeeded: recalibration needs runs of both outcomes"},
		{"recalibrate on too few", []string{"recalibrate", "--traces", letters, "--out", filepath.Join(dir, "m.json")}, 1, "recalibrate: 24 runs are too few: recalibration takes at least 30 closed runs of both outcomes"},
		{"recalibrate a model of another format", []string{"recalibrate", "--traces", letters, "--model", oldModel, "--out", filepath.Join(dir, "m.json")}, 2, `format "overseer-learned-model/v0" is not "overseer-learned-model/v2"`},
		{"unknown promise kind", []string{"calibrate", "--traces", letters, "--promise", "sure"}, 2, `--promise: unknown promise kind "sure": use "confidence" (a 95% upper bound) or "expected" (in expectation on new runs)`},
		{"pause budget on too few jobs", []string{"calibrate", "--traces", write("few.csv", "id,outcome,sequence\na-1,succeeded,RE\nb-1,failed,RX\n"), "--pause-budget", "0.1"}, 1,
			"pause budget: 2 recent jobs are too few to set a pause budget on; it takes at least 20"},
		{"recalibrate without out", []string{"recalibrate", "--traces", letters}, 2, "give --out FILE for the recalibrated model"},
		{"export bad labels", []string{"export", "--labels", write("labels.json", `{"a-1":"maybe"}`)}, 1, `job "a-1" has outcome "maybe": use succeeded, failed or blocked`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(tc.args...)
			assert.Equal(t, tc.code, code, "stdout %q stderr %q", out, errOut)
			assert.Contains(t, errOut, tc.want)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %q", errOut)
			assert.True(t, strings.HasPrefix(errOut, "overseer "+tc.args[0]+": "), errOut)
		})
	}
}

// TestRecalibrateThenEval recalibrates the shipped model on the first runs
// of an agent it never saw and evaluates it on the others, as the docs
// tell a team to: eval first says the probabilities do not fit, and after
// recalibration they fit as well as the base rate or better, with the
// ranking kept.
func TestRecalibrateThenEval(t *testing.T) {
	dir := t.TempDir()
	writeRuns := func(name string, n, seed int) string {
		var recs []eval.Record
		for i := range n {
			failed := (i*7+seed)%10 < 7 // 30 % succeed
			rec := eval.Record{Format: eval.RecordFormat, ID: fmt.Sprintf("fam%d-%d-%d", i%4, seed, i), Unit: eval.UnitPhase, Outcome: eval.OutcomeSucceeded}
			if failed {
				rec.Outcome = eval.OutcomeFailed
			}
			for s := range 8 + i%5 {
				out := int64(200 + 37*((i+s)%5))
				if failed {
					out += 150
				}
				rec.Steps = append(rec.Steps, eval.Step{Phase: []string{"read", "edit", "test"}[s%3], OutputTokens: out, InputTokens: 8000})
			}
			recs = append(recs, rec)
		}
		return writeRecords(t, filepath.Join(dir, name), recs)
	}
	first, others := writeRuns("first.jsonl", 30, 1), writeRuns("others.jsonl", 60, 2)

	code, out, errOut := runCLI("eval", "--traces", others)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "At 50% of the runs the judge's probabilities fit worse than always guessing these runs' success rate of 30%")
	assert.Contains(t, out, "overseer recalibrate --traces DIR --out FILE")

	model := filepath.Join(dir, "model.json")
	code, out, errOut = runCLI("recalibrate", "--traces", first, "--for", "CoroJob", "--out", model)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "recalibrated (stage 1) on 30 CoroJob runs (9 succeeded, 21 failed); no weight refitted")
	assert.Contains(t, out, "telemetry  intercept (30 runs reached it")
	assert.Regexp(t, `feature standardisation: (kept the model's own|re-standardised the features on these runs) \(held-out at 50% over \d folds, re-standardised against as is: Brier 0\.\d{3} against 0\.\d{3}, AUROC`, out)

	code, out, errOut = runCLI("eval", "--traces", others, "--judge", "learned", "--model", model, "--json")
	require.Equal(t, 0, code, errOut)
	var rep eval.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	mid := rep.Checkpoints[1]
	require.Equal(t, "50%", mid.At)
	assert.False(t, mid.Misfit(), "Brier %v against the base rate's %v", mid.Brier, mid.BaseBrier)

	code, out, errOut = runCLI("eval", "--traces", others, "--json")
	require.Equal(t, 0, code, errOut)
	var before eval.Report
	require.NoError(t, json.Unmarshal([]byte(out), &before))
	assert.InDelta(t, float64(before.Checkpoints[1].AUROC), float64(mid.AUROC), 0.02)
}

// train --policy-out writes the model before it calibrates the policy: when
// the policy is refused the exit status is 1, and the sentence says the
// model was written all the same.
func TestTrainSaysTheModelWasWrittenWhenOnlyThePolicyIsRefused(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs.csv")
	lettersCSV(t, runs, []string{"alpha", "beta", "gamma", "delta"}) // 16 succeeded runs: too few for a 5% promise
	model, policy := filepath.Join(dir, "model.json"), filepath.Join(dir, "policy.json")
	for _, asJSON := range []bool{false, true} {
		args := []string{"train", "--traces", runs, "--out", model, "--policy-out", policy, "--folds", "4"}
		if asJSON {
			args = append(args, "--json")
		}
		code, _, errOut := runCLI(args...)
		assert.Equal(t, 1, code, errOut)
		assert.Regexp(t, `^overseer train: model learned-\S+ written to `+regexp.QuoteMeta(model)+`; only the policy \(--policy-out `+
			regexp.QuoteMeta(policy)+`\) was refused: calibrate: .*it takes at least 19 succeeded runs\n$`, errOut)
		_, err := overseer.LoadLearnedModel(model)
		assert.NoError(t, err, "the model was written")
		assert.NoFileExists(t, policy)
	}
}

// tokenRuns writes run records of families whose succeeded runs spend 100
// to 190 tokens a step and whose failed runs spend ten times as much.
func tokenRuns(t *testing.T, path string, families, succeeded int) {
	t.Helper()
	var recs []eval.Record
	for f := range families {
		for i := range succeeded + 1 {
			rec := eval.Record{Format: eval.RecordFormat, ID: fmt.Sprintf("fam%d-%d", f, i), Outcome: eval.OutcomeSucceeded, Task: eval.Task{Family: fmt.Sprintf("fam%d", f)}}
			perStep := int64(100 + 10*i)
			if i == succeeded {
				rec.Outcome, perStep = eval.OutcomeFailed, 1500
			}
			for range 6 {
				rec.Steps = append(rec.Steps, eval.Step{Phase: "edit", InputTokens: perStep, Call: fmt.Sprintf("edit %d", len(rec.Steps))})
			}
			recs = append(recs, rec)
		}
	}
	writeRecords(t, path, recs)
}

// writeRecords writes recs to path as run records, one a line, and
// returns path.
func writeRecords(t *testing.T, path string, recs []eval.Record) string {
	t.Helper()
	var b strings.Builder
	for _, rec := range recs {
		line, err := json.Marshal(rec)
		require.NoError(t, err)
		b.Write(append(line, '\n'))
	}
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// calibrate puts the relative budget the runs back in the policy it
// writes; when it certifies no pause policy it still writes the policy in
// force with that budget, says so and exits 1; eval then counts the
// budget as a gate where --relative-budget-gates says it is on.
func TestCalibrateWritesTheRelativeBudgetItsRunsBack(t *testing.T) {
	dir := t.TempDir()
	runs, policy := filepath.Join(dir, "runs.jsonl"), filepath.Join(dir, "policy.json")
	tokenRuns(t, runs, 6, 3) // 18 succeeded runs: too few for a 5% false-pause promise, enough for a relative budget
	code, out, errOut := runCLI("calibrate", "--traces", runs, "--out", policy)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "false-pause promise cannot be certified")
	assert.Contains(t, out, "no pause policy certified; relative budget in the policy: ")
	assert.Contains(t, out, "written to "+policy+" with the policy in force")
	p, err := overseer.LoadPolicy(policy)
	require.NoError(t, err)
	require.NotNil(t, p.Spend)
	assert.Equal(t, []string{"tokens"}, p.Spend.Covers())

	code, out, errOut = runCLI("eval", "--traces", runs, "--policy", policy, "--relative-budget-gates", "--json")
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Spend struct {
			InForce struct {
				Relative string `json:"relative"`
				Caught   int    `json:"caught"`
			} `json:"in_force"`
		} `json:"spend"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.NotEmpty(t, rep.Spend.InForce.Relative)
	assert.Equal(t, 6, rep.Spend.InForce.Caught, "each failed run spends ten times the succeeded runs' tokens")

	code, _, errOut = runCLI("calibrate", "--traces", runs, "--relative-measures", "some")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `relative budget measures "some": give auto`)
}

// A team recalibrates the shipped loop model on its agent's runs and
// calibrates a pause policy on the same runs, as the docs say: the model
// reads each of them against the team's succeeded runs, itself among
// them, so calibrate certifies on each run scored by the model
// recalibrated without the run's task family, and says so. On other runs
// it scores them as they are.
func TestCalibrateCertifiesARecalibratedLoopModelOutOfFold(t *testing.T) {
	dir := t.TempDir()
	writeRuns := func(name string, seed int) string {
		var recs []eval.Record
		for i := range 60 {
			rec := eval.Record{Format: eval.RecordFormat, ID: fmt.Sprintf("fam%d-%d-%d", i%4, seed, i), Outcome: eval.OutcomeSucceeded}
			steps := 20 + (i*7+seed)%11
			if i%3 == 0 {
				rec.Outcome, steps = eval.OutcomeFailed, 3*steps
			}
			for s := range steps {
				rec.Steps = append(rec.Steps, eval.Step{Phase: []string{"read", "edit", "test"}[s%3], InputTokens: 2000, OutputTokens: 150})
			}
			recs = append(recs, rec)
		}
		return writeRecords(t, filepath.Join(dir, name), recs)
	}
	runs, others := writeRuns("runs.jsonl", 1), writeRuns("others.jsonl", 2)
	model := filepath.Join(dir, "model.json")
	code, _, errOut := runCLI("recalibrate", "--traces", runs, "--for", "Loop", "--out", model)
	require.Equal(t, 0, code, errOut)

	code, out, errOut := runCLI("calibrate", "--traces", runs, "--model", model, "--json")
	require.Contains(t, []int{0, 1}, code, errOut)
	var got struct {
		OutOfFold string `json:"out_of_fold"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	assert.Regexp(t, `^certified out of fold: learned-loop-\S+ was recalibrated on these runs, so each run is scored by it recalibrated on the runs of the other task families \(4 folds\)$`, got.OutOfFold)

	code, out, errOut = runCLI("calibrate", "--traces", others, "--model", model)
	require.Contains(t, []int{0, 1}, code, errOut)
	assert.NotContains(t, out, "out of fold", "runs the model was not recalibrated on are scored as they are")

	// eval says when its figures are in sample.
	code, out, errOut = runCLI("eval", "--traces", runs, "--model", model)
	require.Contains(t, []int{0, 1}, code, errOut)
	assert.Regexp(t, `in sample: learned-loop-\S+ was recalibrated on these runs, and reads each against the succeeded runs it is among, so these figures flatter it`, out)
	code, out, errOut = runCLI("eval", "--traces", others, "--model", model)
	require.Contains(t, []int{0, 1}, code, errOut)
	assert.NotContains(t, out, "in sample")
}

// Recalibrated on 12 succeeded runs of four task families, a loop model
// has no out-of-fold scores (each fold's others hold 9, too few to read a
// loop against): calibrate certifies no pause, and still writes the policy
// in force with the relative budget the runs back.
func TestCalibrateWithoutOutOfFoldScoresKeepsThePolicyInForce(t *testing.T) {
	dir := t.TempDir()
	var recs []eval.Record
	for i := range 36 {
		rec := eval.Record{Format: eval.RecordFormat, ID: fmt.Sprintf("fam%d-%d", i%4, i), Outcome: eval.OutcomeFailed}
		steps := 40 + i%9
		if i%3 == 1 {
			rec.Outcome, steps = eval.OutcomeSucceeded, 20+i%7
		}
		for s := range steps {
			rec.Steps = append(rec.Steps, eval.Step{Phase: []string{"read", "edit", "test"}[s%3], InputTokens: int64(1800 + 40*(i%5)), OutputTokens: 150})
		}
		recs = append(recs, rec)
	}
	runs := writeRecords(t, filepath.Join(dir, "runs.jsonl"), recs)
	model, policy := filepath.Join(dir, "model.json"), filepath.Join(dir, "policy.json")
	code, _, errOut := runCLI("recalibrate", "--traces", runs, "--for", "Loop", "--out", model)
	require.Equal(t, 0, code, errOut)

	code, out, errOut := runCLI("calibrate", "--traces", runs, "--model", model, "--out", policy)
	assert.Equal(t, 1, code, out)
	assert.Contains(t, errOut, "was recalibrated on these runs, so its pauses are certified on each run scored by it recalibrated without the run's task family, and no out-of-fold scores")
	assert.Contains(t, out, "no pause policy certified; relative budget in the policy:")
	p, err := overseer.LoadPolicy(policy)
	require.NoError(t, err, "the policy in force is written")
	require.NotNil(t, p.Spend)
}
