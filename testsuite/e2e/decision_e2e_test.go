package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/cmd/overseer/cli"
	"github.com/corohq/temporal-overseer/cmd/overseer/cli/clitest"
	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// TestDecisionLoopOnDevServer runs jobs with known outcomes on the dev
// server (or the cluster), then the loop a user runs to fit the judge to their own jobs:
// overseer export → train → eval → calibrate.
func TestDecisionLoopOnDevServer(t *testing.T) {
	srv := e2eServer(t)
	ctx := context.Background()
	c := srv.Client()
	// Ids unique to this test run; the family is the id without its number.
	suffix := fmt.Sprintf("x%d", time.Now().UnixNano())
	// The task queue too: a cluster keeps the jobs of earlier runs.
	tq := startWorker(t, srv, worker.Config{TaskQueue: "e2e-decision-" + suffix, Mode: overseer.ModeObserve, AgentWork: 5 * time.Millisecond})
	id := func(family string, n int) string { return fmt.Sprintf("%s%s-%d", family, suffix, n) }

	start := func(id string, in workflows.JobInput) {
		t.Helper()
		in.Objective = "ship the feature for " + id
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: tq}, workflows.JobWorkflowName, in)
		require.NoError(t, err)
	}
	fast := 10 * time.Millisecond
	want := map[string]eval.Outcome{}
	families := []string{"famA", "famB", "famC", "famD"}
	for _, f := range families {
		// Completed: on track (its tests fail once, the loop back fixes them).
		start(id(f, 1), workflows.JobInput{Scenario: activities.OnTrack, RetryDelay: fast})
		start(id(f, 2), workflows.JobInput{Scenario: activities.OnTrack, RetryDelay: fast})
		// Failed: blocked on credentials, it gives up after two failed code phases.
		start(id(f, 3), workflows.JobInput{Scenario: activities.Blocked, RetryDelay: fast, MaxPhaseFailures: 2})
		// Failed: looping tests, it gives up after one loop back to code.
		start(id(f, 4), workflows.JobInput{Scenario: activities.Looping, RetryDelay: fast, MaxLoops: 1})
		want[id(f, 1)], want[id(f, 2)] = eval.OutcomeSucceeded, eval.OutcomeSucceeded
		want[id(f, 3)], want[id(f, 4)] = eval.OutcomeFailed, eval.OutcomeFailed
	}
	// Terminated while waiting to retry a failed phase: failed.
	terminated := []string{id("famA", 5), id("famC", 5)}
	for _, j := range terminated {
		start(j, workflows.JobInput{Scenario: activities.Blocked, RetryDelay: time.Hour})
		want[j] = eval.OutcomeFailed
	}
	// Still running: skipped by export.
	running := id("famB", 6)
	start(running, workflows.JobInput{Scenario: activities.Blocked, RetryDelay: time.Hour})
	t.Cleanup(func() { _ = c.TerminateWorkflow(context.Background(), running, "", "test over") })

	for _, j := range append(terminated, running) {
		eventually(t, j+" to fail its code phase", 30*time.Second, func() bool { return status(t, c, j).Counters.Phases >= 3 })
	}
	for _, j := range terminated {
		require.NoError(t, c.TerminateWorkflow(ctx, j, "", "e2e: the job is given up"))
	}
	query := fmt.Sprintf("TaskQueue = '%s'", tq)
	closed := query + " AND ExecutionStatus != 'Running'"
	eventually(t, "every job but one to close and be visible", 90*time.Second, func() bool {
		resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: closed})
		require.NoError(t, err)
		return resp.GetCount() == int64(len(want))
	})

	dir := t.TempDir()
	runs := filepath.Join(dir, "runs.jsonl")
	code, out, errOut := overseerCLI(srv, "export", "--query", query, "--out", runs, "--namespace", srv.Namespace())
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, fmt.Sprintf("exported %d runs (8 succeeded, 10 failed or blocked) to %s; skipped 1 running", len(want), runs))

	records, err := eval.LoadRuns(runs, "")
	require.NoError(t, err)
	got := map[string]eval.Outcome{}
	assessed := 0
	for _, r := range records {
		got[r.ID] = r.Outcome
		assert.Equal(t, eval.UnitCall, r.Unit, r.ID)
		assert.Equal(t, workflows.JobWorkflowName, r.Agent, r.ID)
		assert.Equal(t, strings.TrimSuffix(r.ID, r.ID[strings.LastIndexByte(r.ID, '-'):]), r.FamilyName(), r.ID)
		assert.Equal(t, "spec", r.Steps[0].Phase, r.ID)
		for _, s := range r.Steps {
			if s.Assessment != nil && s.Assessment.Error == "" && s.Assessment.ModelVersion != "" && s.Assessment.Band != "" {
				assessed++
			}
		}
		switch {
		case strings.HasSuffix(r.ID, "-3"):
			// Blocked: spec, plan, then code fails twice.
			assert.Equal(t, []string{"spec", "plan", "code", "code"}, phasesOf(r), r.ID)
			assert.True(t, r.Steps[2].Failed && r.Steps[3].Failed, r.ID)
		case strings.HasSuffix(r.ID, "-1"):
			last := r.Steps[len(r.Steps)-1]
			assert.Equal(t, "evaluate", last.Phase, r.ID)
			assert.False(t, last.Failed, r.ID)
			assert.Positive(t, last.Turns, "the phase's report (overseer_report) is read: %s", r.ID)
		}
	}
	assert.Equal(t, want, got, "one record per closed job, outcome from its close status")
	assert.Positive(t, assessed, "the recorded assessments are exported with their band and model version")

	// A label file overrides the close status.
	labels := filepath.Join(dir, "labels.json")
	require.NoError(t, os.WriteFile(labels, []byte(fmt.Sprintf(`{%q: "blocked"}`, id("famA", 1))), 0o644))
	relabelled := filepath.Join(dir, "relabelled.jsonl")
	code, out, errOut = overseerCLI(srv, "export", "--query", query, "--labels", labels, "--out", relabelled, "--namespace", srv.Namespace())
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "1 outcomes from "+labels)
	again, err := eval.LoadRuns(relabelled, "")
	require.NoError(t, err)
	for _, r := range again {
		if r.ID == id("famA", 1) {
			assert.Equal(t, eval.OutcomeBlocked, r.Outcome)
		}
	}

	// The default query (overseen or reference jobs) finds them too.
	var stdout, stderr bytes.Buffer
	code = cli.Main(ctx, []string{"export", "--address", srv.FrontendHostPort(), "--namespace", srv.Namespace(), "--timeout", "5s"}, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	all, err := eval.ReadRecords(&stdout)
	require.NoError(t, err)
	ids := map[string]bool{}
	for _, r := range all {
		ids[r.ID] = true
	}
	for j := range want {
		assert.True(t, ids[j], "the default query exports %s", j)
	}
	assert.False(t, ids[running], "a running job has no outcome yet")

	// train → eval → calibrate on the exported runs.
	model := filepath.Join(dir, "model.json")
	local := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		code := cli.Main(ctx, args, &out, &errOut)
		require.Equal(t, 0, code, "overseer %s: %s", args[0], errOut.String())
		return out.String()
	}
	local("train", "--traces", runs, "--out", model, "--folds", "4")
	m, err := overseer.LoadLearnedModel(model)
	require.NoError(t, err)
	assert.NotEmpty(t, m.Version)

	var rep struct {
		Checkpoints []map[string]any `json:"checkpoints"`
		Policy      map[string]any   `json:"policy"`
		Runs        int              `json:"runs"`
	}
	require.NoError(t, json.Unmarshal([]byte(local("eval", "--traces", runs, "--judge", "learned", "--model", model, "--json")), &rep))
	assert.Equal(t, len(want), rep.Runs)
	var at50 map[string]any
	for _, cp := range rep.Checkpoints {
		if cp["at"] == "50%" {
			at50 = cp
		}
	}
	require.NotNil(t, at50, "a checkpoint at 50%%: %v", rep.Checkpoints)
	assert.Contains(t, at50, "auroc")
	assert.Contains(t, rep.Policy, "false_pause_rate")
	assert.Contains(t, rep.Policy, "catch_rate")

	// A handful of exported runs cannot certify 20% at 95% confidence: one
	// sentence naming the runs it takes, exit 1. The policy file keeps the
	// policy in force, uncertified, with the relative budget the runs' few
	// succeeded ones back if their spend is log-normal.
	policy := filepath.Join(dir, "policy.json")
	var calOut, calErr bytes.Buffer
	code = cli.Main(ctx, []string{"calibrate", "--traces", runs, "--judge", "learned", "--model", model, "--max-false-pause", "0.2", "--promise", "confidence", "--out", policy}, &calOut, &calErr)
	assert.Equal(t, 1, code)
	assert.Contains(t, calErr.String(), "false-pause promise cannot be certified")
	assert.Contains(t, calErr.String(), "it takes at least 14 succeeded runs")
	clitest.KeptInForce(t, calOut.String(), policy)
	// A budget they can support is certified, unless the thresholds that
	// keep it catch no failed run (the simulated agents' runs may tie at
	// their lowest P): then calibrate refuses, says to keep the policy in
	// force, and keeps it, with the relative budget.
	calOut.Reset()
	calErr.Reset()
	code = cli.Main(ctx, []string{"calibrate", "--traces", runs, "--judge", "learned", "--model", model, "--max-false-pause", "0.5", "--out", policy}, &calOut, &calErr)
	if code != 0 {
		assert.Contains(t, calErr.String(), "catch no failed run")
		assert.Contains(t, calErr.String(), "keep the policy in force")
		clitest.KeptInForce(t, calOut.String(), policy)
		return
	}
	assert.Contains(t, calOut.String(), "policy written to "+policy)
	p, err := overseer.LoadPolicy(policy)
	require.NoError(t, err)
	assert.Positive(t, p.PauseAtOrBelow+p.OnTrackAt, "a policy with thresholds")
	assert.True(t, p.Promise.Certified(), "the policy records its promise")
	assert.Positive(t, p.Promise.Catches, "a certified policy catches a failed run")
}

func phasesOf(r eval.Record) []string {
	out := make([]string, len(r.Steps))
	for i, s := range r.Steps {
		out[i] = s.Phase
	}
	return out
}
