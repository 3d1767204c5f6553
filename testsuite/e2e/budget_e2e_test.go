package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
)

// spendingJob runs n phases, each reporting 600 tokens.
func spendingJob(ctx workflow.Context, n int) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	for i := range n {
		if err := workflow.ExecuteActivity(ctx, "spend").Get(ctx, nil); err != nil {
			return i, err
		}
	}
	return n, nil
}

// On a real server, a run's token budget (set in its memo) opens a gate of
// its own at the phase that reaches it; `overseer resume --budget` raises
// it and the job ends; another run of the same type is aborted at its
// budget's gate and ends with the abort.
func TestE2EABudgetStopsAJobAndARaisedBudgetResumesIt(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tq := fmt.Sprint("budget-", time.Now().UnixNano())
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeManage, SearchAttributes: true, BudgetSearchAttribute: true})
	require.NoError(t, err)
	w := sdkworker.New(c, tq, sdkworker.Options{Plugins: []sdkworker.Plugin{plugin}})
	w.RegisterWorkflowWithOptions(spendingJob, workflow.RegisterOptions{Name: "SpendingJob"})
	w.RegisterActivityWithOptions(func(context.Context) (overseer.ReportCarrier, error) {
		return overseer.ReportCarrier{OverseerReport: &overseer.PhaseReport{Turns: 1, InputTokens: 500, OutputTokens: 100}}, nil
	}, activity.RegisterOptions{Name: "spend"})
	require.NoError(t, w.Start())
	defer w.Stop()

	start := func(id string) client.WorkflowRun {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: tq,
			Memo: map[string]any{overseer.BudgetMemoKey: `{"tokens": 2000}`}}, "SpendingJob", 5)
		require.NoError(t, err)
		return run
	}
	raised, aborted := start(tq+"-raised"), start(tq+"-aborted")
	for _, run := range []client.WorkflowRun{raised, aborted} {
		eventually(t, "the budget's gate", time.Minute, func() bool { return status(t, c, run.GetID()).Paused })
		s := status(t, c, run.GetID())
		require.Len(t, s.Gates, 1)
		assert.Equal(t, overseer.GateKindBudget, s.Gates[0].Kind)
		assert.Equal(t, 4, s.Counters.Phases, "the fourth phase reaches 2400 tokens")
		assert.Equal(t, "budget: the job spent 2400 tokens of its budget of 2000 tokens (120%)", s.PauseReason)
	}
	// `overseer list --over-budget` is one visibility query: both jobs, at
	// their budget, with their spend.
	var listed string
	eventually(t, "both jobs listed over budget", time.Minute, func() bool {
		code, out, _ := overseerCLI(srv, "list", "--over-budget", "--limit", "1000")
		listed = out
		return code == 0 && strings.Contains(out, raised.GetID()) && strings.Contains(out, aborted.GetID())
	})
	assert.Contains(t, listed, "2400 tokens, 4 turns, ")
	assert.Contains(t, listed, " of 2000 tokens (reached)")

	code, _, stderr := overseerCLI(srv, "resume", raised.GetID(), "--by", "reviewer", "--note", "worth it")
	assert.NotEqual(t, 0, code, "a continue without a raise is refused")
	assert.Contains(t, stderr, "was opened by the job's budget (2000 tokens): continue with a raised budget")
	code, _, stderr = overseerCLI(srv, "resume", raised.GetID(), "--by", "reviewer", "--budget", `{"tokens": 100000}`)
	require.Equal(t, 0, code, stderr)
	var n int
	require.NoError(t, raised.Get(ctx, &n))
	assert.Equal(t, 5, n)
	s := status(t, c, raised.GetID())
	require.NotNil(t, s.Budget)
	assert.Equal(t, int64(100_000), s.Budget.Limit.Tokens)
	assert.Equal(t, int64(3000), s.Budget.Spent.Tokens)
	code, _, stderr = overseerCLI(srv, "resume", aborted.GetID(), "--by", "reviewer", "--abort")
	require.Equal(t, 0, code, stderr)
	err = aborted.Get(ctx, nil)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "%v", err)
	assert.Equal(t, overseer.AbortedErrorType, app.Type())

	// Exported, the gate says a budget opened it, so that learn and eval
	// count it apart from the judge's pauses.
	rec, err := ops.RecordOfJob(ctx, c, aborted.GetID(), "") // its latest run
	require.NoError(t, err)
	require.Len(t, rec.Gates, 1, "%+v", rec)
	assert.True(t, rec.Gates[0].Budget(), "exported gate kind %q", rec.Gates[0].Kind)
	assert.Empty(t, rec.JudgeGates(), "no pause of the judge's")
}

