package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
)

// rescueJob is one job of the rescue test: how it starts and what its
// reviewer does at its gate.
type rescueJob struct {
	simInput
	observe bool
	// review and needed are the reviewer's action and judgement; review
	// "" means the job must not pause.
	review overseer.Action
	needed bool

	run    client.WorkflowRun
	closed bool
}

// Should pauses be on? Real jobs of one type on the server: paused at a
// gate and continued with the pause judged needed (then delivered:
// rescued), continued and judged not needed (delivered), aborted (a
// needed pause, a failure), and flagged jobs in observe mode (a troubled
// agent fails on its own, a flaky shell does not). One learn round, as
// `overseer learn run` starts it, exports them with their gates and
// assessments; `overseer learn status` and the dashboard's Models page say
// pausing helps, with the counts the estimate rests on.
func TestE2ELearnStatusSaysWhetherPausesShouldBeOn(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	ctx := context.Background()
	suffix := fmt.Sprint(time.Now().UnixNano())
	typ := "E2ERescue" + suffix
	registerAll := func(r sdkworker.Registry) {
		r.RegisterWorkflowWithOptions(simAgent, workflow.RegisterOptions{Name: typ})
		for _, p := range simPhases {
			r.RegisterActivityWithOptions(simPhase, activity.RegisterOptions{Name: simActivity(p)})
		}
	}
	// The rule-based judge pauses a managed job at its code phase's three
	// failed tool calls, flaky or not, and flags an observed one there.
	tq := startWorkersWithType(t, srv, worker.Config{TaskQueue: "e2e-rescue-" + suffix, Modes: map[string]overseer.Mode{typ: overseer.ModeManage}}, registerAll)
	var jobs []*rescueJob
	for range 6 {
		jobs = append(jobs, &rescueJob{simInput: simInput{FlakyTools: true}, review: overseer.ActionContinue, needed: true})
	}
	for range 2 {
		jobs = append(jobs, &rescueJob{simInput: simInput{FlakyTools: true}, review: overseer.ActionContinue, needed: false},
			&rescueJob{simInput: simInput{Troubled: true}, review: overseer.ActionAbort, needed: true})
	}
	for range 5 {
		jobs = append(jobs, &rescueJob{simInput: simInput{Troubled: true}, observe: true}, &rescueJob{simInput: simInput{FlakyTools: true}, observe: true})
	}
	jobs = append(jobs, &rescueJob{}, &rescueJob{}) // never flagged: they say nothing about pauses
	for i, j := range jobs {
		memo := map[string]any{ops.TaskFamilyMemoKey: fmt.Sprintf("fam%d", i%4)}
		if j.observe {
			memo[overseer.ModeMemoKey] = string(overseer.ModeObserve)
		}
		in := j.simInput
		in.Seed = fmt.Sprintf("rescue-%d", i)
		j.run = startTyped(t, c, tq, typ, fmt.Sprintf("e2e-rescue-%s-%d", suffix, i), memo, in)
	}
	eventually(t, fmt.Sprintf("the %d jobs to close", len(jobs)), 2*time.Minute, func() bool {
		open := 0
		for _, j := range jobs {
			if j.closed {
				continue
			}
			d, err := c.DescribeWorkflow(ctx, j.run.GetID(), "")
			require.NoError(t, err)
			if d.RawResponse.GetWorkflowExecutionInfo().GetCloseTime() != nil {
				j.closed = true
				continue
			}
			open++
			s := status(t, c, j.run.GetID())
			if !s.Paused {
				continue
			}
			require.NotEmpty(t, j.review, "%s (%+v) paused: %s", j.run.GetID(), j.simInput, s.PauseReason)
			needed := j.needed
			req := overseer.ResumeRequest{By: "ana", Action: j.review, Note: "retry the shell first", Needed: &needed}
			_, err = c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: j.run.GetID(), UpdateName: overseer.ResumeName,
				Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted})
			require.NoError(t, err)
		}
		return open == 0
	})

	res := learnRound(t, srv, c, typ, fmt.Sprintf("TaskQueue = '%s'", tq), len(jobs), "e2e-rescue-round-"+suffix)
	require.NotNil(t, res.Rescue, res.Sentence)
	e := *res.Rescue
	assert.Equal(t, eval.RescueCounts{Paused: 10, Needed: 8, NotNeeded: 2, Rescued: 6, Disrupted: 0, Observed: 10, ObservedFailed: 5, WaitMinutes: e.WaitMinutes},
		e.RescueCounts, "the exported gates, judgements, outcomes and flags")
	assert.Equal(t, eval.RescueHelps, e.Verdict, e.Sentence)
	assert.True(t, strings.HasPrefix(e.Sentence, "pauses here were needed 8 times in 10 (8 of 10 paused jobs); p 0.500 > d/(r+d) 0.000: pausing helps"), e.Sentence)

	out := learnStatusOnceRoundShows(t, srv, typ)
	t.Logf("overseer learn status:\n%s", out)
	assert.Contains(t, out, "should pauses be on for "+typ+"? "+e.Sentence)
	dash := startDashboard(t, srv)
	eventually(t, "the Models view to show the round", 30*time.Second, func() bool {
		return strings.Contains(modelsSection(t, dash, typ), "data-rescue")
	})
	assert.Contains(t, modelsSection(t, dash, typ), `<p data-rescue="helps">pauses here were needed 8 times in 10`)
}

// learnStatusOnceRoundShows is `overseer learn status --type typ` once it
// shows a round: it finds the last round through visibility, which a
// cluster updates a moment after the round closes.
func learnStatusOnceRoundShows(t *testing.T, srv server, typ string) string {
	t.Helper()
	var out string
	eventually(t, "learn status to show the round", 30*time.Second, func() bool {
		code, stdout, errOut := overseerCLI(srv, "learn", "status", "--type", typ)
		require.Equal(t, 0, code, errOut)
		out = stdout
		return !strings.Contains(out, "no round has run yet")
	})
	return out
}
