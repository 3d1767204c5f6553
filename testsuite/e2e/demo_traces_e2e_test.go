package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/cmd/overseer/cli"
	"github.com/corohq/temporal-overseer/testsuite"
)

// TestDemoOnTheShippedRealRuns runs `overseer demo --traces` on the
// mini-swe-agent runs the repository ships, as a newcomer does: it exits
// 0, every run is shown with verdicts that name their basis and stage,
// and each job ends as its recording did (a failed run aborted at a gate
// counts as failed). By default the runs are the agent loop a team writes,
// a new workflow type judged by the agent-loop rules (stage 0); with
// --as-phases, jobs of phases judged by the phase model, which catches a
// failed run at a gate.
func TestDemoOnTheShippedRealRuns(t *testing.T) {
	skipOnCluster(t) // the demo starts its own dev server
	requireCLI(t)
	root, err := testsuite.RepoRoot()
	require.NoError(t, err)
	dir := filepath.Join(root, "examples", "traces", "mini-swe-agent")
	raw, err := os.ReadFile(filepath.Join(dir, "labels.json"))
	require.NoError(t, err)
	var labels map[string]bool
	require.NoError(t, json.Unmarshal(raw, &labels))
	require.Len(t, labels, 8)
	_, err = os.Stat(filepath.Join(dir, "LICENSE.md"))
	require.NoError(t, err, "the runs ship with their licence")

	// demo runs the demo and checks what every run of it must show; it
	// returns the output and how many jobs were aborted at a gate.
	demo := func(t *testing.T, basis string, extra ...string) (string, int) {
		var out, errOut bytes.Buffer
		args := append([]string{"demo", "--traces", dir, "--speed", "2000", "--review-delay", "20ms"}, extra...)
		code := cli.Main(context.Background(), args, &out, &errOut)
		require.Equal(t, 0, code, "stdout %s\nstderr %s", out.String(), errOut.String())
		text := out.String()
		verdict := regexp.MustCompile(`(?m)^(\S+)\s+\w+\s+(On track|Needs a look|Off track)\s+P\(on objective\) \S+\s+basis: (.*)$`)
		perRun := map[string]int{}
		for _, m := range verdict.FindAllStringSubmatch(text, -1) {
			perRun[m[1]]++
			assert.Regexp(t, basis, m[3], "every verdict names its basis and stage: %q", m[0])
		}
		row := regexp.MustCompile(`(?m)^(\S+)\s+(succeeded|failed)\s+(succeeded|failed)( \(aborted at a gate\))?\s+((?:On track|Needs a look|Off track)(?:, \d+%)?)\s+(.+?, stage \d+)\s+(\d+)\s+(\d+)\s+(\d+)$`)
		rows := row.FindAllStringSubmatch(text, -1)
		require.Len(t, rows, len(labels), text)
		aborted := 0
		for _, r := range rows {
			id := r[1]
			succeeded, ok := labels[id]
			require.True(t, ok, "%s is a shipped run", id)
			assert.Positive(t, perRun[id], "%s's verdicts are shown as it runs", id)
			want := map[bool]string{true: "succeeded", false: "failed"}[succeeded]
			assert.Equal(t, want, r[2], "%s: its recorded outcome", id)
			switch {
			case r[4] != "":
				aborted++
				assert.Equal(t, "failed", r[2], "%s: only a failed recording is aborted", id)
				assert.Equal(t, "failed", r[3], id)
			default:
				assert.Equal(t, want, r[3], "%s ended as recorded", id)
			}
		}
		assert.Contains(t, text, "Every job ended as its recording did")
		return text, aborted
	}

	t.Run("as the agent loop a team writes", func(t *testing.T) {
		text, _ := demo(t, `^agent-loop rules, stage 0\b`)
		assert.Contains(t, text, "replayed as the agent loop a team writes on Temporal")
	})
	t.Run("as jobs of phases", func(t *testing.T) {
		text, aborted := demo(t, `sub-model, stage \d`, "--as-phases")
		assert.Contains(t, text, "replayed as jobs of phases")
		assert.Positive(t, aborted, "the shipped phase model catches a failed run at a gate")
		assert.True(t, strings.Contains(text, "⏸  PAUSED after"), "a gate is shown")
	})
}
