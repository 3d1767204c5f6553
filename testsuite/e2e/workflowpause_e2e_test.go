package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// Temporal's Workflow Pause (PauseWorkflowExecution, servers from v1.30.0
// with frontend.WorkflowPauseEnabled): an operator holds a job at a gate or
// mid-phase. `make test-pause` runs these tests on a v1.32.0 cluster
// (scripts/cluster.sh with OVERSEER_CLUSTER_SERVER=v1.32.0), which sets
// OVERSEER_E2E_WORKFLOW_PAUSE=1; everywhere else they are skipped.
const workflowPauseEnv = "OVERSEER_E2E_WORKFLOW_PAUSE"

// operatorIdentity is who pauses the jobs in these tests.
const operatorIdentity = "e2e-operator"

func requireWorkflowPause(t *testing.T) {
	t.Helper()
	if os.Getenv(workflowPauseEnv) != "1" {
		t.Skipf("needs a Temporal server with Workflow Pause enabled (v1.30.0 or later with frontend.WorkflowPauseEnabled): "+
			"`make test-pause` starts one (v1.32.0) and sets %s=1", workflowPauseEnv)
	}
}

// pauseWorkflow pauses job id as an operator would, through the
// PauseWorkflowExecution RPC.
func pauseWorkflow(t *testing.T, srv server, id, reason string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := srv.Client().WorkflowService().PauseWorkflowExecution(ctx, &workflowservice.PauseWorkflowExecutionRequest{
		Namespace: srv.Namespace(), WorkflowId: id, Identity: operatorIdentity, Reason: reason,
		RequestId: fmt.Sprintf("pause-%s-%d", id, time.Now().UnixNano()),
	})
	require.NoError(t, err, "PauseWorkflowExecution")
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_PAUSED, describeStatus(t, srv.Client(), id))
}

// unpauseWorkflow unpauses job id (UnpauseWorkflowExecution) and returns when.
func unpauseWorkflow(t *testing.T, srv server, id string) time.Time {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	at := time.Now()
	_, err := srv.Client().WorkflowService().UnpauseWorkflowExecution(ctx, &workflowservice.UnpauseWorkflowExecutionRequest{
		Namespace: srv.Namespace(), WorkflowId: id, Identity: operatorIdentity, Reason: "done",
		RequestId: fmt.Sprintf("unpause-%s-%d", id, time.Now().UnixNano()),
	})
	require.NoError(t, err, "UnpauseWorkflowExecution")
	return at
}

func describeStatus(t *testing.T, c client.Client, id string) enumspb.WorkflowExecutionStatus {
	t.Helper()
	d, err := c.DescribeWorkflow(context.Background(), id, "")
	require.NoError(t, err)
	return d.RawResponse.GetWorkflowExecutionInfo().GetStatus()
}

// historyOf is the job's history (its latest run).
func historyOf(t *testing.T, c client.Client, id string) []*historypb.HistoryEvent {
	t.Helper()
	var evs []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		evs = append(evs, e)
	}
	return evs
}

// since returns the events after the last one of type typ (all of them when
// there is none).
func since(evs []*historypb.HistoryEvent, typ enumspb.EventType) []*historypb.HistoryEvent {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].GetEventType() == typ {
			return evs[i+1:]
		}
	}
	return evs
}

func countEvents(evs []*historypb.HistoryEvent, typ enumspb.EventType) int {
	n := 0
	for _, e := range evs {
		if e.GetEventType() == typ {
			n++
		}
	}
	return n
}

// assertStatusSaysOperatorPaused checks, while job id is paused by an
// operator, that its status query is rejected at once (not timed out) and
// that `overseer status` shows what describe says of the pause instead.
func assertStatusSaysOperatorPaused(t *testing.T, srv server, id string, atGate bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, err := ops.Status(ctx, srv.Client(), id)
	took := time.Since(start)
	require.ErrorIs(t, err, ops.ErrOperatorPaused)
	var rejected *temporal.QueryRejectedError
	require.ErrorAs(t, err, &rejected, "the server rejects the query of a paused workflow")
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_PAUSED, rejected.QueryRejected().GetStatus())
	assert.Less(t, took, 10*time.Second, "rejected at once, not timed out")
	t.Logf("the status query of a paused job: %v after %s", rejected, took.Round(time.Millisecond))

	code, stdout, stderr := overseerCLI(srv, "status", id)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "paused by an operator (Temporal's Workflow Pause)")
	assert.Contains(t, stdout, operatorIdentity)
	assert.Contains(t, stdout, "temporal workflow unpause --workflow-id "+id)
	if atGate {
		assert.Regexp(t, `(?m)^At a gate\s+yes: waiting for a reviewer`, stdout)
	} else {
		assert.Regexp(t, `(?m)^At a gate\s+no`, stdout)
	}
	t.Logf("overseer status of a job paused by an operator:\n%s", stdout)
}

