package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// The reference agent loop on a real server, started with `overseer start
// --loop`, under the default judge and worker settings (manage mode for
// CoroAgentLoop): a tool failing on every call pauses the loop at its
// fourth failure (the loop policy calibrated on real runs), with the
// evidence a reviewer needs first; a healthy loop ends On track without a
// gate.
func TestE2EAgentLoopStartedFromTheCLI(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{JudgeConfig: worker.JudgeConfig{Kind: worker.JudgeLearned}})
	suffix := fmt.Sprint(time.Now().UnixNano())

	failing := "e2e-loop-failing-" + suffix
	code, stdout, stderr := overseerCLI(srv, "start", "--loop", string(activities.LoopToolFailing), "--objective", "Add CSV export",
		"--task-queue", tq, "--id", failing)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "Started job "+failing)
	eventually(t, "the failing loop to pause", time.Minute, func() bool { return status(t, c, failing).Paused })
	s := status(t, c, failing)
	assert.Equal(t, activities.ToolRunTests, s.Gates[0].Phase)
	require.NotEmpty(t, s.Gates[0].Evidence)
	assert.Equal(t, "run_tests failed each of its last 4 calls, the same error each time: exit status 1: TestExport: want 3 rows, got 0", s.Gates[0].Evidence[0])
	_, err := c.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: failing, UpdateName: overseer.ResumeName,
		Args: []any{overseer.ResumeRequest{By: "reviewer", Action: overseer.ActionAbort}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)

	healthy, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "e2e-loop-healthy-" + suffix, TaskQueue: tq},
		workflows.AgentLoopWorkflowName, workflows.AgentLoopInput{Objective: "Add CSV export", Scenario: activities.LoopHealthy})
	require.NoError(t, err)
	var res workflows.AgentLoopResult
	require.NoError(t, healthy.Get(context.Background(), &res))
	assert.Equal(t, "done", res.Outcome)
	hs := status(t, c, healthy.GetID())
	assert.Zero(t, hs.Counters.Pauses)
	assert.Equal(t, overseer.BandOnTrack, hs.Band)
	assert.Equal(t, "agent-loop rules, stage 0", overseer.ShortBasis(hs.Basis), "a new type is read by the rules until it has succeeded runs of its own")
}
