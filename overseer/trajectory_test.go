package overseer_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
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

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create %s", path)
	assert.Equal(t, string(want), string(got))
}

// churnWorkflow runs n phases while changing everything the trajectory
// tracks: new phase names, lanes, work items, tool failures, PRs.
func churnWorkflow(ctx workflow.Context, n int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	overseer.SetObjective(ctx, "keep the trajectory bounded")
	for i := range n {
		overseer.SetLane(ctx, fmt.Sprintf("lane-%d", i%7))
		overseer.SetWorkItem(ctx, fmt.Sprintf("item-%d", i), "in_progress")
		if err := workflow.ExecuteActivity(ctx, "churn", i).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

func churnPhase(_ context.Context, i int) (phaseResult, error) {
	return phaseResult{Phase: fmt.Sprint(i), ReportCarrier: overseer.ReportCarrier{OverseerReport: &overseer.PhaseReport{
		Turns: 5, CostUSD: 0.1, Rework: i % 3,
		FailedToolCategories: []string{fmt.Sprintf("tool-%d", i)},
		OpenPullRequests:     []string{fmt.Sprintf("pr-%d", i), fmt.Sprintf("pr-%d", i+1)},
	}}}, nil
}

func TestTrajectoryStaysBoundedOver5000Phases(t *testing.T) {
	const phases = 5000
	var mu sync.Mutex
	sizes := make([]int, 0, phases)
	judge := jev.JudgeFunc(func(ctx context.Context, req jev.Request) (*jev.Response, error) {
		mu.Lock()
		sizes = append(sizes, len(req.State))
		mu.Unlock()
		return overseer.HeuristicJudge{}.Decide(ctx, req)
	})
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger())
	env := s.NewTestWorkflowEnvironment()
	// A local activity: boundaries are assessed in order, so sizes[i] is
	// boundary i+1's request.
	plugin, err := overseer.NewPlugin(overseer.Options{Judge: judge, Placement: overseer.PlacementLocalActivity})
	require.NoError(t, err)
	env.SetWorkerOptions(worker.Options{Plugins: []worker.Plugin{plugin}})
	env.RegisterWorkflow(churnWorkflow)
	env.RegisterActivityWithOptions(churnPhase, activity.RegisterOptions{Name: "churn"})
	env.SetTestTimeout(5 * time.Minute)
	env.ExecuteWorkflow(churnWorkflow, phases)
	require.NoError(t, env.GetWorkflowError())

	require.Len(t, sizes, phases)
	maxSize := 0
	for _, n := range sizes {
		maxSize = max(maxSize, n)
	}
	const bound = 8 << 10
	assert.LessOrEqual(t, maxSize, bound, "serialized state must stay under %d bytes", bound)
	// The size plateaus: the last boundary is no bigger than the 100th.
	assert.LessOrEqual(t, sizes[phases-1], sizes[99]+64)

	v, err := env.QueryWorkflow(overseer.StatusQueryName)
	require.NoError(t, err)
	var st overseer.Status
	require.NoError(t, v.Get(&st))
	assert.Equal(t, phases, st.Counters.Phases)
	assert.Len(t, st.Assessments, 20, "recent assessments are bounded too")
	raw, _ := json.Marshal(st)
	assert.Less(t, len(raw), 64<<10, "the status query answer stays small")
}

func TestRequestMatchesSeed(t *testing.T) {
	traj := overseer.Trajectory{Objective: "Add CSV export", Phase: "code", Lane: "feature", PhaseRuns: 3}
	req, err := overseer.NewRequest(overseer.DefaultObligations(), traj)
	require.NoError(t, err)
	b, err := json.MarshalIndent(req, "", "  ")
	require.NoError(t, err)
	golden(t, "request.golden.json", append(b, '\n'))
}