// httpGet fetches u and returns the status code and body.
func httpGet(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	return resp.StatusCode, string(b)
}

// An operator pauses a job at its open gate: a resume through the CLI, the
// dashboard's form and ops.Resume (the update itself) is refused in one sentence that says
// an operator paused it and how to unpause it; a resume signal sent meanwhile
// is queued and applied after the unpause, and the job then finishes as it
// would have.
func TestE2EWorkflowPauseAtAGate(t *testing.T) {
	requireWorkflowPause(t)
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{})
	run := startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	id := run.GetID()
	eventually(t, "the looping job to pause at a gate", 30*time.Second, func() bool { return status(t, c, id).Paused })
	gate := status(t, c, id).GateID
	require.NotEmpty(t, gate)

	eventually(t, "overseer list --paused to show the job", 20*time.Second, func() bool {
		code, stdout, _ := overseerCLI(srv, "list", "--paused")
		return code == 0 && strings.Contains(stdout, id)
	})

	// The dashboard's page of the open gate, loaded before the pause.
	dash := startDashboard(t, srv)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar, Timeout: 20 * time.Second}
	_, page := httpGet(t, browser, dash+"/job?id="+url.QueryEscape(id))
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	require.NotNil(t, m, "the gate's resume form: %s", page)
	token := html.UnescapeString(m[1])

	pauseWorkflow(t, srv, id, "incident 42: hold every job")
	assertStatusSaysOperatorPaused(t, srv, id, true)

	// The dashboard: the form posted from that page is refused in the
	// sentence, and the page now says it instead of showing the form.
	form := url.Values{"csrf": {token}, "id": {id}, "by": {"alice"}, "gate": {gate}, "action": {"continue"}}
	req, err := http.NewRequest(http.MethodPost, dash+"/job/resume", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := browser.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	assert.Contains(t, string(body), "an operator paused the workflow with Temporal&#39;s Workflow Pause by "+operatorIdentity)
	assert.Contains(t, string(body), "temporal workflow unpause --workflow-id "+id)
	_, page = httpGet(t, browser, dash+"/job?id="+url.QueryEscape(id))
	assert.Contains(t, page, "data-operator-paused>Job &#34;"+id+"&#34; is paused by an operator")
	assert.Contains(t, page, `Paused by an operator<`)
	assert.NotContains(t, page, `action="/job/resume"`, "no resume form while paused")
	// Held by the operator, it stays in the queue (from its summary in
	// visibility; its status query is refused), saying nobody can open
	// its gate until it is unpaused.
	eventually(t, "overseer list --paused to show the job an operator paused as held", 20*time.Second, func() bool {
		code, stdout, _ := overseerCLI(srv, "list", "--paused")
		return code == 0 && strings.Contains(stdout, id) && strings.Contains(stdout, "nobody until an operator unpauses it ("+ops.UnpauseCommand(id)+")")
	})
	// The open-gates gauge and the audit count it as open too.
	q := fmt.Sprintf("WorkflowId = '%s' AND OverseerPaused = true AND %s", id, overseer.OpenJobsQuery)
	counted, err := srv.Client().CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Query: q})
	require.NoError(t, err)
	assert.Equal(t, int64(1), counted.GetCount(), "the job an operator holds is an open job at a gate")

	code, stdout, stderr := overseerCLI(srv, "resume", id, "--by", "alice", "--note", "root cause first")
	assert.Equal(t, 1, code, stdout)
	assert.Contains(t, stderr, `resume job "`+id+`": an operator paused the workflow with Temporal's Workflow Pause by `+operatorIdentity)
	assert.Contains(t, stderr, "`temporal workflow unpause --workflow-id "+id+"`")
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line: %s", stderr)
	t.Logf("overseer resume of a job paused by an operator: %s", strings.TrimSpace(stderr))

	// The update itself, with the gate named (what the dashboard sends).
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = ops.Resume(ctx, c, id, overseer.ResumeRequest{By: "alice", Gate: gate})
	require.ErrorIs(t, err, ops.ErrOperatorPaused)
	assert.Contains(t, err.Error(), "then resume it again")
	t.Logf("the resume update of a job paused by an operator: %v", errors.Unwrap(err))

	// The signal path: queued while paused, applied after the unpause.
	require.NoError(t, c.SignalWorkflow(context.Background(), id, "", overseer.ResumeName,
		overseer.ResumeRequest{By: "signal-user", Gate: gate, Note: "sent while paused"}))
	h := historyOf(t, c, id)
	assert.Equal(t, 1, countEvents(since(h, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_PAUSED), enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED),
		"the signal is in the history")
	assert.Zero(t, countEvents(since(h, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_PAUSED), enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED),
		"no workflow task ran while paused")
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_PAUSED, describeStatus(t, c, id))

	unpauseWorkflow(t, srv, id)
	eventually(t, "the queued resume signal to close the gate", 30*time.Second, func() bool {
		for _, g := range status(t, c, id).Gates {
			if g.ID == gate {
				return g.ResumedAt != nil
			}
		}
		return false
	})
	s := status(t, c, id)
	g := s.Gates[0]
	assert.Equal(t, gate, g.ID)
	assert.Equal(t, "signal-user", g.By)
	assert.Equal(t, "sent while paused", g.Note)
	assert.Equal(t, overseer.ActionContinue, g.Action)

	res, err := finish(t, c, run, "signal-user")
	require.NoError(t, err)
	assert.Equal(t, "delivered", res.Outcome, "after the unpause the job goes on as before")
}

