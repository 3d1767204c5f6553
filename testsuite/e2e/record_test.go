package e2e_test

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

var recordHistories = flag.Bool("record-histories", false, "record the replay-test histories into workflows/testdata")

// TestRecordHistories records, from the real dev server, the JSON histories
// that workflows/replay_test.go replays: a job run under the plugin (paused
// and resumed), a job observed with a judge that is not pure (answered in
// the background) and one run by a worker without the plugin. Run it with
// go test ./testsuite/e2e -run RecordHistories -record-histories. The
// histories of earlier versions of the plugin (job_with_plugin_structure_v1.json,
// job_with_plugin_local_activity.json) are kept as they were recorded.
func TestRecordHistories(t *testing.T) {
	if !*recordHistories {
		t.Skip("records histories only with -record-histories")
	}
	srv := e2eServer(t)
	c := srv.Client()
	dir := filepath.Join("..", "..", "workflows", "testdata")

	tq := startWorker(t, srv, worker.Config{})
	run := startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	eventually(t, "the job to pause", 30*time.Second, func() bool { return status(t, c, run.GetID()).Paused })
	_, err := finish(t, c, run, "recorder")
	require.NoError(t, err)
	export(t, srv, run.GetID(), filepath.Join(dir, "job_with_plugin.json"))

	tq = startWorker(t, srv, worker.Config{TaskQueue: "e2e-record-observe", Judge: notPure{overseer.HeuristicJudge{}},
		Modes: map[string]overseer.Mode{workflows.JobWorkflowName: overseer.ModeObserve}})
	run = startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.OnTrack})
	require.NoError(t, run.Get(context.Background(), nil))
	export(t, srv, run.GetID(), filepath.Join(dir, "job_observe_background.json"))

	// A worker without the plugin, as before it was added.
	plain := sdkworker.New(c, "e2e-no-plugin", sdkworker.Options{})
	workflows.Register(plain)
	(&activities.Agents{}).Register(plain)
	require.NoError(t, plain.Start())
	defer plain.Stop()
	run = startJob(t, c, "e2e-no-plugin", workflows.JobInput{Objective: "Add CSV export", Scenario: activities.OnTrack})
	require.NoError(t, run.Get(context.Background(), nil))
	export(t, srv, run.GetID(), filepath.Join(dir, "job_before_plugin.json"))
}

// TestRecordRedoneJobHistory records workflows/testdata/job_redone.json,
// which workflows/replay_test.go replays: a looping job whose first gate a
// reviewer redid (redoneJob), resumed at any later gate. Run it with
// go test ./testsuite/e2e -run RecordRedoneJobHistory -record-histories.
func TestRecordRedoneJobHistory(t *testing.T) {
	if !*recordHistories {
		t.Skip("records histories only with -record-histories")
	}
	srv := e2eServer(t)
	tq := startWorker(t, srv, worker.Config{TaskQueue: "e2e-record-redo"})
	run, _ := redoneJob(t, srv, tq)
	_, err := finish(t, srv.Client(), run, "recorder")
	require.NoError(t, err)
	export(t, srv, run.GetID(), filepath.Join("..", "..", "workflows", "testdata", "job_redone.json"))
}

// notPure hides its judge's Pure method: the overseer asks it in the
// background, as it would a remote judge.
type notPure struct{ jev.Judge }

func export(t *testing.T, srv server, id, path string) {
	t.Helper()
	exe, err := testsuite.TemporalCLIPath()
	require.NoError(t, err)
	out, err := exec.Command(exe, "workflow", "show", "--address", srv.FrontendHostPort(), "--workflow-id", id, "--output", "json").Output()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, out, 0o644))
}
