package e2e_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// TestE2EWorkerRestartMidGate stops every worker of a job paused at a gate
// and starts new ones: they rebuild the job from its history, the gate is
// still open with its reason, and a resume sent to the new workers reaches
// it.
func TestE2EWorkerRestartMidGate(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq, stop := startWorkers(t, srv, worker.Config{})
	run, before := pausedJob(t, srv, tq)
	require.NotEmpty(t, before.GateID)
	stop()

	startWorker(t, srv, worker.Config{TaskQueue: tq})
	after := status(t, c, run.GetID()) // answered by a new worker, replaying the history
	assert.True(t, after.Paused)
	assert.Equal(t, before.GateID, after.GateID)
	assert.Equal(t, before.PauseReason, after.PauseReason)
	assert.Equal(t, before.Counters, after.Counters, "nothing ran twice")

	code, stdout, stderr := overseerCLI(srv, "resume", run.GetID(), "--gate", before.GateID, "--by", "after-worker-restart")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "at gate "+before.GateID)
	res, err := finish(t, c, run, "after-worker-restart")
	require.NoError(t, err)
	assert.Equal(t, "delivered", res.Outcome)
	assert.Equal(t, "after-worker-restart", status(t, c, run.GetID()).Gates[0].By)
}

// TestE2EPausedJobSurvivesAClusterRestart stops the whole cluster — the
// Temporal server process and PostgreSQL — while a job waits at a gate,
// starts it again on the same data, and resumes the job to completion. The
// workers keep running through the outage, as a fleet would.
func TestE2EPausedJobSurvivesAClusterRestart(t *testing.T) {
	if !onCluster() {
		t.Skipf("cluster target only (%s=%s): the dev server keeps its state in memory", targetEnv, targetCluster)
	}
	ctl := os.Getenv(clusterCtlEnv)
	if ctl == "" {
		msg := "no " + clusterCtlEnv + ": the cluster was not started by scripts/cluster.sh run (make test-cluster), so this test cannot restart it"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{})
	run, before := pausedJob(t, srv, tq)
	id := run.GetID()
	paused := mustPausedQuery(t)
	eventually(t, "the job listed as paused", 30*time.Second, func() bool {
		jobs, err := ops.List(context.Background(), c, ops.ListOptions{Query: paused})
		require.NoError(t, err)
		return listed(jobs, id)
	})

	out := clusterCtl(t, ctl, "stop")
	assert.Contains(t, out, "Temporal server stopped")
	assert.Contains(t, out, "PostgreSQL stopped")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_, err := c.CheckHealth(ctx, &client.CheckHealthRequest{})
	cancel()
	require.Error(t, err, "the cluster is down")
	clusterCtl(t, ctl, "start")

	// The clients reconnect; a worker answers the query once its pollers
	// are back.
	var after overseer.Status
	eventually(t, "the job's status after the restart", 2*time.Minute, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		v, err := c.QueryWorkflow(ctx, id, "", overseer.StatusQueryName)
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			t.Fatalf("the job is gone after the restart: %v", err)
		}
		return err == nil && v.Get(&after) == nil
	})
	assert.True(t, after.Paused, "still paused")
	assert.Equal(t, before.GateID, after.GateID)
	assert.Equal(t, before.PauseReason, after.PauseReason)
	assert.Equal(t, before.Counters, after.Counters)
	// Visibility (OverseerPaused = true) was kept in PostgreSQL too.
	eventually(t, "the job listed as paused after the restart", 30*time.Second, func() bool {
		jobs, err := ops.List(context.Background(), c, ops.ListOptions{Query: paused})
		return err == nil && listed(jobs, id)
	})

	code, stdout, stderr := overseerCLI(srv, "resume", id, "--gate", before.GateID, "--by", "after-cluster-restart")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "at gate "+before.GateID)
	res, err := finish(t, c, run, "after-cluster-restart")
	require.NoError(t, err)
	assert.Equal(t, "delivered", res.Outcome)
	final := status(t, c, id)
	assert.Equal(t, "after-cluster-restart", final.Gates[0].By)
	assert.Equal(t, before.GateID, final.Gates[0].ID)
}