// A gate deadline that passes while an operator has paused the job: the
// deadline's timer fires during the pause (the server keeps timers running),
// and the deadline acts once the job is unpaused, counted from the gate's
// opening and said to be late.
func TestE2EWorkflowPauseGateDeadlineActsAfterUnpause(t *testing.T) {
	requireWorkflowPause(t)
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{})
	const after = 6 * time.Second
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: fmt.Sprintf("e2e-pause-deadline-%d", time.Now().UnixNano()), TaskQueue: tq,
		Memo: map[string]any{overseer.GateDeadlineMemoKey: "6s:abort"},
	}, workflows.JobWorkflowName, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	require.NoError(t, err)
	id := run.GetID()
	eventually(t, "the job to pause at a gate", 30*time.Second, func() bool { return status(t, c, id).Paused })
	open := status(t, c, id)
	require.NotNil(t, open.GateDeadline)
	deadline := *open.GateDeadline
	assert.Equal(t, open.PausedSince.Add(after), deadline)

	pauseWorkflow(t, srv, id, "hold past the gate's deadline")
	assertStatusSaysOperatorPaused(t, srv, id, true)
	// Past the deadline (the server's clock, as the timer counts it): the
	// timer fires while the job is paused, and nothing acts on it yet.
	eventually(t, "the gate's deadline timer to fire while paused", after+30*time.Second, func() bool {
		return countEvents(since(historyOf(t, c, id), enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_PAUSED), enumspb.EVENT_TYPE_TIMER_FIRED) > 0
	})
	// Held well past it, so that acting late is told from acting on time.
	eventually(t, "3 s past the deadline", 30*time.Second, func() bool { return time.Now().After(deadline.Add(3 * time.Second)) })
	h := since(historyOf(t, c, id), enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_PAUSED)
	assert.Zero(t, countEvents(h, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED), "no workflow task ran while paused")
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_PAUSED, describeStatus(t, c, id), "the deadline did not end the job while paused")

	unpaused := unpauseWorkflow(t, srv, id)
	var res workflows.JobResult
	err = run.Get(context.Background(), &res)
	require.Error(t, err, "aborted by the deadline, after the unpause")
	assert.Equal(t, overseer.AbortedErrorType, overseer.ErrorType(err), "%v", err)
	s := status(t, c, id)
	require.NotEmpty(t, s.Gates)
	g := s.Gates[len(s.Gates)-1]
	assert.Equal(t, open.GateID, g.ID)
	assert.True(t, g.Expired)
	assert.Equal(t, "deadline 6s: abort", g.ExpiredBy)
	require.NotNil(t, g.ResumedAt)
	assert.False(t, g.ResumedAt.Before(unpaused.Add(-time.Second)), "acted after the unpause (%s), at %s", unpaused, g.ResumedAt)
	assert.GreaterOrEqual(t, g.ExpiredLate, 2*time.Second, "said to be late: it was due at %s", deadline)
	t.Logf("deadline due %s, unpaused %s, acted %s (%s late)", deadline.Format(time.RFC3339Nano), unpaused.Format(time.RFC3339Nano),
		g.ResumedAt.Format(time.RFC3339Nano), g.ExpiredLate)
}

// midPhaseWorkflow is a three-phase job whose code phase runs until the
// test lets it finish: the test pauses it while that phase runs.
const midPhaseWorkflow = "e2e.MidPhaseJob"

