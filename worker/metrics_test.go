package worker_test

import (
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
)

func TestMetricsExposition(t *testing.T) {
	m, err := worker.NewMetrics()
	require.NoError(t, err)
	h := m.Handler().WithTags(map[string]string{"workflow_type": "CoroJob"})
	h.WithTags(map[string]string{overseer.TagMode: "manage", overseer.TagBand: "on_track", overseer.TagOutcome: "ok"}).
		Counter(overseer.MetricAssessments).Inc(2)
	h.Timer(overseer.MetricJudgeLatency).Record(3 * time.Millisecond)
	h.WithTags(map[string]string{overseer.TagAction: "continue"}).Timer(overseer.MetricGateWait).Record(2 * time.Hour)

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
