package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/workflows"
)

// TestRollingUpgradeFromThePreviousRelease is the upgrade a team makes with
// jobs in flight: a worker built from the previous release's own commit (a
// git worktree of the commit its testdata/releases manifest names) starts
// jobs and leaves them at gates, mid-phase and after continue-as-new; it
// is stopped and a worker built from this checkout takes its task queue;
// every job is resumed and completes, and no workflow task of any run
// failed.
func TestRollingUpgradeFromThePreviousRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the previous release's worker and this one's")
	}
	skipOnCluster(t) // the worker processes dial the dev server; the upgrade does not depend on the server
	srv := e2eServer(t)
	c := srv.Client()
	root, err := testsuite.RepoRoot()
	require.NoError(t, err)
	prev, commit := previousRelease(t)
	oldBin := buildOverseerAt(t, root, commit)
	newBin := buildOverseerAt(t, root, "")

	tq := fmt.Sprintf("e2e-rolling-upgrade-%d", time.Now().UnixNano())
	old := startWorkerProcess(t, oldBin, srv, tq)
	base := workflows.JobInput{Objective: "Add CSV export", HeartbeatTimeout: 5 * time.Second, RetryDelay: time.Second}
	id := func(name string) string { return "e2e-upgrade-" + name + "-" + tq }
	jobs := map[string]workflows.JobInput{}
	firstRun := map[string]string{}
	start := func(name string, in workflows.JobInput) {
		in.Objective, in.HeartbeatTimeout, in.RetryDelay = base.Objective, base.HeartbeatTimeout, base.RetryDelay
		run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id(name), TaskQueue: tq}, workflows.JobWorkflowName, in)
		require.NoError(t, err)
		jobs[name], firstRun[name] = in, run.GetRunID()
	}

	// Where the previous release leaves them: at gates (one after
	// continue-as-new), then, started once those wait, mid-phase (one
	// after continue-as-new) so that they are still running at the swap.
	start("at-gate", workflows.JobInput{Scenario: activities.Looping})
	start("at-gate-after-can", workflows.JobInput{Scenario: activities.Looping, ContinueAsNewAfter: 1})
	start("drifting", workflows.JobInput{Scenario: activities.Drifting})
	eventually(t, "the looping jobs to pause on the previous release", 2*time.Minute, func() bool {
		return pausedNow(t, c, id("at-gate")) && pausedNow(t, c, id("at-gate-after-can"))
	})
	require.NotEqual(t, firstRun["at-gate-after-can"], currentRun(t, c, id("at-gate-after-can")), "the job paused after continuing as new")
	start("mid-phase", workflows.JobInput{Scenario: activities.OnTrack})
	start("mid-phase-after-can", workflows.JobInput{Scenario: activities.OnTrack, ContinueAsNewAfter: 1})
	eventually(t, "the on-track jobs to run a phase, one after continuing as new, on the previous release", time.Minute, func() bool {
		return phaseRunning(t, c, id("mid-phase")) &&
			currentRun(t, c, id("mid-phase-after-can")) != firstRun["mid-phase-after-can"] && phaseRunning(t, c, id("mid-phase-after-can"))
	})
	old.stop(t)
	t.Logf("previous release %s (%s) stopped with the jobs at gates, mid-phase and after continue-as-new", prev, commit)

	startWorkerProcess(t, newBin, srv, tq)
	// A job the new worker starts records the newest structure: the jobs
	// above must show an older one, or the test upgraded nothing.
	control, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "e2e-upgrade-control-" + tq, TaskQueue: tq},
		workflows.JobWorkflowName, workflows.JobInput{Objective: base.Objective, Scenario: activities.OnTrack})
	require.NoError(t, err)

	for name := range jobs {
		run := c.GetWorkflow(context.Background(), id(name), "")
		resumeUntilClosedWithin(t, c, run, "after-upgrade", 3*time.Minute)
		var res workflows.JobResult
		require.NoError(t, run.Get(context.Background(), &res), name)
		t.Logf("%s: %s after %d loops", name, res.Outcome, res.Loops)
	}
	require.NoError(t, control.Get(context.Background(), nil))
	newest := structureOf(t, c, control.GetID(), control.GetRunID())

	for name := range jobs {
		runs := runChain(t, c, id(name), firstRun[name])
		var failed, timedOut int
		for _, events := range runs {
			for _, e := range events {
				switch e.GetEventType() {
				case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
					failed++
					t.Errorf("%s: workflow task failed: %s", name, e.GetWorkflowTaskFailedEventAttributes().GetFailure().GetMessage())
				case enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
					timedOut++ // the stopped worker's sticky queue: the server hands the task on
				}
			}
		}
		assert.Zero(t, failed, name)
		assert.Less(t, markerVersion(t, runs[0]), newest, "%s was started by the previous release's structure", name)
		if jobs[name].ContinueAsNewAfter > 0 {
			assert.Equal(t, newest, markerVersion(t, runs[len(runs)-1]), "%s: a run the new worker continued records its structure", name)
		}
		t.Logf("%s: %d runs, %d workflow task timeouts (the stopped worker's sticky queue), 0 failures", name, len(runs), timedOut)
	}
}