func midPhaseJob(ctx workflow.Context) ([]string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 2 * time.Minute})
	var out []string
	for _, phase := range []string{"spec", "code", "test"} {
		var r string
		if err := workflow.ExecuteActivity(ctx, "midphase."+phase).Get(ctx, &r); err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// midPhaseActivities are the job's phases; code waits for release.
type midPhaseActivities struct {
	started  chan struct{}
	release  chan struct{}
	codeRuns atomic.Int32
}

func (a *midPhaseActivities) register(r sdkworker.Registry) {
	r.RegisterWorkflowWithOptions(midPhaseJob, workflow.RegisterOptions{Name: midPhaseWorkflow})
	for _, phase := range []string{"spec", "code", "test"} {
		r.RegisterActivityWithOptions(func(ctx context.Context) (string, error) {
			if phase == "code" {
				if a.codeRuns.Add(1) == 1 {
					close(a.started)
				}
				select {
				case <-a.release:
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}
			return phase + " done (attempt " + fmt.Sprint(activity.GetInfo(ctx).Attempt) + ")", nil
		}, activity.RegisterOptions{Name: "midphase." + phase})
	}
}

// An operator pauses a job while its code phase runs: the status says it is
// paused by an operator; the phase finishes during the pause, and after the
// unpause the job completes as the same job does unpaused — same result,
// same phases and assessments, no gate.
func TestE2EWorkflowPauseMidPhase(t *testing.T) {
	requireWorkflowPause(t)
	srv := e2eServer(t)
	c := srv.Client()
	acts := &midPhaseActivities{started: make(chan struct{}), release: make(chan struct{})}
	tq, _ := startWorkersWith(t, srv, worker.Config{Modes: map[string]overseer.Mode{midPhaseWorkflow: overseer.ModeManage}}, acts.register)

	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: fmt.Sprintf("e2e-pause-midphase-%d", time.Now().UnixNano()), TaskQueue: tq,
	}, midPhaseWorkflow)
	require.NoError(t, err)
	id := run.GetID()
	select {
	case <-acts.started:
	case <-time.After(30 * time.Second):
		t.Fatal("timed out after 30s waiting for the code phase to start")
	}
	before := status(t, c, id)
	assert.Equal(t, "spec", before.Phase, "the code phase runs")
	assert.False(t, before.Paused)

	pauseWorkflow(t, srv, id, "hold mid-phase")
	assertStatusSaysOperatorPaused(t, srv, id, false)

	// The phase finishes while the job is paused; nothing else runs.
	close(acts.release)
	eventually(t, "the code phase to complete while paused", 30*time.Second, func() bool {
		return countEvents(since(historyOf(t, c, id), enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_PAUSED), enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) > 0
	})
	h := since(historyOf(t, c, id), enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_PAUSED)
	assert.Zero(t, countEvents(h, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED), "no workflow task ran while paused")
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_PAUSED, describeStatus(t, c, id))

	unpauseWorkflow(t, srv, id)
	var got []string
	require.NoError(t, run.Get(context.Background(), &got))
	assert.Equal(t, []string{"spec done (attempt 1)", "code done (attempt 1)", "test done (attempt 1)"}, got)
	assert.Equal(t, int32(1), acts.codeRuns.Load(), "the code phase ran once")
	paused := status(t, c, id)

	// The same job, never paused.
	ctrl, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: id + "-unpaused", TaskQueue: tq,
	}, midPhaseWorkflow)
	require.NoError(t, err)
	var want []string
	require.NoError(t, ctrl.Get(context.Background(), &want))
	unpaused := status(t, c, ctrl.GetID())
	assert.Equal(t, want, got)
	assert.Equal(t, unpaused.Counters.Phases, paused.Counters.Phases)
	assert.Equal(t, 3, paused.Counters.Phases)
	assert.Equal(t, unpaused.Counters.Assessments, paused.Counters.Assessments)
	assert.Equal(t, unpaused.Band, paused.Band)
	assert.Equal(t, "test", paused.Phase)
	assert.Zero(t, paused.Counters.Pauses, "no gate opened")
	assert.Empty(t, paused.Gates)
}

// The dynamic configuration make test-pause runs the server with is the
// cluster's, plus Workflow Pause.
func TestE2EWorkflowPauseDynamicConfig(t *testing.T) {
	root := filepath.Join("..", "..")
	base := string(mustRead(t, filepath.Join(root, "deploy", "dynamicconfig", "development-sql.yaml")))
	pause := string(mustRead(t, filepath.Join(root, "deploy", "dynamicconfig", "development-sql-workflow-pause.yaml")))
	settings := func(s string) []string {
		var out []string
		for _, line := range strings.Split(s, "\n") {
			if line != "" && !strings.HasPrefix(line, "#") {
				out = append(out, line)
			}
		}
		return out
	}
	want := append(settings(base), "frontend.WorkflowPauseEnabled:", "  - value: true", "    constraints: {}")
	assert.Equal(t, want, settings(pause))
}