// spendingJobThenNew runs n phases, each reporting 600 tokens, then
// continues as new for the rest, runs times in all.
func spendingJobThenNew(ctx workflow.Context, n, runs int) (int, error) {
	done, err := spendingJob(ctx, n)
	if err != nil || runs <= 1 {
		return done, err
	}
	return 0, workflow.NewContinueAsNewError(ctx, "SpendingJobThenNew", n, runs-1)
}

// A budget raised at a gate stays raised when the job continues as new:
// the successor keeps the higher bound and goes on from the spend it
// carried, instead of stopping at once at the budget it pinned again.
func TestE2EARaisedBudgetOutlivesContinueAsNew(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tq := fmt.Sprint("budget-can-", time.Now().UnixNano())
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeManage})
	require.NoError(t, err)
	w := sdkworker.New(c, tq, sdkworker.Options{Plugins: []sdkworker.Plugin{plugin}})
	w.RegisterWorkflowWithOptions(spendingJobThenNew, workflow.RegisterOptions{Name: "SpendingJobThenNew"})
	w.RegisterActivityWithOptions(func(context.Context) (overseer.ReportCarrier, error) {
		return overseer.ReportCarrier{OverseerReport: &overseer.PhaseReport{Turns: 1, InputTokens: 500, OutputTokens: 100}}, nil
	}, activity.RegisterOptions{Name: "spend"})
	require.NoError(t, w.Start())
	defer w.Stop()

	// 4 phases a run, two runs: the first reaches 2,000 tokens at its 4th
	// phase (2,400) and is raised to 4,000; the second carries 2,400 and
	// reaches 4,000 at its 3rd phase (4,200), not at its first.
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: tq, TaskQueue: tq,
		Memo: map[string]any{overseer.BudgetMemoKey: `{"tokens": 2000}`}}, "SpendingJobThenNew", 4, 2)
	require.NoError(t, err)
	eventually(t, "the first run's budget gate", time.Minute, func() bool { return status(t, c, tq).Paused })
	code, _, stderr := overseerCLI(srv, "resume", tq, "--by", "reviewer", "--budget", `{"tokens": 4000}`)
	require.Equal(t, 0, code, stderr)
	eventually(t, "the successor's gate", time.Minute, func() bool {
		s := status(t, c, tq)
		return s.Paused && s.Counters.Phases > 4
	})
	s := status(t, c, tq)
	require.NotNil(t, s.Budget)
	assert.Equal(t, int64(4000), s.Budget.Limit.Tokens, "the raised budget")
	assert.Equal(t, int64(4200), s.Budget.Spent.Tokens, "the spend carried on")
	assert.Equal(t, 7, s.Counters.Phases, "stopped at the successor's third phase")
	require.NotEmpty(t, s.Gates)
	assert.Equal(t, overseer.GateKindBudget, s.Gates[len(s.Gates)-1].Kind)
	d, err := c.DescribeWorkflow(ctx, tq, "")
	require.NoError(t, err)
	assert.NotEqual(t, run.GetRunID(), d.WorkflowExecution.RunID, "the gate is the successor's")
	code, _, stderr = overseerCLI(srv, "resume", tq, "--by", "reviewer", "--abort")
	require.Equal(t, 0, code, stderr)
}

// A list whose query names an overseer search attribute the namespace
// does not register is refused in one sentence saying what to register,
// not with the server's parse error.
func TestE2EAListOnANamespaceWithoutTheAttributeSaysWhatToRegister(t *testing.T) {
	srv := e2eServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ns := fmt.Sprint("e2e-no-sa-", time.Now().UnixNano())
	_, err := srv.Client().WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
		Namespace: ns, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour)})
	require.NoError(t, err)
	c, err := client.Dial(client.Options{HostPort: srv.FrontendHostPort(), Namespace: ns})
	require.NoError(t, err)
	defer c.Close()
	var listErr error
	eventually(t, "the new namespace to answer", 30*time.Second, func() bool {
		_, listErr = ops.List(ctx, c, ops.ListOptions{Query: ops.OverBudgetQuery, Namespace: ns})
		return errors.Is(listErr, ops.ErrUnregisteredAttribute)
	})
	assert.EqualError(t, listErr, "list jobs: the namespace has no OverseerBudget search attribute, so this list cannot be read: "+
		"register it (temporal operator search-attribute create --name OverseerBudget --type Keyword) and restart the workers; jobs set it from then on")
}
