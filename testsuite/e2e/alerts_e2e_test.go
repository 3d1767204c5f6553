package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// PrometheusEnv overrides the Prometheus binary the alerts' tests run
// (default: Debian's /usr/bin/prometheus, then prometheus on PATH).
const PrometheusEnv = "OVERSEER_PROMETHEUS"

// alertRules is the production rules file: the e2e test loads it as it is,
// the one promtool checks and unit-tests in make lint.
var alertRules = filepath.Join("..", "..", "deploy", "prometheus", "overseer-alerts.yml")

// requirePrometheus returns the Prometheus binary, skipping the test
// without one, except under CI=true (.ci/run installs Debian's package),
// where a missing one fails it.
func requirePrometheus(t *testing.T) string {
	t.Helper()
	if p := os.Getenv(PrometheusEnv); p != "" {
		return p
	}
	for _, p := range []string{"/usr/bin/prometheus", "prometheus"} {
		if exe, err := exec.LookPath(p); err == nil {
			return exe
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("no prometheus binary (apt-get install -y prometheus, or set $%s)", PrometheusEnv)
	}
	t.Skipf("no prometheus binary: apt-get install -y prometheus, or set $%s", PrometheusEnv)
	return ""
}

// listeningOn is Prometheus's log line naming the address it listens on,
// port 0 resolved: the test hands it 127.0.0.1:0 and reads the port back,
// so no free-port guess can race another process.
var listeningOn = regexp.MustCompile(`msg="Listening on" address=(\S+)`)

// startPrometheus runs Prometheus with the production alert rules, a
// one-second scrape and evaluation interval, scraping metricsURL as the
// job overseer-worker (the job the rules name). It returns its base URL.
// It stops when the test ends.
func startPrometheus(t *testing.T, exe, metricsURL string) string {
	t.Helper()
	rules, err := filepath.Abs(alertRules)
	require.NoError(t, err)
	u, err := url.Parse(metricsURL)
	require.NoError(t, err)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - %q
scrape_configs:
  - job_name: overseer-worker
    metrics_path: %q
    static_configs:
      - targets: [%q]
`, rules, u.Path, u.Host)
	cfgPath := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o600))

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, exe, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:0", "--log.level=info")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	var mu sync.Mutex
	var logs strings.Builder
	addr := make(chan string, 1)
	scanDone := make(chan struct{})
	go func() {
		defer close(scanDone)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			mu.Lock()
			logs.WriteString(line + "\n")
			mu.Unlock()
			if m := listeningOn.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		<-scanDone
		if t.Failed() {
			mu.Lock()
			t.Logf("prometheus log:\n%s", logs.String())
			mu.Unlock()
		}
	})
	var base string
	select {
	case a := <-addr:
		base = "http://" + a
	case <-time.After(30 * time.Second):
		t.Fatal("prometheus did not say where it listens within 30s")
	}
	eventually(t, "prometheus to be ready", 30*time.Second, func() bool {
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base
}

// promAlert is one alert of Prometheus's /api/v1/alerts.
type promAlert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
}

// alerts returns Prometheus's pending and firing alerts named name whose
// labels include match.
func alerts(t *testing.T, base, name string, match map[string]string) []promAlert {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/alerts")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var body struct {
		Status string `json:"status"`
		Data   struct {
			Alerts []promAlert `json:"alerts"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "success", body.Status)
	var out []promAlert
next:
	for _, a := range body.Data.Alerts {
		if a.Labels["alertname"] != name {
			continue
		}
		for k, v := range match {
			if a.Labels[k] != v {
				continue next
			}
		}
		out = append(out, a)
	}
	return out
}

