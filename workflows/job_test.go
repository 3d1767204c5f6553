package workflows_test

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/workflows"
)

type run struct {
	result   workflows.JobResult
	err      error
	status   overseer.Status
	lowest   float64
	resumed  int
	pausedBy []string
}

// overseenEnv is an SDK test environment with the overseer plugin
// (opts), its logs discarded.
func overseenEnv(t *testing.T, opts overseer.Options) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := s.NewTestWorkflowEnvironment()
	plugin, err := overseer.NewPlugin(opts)
	require.NoError(t, err)
	env.SetWorkerOptions(worker.Options{Plugins: []worker.Plugin{plugin}})
	return env
}

// statusOf queries the run's overseer status.
func statusOf(t *testing.T, env *testsuite.TestWorkflowEnvironment) overseer.Status {
	t.Helper()
	v, err := env.QueryWorkflow(overseer.StatusQueryName)
	require.NoError(t, err)
	var st overseer.Status
	require.NoError(t, v.Get(&st))
	return st
}

// runJob runs a scenario under the heuristic judge; a reviewer resumes any
// pause an hour after it opens, with a note.
func runJob(t *testing.T, scenario activities.Scenario, mode overseer.Mode) run {
	t.Helper()
	env := overseenEnv(t, overseer.Options{Mode: mode, Judge: overseer.HeuristicJudge{}})
	workflows.Register(env)
	(&activities.Agents{}).Register(env)

	r := run{lowest: 1}
	query := func() overseer.Status { return statusOf(t, env) }
	var tick func()
	tick = func() {
		st := query()
		if st.Assessed && st.OnObjective < r.lowest {
			r.lowest = st.OnObjective
		}
		if st.Paused {
			r.pausedBy = append(r.pausedBy, st.PauseReason)
			env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "reviewer", Note: "credentials added; change approach"})
			r.resumed++
		}
		if !env.IsWorkflowCompleted() {
			env.RegisterDelayedCallback(tick, time.Hour)
		}
	}
	env.RegisterDelayedCallback(tick, time.Hour)
	env.ExecuteWorkflow(workflows.JobWorkflowName, workflows.JobInput{Objective: "Add CSV export to the reports page", Scenario: scenario})
	require.True(t, env.IsWorkflowCompleted())
	r.err = env.GetWorkflowError()
	if r.err == nil {
		require.NoError(t, env.GetWorkflowResult(&r.result))
	}
	r.status = query()
	for _, a := range r.status.Assessments {
		if a.Verdict != nil && a.Verdict.OnObjective < r.lowest {
			r.lowest = a.Verdict.OnObjective
		}
	}
	return r
}

func TestScenariosUnderManage(t *testing.T) {
	t.Run("on track", func(t *testing.T) {
		r := runJob(t, activities.OnTrack, overseer.ModeManage)
		require.NoError(t, r.err)
		assert.Equal(t, "delivered", r.result.Outcome)
		assert.Equal(t, 0, r.status.Counters.Pauses)
		assert.Equal(t, overseer.BandOnTrack, r.status.Band)
		assert.GreaterOrEqual(t, r.lowest, 0.7)
	})
	t.Run("looping pauses on repeated work, then recovers", func(t *testing.T) {
		r := runJob(t, activities.Looping, overseer.ModeManage)
		require.NoError(t, r.err)
		assert.Equal(t, "delivered", r.result.Outcome)
		require.NotEmpty(t, r.pausedBy)
		assert.Contains(t, r.pausedBy[0], "obligation[2]")
		assert.Less(t, r.result.Loops, 6, "the note ends the loop early")
	})
	t.Run("drifting is flagged", func(t *testing.T) {
		r := runJob(t, activities.Drifting, overseer.ModeManage)
		require.NoError(t, r.err)
		assert.Equal(t, "delivered", r.result.Outcome)
		assert.GreaterOrEqual(t, r.status.Counters.Pauses, 1)
		assert.Less(t, r.lowest, 0.7)
	})
	t.Run("blocked pauses and a human unblocks it", func(t *testing.T) {
		r := runJob(t, activities.Blocked, overseer.ModeManage)
		require.NoError(t, r.err)
		assert.Equal(t, "delivered", r.result.Outcome)
		require.NotEmpty(t, r.pausedBy)
		assert.Contains(t, r.pausedBy[0], "at or below the pause threshold 0.250")
	})
}

func TestScenariosUnderObserve(t *testing.T) {
	blocked := runJob(t, activities.Blocked, overseer.ModeObserve)
	require.Error(t, blocked.err, "nobody unblocks an observed job")
	assert.Contains(t, blocked.err.Error(), "missing credentials")
	assert.Equal(t, 0, blocked.status.Counters.Pauses)
	assert.Equal(t, overseer.BandOffTrack, blocked.status.Band)

	looping := runJob(t, activities.Looping, overseer.ModeObserve)
	require.NoError(t, looping.err)
	assert.Equal(t, 6, looping.result.Loops, "observe mode never changes the job")
	assert.Greater(t, looping.status.Counters.Flags, 0)
	assert.Equal(t, 0, looping.resumed)
}

func TestContinueAsNewKeepsJobAndOverseerState(t *testing.T) {
	env := overseenEnv(t, overseer.Options{})
	workflows.Register(env)
	(&activities.Agents{}).Register(env)
	env.ExecuteWorkflow(workflows.JobWorkflowName, workflows.JobInput{Objective: "x", Scenario: activities.OnTrack, ContinueAsNewAfter: 3})
	err := env.GetWorkflowError()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "continue as new")
}

// A phase whose agent goes silent (its worker died, or its task never
// reached a worker) fails at the heartbeat timeout, not at the phase
// timeout, and the job runs it again.
func TestASilentPhaseFailsAtItsHeartbeatTimeoutAndRunsAgain(t *testing.T) {
	env := overseenEnv(t, overseer.Options{Mode: overseer.ModeObserve, Judge: overseer.HeuristicJudge{}})
	workflows.Register(env)
	agents := &activities.Agents{}
	agents.Register(env)
	var calls atomic.Int32
	env.RegisterActivityWithOptions(func(ctx context.Context, in *activities.PhaseInput) (activities.PhaseOutput, error) {
		if calls.Add(1) == 1 {
			// Silent for a real second, three heartbeat timeouts, then a
			// result the job must not take: the attempt has timed out.
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
		}
		return agents.Run(ctx, in)
	}, activity.RegisterOptions{Name: activities.ActivityName(activities.PhaseSpec)})

	env.SetTestTimeout(time.Minute)
	env.ExecuteWorkflow(workflows.JobWorkflowName, workflows.JobInput{Objective: "Add CSV export to the reports page",
		Scenario: activities.OnTrack, HeartbeatTimeout: 300 * time.Millisecond})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var r workflows.JobResult
	require.NoError(t, env.GetWorkflowResult(&r))
	assert.Equal(t, "delivered", r.Outcome)
	assert.Equal(t, int32(2), calls.Load(), "the silent spec phase ran again")
	require.NotEmpty(t, r.Log)
	assert.Equal(t, "spec#1 failed", r.Log[0], "the silent attempt's late result is not taken")
}
