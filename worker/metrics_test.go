package worker_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/testsuite/stalltest"
	"github.com/corohq/temporal-overseer/worker"
)

func TestMetricsExposition(t *testing.T) {
	m, err := worker.NewMetrics()
	require.NoError(t, err)
	h := m.Handler().WithTags(map[string]string{"workflow_type": "CoroJob"})
	h.WithTags(map[string]string{"mode": "manage", "band": "on_track", "outcome": "ok"}).
		Counter("overseer_assessments").Inc(2)
	h.Timer("overseer_judge_latency").Record(3 * time.Millisecond)
	h.WithTags(map[string]string{"action": "continue"}).Timer(overseer.MetricGateWait).Record(2 * time.Hour)

	srv, err := worker.ServeMetrics("127.0.0.1:0", m, nil)
	require.NoError(t, err)
	defer srv.Close()
	resp, err := http.Get(srv.URL())
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	for _, want := range []string{
		`overseer_assessments_total{band="on_track",mode="manage",outcome="ok",workflow_type="CoroJob"} 2`,
		`overseer_judge_latency_seconds_bucket{workflow_type="CoroJob",le="0.005"} 1`,
		`overseer_judge_latency_seconds_count{workflow_type="CoroJob"} 1`,
		`overseer_gate_wait_seconds_bucket{action="continue",workflow_type="CoroJob",le="14400"} 1`,
		`overseer_gate_wait_seconds_bucket{action="continue",workflow_type="CoroJob",le="3600"} 0`,
		"go_goroutines", "process_cpu_seconds_total",
	} {
		assert.Contains(t, string(body), want)
	}
	require.NoError(t, m.Shutdown(t.Context()))
}

// A client that announces a body and stalls is cut by the read timeout,
// not kept for ever.
func TestMetricsServerCutsAStalledBody(t *testing.T) {
	worker.SetMetricsReadTimeout(t, 100*time.Millisecond)
	m, err := worker.NewMetrics()
	require.NoError(t, err)
	srv, err := worker.ServeMetrics("127.0.0.1:0", m, nil)
	require.NoError(t, err)
	defer srv.Close()
	assert.True(t, stalltest.BodyCut(t, srv.Addr().String(), http.MethodGet, "/metrics", 10*time.Second), "the server closed the stalled connection")
	require.NoError(t, m.Shutdown(t.Context()))
}

func scrape(t *testing.T, m *worker.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.HTTPHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	return rec.Body.String()
}

func TestOverseerSeriesHaveHelpAndNoSDKNoneTags(t *testing.T) {
	m, err := worker.NewMetrics()
	require.NoError(t, err)
	// The tags the SDK puts on a workflow's metrics handler.
	h := m.Handler().WithTags(map[string]string{"namespace": "default", "client_name": "temporal_go", "worker_type": "none",
		"activity_type": "none", "task_queue": "q", "workflow_type": "CoroJob"})
	h.WithTags(map[string]string{"kind": "rejected"}).Counter("overseer_judge_errors").Inc(1)
	h.Counter("temporal_request").Inc(1)
	body := scrape(t, m)
	assert.Contains(t, body, `overseer_judge_errors_total{kind="rejected",namespace="default",task_queue="q",workflow_type="CoroJob"} 1`)
	assert.Contains(t, body, "# HELP overseer_judge_errors_total "+overseer.MetricHelp("overseer_judge_errors"))
	assert.Contains(t, body, `temporal_request_total{activity_type="none"`, "the SDK's own series keep their tags")
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "overseer_") {
			assert.NotContains(t, line, `"none"`, line)
		}
	}
}

// countingClient answers CountWorkflow with a fixed count per workflow type.
type countingClient struct {
	client.Client
	mu      sync.Mutex
	counts  map[string]int64
	queries []string
}

func (c *countingClient) CountWorkflow(_ context.Context, r *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queries = append(c.queries, r.Query)
	for wt, n := range c.counts {
		if strings.Contains(r.Query, "WorkflowType = '"+wt+"'") {
			return &workflowservice.CountWorkflowExecutionsResponse{Count: n}, nil
		}
	}
	return &workflowservice.CountWorkflowExecutionsResponse{}, nil
}

