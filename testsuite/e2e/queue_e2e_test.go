package e2e_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
)

// TestE2EWaitingQueueAndBatchResume: `overseer list --paused` is the queue
// of open gates, oldest first; `overseer resume A B` and `--query` resume
// several jobs with one decision, each at the gate it had open, each result
// reported on its own line.
func TestE2EWaitingQueueAndBatchResume(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{})
	first, s1 := pausedJob(t, srv, tq)
	second, s2 := pausedJob(t, srv, tq)
	third, s3 := pausedJob(t, srv, tq)

	var queue string
	eventually(t, "the three gates in the queue", 20*time.Second, func() bool {
		code, stdout, _ := overseerCLI(srv, "list", "--paused")
		queue = stdout
		return code == 0 && strings.Contains(stdout, first.GetID()) && strings.Contains(stdout, second.GetID()) && strings.Contains(stdout, third.GetID())
	})
	assert.Contains(t, queue, "WAITING")
	assert.Less(t, strings.Index(queue, first.GetID()), strings.Index(queue, second.GetID()), "oldest first:\n%s", queue)
	assert.Less(t, strings.Index(queue, second.GetID()), strings.Index(queue, third.GetID()), "oldest first:\n%s", queue)
	assert.Contains(t, queue, s1.GateID)
	assert.Contains(t, queue, "anyone who may send the update")

	// Two ids, one note: each resumed at its own gate.
	code, stdout, stderr := overseerCLI(srv, "resume", first.GetID(), second.GetID(), "--by", "alice", "--note", "root cause found")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "Job "+first.GetID()+" resumed by alice at gate "+s1.GateID)
	require.NotEmpty(t, s1.Gates)
	require.NotEmpty(t, s1.Gates[0].Evidence)
	assert.Contains(t, stdout, "(paused after "+s1.Gates[0].Phase+": "+s1.Gates[0].Evidence[0], "resume says the evidence of the gate it opened, not only the rule")
	assert.Contains(t, stdout, "Job "+second.GetID()+" resumed by alice at gate "+s2.GateID)
	for _, id := range []string{first.GetID(), second.GetID()} {
		gates := status(t, c, id).Gates
		require.NotEmpty(t, gates)
		assert.Equal(t, "alice", gates[0].By)
		assert.Equal(t, "root cause found", gates[0].Note)
	}

	// A query: the third job, and a job id that is not paused is reported
	// on its own line without stopping the batch.
	code, stdout, stderr = overseerCLI(srv, "resume", "--query", "WorkflowId = '"+third.GetID()+"'", "--by", "bob")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "Job "+third.GetID()+" resumed by bob at gate "+s3.GateID)
	code, stdout, stderr = overseerCLI(srv, "resume", third.GetID(), "no-such-job-e2e", "--by", "bob")
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, "no-such-job-e2e: not resumed (refused): ")
	assert.Contains(t, stderr, "jobs not resumed (each says why above)")

	// Usage errors are one sentence, exit 2.
	code, _, stderr = overseerCLI(srv, "resume", first.GetID(), second.GetID(), "--gate", s1.GateID, "--by", "x")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--gate names one gate of one job")
	code, _, stderr = overseerCLI(srv, "resume", "--by", "x")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "give the job id (or several), or --query")
}

// TestE2EResumeThatTimesOutSaysItMayStillApply: with no worker running, a
// resume gets no answer in time; the CLI says the resume may still be
// applied and how to check, and once a worker is back it is applied to the
// gate it named.
func TestE2EResumeThatTimesOutSaysItMayStillApply(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq, stop := startWorkers(t, srv, worker.Config{})
	run, s := pausedJob(t, srv, tq)
	stop()

	code, _, stderr := overseerCLI(srv, "resume", run.GetID(), "--gate", s.GateID, "--by", "carol")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "no answer in time; the resume of gate "+s.GateID+" may still be applied: check with `overseer status "+run.GetID()+"` before you retry")
	assert.NotContains(t, stderr, "Timeout or cancellation waiting for update", "the SDK's raw message is not what a person reads")

	startWorker(t, srv, worker.Config{TaskQueue: tq})
	eventually(t, "the timed-out resume to be applied", 60*time.Second, func() bool {
		// The new worker replays the job first: a query may time out
		// meanwhile, which is not the answer this waits for.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s, err := ops.Status(ctx, c, run.GetID())
		return err == nil && len(s.Gates) > 0 && s.Gates[0].By == "carol"
	})
}

