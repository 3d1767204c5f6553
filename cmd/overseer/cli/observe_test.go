package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/cmd/overseer/cli"
	"github.com/corohq/temporal-overseer/supervision"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

func run(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create %s", path)
	assert.Equal(t, string(want), got)
}

const snapshot = "../../../supervision/testdata/snapshot_verified.json"

func TestObserveSnapshot(t *testing.T) {
	code, out, errOut := run("observe", "--snapshot", snapshot)
	require.Equal(t, 0, code, errOut)
	golden(t, "observe_verified.txt", out)

	code, out, _ = run("observe", "--snapshot", snapshot, "--json")
	require.Equal(t, 0, code)
	var d supervision.Decision
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	assert.Equal(t, supervision.AdviceReviewCompletion, d.Report.Selected.Advice)
}

func TestObserveWithScriptedAnswers(t *testing.T) {
	answers := filepath.Join(t.TempDir(), "answers.json")
	require.NoError(t, os.WriteFile(answers, []byte(`{"needs_human": 0.95, "agents_md_drift": 0.05, "meaningful_progress": 0.9,
		"worker_stuck": 0.05, "work_off_track": 0.05, "implementation_complete": 0.5, "requirements_satisfied": 0.5,
		"ready_to_finish": 0.5, "tests_sufficient": 0.5, "needs_verification": 0.5}`), 0o600))
	code, out, errOut := run("observe", "--snapshot", snapshot, "--answers", answers)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Advice:   MANUAL_REVIEW (core.human-escalation)")

	// Answers that miss checks are an invalid response: an error, no verdict.
	require.NoError(t, os.WriteFile(answers, []byte(`{"needs_human": 0.95}`), 0o600))
	code, out, _ = run("observe", "--snapshot", snapshot, "--answers", answers)
	require.Equal(t, 0, code)
	assert.Contains(t, out, "Decision: ERROR (CALL_OR_RESPONSE_ERROR)")
	assert.Contains(t, out, `question "core.completion__ready_to_finish": missing answer;`)
	assert.Contains(t, out, "no completion conclusion")
}

func TestObserveBadInput(t *testing.T) {
	code, _, errOut := run("observe")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--snapshot FILE")
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"scope":{"user_id":"u","session_id":"s","run_id":"r"},"colour":1}`), 0o600))
	code, _, errOut = run("observe", "--snapshot", bad)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "not a valid snapshot")
	code, _, errOut = run("observe", "--snapshot", snapshot, "--no", "0.9", "--yes", "0.1")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "thresholds")
}
