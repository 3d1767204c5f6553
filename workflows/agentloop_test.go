package workflows_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/workflows"
)

// loopRun is what a run of the reference agent loop did.
type loopRun struct {
	result workflows.AgentLoopResult
	err    error
	status overseer.Status
	// pausedAt is the number of phases (model and tool calls) done at
	// each pause.
	pausedAt []int
	// atPause is the status at the first pause.
	atPause *overseer.Status
}

// runLoop runs an agent-loop scenario in manage mode with the default
// judge and policy. A reviewer looks an hour after a pause: a blocked
// agent is resumed with a note that gives it credentials, any other is
// aborted.
func runLoop(t *testing.T, scenario activities.LoopScenario) loopRun {
	t.Helper()
	env := overseenEnv(t, overseer.Options{Mode: overseer.ModeManage})
	workflows.RegisterAgentLoop(env)
	(&activities.LoopAgent{}).Register(env)
	var r loopRun
	query := func() overseer.Status { return statusOf(t, env) }
	var tick func()
	tick = func() {
		if st := query(); st.Paused {
			r.pausedAt = append(r.pausedAt, st.Counters.Phases)
			if r.atPause == nil {
				r.atPause = &st
			}
			req := overseer.ResumeRequest{By: "reviewer", Action: overseer.ActionAbort, Note: "not worth more turns"}
			if scenario == activities.LoopBlocked {
				req = overseer.ResumeRequest{By: "reviewer", Note: "DEPLOY_TOKEN is in the staging vault"}
			}
			env.SignalWorkflow(overseer.ResumeName, req)
		}
		if !env.IsWorkflowCompleted() {
			env.RegisterDelayedCallback(tick, time.Hour)
		}
	}
	env.RegisterDelayedCallback(tick, time.Hour)
	env.ExecuteWorkflow(workflows.AgentLoopWorkflowName, workflows.AgentLoopInput{Objective: "Add CSV export to the reports page", Scenario: scenario})
	require.True(t, env.IsWorkflowCompleted())
	r.err = env.GetWorkflowError()
	if r.err == nil {
		require.NoError(t, env.GetWorkflowResult(&r.result))
	}
	r.status = query()
	return r
}

// bands are the bands of the assessments of one phase, in order.
func bands(st overseer.Status, phase string) []overseer.Band {
	var out []overseer.Band
	for _, a := range st.Assessments {
		if a.Phase == phase && a.Verdict != nil {
			out = append(out, a.Verdict.Band)
		}
	}
	return out
}

func TestAgentLoopScenariosUnderManage(t *testing.T) {
	t.Run("healthy", func(t *testing.T) {
		r := runLoop(t, activities.LoopHealthy)
		require.NoError(t, r.err)
		assert.Equal(t, "done", r.result.Outcome)
		assert.Empty(t, r.pausedAt, "no gate")
		assert.Equal(t, overseer.BandOnTrack, r.status.Band)
		for _, a := range r.status.Assessments {
			require.NotNil(t, a.Verdict)
			assert.Equal(t, overseer.BandOnTrack, a.Verdict.Band, "%s", a.Phase)
			assert.Equal(t, "agent-loop rules, stage 0", overseer.ShortBasis(a.Answers.Basis), "a new type is read by the rules until its own succeeded runs are learned")
		}
	})
	t.Run("a tool failing every call", func(t *testing.T) {
		r := runLoop(t, activities.LoopToolFailing)
		require.Error(t, r.err, "the reviewer aborted")
		// Turn 1 reads; turns 2 to 5 run the failing tests: On track after
		// the first failure, Needs a look after the second, paused at the
		// fourth under the loop policy calibrated on real runs (turn 5,
		// its 10th call).
		assert.Equal(t, []overseer.Band{overseer.BandOnTrack, overseer.BandNeedsALook, overseer.BandNeedsALook, overseer.BandOffTrack},
			bands(r.status, activities.ToolRunTests))
		assert.Equal(t, []int{10}, r.pausedAt)
		require.NotEmpty(t, r.status.Gates)
		assert.Equal(t, "run_tests failed each of its last 4 calls, the same error each time: exit status 1: TestExport: want 3 rows, got 0",
			r.status.Gates[0].Evidence[0], "what happened first")
		// What the agent's next call and a person read speaks of calls.
		require.NotNil(t, r.atPause)
		assert.Equal(t, overseer.ShapeAgentLoop, r.atPause.Shape)
		assert.Equal(t, "call", r.atPause.Step())
		assert.Equal(t, "Process note from the overseer: the last call (run_tests) was flagged: "+r.status.Gates[0].Evidence[0]+
			"; P(on objective)=0.12. This is a process-confidence signal, not a code-quality score.", r.atPause.PendingNote)
		assert.Regexp(t, `^agent loop, last call run_tests; 5 model calls, 5 tool calls, 4 failed, the last 4 in a row`, r.atPause.Digest)
	})
	t.Run("looping on the same call", func(t *testing.T) {
		r := runLoop(t, activities.LoopRepeating)
		require.Error(t, r.err, "the reviewer aborted")
		assert.Equal(t, []int{8}, r.pausedAt, "the fourth identical read, answered the same way")
		require.NotEmpty(t, r.status.Gates)
		assert.Equal(t, "read_file was called 4 times in a row with the same input and got the same result each time", r.status.Gates[0].Evidence[0])
	})
	t.Run("blocked on credentials until a note", func(t *testing.T) {
		r := runLoop(t, activities.LoopBlocked)
		require.NoError(t, r.err)
		assert.Equal(t, "done", r.result.Outcome, "the note gave it credentials")
		assert.Equal(t, []int{12}, r.pausedAt, "the fourth failed deploy")
		assert.Contains(t, r.result.Results, "deployed to staging")
		assert.Equal(t, overseer.BandOnTrack, r.status.Band, "on track again once it deployed")
	})
}
