package overseer_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// recorderStep is one phase of the recorder test, as the workflow and the
// recorder both see it.
type recorderStep struct {
	Lane   string
	Phase  string
	Report *overseer.PhaseReport
}

var recorderSteps = []recorderStep{
	{Lane: "feature", Phase: "plan", Report: &overseer.PhaseReport{Turns: 3, CostUSD: 0.1}},
	{Lane: "feature", Phase: "code", Report: &overseer.PhaseReport{Turns: 9, FailedToolCategories: []string{"build"}}},
	{Lane: "feature", Phase: "test", Report: &overseer.PhaseReport{Turns: 2, FailedToolCategories: []string{"test", "test"}}},
	{Lane: "bugfix", Phase: "code", Report: &overseer.PhaseReport{Turns: 4, Rework: 2, OpenPullRequests: []string{"#7"}}},
	{Lane: "feature", Phase: "test", Report: nil},
	{Lane: "feature", Phase: "review", Report: &overseer.PhaseReport{OutputMissing: true}},
}

func recorderWorkflow(ctx workflow.Context) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	overseer.SetObjective(ctx, "replay a run offline")
	for i, s := range recorderSteps {
		overseer.SetLane(ctx, s.Lane)
		if err := workflow.ExecuteActivity(ctx, s.Phase, i).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

func recorderPhase(_ context.Context, i int) (phaseResult, error) {
	return phaseResult{Phase: recorderSteps[i].Phase, ReportCarrier: overseer.ReportCarrier{OverseerReport: recorderSteps[i].Report}}, nil
}

// The recorder builds, boundary by boundary, the trajectory the plugin sends
// to the judge for the same phases.
func TestTrajectoryRecorderMatchesPlugin(t *testing.T) {
	var mu sync.Mutex
	seen := map[int]overseer.Trajectory{} // by phase runs: observe-mode assessments may finish in any order
	judge := jev.JudgeFunc(func(ctx context.Context, req jev.Request) (*jev.Response, error) {
		var st overseer.State
		if err := json.Unmarshal(req.State, &st); err != nil {
			return nil, err
		}
		mu.Lock()
		seen[st.Trajectory.PhaseRuns] = st.Trajectory
		mu.Unlock()
		return overseer.HeuristicJudge{}.Decide(ctx, req)
	})
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger())
	env := s.NewTestWorkflowEnvironment()
	plugin, err := overseer.NewPlugin(overseer.Options{Judge: judge})
	require.NoError(t, err)
	env.SetWorkerOptions(withoutLateActivityRace(worker.Options{Plugins: []worker.Plugin{plugin}}))
	env.RegisterWorkflow(recorderWorkflow)
	for _, name := range []string{"plan", "code", "test", "review"} {
		env.RegisterActivityWithOptions(recorderPhase, activity.RegisterOptions{Name: name})
	}
	env.ExecuteWorkflow(recorderWorkflow)
	require.NoError(t, env.GetWorkflowError())
	require.Len(t, seen, len(recorderSteps))

	var rec overseer.TrajectoryRecorder
	rec.SetObjective("replay a run offline")
	for i, step := range recorderSteps {
		rec.SetLane(step.Lane)
		rec.RecordPhase(overseer.PhaseRun{Phase: step.Phase}, step.Report)
		got := rec.Trajectory()
		want, ok := seen[i+1]
		require.True(t, ok, "boundary %d was assessed", i)
		for j := range want.RecentPhases {
			want.RecentPhases[j].Duration = 0 // the only thing the recorder cannot know
		}
		assert.Equal(t, normalise(t, want), normalise(t, got), "boundary %d", i)
	}
	final := rec.Trajectory()
	assert.Equal(t, 2, final.Repeats)
	assert.Equal(t, 2, final.LaneSwitches)
	assert.Equal(t, []string{"#7"}, final.OpenPullRequests)
}

// normalise compares trajectories as the judge receives them (JSON), so
// that nil and empty slices are the same.
func normalise(t *testing.T, tr overseer.Trajectory) string {
	t.Helper()
	b, err := json.Marshal(tr)
	require.NoError(t, err)
	return string(b)
}

func TestTrajectoryRecorderReturnsCopies(t *testing.T) {
	var rec overseer.TrajectoryRecorder
	rec.RecordPhase(overseer.PhaseRun{Phase: "code"}, &overseer.PhaseReport{FailedToolCategories: []string{"test"}})
	first := rec.Trajectory()
	first.RecentPhases[0].Phase = "changed"
	first.FailedToolCategories[0].Count = 99
	again := rec.Trajectory()
	assert.Equal(t, "code", again.RecentPhases[0].Phase)
	assert.Equal(t, 1, again.FailedToolCategories[0].Count)

	for range 100 {
		rec.RecordPhase(overseer.PhaseRun{Phase: "code"}, nil)
	}
	assert.Equal(t, 101, rec.Trajectory().PhaseRuns)
	assert.LessOrEqual(t, len(rec.Trajectory().RecentPhases), 8, "the window stays bounded")
}
