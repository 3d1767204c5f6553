package cli_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sweAgentDir writes a SWE-agent run directory as SWE-agent and its kin
// publish one: trajs/<instance_id>.traj, with the source's results.json and
// a README beside them, and the outcomes in labels.json. Succeeded runs
// read, edit once and pass their tests; failed runs have rejected edits and
// failing tests, and submit nothing.
func sweAgentDir(t *testing.T, repos []string) string {
	t.Helper()
	dir := t.TempDir()
	type step struct {
		Action        string  `json:"action"`
		Observation   string  `json:"observation"`
		State         string  `json:"state"`
		ExecutionTime float64 `json:"execution_time"`
	}
	labels := map[string]bool{}
	for _, repo := range repos {
		for i := range 8 {
			id := fmt.Sprintf("%s-%d", repo, 1000+i)
			ok := i%2 == 0
			state := fmt.Sprintf(`{"open_file": "/%s/src/core.py", "working_dir": "/%s"}`, repo, repo)
			steps := []step{
				{"find_file core.py", "Found 1 matches", state, 0.2},
				{"open src/core.py", "[File: /" + repo + "/src/core.py (90 lines total)]", state, 0.1},
			}
			submission := "diff --git a/src/core.py b/src/core.py\n"
			if ok {
				steps = append(steps,
					step{"edit 10:12\nreturn x\nend_of_edit", "File updated.", state, 0.3},
					step{"pytest tests/", "===== 12 passed in 1.20s =====", state, 4})
			} else {
				for range 2 + i%3 {
					steps = append(steps,
						step{"edit 10:12\nreturn x(\nend_of_edit", "Your proposed edit has introduced new syntax error(s).", state, 0.3},
						step{"pytest tests/", "===== 2 failed, 10 passed in 1.50s =====", state, 4})
				}
				submission = ""
			}
			steps = append(steps, step{"submit", "", state, 0.1})
			traj := map[string]any{
				"environment": "swe_main",
				"trajectory":  steps,
				"info": map[string]any{
					"exit_status": "submitted", "submission": submission,
					"model_stats": map[string]any{"instance_cost": 0.1 * float64(len(steps)), "tokens_sent": 3000 * len(steps), "tokens_received": 200 * len(steps), "api_calls": len(steps)},
				},
			}
			data, err := json.Marshal(traj)
			require.NoError(t, err)
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "trajs"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "trajs", id+".traj"), data, 0o644))
			labels[id] = ok
		}
	}
	data, err := json.Marshal(labels)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "labels.json"), data, 0o644))
	// CodeR's results.json is not strict JSON: it is never read.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "results.json"), []byte(`{"resolved": ["x",],}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# runs\n"), 0o644))
	return dir
}

// TestTrainOnSWEAgentRunsOfThreeRepositories: a SWE-agent run's task family
// is its repository, so train cross-validates on .traj files as published,
// and says which format and labels file it read and what it skipped.
func TestTrainOnSWEAgentRunsOfThreeRepositories(t *testing.T) {
	dir := sweAgentDir(t, []string{"astropy__astropy", "django__django", "sympy__sympy"})
	model := filepath.Join(t.TempDir(), "model.json")
	code, out, errOut := runCLI("train", "--traces", dir, "--out", model, "--folds", "3")
	require.Equal(t, 0, code, errOut)
	lines := strings.SplitN(out, "\n", 3)
	require.Len(t, lines, 3, out)
	assert.Equal(t, "read 24 runs of format swe-agent (detected) from "+dir+"; outcomes from "+filepath.Join(dir, "labels.json"), lines[0])
	assert.Equal(t, "skipped README.md and results.json: not runs", lines[1])
	assert.Contains(t, out, "trained on 24 runs (12 succeeded, 12 failed) of 3 task families")

	code, out, errOut = runCLI("train", "--traces", dir, "--out", model, "--folds", "3", "--json")
	require.Equal(t, 0, code, errOut)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &v), "--json prints JSON only: %s", out)

	// Runs of one repository are one family: too few to cross-validate,
	// whatever the number of runs.
	one := sweAgentDir(t, []string{"matplotlib__matplotlib"})
	code, _, errOut = runCLI("train", "--traces", one, "--out", model, "--folds", "3")
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errOut, "at least three task families, and these 8 runs are of 1 (matplotlib__matplotlib)")
}

// TestEvalOnOpenHandsAsPublished: eval reads an OpenHands evaluation folder
// with the evaluation's results.json (at its top and inside trajs/),
// all_preds.jsonl, logs/, metadata.yaml and README beside the runs.
func TestEvalOnOpenHandsAsPublished(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "eval", "testdata", "openhands-published")
	code, out, errOut := runCLI("eval", "--traces", dir)
	require.Equal(t, 0, code, errOut)
	lines := strings.SplitN(out, "\n", 3)
	require.Len(t, lines, 3, out)
	assert.Equal(t, "read 2 runs of format openai-chat (detected) from "+dir+"; outcomes from "+filepath.Join(dir, "labels.json"), lines[0])
	assert.Equal(t, "skipped README.md, all_preds.jsonl, logs/, metadata.yaml, results.json and trajs/results.json: not runs", lines[1])
	assert.True(t, strings.HasPrefix(lines[2], "judge: "), lines[2])

	code, out, errOut = runCLI("eval", "--traces", dir, "--format", "openai-chat", "--json")
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Runs int `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), "--json prints JSON only: %s", out)
	assert.Equal(t, 2, rep.Runs)
}