func (c *countingClient) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queries)
}

func TestMetricsPluginZeroesCountersAndCountsOpenGatesUntilStop(t *testing.T) {
	m, err := worker.NewMetrics()
	require.NoError(t, err)
	fc := &countingClient{counts: map[string]int64{"CoroJob": 2}}
	p, err := worker.NewMetricsPlugin(worker.MetricsPluginOptions{Handler: m.Handler(), Namespace: "ns", Client: fc, OpenGatesEvery: 10 * time.Millisecond})
	require.NoError(t, err)

	assert.NotContains(t, scrape(t, m), "overseer_", "nothing before the worker starts")
	reg := &sdkworker.PluginConfigureWorkerRegistryOptions{}
	require.NoError(t, p.ConfigureWorker(t.Context(), sdkworker.PluginConfigureWorkerOptions{
		WorkerInstanceKey: "w1", TaskQueue: "jobs", WorkerOptions: &sdkworker.Options{}, WorkerRegistryOptions: reg}))
	reg.OnRegisterWorkflow(func(workflow.Context) error { return nil }, workflow.RegisterOptions{Name: "CoroJob"})
	reg.OnRegisterWorkflow(OtherJob, workflow.RegisterOptions{})
	reg.OnRegisterWorkflow(func(workflow.Context) error { return nil }, workflow.RegisterOptions{Name: "overseer.Learn"})
	require.NoError(t, p.StartWorker(t.Context(), sdkworker.PluginStartWorkerOptions{WorkerInstanceKey: "w1"},
		func(context.Context, sdkworker.PluginStartWorkerOptions) error { return nil }))

	body := scrape(t, m)
	for _, want := range []string{
		`overseer_judge_errors_total{kind="rejected",namespace="ns",task_queue="jobs",workflow_type="CoroJob"} 0`,
		`overseer_judge_errors_total{kind="invalid_request",namespace="ns",task_queue="jobs",workflow_type="OtherJob"} 0`,
		`overseer_assessments_total{mode="manage",namespace="ns",outcome="error",task_queue="jobs",workflow_type="CoroJob"} 0`,
		`overseer_pauses_total{cause="verdict",namespace="ns",task_queue="jobs",workflow_type="CoroJob"} 0`,
		"# HELP overseer_open_gates " + overseer.MetricHelp(overseer.MetricOpenGates),
	} {
		assert.Contains(t, body, want)
	}
	assert.NotContains(t, body, `workflow_type="overseer.Learn"`, "the overseer's own workflows are never assessed")
	require.Eventually(t, func() bool {
		return strings.Contains(scrape(t, m), `overseer_open_gates{namespace="ns",task_queue="jobs",workflow_type="CoroJob"} 2`)
	}, 5*time.Second, 10*time.Millisecond, "the gauge follows visibility")
	assert.Contains(t, scrape(t, m), `overseer_open_gates{namespace="ns",task_queue="jobs",workflow_type="OtherJob"} 0`)
	fc.mu.Lock()
	assert.Contains(t, fc.queries[0], overseer.OpenJobsQuery+" AND OverseerPaused = true", "open jobs, an operator's Workflow Pause included")
	assert.Contains(t, fc.queries[0], "TaskQueue = 'jobs'")
	fc.mu.Unlock()

	stopped := false
	p.StopWorker(t.Context(), sdkworker.PluginStopWorkerOptions{WorkerInstanceKey: "w1"},
		func(context.Context, sdkworker.PluginStopWorkerOptions) { stopped = true })
	assert.True(t, stopped, "the worker itself is stopped")
	n := fc.calls()
	// StopWorker waited for the counting goroutine: no count after it returned.
	deadline := time.Now().Add(100 * time.Millisecond)
	for time.Now().Before(deadline) {
		require.Equal(t, n, fc.calls(), "no count after the worker stopped")
		runtime.Gosched()
	}
}

func OtherJob(workflow.Context) error { return nil }
