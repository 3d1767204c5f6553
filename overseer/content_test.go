package overseer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// bashCall is a tool call's input and output in windowLoop.
type bashCall struct {
	Command string `json:"command"`
}

type bashOutput struct {
	Printed string `json:"printed"`
}

// windowLoop is an agent loop of three tool calls: the second prints a
// key, the third a long log.
func windowLoop(ctx workflow.Context) error {
	overseer.SetObjective(ctx, "make the export test pass")
	overseer.SetShape(ctx, overseer.ShapeAgentLoop)
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	for _, cmd := range []string{"pytest -x tests/test_export.py", "env | grep KEY", "cat build.log"} {
		_ = workflow.ExecuteActivity(ctx, "agent.bash", bashCall{Command: cmd}).Get(ctx, nil)
	}
	return nil
}

func bashTool(_ context.Context, in bashCall) (bashOutput, error) {
	switch in.Command {
	case "env | grep KEY":
		return bashOutput{Printed: "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx"}, nil
	case "cat build.log":
		return bashOutput{Printed: strings.Repeat("ok ", 400)}, nil
	}
	return bashOutput{}, temporal.NewNonRetryableApplicationError("exit status 1: TestExport: want 3 rows, got 0", "ToolFailed", nil)
}

// windowJudged runs windowLoop with windows, under a context-bound codec,
// and returns the trajectories the judge was asked about.
func windowJudged(t *testing.T, windows map[string]trajectory.ContentWindow) []overseer.Trajectory {
	t.Helper()
	dc := contextBound(t)
	judge := jev.NewScripted(onTrack())
	judge.Repeat = true
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeManage, Judge: judge, Placement: overseer.PlacementLocalActivity,
		ContentWindows: windows, DataConverter: dc})
	require.NoError(t, err)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetDataConverter(dc)
	env.SetWorkerOptions(worker.Options{Plugins: []worker.Plugin{plugin}})
	env.RegisterWorkflowWithOptions(windowLoop, workflow.RegisterOptions{Name: "WindowLoop"})
	env.RegisterActivityWithOptions(bashTool, activity.RegisterOptions{Name: "agent.bash"})
	env.ExecuteWorkflow("WindowLoop")
	require.NoError(t, env.GetWorkflowError())
	var out []overseer.Trajectory
	for _, req := range judge.Requests() {
		var st trajectory.State
		require.NoError(t, json.Unmarshal(req.State, &st))
		out = append(out, st.Trajectory)
	}
	require.Len(t, out, 3, "one request per call")
	return out
}

// With a content window on for its type, the judge's request carries the
// latest calls' inputs, outputs and errors, oldest first, decoded through
// the worker's context-bound codec, redacted and cut to the budget; off
// (the default, or another type's window), it carries none.
func TestTheJudgeReadsTheContentWindow(t *testing.T) {
	trajs := windowJudged(t, map[string]trajectory.ContentWindow{"WindowLoop": {Calls: 2, CallBytes: 200}})
	first := trajs[0].Content
	require.Len(t, first, 1)
	assert.Equal(t, trajectory.CallContent{Run: 1, Call: "bash", Input: `{"command":"pytest -x tests/test_export.py"}`,
		Error: "exit status 1: TestExport: want 3 rows, got 0"}, first[0])

	last := trajs[2].Content
	require.Len(t, last, 2, "the window's two latest calls")
	assert.Equal(t, []int{2, 3}, []int{last[0].Run, last[1].Run}, "oldest first")
	assert.Equal(t, `{"command":"env | grep KEY"}`, last[0].Input)
	assert.Equal(t, `{"printed":"OPENAI_API_KEY=[REDACTED]"}`, last[0].Output, "the shipped redactor")
	assert.True(t, last[1].Cut, "the long log is cut")
	assert.LessOrEqual(t, len(last[1].Call+last[1].Input+last[1].Output+last[1].Error), 200+len("…"))
	assert.Equal(t, "make the export test pass", trajs[2].Objective)

	for name, windows := range map[string]map[string]trajectory.ContentWindow{
		"off":          nil,
		"another type": {"CoroAgentLoop": {Calls: 8}},
	} {
		t.Run(name, func(t *testing.T) {
			for i, tr := range windowJudged(t, windows) {
				assert.Empty(t, tr.Content, fmt.Sprintf("request %d", i))
			}
		})
	}
}

// A team's redactor replaces the shipped one.
func TestATeamsRedactorRewritesTheWindow(t *testing.T) {
	judge := jev.NewScripted(onTrack())
	judge.Repeat = true
	// Manage mode: each call is judged before the next one runs, so the
	// first request holds the first call alone (in observe mode the next
	// call may be recorded first).
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeManage, Judge: judge, Placement: overseer.PlacementLocalActivity,
		ContentWindows:  map[string]trajectory.ContentWindow{"WindowLoop": {Calls: 3}},
		ContentRedactor: func(s string) string { return strings.ReplaceAll(s, "export", "[project]") }})
	require.NoError(t, err)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{Plugins: []worker.Plugin{plugin}})
	env.RegisterWorkflowWithOptions(windowLoop, workflow.RegisterOptions{Name: "WindowLoop"})
	env.RegisterActivityWithOptions(bashTool, activity.RegisterOptions{Name: "agent.bash"})
	env.ExecuteWorkflow("WindowLoop")
	require.NoError(t, env.GetWorkflowError())
	reqs := judge.Requests()
	require.NotEmpty(t, reqs)
	var st trajectory.State
	require.NoError(t, json.Unmarshal(reqs[0].State, &st))
	require.Len(t, st.Trajectory.Content, 1)
	assert.Equal(t, `{"command":"pytest -x tests/test_[project].py"}`, st.Trajectory.Content[0].Input)
	assert.Equal(t, "exit status 1: TestExport: want 3 rows, got 0", st.Trajectory.Content[0].Error, "only the team's redactor ran")

	_, err = overseer.NewPlugin(overseer.Options{ContentWindows: map[string]trajectory.ContentWindow{"WindowLoop": {Calls: -1}}})
	assert.ErrorContains(t, err, `overseer: ContentWindows["WindowLoop"]: overseer: content window: calls -1 is outside 0–64`)
}
