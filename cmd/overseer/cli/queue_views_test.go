package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// secondPageFails is a client whose List calls fail past the first page.
type secondPageFails struct{ client.Client }

func (c secondPageFails) ListWorkflow(ctx context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	if len(req.GetNextPageToken()) > 0 {
		return nil, errors.New("the server is unavailable")
	}
	return c.Client.ListWorkflow(ctx, req)
}

// resume --query over a list whose second page fails resumes the jobs it
// read, says the others were not read and fails (issue 45: it printed
// "1 applied, 0 refused, 0 unknown" and exited 0).
func TestResumeQueryReportsAListThatStoppedEarly(t *testing.T) {
	srv := devServer(t)
	c := srv.Client()
	tq := fmt.Sprintf("partial-%d", time.Now().UnixNano())
	w, err := worker.New(c, worker.Config{TaskQueue: tq, Logger: zap.NewNop(), JudgeConfig: worker.JudgeConfig{Kind: worker.JudgeHeuristic}})
	require.NoError(t, err)
	require.NoError(t, w.Start())
	defer w.Stop()
	for i := range 2 {
		id := fmt.Sprintf("%s-%d", tq, i)
		_, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: tq}, workflows.JobWorkflowName,
			workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
		require.NoError(t, err)
	}
	query := fmt.Sprintf("TaskQueue = '%s'", tq)
	require.Eventually(t, func() bool {
		gates, err := ops.Waiting(context.Background(), c, ops.ListOptions{Query: query})
		return err == nil && len(gates) == 2 && gates[0].Unreadable == "" && gates[1].Unreadable == ""
	}, time.Minute, 200*time.Millisecond, "both jobs paused, in visibility")

	var out bytes.Buffer
	err = resumeJobs(context.Background(), &out, secondPageFails{c}, overseer.ResumeRequest{By: "bob", Action: overseer.ActionContinue}, nil,
		ops.ListOptions{Query: query, PageSize: 1}, false, 10*time.Second)
	require.Error(t, err, "not a success")
	assert.Contains(t, err.Error(), "the list of paused jobs stopped early")
	assert.Contains(t, out.String(), "1 applied, 0 refused, 0 unknown")
	assert.Contains(t, out.String(), "can pause again at a later gate", "a resumed job may be back in the queue soon")
	assert.Contains(t, out.String(), "Not every paused job was read: ")
	assert.Contains(t, out.String(), "still paused")
}

// list --paused --limit 1 shows the oldest gate of the whole queue, not
// the gate of the job started last (issue 45: the limit took the jobs
// most recently started, so the oldest gates were the ones left out).
func TestListPausedLimitKeepsTheOldestGates(t *testing.T) {
	srv := devServer(t)
	c := srv.Client()
	tq := fmt.Sprintf("oldest-%d", time.Now().UnixNano())
	w, err := worker.New(c, worker.Config{TaskQueue: tq, Logger: zap.NewNop(), JudgeConfig: worker.JudgeConfig{Kind: worker.JudgeHeuristic}})
	require.NoError(t, err)
	require.NoError(t, w.Start())
	defer w.Stop()
	query := fmt.Sprintf("TaskQueue = '%s'", tq)
	var ids []string
	for i := range 2 {
		id := fmt.Sprintf("%s-%d", tq, i)
		_, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: tq}, workflows.JobWorkflowName,
			workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
		require.NoError(t, err)
		ids = append(ids, id)
		// The first job's gate opens before the second job starts.
		require.Eventually(t, func() bool {
			gates, err := ops.Waiting(context.Background(), c, ops.ListOptions{Query: query})
			return err == nil && len(gates) == i+1
		}, time.Minute, 200*time.Millisecond, "job %d paused, in visibility", i)
	}
	var out bytes.Buffer
	require.NoError(t, writeWaiting(context.Background(), &out, c, ops.ListOptions{Query: query}, false, 1))
	assert.Contains(t, out.String(), ids[0], "the oldest gate")
	assert.NotContains(t, out.String(), ids[1]+" ")
	assert.Contains(t, out.String(), "(the 1 oldest of 2 open gates")
}
