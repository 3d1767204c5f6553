package overseer_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// digits matches the runs of digits shape folds.
var digits = regexp.MustCompile(`[0-9]+`)

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
	// states[k-1] is boundary k's request state. The judge's calls are
	// keyed by the phase runs the state counts, not by call order: in
	// observe mode the next phase starts while an assessment is in flight,
	// so two assessments (local activities too) may reach the judge in
	// either order.
	states := make([][]byte, phases)
	judge := jev.JudgeFunc(func(ctx context.Context, req jev.Request) (*jev.Response, error) {
		var st overseer.State
		if err := json.Unmarshal(req.State, &st); err != nil {
			return nil, err
		}
		if k := st.Trajectory.PhaseRuns; k >= 1 && k <= phases {
			mu.Lock()
			states[k-1] = slices.Clone(req.State)
			mu.Unlock()
		}
		return overseer.HeuristicJudge{}.Decide(ctx, req)
	})
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger())
	env := s.NewTestWorkflowEnvironment()
	plugin, err := overseer.NewPlugin(overseer.Options{Judge: judge, Placement: overseer.PlacementLocalActivity})
	require.NoError(t, err)
	env.SetWorkerOptions(withoutLateActivityRace(worker.Options{Plugins: []worker.Plugin{plugin}}))
	env.RegisterWorkflow(churnWorkflow)
	env.RegisterActivityWithOptions(churnPhase, activity.RegisterOptions{Name: "churn"})
	env.SetTestTimeout(5 * time.Minute)
	env.ExecuteWorkflow(churnWorkflow, phases)
	require.NoError(t, env.GetWorkflowError())

	const bound = 8 << 10
	// shape is a state with every run of digits replaced by one "0": what
	// is left cannot grow with the number of phases unless the trajectory
	// does (a list that is not windowed, a new entry per phase). Counters,
	// names such as "item-4999", float sums and durations legitimately
	// gain digits as the job goes on; that growth is logarithmic, and the
	// absolute bound below covers it.
	shape := func(b []byte) int { return len(digits.ReplaceAll(b, []byte("0"))) }
	maxSize, maxShapeBy100, maxShapeAfter := 0, 0, 0
	for i, st := range states {
		require.NotNil(t, st, "boundary %d was never assessed", i+1)
		maxSize = max(maxSize, len(st))
		if i < 100 {
			maxShapeBy100 = max(maxShapeBy100, shape(st))
		} else {
			maxShapeAfter = max(maxShapeAfter, shape(st))
		}
	}
	assert.LessOrEqual(t, maxSize, bound, "serialized state must stay under %d bytes", bound)
	// The size plateaus: once the windows are full (by the 100th boundary),
	// no later boundary's request has more structure than the largest so
	// far; only digits grow.
	assert.LessOrEqual(t, maxShapeAfter, maxShapeBy100, "the request grows with the number of phases")
	// And the digits grow by what the counters' digits explain: the last
	// request is at most 128 B above the 100th (the counters and names of
	// the churn workflow gain 1 or 2 digits each between 100 and 5000).
	assert.LessOrEqual(t, len(states[phases-1]), len(states[99])+128)

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
	req, err := overseer.NewRequest("", overseer.DefaultObligations(), traj)
	require.NoError(t, err)
	b, err := json.MarshalIndent(req, "", "  ")
	require.NoError(t, err)
	golden(t, "request.golden.json", append(b, '\n'))
}
