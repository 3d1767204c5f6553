package e2e_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/testsuite/judgetest"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// TestE2EAModelJudgeReadsTheRun: the shipped worker, its judge an
// OpenAI-compatible server in process (a scripted model), payloads
// encrypted by a codec bound to each payload's serialization context, a
// content window on for the agent loop: the model receives the loop's
// latest calls, oldest first, their inputs and the failing tool's error
// decoded through the codec, in a message of their own; a client without
// the codec finds none of it in the job's history in clear; a type without
// a window sends the model counters only.
func TestE2EAModelJudgeReadsTheRun(t *testing.T) {
	srv := e2eServer(t)
	model := &judgetest.ScriptedModel{}
	modelSrv := httptest.NewServer(model)
	t.Cleanup(modelSrv.Close)

	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	bound, err := testsuite.NewContextBoundCodec(key)
	require.NoError(t, err)
	dc := testsuite.ContextBoundDataConverter(bound)
	c, err := client.NewClientFromExisting(srv.Client(), client.Options{DataConverter: dc, Logger: worker.SDKLogger(zap.NewNop())})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	tq := fmt.Sprint("e2e-window-", time.Now().UnixNano())
	w, err := worker.New(c, worker.Config{TaskQueue: tq, Mode: overseer.ModeObserve, DataConverter: dc, Logger: zap.NewNop(),
		JudgeConfig:    worker.JudgeConfig{Kind: worker.JudgeOpenAI, OpenAIBaseURL: modelSrv.URL + "/v1", OpenAIAPIKey: "test-key", Budget: 10 * time.Second},
		ContentWindows: map[string]trajectory.ContentWindow{workflows.AgentLoopWorkflowName: {Calls: 4, CallBytes: 512}}})
	require.NoError(t, err)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: tq + "-loop", TaskQueue: tq},
		workflows.AgentLoopWorkflowName, workflows.AgentLoopInput{Objective: "Add CSV export", Scenario: activities.LoopToolFailing, MaxTurns: 6})
	require.NoError(t, err)
	require.NoError(t, run.Get(ctx, nil))
	st := status(t, c, run.GetID())
	eventually(t, "every call judged", time.Minute, func() bool {
		st = status(t, c, run.GetID())
		return st.Counters.Assessments == st.Counters.Phases
	})

	reqs := model.Requests()
	require.NotEmpty(t, reqs)
	last := reqs[len(reqs)-1].Messages
	require.Len(t, last, 3, "system, the state, the latest calls")
	calls := last[2].Content
	assert.Contains(t, calls, "exit status 1: TestExport: want 3 rows, got 0", "the failing tool's error, decoded")
	assert.Contains(t, calls, `"run":"TestExport/attempt-`, "the tool call's input, decoded through the context-bound codec")
	assert.Equal(t, 4, strings.Count(calls, "## Call "), "the window's four calls")
	assert.NotContains(t, last[1].Content, `"content"`)
	assert.Contains(t, calls, "The objective these calls serve: Add CSV export")
	assert.Contains(t, calls, "(cut to fit the budget)", "a model call's input, with the tool results so far, is longer than the call's 512 bytes")

	history, err := testsuite.FetchChain(ctx, srv.Client(), run.GetID(), "")
	require.NoError(t, err)
	assertNoClearText(t, history, "TestExport/attempt-", "want 3 rows, got 0")

	// Another type, no window: the model reads counters only.
	before := len(model.Requests())
	job, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: tq + "-job", TaskQueue: tq},
		workflows.JobWorkflowName, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.OnTrack})
	require.NoError(t, err)
	require.NoError(t, job.Get(ctx, nil))
	eventually(t, "the job's phases judged", time.Minute, func() bool {
		s := status(t, c, job.GetID())
		return s.Counters.Assessments == s.Counters.Phases
	})
	after := model.Requests()[before:]
	require.NotEmpty(t, after)
	for _, r := range after {
		assert.Len(t, r.Messages, 2, "no window for %s", workflows.JobWorkflowName)
	}
}
