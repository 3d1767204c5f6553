package ops_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
)

// TestTheQueueComesFromSummariesAndShowsWhatItCannotRead: jobs with a
// summary are listed from it without a status query; a job without one is
// queried; a job whose query fails is a row that says why, first; past the
// bound, jobs are not queried but still shown; the gates are oldest first.
func TestTheQueueComesFromSummariesAndShowsWhatItCannotRead(t *testing.T) {
	base := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	now := base.Add(5 * time.Hour)
	gate := func(id string, at time.Duration) overseer.SummaryGate {
		return overseer.SummaryGate{ID: id, Phase: "code", PausedAt: base.Add(at), Why: "the agent repeated the same failing test run"}
	}
	jobs := []ops.Job{
		{ID: "new", State: "running", Summary: &overseer.Summary{Gates: []overseer.SummaryGate{gate("code-1", 2*time.Hour)}}},
		{ID: "held", State: "paused", Summary: &overseer.Summary{Gates: []overseer.SummaryGate{gate("code-1", time.Hour)}}},
		{ID: "old-run", State: "running"},
		{ID: "worker-down", State: "running", SummaryError: "its summary is encrypted"},
	}
	var mu sync.Mutex // the queue reads statuses several at a time
	queried := map[string]int{}
	status := func(_ context.Context, j ops.Job) (overseer.Status, error) {
		mu.Lock()
		queried[j.ID]++
		mu.Unlock()
		if j.ID == "worker-down" {
			return overseer.Status{}, errors.New("context deadline exceeded")
		}
		g := overseer.Gate{ID: "test-2", Phase: "test", PausedAt: base, Reason: "P(on objective) 0.2 ≤ 0.25"}
		return overseer.Status{Paused: true, Gates: []overseer.Gate{g}}, nil
	}
	q := ops.WaitingOf(context.Background(), jobs, status, time.Second, now)
	assert.Equal(t, map[string]int{"old-run": 1, "worker-down": 1}, queried, "only the jobs without a readable summary are queried")
	require.Len(t, q, 4, "every paused job has a row")
	assert.Equal(t, "worker-down", q[0].JobID, "what could not be read comes first")
	assert.Contains(t, q[0].Unreadable, "its summary is encrypted; and context deadline exceeded")
	assert.Equal(t, []string{"old-run", "held", "new"}, []string{q[1].JobID, q[2].JobID, q[3].JobID}, "oldest gate first")
	assert.True(t, q[2].OperatorPaused, "held by an operator's Workflow Pause")
	assert.Equal(t, 3*time.Hour, q[3].Wait)
	assert.Equal(t, []string{"the agent repeated the same failing test run"}, q[3].Evidence)

	// Past the bound, the rest are shown as not read, never queried.
	var many []ops.Job
	for i := range 130 {
		many = append(many, ops.Job{ID: fmt.Sprintf("old-%03d", i), State: "running"})
	}
	queried = map[string]int{}
	q = ops.WaitingOf(context.Background(), many, status, time.Second, now)
	assert.Len(t, queried, 100, "at most 100 status queries")
	require.Len(t, q, 130)
	unread := 0
	for _, g := range q {
		if g.Unreadable != "" {
			unread++
			assert.Contains(t, g.Unreadable, "not read: more than 100 paused jobs have no summary")
		}
	}
	assert.Equal(t, 30, unread)
}

// TestABatchResumeSaysWhatWasAppliedRefusedOrUnknown classifies each
// result of a batch.
func TestABatchResumeSaysWhatWasAppliedRefusedOrUnknown(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ops.ResumeApplied},
		{fmt.Errorf("resume job %q: %w", "a", ops.ErrMayStillApply), ops.ResumeUnknown},
		{context.DeadlineExceeded, ops.ResumeUnknown},
		{serviceerror.NewDeadlineExceeded("context deadline exceeded"), ops.ResumeUnknown}, // the SDK's own call timeout
		{fmt.Errorf("%w: no summary", ops.ErrNotRead), ops.ResumeUnknown},
		{errors.New("job \"a\" is not paused; nothing to resume"), ops.ResumeRefused},
	} {
		assert.Equal(t, tc.want, ops.ResumeResult{JobID: "a", Err: tc.err}.Outcome(), "%v", tc.err)
	}
}

// updateTimesOut is a client whose updates get the SDK's own call timeout.
type updateTimesOut struct{ client.Client }

func (updateTimesOut) UpdateWorkflow(context.Context, client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	return nil, serviceerror.NewDeadlineExceeded("context deadline exceeded")
}

