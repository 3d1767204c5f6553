package eval_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
)

// TestLoadOpenHandsAsPublished reads an OpenHands evaluation folder laid out
// as SWE-bench evaluations are published: the evaluation's results.json
// (at the top and inside trajs/), all_preds.jsonl, logs/, metadata.yaml and
// a README beside the runs are skipped and named, not read as runs.
func TestLoadOpenHandsAsPublished(t *testing.T) {
	dir := filepath.Join("testdata", "openhands-published")
	recs, src, err := eval.LoadSource(dir, "")
	require.NoError(t, err)
	require.Len(t, recs, 2)
	assert.Equal(t, "astropy__astropy-1", recs[0].ID)
	assert.Equal(t, eval.OutcomeSucceeded, recs[0].Outcome)
	assert.Equal(t, "django__django-2", recs[1].ID)
	assert.Equal(t, eval.OutcomeFailed, recs[1].Outcome)

	assert.Equal(t, eval.FormatOpenAIChat, src.Format)
	assert.True(t, src.Detected)
	assert.Equal(t, 2, src.Runs)
	assert.Equal(t, []string{filepath.Join(dir, "labels.json")}, src.Labels)
	assert.Equal(t, []string{"README.md", "all_preds.jsonl", "logs/", "metadata.yaml", "results.json", "trajs/results.json"}, src.Skipped)
	assert.Equal(t, "read 2 runs of format openai-chat (detected) from "+dir+"; outcomes from "+filepath.Join(dir, "labels.json"), src.String())
	assert.Equal(t, "skipped README.md, all_preds.jsonl, logs/, metadata.yaml, results.json and trajs/results.json: not runs", src.SkippedNote())

	// Given the format, the same files are skipped.
	_, given, err := eval.LoadSource(dir, eval.FormatOpenAIChat)
	require.NoError(t, err)
	assert.False(t, given.Detected)
	assert.Equal(t, src.Skipped, given.Skipped)
	assert.Contains(t, given.String(), "format openai-chat (given)")
}

// TestLoadSWEAgentAsPublished reads a SWE-agent run directory with its
// source's results.json (CodeR's is not even strict JSON), logs and README
// beside the trajectories, and a run of each of three repositories.
func TestLoadSWEAgentAsPublished(t *testing.T) {
	dir := t.TempDir()
	fixture := filepath.Join("testdata", "sweagent", "astropy__astropy-12907.traj")
	traj, err := os.ReadFile(fixture)
	require.NoError(t, err)
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	for _, id := range []string{"astropy__astropy-12907", "django__django-11099", "sympy__sympy-20590"} {
		write(filepath.Join("trajs", id+".traj"), string(traj))
	}
	write("labels.json", `{"astropy__astropy-12907": true, "django__django-11099": false, "sympy__sympy-20590": false}`)
	write("results.json", `{"resolved": ["astropy__astropy-12907",],}`)
	write("README.md", "# runs\n")
	write("LICENSE", "none\n")
	write(filepath.Join("logs", "astropy__astropy-12907.eval.log"), ">>>>> All Tests Passed\n")
	write(".DS_Store", "")

	recs, src, err := eval.LoadSource(dir, "")
	require.NoError(t, err)
	require.Len(t, recs, 3)
	var families []string
	for _, r := range recs {
		families = append(families, r.FamilyName())
	}
	assert.Equal(t, []string{"astropy__astropy", "django__django", "sympy__sympy"}, families, "a SWE-bench instance's family is its repository")
	assert.Equal(t, eval.FormatSWEAgent, src.Format)
	assert.Equal(t, []string{filepath.Join(dir, "labels.json")}, src.Labels)
	assert.Equal(t, []string{"LICENSE", "README.md", "logs/", "results.json"}, src.Skipped, "hidden files are not named")
}

// TestSourceOfRunsWithOutcomes: run records and letters carry their
// outcomes, so no labels file is named; a single file skips nothing.
func TestSourceOfRunsWithOutcomes(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "runs.csv")
	require.NoError(t, os.WriteFile(csv, []byte("id,outcome,sequence\na-1,succeeded,RES\na-2,failed,RXEXS\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644))

	_, src, err := eval.LoadSource(csv, "")
	require.NoError(t, err)
	assert.Equal(t, "read 2 runs of format letters (detected) from "+csv+"; no labels file (the runs carry their outcomes)", src.String())
	assert.Empty(t, src.Skipped)
	assert.Empty(t, src.SkippedNote())

	_, src, err = eval.LoadSource(dir, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"notes.txt"}, src.Skipped)
}

func TestSkippedNoteNamesAFew(t *testing.T) {
	src := eval.Source{Skipped: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}}
	assert.Equal(t, "skipped a, b, c, d, e, f, g, h and 2 more: not runs", src.SkippedNote())
	assert.Equal(t, "i", src.Skipped[8], "the note does not change the list")
}
