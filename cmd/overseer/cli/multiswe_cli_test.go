package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
)

// TestEvalOnMultiSWEBenchAsPublished: eval reads the Java split of
// Multi-SWE-bench's leaderboard as published, one folder per run with its
// trajs/<id>.traj and results/results.json, detected or given as
// --format swe-agent.
func TestEvalOnMultiSWEBenchAsPublished(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "eval", "testdata", "multi-swe-bench", "java", "verified")
	code, out, errOut := runCLI("eval", "--traces", dir)
	require.Equal(t, 0, code, errOut)
	lines := strings.SplitN(out, "\n", 3)
	require.Len(t, lines, 3, out)
	assert.Equal(t, "read 6 runs of format swe-agent (detected) from "+dir+"; outcomes from "+
		filepath.Join(dir, "20240825_SWE-agent_gpt-4o-2024-05-13", "results", "results.json")+" and "+
		filepath.Join(dir, "20250329_MSWE-agent_Claude-3.7-Sonnet", "results", "results.json"), lines[0])
	assert.True(t, strings.HasPrefix(lines[1], "skipped 20240825_SWE-agent_gpt-4o-2024-05-13/README.md, "), lines[1])

	code, out, errOut = runCLI("eval", "--traces", dir, "--format", "swe-agent", "--json")
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Runs   int `json:"runs"`
		Failed int `json:"failed"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	assert.Equal(t, 6, rep.Runs)
	assert.Equal(t, 3, rep.Failed)
}

// TestCommandsSayTheLayoutsTheyRead: a folder of which nothing is read
// ends the command's error with the layouts that are read, whatever the
// command.
func TestCommandsSayTheLayoutsTheyRead(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644))
	for _, args := range [][]string{
		{"eval", "--traces", dir},
		{"train", "--traces", dir, "--out", filepath.Join(t.TempDir(), "m.json")},
		{"calibrate", "--traces", dir},
		{"eval", "--traces", dir, "--format", "swe-agent"},
	} {
		code, _, errOut := runCLI(args...)
		assert.Equal(t, 1, code, "%v", args)
		assert.Contains(t, errOut, dir, "%v", args)
		assert.Contains(t, errOut, eval.Layouts, "%v", args)
	}
}
