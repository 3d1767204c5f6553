package e2e_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// redoneJob starts a looping job, waits for its first pause and redoes
// that gate's phase with overseer resume --redo, whose note makes the
// looping agent's rerun pass; it returns the run and the gate it redid.
func redoneJob(t *testing.T, srv server, tq string) (client.WorkflowRun, overseer.Gate) {
	t.Helper()
	c := srv.Client()
	run := startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	eventually(t, "the looping job to pause", 30*time.Second, func() bool { return status(t, c, run.GetID()).Paused })
	s := status(t, c, run.GetID())
	require.Equal(t, 2, s.MaxRedos, "the default bound")
	gate := s.Gates[len(s.Gates)-1]
	require.Equal(t, s.GateID, gate.ID)
	require.True(t, s.CanRedo(gate))

	code, stdout, stderr := overseerCLI(srv, "status", run.GetID())
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, fmt.Sprintf("2 of 2 left (overseer resume %s --gate %s --redo", run.GetID(), gate.ID))

	code, stdout, stderr = overseerCLI(srv, "resume", run.GetID(), "--gate", gate.ID, "--redo", "--by", "e2e-reviewer",
		"--note", "Stop patching the same tests; find the root cause first.")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, fmt.Sprintf("Job %s redone (its phase runs again) by e2e-reviewer at gate %s", run.GetID(), gate.ID))
	return run, gate
}

// scheduledPhases counts the job's phase activities its history scheduled,
// by activity type.
func scheduledPhases(t *testing.T, c client.Client, id string) map[string]int {
	t.Helper()
	n := map[string]int{}
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && strings.HasPrefix(a.GetActivityType().GetName(), "coro.") {
			n[a.GetActivityType().GetName()]++
		}
	}
	return n
}

// A reviewer redoes a flagged phase with overseer resume --redo on the dev
// server: the phase runs exactly once more, with the note, and the job
// goes on with the rerun's result; the status, the history and the export
// say so.
func TestE2ERedoAPhaseWithTheCLI(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{})
	run, gate := redoneJob(t, srv, tq)

	res, err := finish(t, c, run, "e2e-reviewer")
	require.NoError(t, err)
	assert.Equal(t, "delivered", res.Outcome)

	// The workflow saw one run of the phase fewer than its history holds:
	// the rejected one never reached it.
	phase := activities.ActivityName(gate.Phase)
	runs := 0
	for _, l := range res.Log {
		if strings.HasPrefix(l, gate.Phase+"#") {
			runs++
		}
	}
	require.Less(t, len(res.Log), 40, "the log is complete")
	scheduled := scheduledPhases(t, c, run.GetID())
	assert.Equal(t, runs+1, scheduled[phase], "one redo, one more run of %s; log %v", phase, res.Log)
	total := 0
	for _, n := range scheduled {
		total += n
	}

	final := status(t, c, run.GetID())
	require.NotEmpty(t, final.Gates)
	g := final.Gates[0]
	assert.Equal(t, gate.ID, g.ID)
	assert.Equal(t, overseer.ActionRedo, g.Action)
	assert.Equal(t, "redone", g.Outcome())
	assert.Equal(t, 1, g.Attempt)
	assert.Equal(t, "Stop patching the same tests; find the root cause first.", g.Note)
	assert.Equal(t, 1, final.Counters.Redos)
	assert.Equal(t, total, final.Counters.Phases, "every run, the rerun too, is a boundary")

	code, stdout, stderr := overseerCLI(srv, "status", run.GetID())
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "(1 redos)")
	assert.Contains(t, stdout, "redo by e2e-reviewer")

	// The export carries the redo as the reviewer's decision, and the
	// labels count it.
	query := fmt.Sprintf("WorkflowId = '%s'", run.GetID())
	out := filepath.Join(t.TempDir(), "runs.jsonl")
	var records []eval.Record
	eventually(t, "the export to hold the job", 30*time.Second, func() bool {
		code, _, stderr := overseerCLI(srv, "export", "--query", query, "--out", out, "--namespace", srv.Namespace())
		if code != 0 {
			t.Logf("export: %s", stderr)
			return false
		}
		records, err = eval.LoadRuns(out, "")
		require.NoError(t, err)
		return len(records) == 1
	})
	r := records[0]
	require.NotEmpty(t, r.Gates)
	assert.Equal(t, eval.GateRedo, r.Gates[0].Action)
	assert.Equal(t, gate.ID, r.Gates[0].Gate)
	assert.Equal(t, total, len(r.Steps), "the rejected run is a step of the record")
	l := eval.UseGateLabels(records)
	assert.Equal(t, 1, l.Redos)
	assert.Contains(t, l.String(), "1 redos")
}