// A resume that met the SDK's call timeout was sent and may still be
// applied: the batch says unknown and the sentence says how to look, never
// that the job refused it.
func TestAResumeAtTheSDKsCallTimeoutMayStillApply(t *testing.T) {
	res := ops.ResumeAll(context.Background(), updateTimesOut{}, []ops.GateRef{{JobID: "a", GateID: "test-1"}}, overseer.ResumeRequest{By: "carol"}, time.Second)
	require.Len(t, res, 1)
	assert.Equal(t, ops.ResumeUnknown, res[0].Outcome())
	assert.ErrorIs(t, res[0].Err, ops.ErrMayStillApply)
	assert.ErrorContains(t, res[0].Err, "the resume of gate test-1 may still be applied: check with `overseer status a` before you retry")
}

// notReadyThenApplied is a client whose first notReady updates the server
// refuses (the workflow task failed or timed out), and whose next one
// applies; it counts the updates sent.
type notReadyThenApplied struct {
	client.Client
	notReady int
	mu       sync.Mutex
	sent     int
}

func (c *notReadyThenApplied) UpdateWorkflow(_ context.Context, o client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent++
	if c.sent <= c.notReady {
		return nil, serviceerror.NewWorkflowNotReady("Unable to perform workflow execution update due to Workflow Task in failed state.")
	}
	req := o.Args[0].(overseer.ResumeRequest)
	return closedGate{overseer.Gate{ID: req.Gate, By: req.By}}, nil
}

// closedGate is an update handle whose result is the gate it closed.
type closedGate struct{ gate overseer.Gate }

func (closedGate) WorkflowID() string { return "a" }
func (closedGate) RunID() string      { return "" }
func (closedGate) UpdateID() string   { return "u" }
func (g closedGate) Get(_ context.Context, ptr any) error {
	*ptr.(*overseer.Gate) = g.gate
	return nil
}

// Temporal refuses an update while the job's workflow task is failing or
// timed out (it was, for 2 of 1,000 jobs, after a worker's first task was
// lost under load): nothing was admitted, so the resume is sent again
// until the task recovers, and said to be refused, not applied, only if
// it never does within the resume's time.
func TestAResumeTheWorkflowWasNotReadyForIsSentAgain(t *testing.T) {
	c := &notReadyThenApplied{notReady: 2}
	res := ops.ResumeAll(context.Background(), c, []ops.GateRef{{JobID: "a", GateID: "test-1"}}, overseer.ResumeRequest{By: "carol"}, 10*time.Second)
	require.Len(t, res, 1)
	require.NoError(t, res[0].Err)
	assert.Equal(t, ops.ResumeApplied, res[0].Outcome())
	assert.Equal(t, "test-1", res[0].Gate.ID)
	assert.Equal(t, 3, c.sent, "two refusals, then the update that applied")

	never := &notReadyThenApplied{notReady: 1 << 30}
	res = ops.ResumeAll(context.Background(), never, []ops.GateRef{{JobID: "a", GateID: "test-1"}}, overseer.ResumeRequest{By: "carol"}, 600*time.Millisecond)
	require.Len(t, res, 1)
	assert.Equal(t, ops.ResumeRefused, res[0].Outcome(), "nothing was admitted: not applied, and not unknown")
	assert.ErrorContains(t, res[0].Err, `job "a" was not resumed: its workflow task kept failing or timing out`)
	assert.Greater(t, never.sent, 1, "sent again before giving up")
}

// A summary keeps 8 approvers: the queue says how many more there are and
// leaves the ninth and tenth to the gate itself rather than refusing them
// (issue 45: the Waiting page told approvers 9 and 10 they may not resume).
func TestAClippedApproversListIsNotTheRule(t *testing.T) {
	var approvers []string
	for i := 1; i <= 10; i++ {
		approvers = append(approvers, fmt.Sprintf("approver%d@example.com", i))
	}
	s := overseer.Summary{Format: overseer.SummaryFormat, Mode: overseer.ModeManage,
		Approval: overseer.Approval{Approvers: approvers[:8]}, MoreApprovers: 2,
		Gates: []overseer.SummaryGate{{ID: "code-1", Phase: "code", PausedAt: time.Now(), Why: "looping"}}}
	gates := ops.SummaryWaitingGates(ops.Job{ID: "job", Type: "CoroJob"}, s, time.Now())
	require.Len(t, gates, 1)
	g := gates[0]
	assert.Equal(t, 2, g.MoreApprovers)
	assert.Empty(t, g.Refusal("approver10@example.com", nil), "the tenth approver is not refused by the queue")
	assert.Empty(t, g.Refusal("approver1@example.com", nil))
	assert.Contains(t, g.Who(), "approver8@example.com and 2 more approvers")

	full := g
	full.MoreApprovers = 0
	assert.NotEmpty(t, full.Refusal("approver10@example.com", nil), "a list the summary holds whole is the rule")
}