// switchableJudge answers as the heuristic judge, or, while failing is
// set, with an invalid answer (an assessment that fails at once, not
// retried).
func switchableJudge(failing *atomic.Bool) jev.Judge {
	return jev.JudgeFunc(func(ctx context.Context, req jev.Request) (*jev.Response, error) {
		if failing.Load() {
			return nil, fmt.Errorf("%w: the alerts test's judge is down", jev.ErrInvalidAnswer)
		}
		return overseer.HeuristicJudge{}.Decide(ctx, req)
	})
}

// TestAlertFiresAndResolvesOnRealPrometheus runs Debian's Prometheus with
// the production rules (deploy/prometheus/overseer-alerts.yml) scraping a
// real worker's /metrics, and drives OverseerJudgeFailing: while the judge
// fails every assessment, the alert goes pending and then fires (for: 1m);
// once the judge answers again and answers outnumber failures in the rule's
// 5-minute window, it resolves. The worker and Prometheus are the test's
// own, so the cluster target would only repeat it.
func TestAlertFiresAndResolvesOnRealPrometheus(t *testing.T) {
	if onCluster() {
		t.Skipf("runs its own worker and Prometheus against the dev server; %s=%s would repeat it", targetEnv, targetCluster)
	}
	exe := requirePrometheus(t)
	srv := e2eServer(t)
	var failing atomic.Bool
	failing.Store(true)
	tq, metricsURL := meteredWorker(t, srv, worker.Config{Judge: switchableJudge(&failing), Mode: overseer.ModeObserve, AgentWork: 10 * time.Millisecond})
	prom := startPrometheus(t, exe, metricsURL)

	// Jobs run back to back until the test ends: observe mode never
	// pauses, so each ends on its own, assessed or not.
	ctx, stop := context.WithCancel(context.Background())
	var jobs sync.WaitGroup
	var started atomic.Int64
	t.Cleanup(func() { stop(); jobs.Wait() })
	c := srv.Client()
	for range 2 {
		jobs.Go(func() {
			for n := 0; ctx.Err() == nil && n < 2000; n++ { // bounded: the test's deadlines end it far sooner
				run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("alerts-%d", time.Now().UnixNano()), TaskQueue: tq},
					workflows.JobWorkflowName, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.OnTrack})
				if err != nil {
					continue
				}
				started.Add(1)
				_ = run.Get(ctx, nil)
			}
		})
	}

	match := map[string]string{"task_queue": tq, "workflow_type": workflows.JobWorkflowName}
	state := func() string {
		as := alerts(t, prom, "OverseerJudgeFailing", match)
		if len(as) == 0 {
			return "inactive"
		}
		require.Len(t, as, 1, "one alert per namespace, task queue and type: %v", as)
		return as[0].State
	}
	// Pending first: the rule's for: 1m holds it back.
	var seen []string
	eventually(t, "OverseerJudgeFailing to fire while the judge fails", 4*time.Minute, func() bool {
		s := state()
		if len(seen) == 0 || seen[len(seen)-1] != s {
			seen = append(seen, s)
		}
		return s == "firing"
	})
	require.Contains(t, seen, "pending", "the alert waits for its for: before firing (states seen: %v)", seen)
	as := alerts(t, prom, "OverseerJudgeFailing", match)
	require.Equal(t, "page", as[0].Labels["severity"])
	require.Equal(t, "docs/operations-alerts.md#overseerjudgefailing", as[0].Annotations["runbook"])
	require.Contains(t, as[0].Annotations["summary"], workflows.JobWorkflowName+" on "+tq)
	// No other queue's or rule's alert fires from this worker's series: the
	// zeroed counters of a healthy type page no one.
	for _, name := range []string{"OverseerNotificationsFailing", "OverseerGatePastDeadline", "OverseerPausedOnJudgeFailures", "OverseerWorkerDown"} {
		require.Empty(t, alerts(t, prom, name, nil), name)
	}

	failing.Store(false)
	eventually(t, "OverseerJudgeFailing to resolve once the judge answers", 4*time.Minute, func() bool { return state() == "inactive" })
	require.Positive(t, started.Load())
}