// TestE2EApproversAndFourEyesFromTheCLI: with an approvers list and the
// four-eyes rule on the worker, a resume by someone outside the list and one
// by the job's own starter are refused with the typed error; a member of
// an approving group opens the gate.
func TestE2EApproversAndFourEyesFromTheCLI(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{Approval: overseer.Approval{Approvers: []string{"alice", "group:sre"}, FourEyes: true}})
	id := fmt.Sprintf("e2e-approvers-%d", time.Now().UnixNano())
	code, stdout, stderr := overseerCLI(srv, "start", "--id", id, "--scenario", "looping", "--objective", "Add CSV export", "--by", "alice", "--task-queue", tq)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "Started job "+id)
	eventually(t, "the job to pause", 30*time.Second, func() bool { return status(t, c, id).Paused })

	code, stdout, stderr = overseerCLI(srv, "list", "--paused")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "alice, group:sre (not the job's starter)", "the queue says who may open the gate")

	code, _, stderr = overseerCLI(srv, "resume", id, "--by", "mallory")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `"mallory" may not resume this job: its approvers are alice, group:sre`)
	code, _, stderr = overseerCLI(srv, "resume", id, "--by", "alice")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `"alice" started this job and may not resume its own gate (four-eyes rule)`)
	_, err := ops.Resume(context.Background(), c, id, overseer.ResumeRequest{By: "mallory"})
	assert.Equal(t, overseer.NotAuthorizedErrorType, overseer.ErrorType(err), "typed for Go callers: %v", err)

	code, stdout, stderr = overseerCLI(srv, "resume", id, "--by", "bob", "--groups", "sre")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "resumed by bob")
	for _, g := range status(t, c, id).Gates {
		assert.NotContains(t, []string{"mallory", "alice"}, g.By)
	}
}

// TestE2EFourEyesJobWithoutAStarterFromTheCLI: a four-eyes job started
// without --by can be opened by nobody, and the queue and the status say
// so, with what to set, instead of listing approvers who would be refused.
func TestE2EFourEyesJobWithoutAStarterFromTheCLI(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{Approval: overseer.Approval{Approvers: []string{"alice", "group:sre"}, FourEyes: true}})
	id := fmt.Sprintf("e2e-no-starter-%d", time.Now().UnixNano())
	code, _, stderr := overseerCLI(srv, "start", "--id", id, "--scenario", "looping", "--objective", "Add CSV export", "--task-queue", tq)
	require.Equal(t, 0, code, stderr)
	// Nobody can open its gates: end it through Temporal.
	t.Cleanup(func() { _ = c.TerminateWorkflow(context.Background(), id, "", "e2e: test over") })
	eventually(t, "the job to pause", 30*time.Second, func() bool { return status(t, c, id).Paused })

	const nobody = "nobody: the four-eyes rule needs to know who started the job and it does not say; start jobs with the memo overseer.started_by set (overseer start --by NAME sets it)"
	code, stdout, stderr := overseerCLI(srv, "list", "--paused")
	require.Equal(t, 0, code, stderr)
	var row string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.Contains(l, id) {
			row = l
		}
	}
	assert.Contains(t, row, nobody, "the queue")
	code, stdout, stderr = overseerCLI(srv, "status", id)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `Who may resume\s+`+regexp.QuoteMeta(nobody), stdout, "the status")
	code, _, stderr = overseerCLI(srv, "resume", id, "--by", "alice")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "the job does not say who started it", "and the resume is refused, as the queue said")
}
