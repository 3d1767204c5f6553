package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// TestE2EViewsReadVisibilityWithEveryWorkerStopped: twelve jobs paused at
// a gate, then every worker stopped. The queue (ops.Waiting, paged five
// jobs to a List call so that it spans three pages), `overseer list
// --paused`, the Waiting page and the list page each show every one of
// them and its gate, oldest first, from visibility alone: no status query
// could be answered.
func TestE2EViewsReadVisibilityWithEveryWorkerStopped(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq, stop := startWorkers(t, srv, worker.Config{})
	const n = 12
	ids := map[string]bool{}
	gates := map[string]string{}
	for range n {
		run := startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
		ids[run.GetID()] = true
	}
	for id := range ids {
		eventually(t, "job "+id+" to pause", 60*time.Second, func() bool { return status(t, c, id).Paused })
		gates[id] = status(t, c, id).GateID
	}
	q := fmt.Sprintf("TaskQueue = '%s'", tq)
	// Visibility catches up with the last summary upsert.
	eventually(t, "every job's summary to show its gate in visibility", 20*time.Second, func() bool {
		jobs, err := ops.List(context.Background(), c, ops.ListOptions{Query: ops.PausedQuery(q), Limit: -1})
		if err != nil || len(jobs) != n {
			return false
		}
		for _, j := range jobs {
			if j.Summary == nil || len(j.Summary.Gates) != 1 {
				return false
			}
		}
		return true
	})
	stop()

	start := time.Now()
	queue, err := ops.Waiting(context.Background(), c, ops.ListOptions{Query: q, PageSize: 5})
	took := time.Since(start)
	require.NoError(t, err)
	require.Len(t, queue, n, "every paused job's gate, across three List pages")
	for i, g := range queue {
		assert.Empty(t, g.Unreadable, "%s read from its summary", g.JobID)
		assert.True(t, ids[g.JobID], g.JobID)
		assert.Equal(t, gates[g.JobID], g.GateID, "%s: its gate", g.JobID)
		assert.NotEmpty(t, g.Evidence, "%s: what tripped the flag", g.JobID)
		if i > 0 {
			assert.False(t, g.PausedAt.Before(queue[i-1].PausedAt), "oldest first")
		}
	}
	t.Logf("the queue of %d gates from visibility, workers stopped: %s", n, took.Round(time.Millisecond))

	start = time.Now()
	code, stdout, stderr := overseerCLI(srv, "list", "--paused")
	t.Logf("overseer list --paused with every worker stopped: %s", time.Since(start).Round(time.Millisecond))
	require.Equal(t, 0, code, stderr)
	for id, g := range gates {
		assert.Regexp(t, id+`\s+`+g, stdout, "overseer list --paused shows %s at its gate", id)
	}
	// Each job's spend too, from its summary, not a status query.
	code, stdout, stderr = overseerCLI(srv, "list", "--limit", "1000")
	require.Equal(t, 0, code, stderr)
	for id := range ids {
		assert.Regexp(t, id+`\s.*\s\d+ tokens, \$\d+\.\d\d, \d+ turns, \S+\s`, stdout, "overseer list shows %s's spend", id)
	}

	dash := startDashboard(t, srv)
	body := httpGetBody(t, dash+"/waiting")
	for id, g := range gates {
		assert.Contains(t, body, id, "the Waiting page shows %s", id)
		assert.Contains(t, body, g)
	}
	body = httpGetBody(t, dash+"/?filter=paused")
	for id := range ids {
		assert.Contains(t, body, id, "the list page shows %s", id)
	}
	assert.NotContains(t, body, "status query failed", "no row needed a worker")
	assert.Contains(t, body, " tokens · $", "the list page shows the jobs' spend")
}

// httpGetBody fetches u and returns its body; it fails the test unless the
// answer is 200.
func httpGetBody(t *testing.T, u string) string {
	t.Helper()
	c := &http.Client{Timeout: 20 * time.Second}
	resp, err := c.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	return string(b)
}

// TestE2EOverdueGatesAreFoundByTheirOpening: with OverseerGateSince
// registered, a paused job carries when its gate opened, so a visibility
// query finds the gates open for longer than a time, and a resumed job
// leaves that query.
func TestE2EOverdueGatesAreFoundByTheirOpening(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{})
	run, s := pausedJob(t, srv, tq)
	require.NotNil(t, s.PausedSince)
	overdue := fmt.Sprintf("TaskQueue = '%s' AND %s < '%s'", tq, overseer.SearchAttributeGateSince.GetName(),
		s.PausedSince.Add(time.Second).UTC().Format(time.RFC3339Nano))
	count := func() int64 {
		resp, err := c.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Query: overdue})
		require.NoError(t, err)
		return resp.GetCount()
	}
	eventually(t, "the open gate to be found by its opening", 20*time.Second, func() bool { return count() == 1 })
	_, err := finish(t, c, run, "alice")
	require.NoError(t, err)
	eventually(t, "the closed gate to leave the query", 20*time.Second, func() bool { return count() == 0 })
}

// TestE2EADeploymentWithoutTheGateAttribute: on a namespace that registered
// only the first three search attributes, the worker says in one sentence
// what to register, and its jobs pause and show in the queue as before
// (a workflow task that upserted the unknown attribute would fail).
func TestE2EADeploymentWithoutTheGateAttribute(t *testing.T) {
	requireCLI(t)
	skipOnCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{Output: &out, Logger: worker.SDKLogger(zap.NewNop()),
		OmitSearchAttributes: []string{overseer.SearchAttributeGateSince.GetName()}})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String()) // the server has exited: out is no longer written
	}
	t.Cleanup(func() { _ = srv.Stop() })
	core, logs := observer.New(zapcore.WarnLevel)
	tq := startWorker(t, srv, worker.Config{Logger: zap.New(core)})
	said := logs.FilterMessageSnippet("has no search attribute OverseerGateSince").All()
	require.Len(t, said, 1, "one sentence at start: %v", logs.All())
	assert.Contains(t, said[0].Message, "register it with `temporal operator search-attribute create --namespace default --name OverseerGateSince --type Datetime` and restart the worker")
	assert.NotContains(t, said[0].Message, "\n")

	run, s := pausedJob(t, srv, tq)
	require.True(t, s.Paused)
	eventually(t, "the job in the queue", 20*time.Second, func() bool {
		q, err := ops.Waiting(context.Background(), srv.Client(), ops.ListOptions{Query: fmt.Sprintf("TaskQueue = '%s'", tq)})
		return err == nil && len(q) == 1 && q[0].JobID == run.GetID() && q[0].GateID == s.GateID
	})
	_, err = finish(t, srv.Client(), run, "alice")
	require.NoError(t, err, "the job ran to its end without the attribute")
}