// previousRelease is the newest release before this one with a recorded
// corpus (testdata/releases), and the commit its manifest names.
func previousRelease(t *testing.T) (release, commit string) {
	t.Helper()
	manifests, err := filepath.Glob(filepath.Join("testdata", "releases", "*", "manifest.json"))
	require.NoError(t, err)
	for _, path := range manifests {
		r := filepath.Base(filepath.Dir(path))
		if !releaseBefore(r, overseer.Release) || (release != "" && !releaseBefore(release, r)) {
			continue
		}
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		var m releaseManifest
		require.NoError(t, json.Unmarshal(b, &m), path)
		release, commit = r, m.Commit
	}
	require.NotEmpty(t, release, "no release before %s under testdata/releases", overseer.Release)
	return release, commit
}

// releaseBefore orders release names vMAJOR.MINOR.PATCH.
func releaseBefore(a, b string) bool {
	var x, y [3]int
	_, errA := fmt.Sscanf(a, "v%d.%d.%d", &x[0], &x[1], &x[2])
	_, errB := fmt.Sscanf(b, "v%d.%d.%d", &y[0], &y[1], &y[2])
	if errA != nil || errB != nil {
		return false
	}
	for i := range x {
		if x[i] != y[i] {
			return x[i] < y[i]
		}
	}
	return false
}

// buildOverseerAt builds the overseer binary from commit, checked out in
// a git worktree ("" builds this checkout).
func buildOverseerAt(t *testing.T, root, commit string) string {
	t.Helper()
	dir := root
	if commit != "" {
		dir = filepath.Join(t.TempDir(), "tree")
		out, err := exec.Command("git", "-C", root, "worktree", "add", "--detach", dir, commit).CombinedOutput()
		require.NoError(t, err, "git worktree add %s (a clone without the release's commit cannot build it): %s", commit, out)
		t.Cleanup(func() { _ = exec.Command("git", "-C", root, "worktree", "remove", "--force", dir).Run() })
	}
	bin := filepath.Join(t.TempDir(), "overseer")
	build := exec.Command("go", "build", "-o", bin, "./cmd/overseer")
	build.Dir = dir
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build the overseer at %q: %s", commit, out)
	return bin
}

// workerProcess is an `overseer worker` process.
type workerProcess struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan error
}

// startWorkerProcess runs bin's worker on tq with the heuristic judge (its
// verdicts follow the scenarios rule by rule); it is stopped when the test
// ends, if not before.
func startWorkerProcess(t *testing.T, bin string, srv server, tq string) *workerProcess {
	t.Helper()
	p := &workerProcess{stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(bin, "worker", "--address", srv.FrontendHostPort(), "--namespace", srv.Namespace(),
		"--task-queue", tq, "--judge", "heuristic", "--agent-work", "2s")
	p.cmd.Stdout, p.cmd.Stderr = p.stderr, p.stderr
	require.NoError(t, p.cmd.Start())
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop interrupts the worker, as an operator's rollout does, and waits for
// it to exit.
func (p *workerProcess) stop(t *testing.T) {
	t.Helper()
	if p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		assert.NoError(t, err, "the worker's exit: %s", p.stderr)
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		t.Errorf("the worker did not stop within a minute of SIGTERM: %s", p.stderr)
	}
}

func pausedNow(t *testing.T, c client.Client, id string) bool {
	t.Helper()
	return status(t, c, id).Paused
}

func currentRun(t *testing.T, c client.Client, id string) string {
	t.Helper()
	d, err := c.DescribeWorkflow(context.Background(), id, "")
	require.NoError(t, err)
	return d.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId()
}

// phaseRunning says a phase activity of the job's current run has been
// handed to a worker and not finished.
func phaseRunning(t *testing.T, c client.Client, id string) bool {
	t.Helper()
	d, err := c.DescribeWorkflow(context.Background(), id, "")
	require.NoError(t, err)
	for _, a := range d.RawResponse.GetPendingActivities() {
		if a.GetState() == enumspb.PENDING_ACTIVITY_STATE_STARTED && !strings.HasPrefix(a.GetActivityType().GetName(), "overseer.") {
			return true
		}
	}
	return false
}

// runChain reads every run of a job from its first, following
// continue-as-new.
func runChain(t *testing.T, c client.Client, id, runID string) [][]*historypb.HistoryEvent {
	t.Helper()
	var runs [][]*historypb.HistoryEvent
	for runID != "" {
		var events []*historypb.HistoryEvent
		next := ""
		it := c.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			require.NoError(t, err)
			events = append(events, e)
			if a := e.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
				next = a.GetNewExecutionRunId()
			}
		}
		runs = append(runs, events)
		runID = next
	}
	return runs
}

// structureOf is the overseer structure a run records (markerVersion).
func structureOf(t *testing.T, c client.Client, id, runID string) int {
	t.Helper()
	return markerVersion(t, runChain(t, c, id, runID)[0])
}

// markerVersion is the version of the run's temporal-overseer marker, the
// structure of the overseer it started on; -1 without one.
func markerVersion(t *testing.T, events []*historypb.HistoryEvent) int {
	t.Helper()
	for _, e := range events {
		a := e.GetMarkerRecordedEventAttributes()
		if a.GetMarkerName() != "Version" {
			continue
		}
		var changeID string
		var version int
		require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(a.GetDetails()["change-id"], &changeID))
		if changeID != "temporal-overseer" {
			continue
		}
		require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(a.GetDetails()["version"], &version))
		return version
	}
	return -1
}