// clusterCtl runs scripts/cluster.sh with the environment it ran the tests
// with (the same state directory and ports).
func clusterCtl(t *testing.T, ctl, cmd string) string {
	t.Helper()
	start := time.Now()
	out, err := exec.Command("bash", ctl, cmd).CombinedOutput()
	require.NoError(t, err, "scripts/cluster.sh %s: %s", cmd, out)
	t.Logf("scripts/cluster.sh %s (%s):\n%s", cmd, time.Since(start).Round(time.Millisecond), strings.TrimSpace(string(out)))
	return string(out)
}

// TestE2EGateDeadlinesPastDuringAWorkerOutageActOnTheWorkersReturn stops
// every worker of a job paused at a gate with deadlines "3s: escalate, 6s:
// abort" and starts new ones only once both deadlines have passed. Both
// deadlines count from the gate's opening: the new workers escalate and
// expire the gate in the same workflow task, the first they run, and each
// says how late it acted — measured from the opening, not from when the
// escalation was processed.
func TestE2EGateDeadlinesPastDuringAWorkerOutageActOnTheWorkersReturn(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	cfg := worker.Config{GateDeadlines: map[string]overseer.GateDeadline{workflows.JobWorkflowName: {
		After: 3 * time.Second, Action: overseer.DeadlineEscalate, FinalAfter: 6 * time.Second, FinalAction: overseer.DeadlineAbort,
	}}}
	tq, stop := startWorkers(t, srv, cfg)
	run, open := pausedJob(t, srv, tq)
	require.NotNil(t, open.PausedSince)
	stop()
	opened := *open.PausedSince

	// The outage lasts past both deadlines (and a margin for clock steps).
	final := opened.Add(6 * time.Second)
	eventually(t, "both deadlines to pass with no worker", 30*time.Second, func() bool { return time.Now().After(final.Add(2 * time.Second)) })
	back := time.Now()
	cfg.TaskQueue = tq
	startWorker(t, srv, cfg)

	var res workflows.JobResult
	err := run.Get(context.Background(), &res)
	require.Error(t, err, "aborted by the final deadline")
	assert.Equal(t, overseer.AbortedErrorType, overseer.ErrorType(err), "%v", err)

	s := status(t, c, run.GetID())
	g := s.Gates[len(s.Gates)-1]
	assert.Equal(t, open.GateID, g.ID)
	require.NotNil(t, g.EscalatedAt, "escalated: %+v", g)
	require.NotNil(t, g.ResumedAt, "expired: %+v", g)
	assert.True(t, g.Expired)
	assert.Equal(t, "deadline 6s: abort", g.ExpiredBy)
	assert.Equal(t, overseer.ActionAbort, g.Action)
	assert.True(t, g.EscalatedAt.Equal(*g.ResumedAt), "escalation %s and expiry %s in the one workflow task the new worker ran", g.EscalatedAt, g.ResumedAt)
	assert.False(t, g.EscalatedAt.Before(back.Add(-time.Second)), "acted once a worker was back (%s), not before (%s)", back, g.EscalatedAt)
	// How late each acted is counted from the gate's opening.
	assert.Equal(t, g.ResumedAt.Sub(opened.Add(3*time.Second)).Round(time.Second), g.EscalatedLate.Round(time.Second), "escalation lateness from the opening")
	assert.Equal(t, g.ResumedAt.Sub(final).Round(time.Second), g.ExpiredLate.Round(time.Second), "expiry lateness from the opening")
	assert.GreaterOrEqual(t, g.ExpiredLate, 2*time.Second, "the expiry says it came late")
	assert.Equal(t, 1, s.Counters.Escalations)
	assert.Equal(t, 1, s.Counters.Expired)
}
