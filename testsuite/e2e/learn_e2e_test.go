package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/learn"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// Jobs with known outcomes — one delivered, one a reviewer continued at
// its gate, one a reviewer aborted — export with the reviewers' decisions
// beside their outcomes, and a learn round over them says how many more
// labelled runs it needs.
func TestE2ELearnRoundWithTooFewRunsSaysHowManyMoreItNeeds(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{})
	ctx := context.Background()

	// Its task family from the memo.
	delivered, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("e2e-learn-%d", time.Now().UnixNano()), TaskQueue: tq,
		Memo: map[string]any{ops.TaskFamilyMemoKey: "billing-service"}}, workflows.JobWorkflowName, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.OnTrack})
	require.NoError(t, err)
	continued := startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	aborted := startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	resume := func(run client.WorkflowRun, action overseer.Action, by, note string) {
		eventually(t, run.GetID()+" to pause", 30*time.Second, func() bool { return status(t, c, run.GetID()).Paused })
		req := overseer.ResumeRequest{By: by, Note: note, Action: action}
		if action == overseer.ActionContinue {
			req.Needed = new(false) // "looks fine": the reviewer calls it a false alarm
		}
		_, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: overseer.ResumeName,
			Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted})
		require.NoError(t, err)
	}
	resume(continued, overseer.ActionContinue, "ana", "looks fine")
	resume(aborted, overseer.ActionAbort, "bo", "going nowhere")
	_, err = finish(t, c, continued, "ana")
	require.NoError(t, err)
	require.Error(t, aborted.Get(ctx, nil))
	require.NoError(t, delivered.Get(ctx, nil))

	where := fmt.Sprintf("TaskQueue = '%s'", tq)
	ids := map[string]bool{delivered.GetID(): true, continued.GetID(): true, aborted.GetID(): true}
	var recs []eval.Record
	eventually(t, "the three jobs to be visible as closed", 30*time.Second, func() bool {
		code, out, _ := overseerCLI(srv, "export", "--query", learn.Query(workflows.JobWorkflowName, where, time.Time{}))
		if code != 0 {
			return false
		}
		recs, err = eval.ReadRecords(strings.NewReader(out))
		require.NoError(t, err)
		n := 0
		for _, r := range recs {
			if ids[r.ID] {
				n++
			}
		}
		return n == 3
	})
	byID := map[string]eval.Record{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	assert.Empty(t, byID[delivered.GetID()].Gates)
	assert.Equal(t, "billing-service", byID[delivered.GetID()].Task.Family)
	cg := byID[continued.GetID()].Gates
	require.NotEmpty(t, cg)
	assert.Equal(t, eval.GateDecision{Gate: cg[0].Gate, Phase: cg[0].Phase, After: cg[0].After, By: "ana", Action: eval.GateContinue, Note: "looks fine",
		Reason: cg[0].Reason, Evidence: cg[0].Evidence, Needed: new(false), NeededBy: string(overseer.NeededByReviewer), WaitMS: cg[0].WaitMS,
		Attempt: 1}, cg[0], "the gate held its phase's first run")
	assert.Positive(t, cg[0].After)
	ag := byID[aborted.GetID()].Gates
	require.Len(t, ag, 1)
	assert.Equal(t, "bo", ag[0].By)
	assert.Equal(t, eval.GateAbort, ag[0].Action)
	assert.Equal(t, "going nowhere", ag[0].Note)
	assert.Equal(t, eval.OutcomeFailed, byID[aborted.GetID()].Outcome)

	// The learn workflow on a worker of its own task queue, as
	// `overseer worker` hosts it.
	ltq := "e2e-learn-" + fmt.Sprint(time.Now().UnixNano())
	lw := sdkworker.New(c, ltq, sdkworker.Options{})
	learn.RegisterActivities(lw, &learn.Activities{Client: c, Store: openStore(t)})
	require.NoError(t, lw.Start())
	t.Cleanup(lw.Stop)

	code, out, errOut := overseerCLI(srv, "learn", "run", "--type", workflows.JobWorkflowName, "--where", where, "--task-queue", ltq, "--json")
	require.Equal(t, 0, code, errOut)
	var res learn.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	// Other tests on this server may have run rounds of the type before.
	first := res.Rounds
	require.Positive(t, first)
	assert.Nil(t, res.Decision, "no candidate with three runs")
	assert.False(t, res.Readiness.Ready)
	assert.Equal(t, 3, res.Readiness.Runs)
	assert.Equal(t, 1, res.Readiness.Failed, "the aborted job")
	// The round names the type's stage and what the next ones need.
	assert.Contains(t, res.Sentence, fmt.Sprintf("round %d for ", first)+workflows.JobWorkflowName+": no candidate: "+workflows.JobWorkflowName+
		" is at stage 0, not calibrated for the type: stage 1 (recalibration) needs 30 closed jobs of both outcomes; 3 have closed; a refit (stage 3) needs about ")
	assert.Contains(t, res.Readiness.Sentence, "3 labelled runs (2 succeeded, 1 failed, ")
	// Which run is held out as the newest depends on the start order.
	assert.Regexp(t, `takes 19 succeeded runs to train on and 3 task families; needs about 2[23] more succeeded runs \(1[78] to train on beyond the newest 20% held out\)`, res.Readiness.Sentence)
	assert.NotContains(t, res.Sentence, "overseer learn run", "no advice the round itself refuses")
	// The gates measured on the closed jobs: the continued job succeeded (a
	// false pause), the aborted one failed (a catch).
	require.NotNil(t, res.Rates)
	assert.Equal(t, [5]int{3, 2, 1, 1, 1}, [5]int{res.Rates.Jobs, res.Rates.Succeeded, res.Rates.FalsePauses, res.Rates.Failed, res.Rates.Caught})
	measured := "on the newest closed 3 jobs, 1 of 2 succeeded jobs had a false pause (50.0%), 1 of 1 failed jobs caught (100.0%)"
	assert.Contains(t, res.Rates.Sentence, measured)

	// The dashboard's Models view shows them and how many more labelled
	// runs a first promotion needs, read from the round's memo.
	dash := startDashboard(t, srv)
	eventually(t, "the Models view to show the round", 30*time.Second, func() bool {
		return strings.Contains(modelsSection(t, dash, workflows.JobWorkflowName), "<p data-readiness>"+res.Readiness.Sentence+".</p>")
	})
	section := modelsSection(t, dash, workflows.JobWorkflowName)
	assert.Contains(t, section, "False pauses and catches "+measured)
	assert.Contains(t, section, fmt.Sprintf("Round %d, ", first))

	// The next round counts on from the first and says it in text.
	code, out, errOut = overseerCLI(srv, "learn", "run", "--type", workflows.JobWorkflowName, "--where", where, "--task-queue", ltq)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, fmt.Sprintf("round %d for ", first+1)+workflows.JobWorkflowName+": no candidate: ")
	assert.Contains(t, out, fmt.Sprintf("rounds %d, promoted %d, refused %d; 0 jobs closed since the round before", first+1, res.Promoted, res.Refused))
	assert.Contains(t, out, "false pauses and catches "+measured)

	code, _, errOut = overseerCLI(srv, "learn", "run", "--task-queue", ltq)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "give --type")
}

// modelsSection is the Models view's section of workflowType, or "".
func modelsSection(t *testing.T, dashboardURL, workflowType string) string {
	t.Helper()
	resp, err := http.Get(dashboardURL + "/models")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	_, section, ok := strings.Cut(string(body), `<section class="panel" data-type="`+workflowType+`">`)
	if !ok {
		return ""
	}
	section, _, _ = strings.Cut(section, "</section>")
	return section
}
