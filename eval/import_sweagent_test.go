package eval

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestImportSWEAgentFixture(t *testing.T) {
	dir := filepath.Join("testdata", "sweagent")
	format, err := DetectFormat(dir)
	require.NoError(t, err)
	assert.Equal(t, FormatSWEAgent, format)
	recs, err := LoadRuns(dir, "")
	require.NoError(t, err)
	require.Len(t, recs, 2, "the top-level .traj and the one a level down")

	a := recs[0]
	assert.Equal(t, "astropy__astropy-12907", a.ID)
	assert.Equal(t, OutcomeSucceeded, a.Outcome)
	assert.Equal(t, "astropy__astropy", a.FamilyName())
	type want struct {
		phase  string
		failed bool
	}
	var got []want
	for _, s := range a.Steps {
		got = append(got, want{s.Phase, s.Failed})
	}
	assert.Equal(t, []want{
		{"read", false},      // find_file
		{"read", false},      // open
		{"reproduce", false}, // create reproduce.py: a scratch file
		{"reproduce", false}, // edit of the open scratch file
		{"reproduce", false}, // python reproduce.py
		{"read", false},      // open
		{"edit", true},       // edit rejected: syntax error
		{"edit", false},      // edit of a repository file
		{"test", false},      // pytest, all passed
		{"submit", false},
	}, got)
	assert.Equal(t, int64(2500), a.Steps[4].DurationMS, "execution_time is seconds")
	// Totals spread evenly: 1003 tokens over 10 steps.
	var in, out int64
	var cost float64
	for _, s := range a.Steps {
		in += s.InputTokens
		out += s.OutputTokens
		cost += s.CostUSD
		assert.InDelta(t, 100, s.InputTokens, 1)
	}
	assert.Equal(t, int64(1003), in)
	assert.Equal(t, int64(205), out)
	assert.InDelta(t, 0.5, cost, 1e-9)
	assert.False(t, a.Steps[9].OutputMissing)

	m := recs[1]
	assert.Equal(t, "marshmallow-code__marshmallow-1359", m.ID)
	assert.Equal(t, OutcomeFailed, m.Outcome)
	got = nil
	for _, s := range m.Steps {
		got = append(got, want{s.Phase, s.Failed})
	}
	assert.Equal(t, []want{
		{"read", false}, // str_replace_editor view
		{"read", false}, // grep
		{"edit", true},  // str_replace: no replacement was performed
		{"test", true},  // pytest: 1 failed
		{"read", true},  // No such file or directory
		{"submit", false},
	}, got)
	assert.True(t, m.Steps[5].OutputMissing, "a null submission misses its output")
	assert.Zero(t, m.Steps[4].DurationMS, "no execution_time")
}

func TestImportSWEAgentFile(t *testing.T) {
	recs, err := LoadRuns(filepath.Join("testdata", "sweagent", "astropy__astropy-12907.traj"), "")
	require.NoError(t, err)
	require.Len(t, recs, 1)
	assert.Equal(t, "astropy__astropy-12907", recs[0].ID)
}

func TestSWEAgentFailedRule(t *testing.T) {
	for _, tc := range []struct {
		class Class
		obs   string
		want  bool
	}{
		{Read, "Error: File 'x.py' not found", true},
		{Read, "Usage: open \"<file>\" [<line_number>]", true},
		{Reproduce, "bash: foo: command not found", true},
		{Reproduce, "Traceback (most recent call last):\n  File \"r.py\"", true},
		{Reproduce, "EXECUTION TIMED OUT", true},
		{Reproduce, "Command timed out after 25 seconds", true},
		{Test, "==== 2 failed, 10 passed in 1.2s ====", true},
		{Test, "==== 1 error in 0.3s ====", true},
		{Test, "==== 12 passed in 1.2s ====", false},
		{Read, "==== 2 failed, 10 passed in 1.2s ====", false},
		{Read, "Found 3 matches for \"error\"", false},
		{Edit, "[File: /repo/a.py (10 lines total)]", false},
	} {
		assert.Equal(t, tc.want, sweFailed(tc.class, tc.obs), "%s %q", tc.class, tc.obs)
	}
}

func TestImportSWEAgentErrors(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a-1.traj"), []byte(`{"trajectory":[{"action":"ls","observation":""}]}`), 0o644))
	_, err := LoadRuns(dir, "")
	assert.ErrorContains(t, err, "SWE-agent runs: 1 .traj file but no labels file: no labels.json (run id → true when resolved), results/results.json or results.json (resolved_ids) of a published evaluation in "+dir+". "+Layouts)
	assert.ErrorIs(t, err, ErrNoLabels)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "labels.json"), []byte(`{"a-2": true}`), 0o644))
	_, err = LoadRuns(dir, "")
	assert.ErrorIs(t, err, ErrInvalidRecord)
	assert.ErrorContains(t, err, `run "a-1" has no outcome in `+filepath.Join(dir, "labels.json")+": label it or remove it")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "labels.json"), []byte(`{"a-1": true}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a-1.traj"), []byte(`{"info":{}}`), 0o644))
	_, err = LoadRuns(dir, "")
	assert.ErrorContains(t, err, `run "a-1" has no trajectory steps`)
}

// A run directory with labels.json at its root and the trajectories below
// it, as in DIR/trajs/*.traj; or labels.json beside them.
func TestImportSWEAgentLabelsAtRoot(t *testing.T) {
	traj := `{"trajectory":[{"action":"ls","observation":""},{"action":"exit_cost","observation":""}],"info":{"submission":"diff"}}`
	for _, labelsAt := range []string{"", "trajs"} {
		dir := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "trajs"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "trajs", "a-1.traj"), []byte(traj), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, labelsAt, "labels.json"), []byte(`{"a-1": true}`), 0o644))
		format, err := DetectFormat(dir)
		require.NoError(t, err)
		assert.Equal(t, FormatSWEAgent, format)
		recs, err := LoadRuns(dir, "")
		require.NoError(t, err, "labels.json in %q", labelsAt)
		require.Len(t, recs, 1)
		assert.Equal(t, OutcomeSucceeded, recs[0].Outcome)
		last := recs[0].Steps[1]
		assert.Equal(t, Step{Phase: "submit", Failed: true, FailureCategory: "exit_cost", Text: "exit_cost", Command: "exit_cost"}, last, "the run stopped at its cost limit")
		// One file given: labels.json beside it or a level up.
		recs, err = LoadRuns(filepath.Join(dir, "trajs", "a-1.traj"), "")
		require.NoError(t, err)
		assert.Len(t, recs, 1)
	}
}
