package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

func scrapeMetrics(t *testing.T, m *worker.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.HTTPHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	return rec.Body.String()
}

func TestE2EMetricsAtZeroFromStartAndOpenGatesGauge(t *testing.T) {
	srv := e2eServer(t)
	m, err := worker.NewMetrics()
	require.NoError(t, err)
	// The worker's own client carries the metrics handler, as in overseer dev.
	wc, err := client.NewClientFromExisting(srv.Client(), client.Options{Namespace: srv.Namespace(), MetricsHandler: m.Handler()})
	require.NoError(t, err)
	defer wc.Close()
	tq := "e2e-open-gates"
	w, err := worker.New(wc, worker.Config{TaskQueue: tq, Namespace: srv.Namespace(), MetricsHandler: m.Handler(),
		OpenGatesEvery: 200 * time.Millisecond, Logger: zap.NewNop()})
	require.NoError(t, err)
	require.NotContains(t, scrapeMetrics(t, m), "overseer_judge_errors_total", "nothing before the worker starts")
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)

	labels := `namespace="` + srv.Namespace() + `",task_queue="` + tq + `",workflow_type="CoroJob"`
	body := scrapeMetrics(t, m)
	for _, want := range []string{
		`overseer_judge_errors_total{kind="rejected",` + labels + `} 0`,
		`overseer_pauses_total{cause="verdict",` + labels + `} 0`,
		`overseer_open_gates{` + labels + `} 0`,
		"# HELP overseer_judge_errors_total " + overseer.MetricHelp("overseer_judge_errors"),
	} {
		assert.Contains(t, body, want)
	}

	run := startJob(t, srv.Client(), tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	eventually(t, "the job to pause", 60*time.Second, func() bool { return status(t, srv.Client(), run.GetID()).Paused })
	eventually(t, "the open-gates gauge to count the paused job", 30*time.Second, func() bool {
		return strings.Contains(scrapeMetrics(t, m), `overseer_open_gates{`+labels+`} 1`)
	})
	body = scrapeMetrics(t, m)
	assert.Contains(t, body, `overseer_pauses_total{cause="verdict",`+labels+`} 1`)
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "overseer_") {
			assert.NotContains(t, line, `"none"`, "the SDK's none tags stay off the overseer's series")
		}
	}
	_, err = finish(t, srv.Client(), run, "e2e-reviewer")
	require.NoError(t, err)
	eventually(t, "the open-gates gauge to drop back", 30*time.Second, func() bool {
		return strings.Contains(scrapeMetrics(t, m), `overseer_open_gates{`+labels+`} 0`)
	})
}

// supervisionGoroutines counts the supervision observer goroutines alive.
func supervisionGoroutines() int {
	buf := make([]byte, 1<<22)
	n := runtime.Stack(buf, true)
	return strings.Count(string(buf[:n]), "supervision.(*dispatcher).run(")
}

func TestE2ESupervisionGoroutineStopsWithTheWorker(t *testing.T) {
	srv := e2eServer(t)
	base := supervisionGoroutines()
	w, err := worker.New(srv.Client(), worker.Config{TaskQueue: "e2e-supervision-lifecycle", Mode: overseer.ModeObserve, Logger: zap.NewNop()})
	require.NoError(t, err)
	require.NoError(t, w.Start())
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			w.Stop()
		}
	})
	run := startJob(t, srv.Client(), "e2e-supervision-lifecycle", workflows.JobInput{Objective: "x", Scenario: activities.OnTrack})
	require.NoError(t, run.Get(context.Background(), nil))
	assert.NotEmpty(t, status(t, srv.Client(), run.GetID()).InPhase, "the code phase was supervised")
	assert.Equal(t, base+1, supervisionGoroutines(), "the worker's observer goroutine runs")

	w.Stop()
	stopped = true
	eventually(t, "the observer goroutine to stop with the worker", 10*time.Second, func() bool {
		return supervisionGoroutines() == base
	})
}

func TestE2EDashboardStatusOfAContinuedRunIsItsOwn(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{Mode: overseer.ModeObserve})
	run := startJob(t, c, tq, workflows.JobInput{Objective: "Long job", Scenario: activities.OnTrack, ContinueAsNewAfter: 3})
	firstRun := run.GetRunID() // Get follows the chain and moves GetRunID to the last run
	require.NoError(t, run.Get(context.Background(), nil))
	require.NotEqual(t, firstRun, run.GetRunID(), "the job continued as new")

	b := dashboard.TemporalBackend{Client: c}
	first, err := b.Status(context.Background(), run.GetID(), firstRun)
	require.NoError(t, err)
	latest, err := b.Status(context.Background(), run.GetID(), "")
	require.NoError(t, err)
	assert.Equal(t, 3, first.Counters.Phases, "the first run's own status, not its successor's")
	assert.Equal(t, 8, latest.Counters.Phases)
}

func TestE2EStartRefusesARunningIDUnlessAttached(t *testing.T) {
	srv := e2eServer(t)
	tq := startWorker(t, srv, worker.Config{TaskQueue: "e2e-start-twice", AgentWork: 20 * time.Second})
	id := fmt.Sprintf("e2e-start-twice-%d", time.Now().UnixNano())
	code, stdout, stderr := overseerCLI(srv, "start", "--id", id, "--objective", "first", "--scenario", "on_track", "--task-queue", tq)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "Started job "+id)
	t.Cleanup(func() { _ = srv.Client().TerminateWorkflow(context.Background(), id, "", "test done") })

	code, stdout, stderr = overseerCLI(srv, "start", "--id", id, "--objective", "second", "--scenario", "looping", "--task-queue", tq)
	assert.Equal(t, 1, code)
	assert.Empty(t, stdout)
	assert.Regexp(t, `^overseer start: job "`+id+`" is already running \(run [0-9a-f-]+\); choose another --id, or add --attach to follow the running job\n$`, stderr)

	code, stdout, stderr = overseerCLI(srv, "start", "--id", id, "--objective", "second", "--scenario", "looping", "--task-queue", tq, "--attach")
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "already running")
	assert.Contains(t, stdout, "the new spec was not applied")
	eventually(t, "the objective in the status", 30*time.Second, func() bool {
		return status(t, srv.Client(), id).Objective == "first"
	})
}
