package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/learn"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

var grafanaDashboard = filepath.Join("..", "..", "deploy", "grafana", "overseer-dashboard.json")

// dashboardQueries returns every PromQL expression of a Grafana dashboard:
// its panels' targets (rows' nested panels included) and its query
// variables (label_values(SELECTOR, LABEL) as SELECTOR and LABEL).
func dashboardQueries(t *testing.T, path string) (exprs []string, variables [][2]string) {
	t.Helper()
	var d struct {
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	require.NoError(t, json.Unmarshal(mustRead(t, path), &d))
	type panel struct {
		Panels  []json.RawMessage `json:"panels"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var walk func([]json.RawMessage)
	walk = func(ps []json.RawMessage) {
		for _, raw := range ps {
			var p panel
			require.NoError(t, json.Unmarshal(raw, &p))
			for _, tg := range p.Targets {
				require.NotEmpty(t, tg.Expr, "a target without an expression")
				exprs = append(exprs, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	labelValues := regexp.MustCompile(`^label_values\((.*),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		require.NoError(t, json.Unmarshal(v.Query, &q))
		m := labelValues.FindStringSubmatch(q.Query)
		require.NotNil(t, m, "a variable query this test reads: %q", q.Query)
		variables = append(variables, [2]string{m[1], m[2]})
	}
	return exprs, variables
}

// grafanaVars replaces Grafana's variables with values Prometheus takes.
var grafanaVars = strings.NewReplacer("$__rate_interval", "1m", "$__interval", "1m", "$__range", "1h",
	"$namespace", ".*", "$task_queue", ".*", "$workflow_type", ".*")

// promqlKeywords are the words of PromQL that are not metric names.
var promqlKeywords = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true,
	"group_right": true, "and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true}

// promqlAggregations are PromQL's aggregation operators: one may come
// before its by or without list, not only before "(".
var promqlAggregations = map[string]bool{"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true,
	"stdvar": true, "count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true}

// promqlNames tokenizes a PromQL expression: the metric names it selects,
// and the label names it uses (in matchers and in by, without, on,
// ignoring and group_ lists). A simple lexer: strings and range brackets
// are skipped, an identifier before "(" is a function or aggregation.
func promqlNames(expr string) (metrics, labels []string) {
	isIdent := func(c byte, first bool) bool {
		return c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || !first && c >= '0' && c <= '9'
	}
	next := func(i int) int { // the index of the next non-space byte
		for i < len(expr) && (expr[i] == ' ' || expr[i] == '\n' || expr[i] == '\t') {
			i++
		}
		return i
	}
	inBraces, labelList := false, false
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '"' || c == '\'' || c == '`':
			j := i + 1
			for j < len(expr) && expr[j] != c {
				if expr[j] == '\\' {
					j++
				}
				j++
			}
			i = j + 1
		case c == '[':
			i = strings.IndexByte(expr[i:], ']') + i + 1
		case c == '{':
			inBraces = true
			i++
		case c == '}':
			inBraces = false
			i++
		case c == ')':
			labelList = false
			i++
		case c >= '0' && c <= '9' || c == '.':
			for i < len(expr) && (expr[i] >= '0' && expr[i] <= '9' || expr[i] == '.' || expr[i] == 'e') {
				i++
			}
		case isIdent(c, true):
			j := i
			for j < len(expr) && isIdent(expr[j], j == i) {
				j++
			}
			word := expr[i:j]
			k := next(j)
			switch {
			case inBraces || labelList:
				labels = append(labels, word)
			case promqlKeywords[strings.ToLower(word)]:
				if k < len(expr) && expr[k] == '(' && word != "and" && word != "or" && word != "unless" {
					labelList = true
					j = k + 1
				}
			case k < len(expr) && expr[k] == '(' || promqlAggregations[word]:
				// a function or an aggregation
			default:
				metrics = append(metrics, word)
			}
			i = j
		default:
			i++
		}
	}
	return metrics, labels
}

// TestPromQLNames checks the tokenizer the dashboard test relies on.
func TestPromQLNames(t *testing.T) {
	m, l := promqlNames(`histogram_quantile(0.9, sum by (le, action) (rate(overseer_gate_wait_seconds_bucket{namespace=~"$ns",task_queue="a{b}"}[5m])))
		/ on (namespace) group_left (job_type) max without (instance) (up) > 0.5 and other_metric`)
	assert.Equal(t, []string{"overseer_gate_wait_seconds_bucket", "up", "other_metric"}, m)
	assert.Equal(t, []string{"le", "action", "namespace", "task_queue", "namespace", "job_type", "instance"}, l)
}

// TestGrafanaDashboardQueriesNameWhatALiveWorkerExports runs a worker with
// metrics through what the dashboard shows (a gate a reviewer continues,
// one aborted, an observed job, a learn round on their outcomes), then
// checks every PromQL expression of deploy/grafana/overseer-dashboard.json:
// each metric it names is a series the worker's /metrics serves, each
// label it names is one of that series', and a real Prometheus scraping
// that worker evaluates it without error.
func TestGrafanaDashboardQueriesNameWhatALiveWorkerExports(t *testing.T) {
	if onCluster() {
		t.Skipf("runs its own worker and Prometheus against the dev server; %s=%s would repeat it", targetEnv, targetCluster)
	}
	exe := requirePrometheus(t)
	srv := e2eServer(t)
	ctx := context.Background()

	m, err := worker.NewMetrics()
	require.NoError(t, err)
	ms, err := worker.ServeMetrics("127.0.0.1:0", m, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ms.Close() })
	tq := "e2e-grafana-" + fmt.Sprint(time.Now().UnixNano())
	cfg := worker.Config{Address: srv.FrontendHostPort(), Namespace: srv.Namespace(), TaskQueue: tq, MetricsHandler: m.Handler(),
		Logger: zap.NewNop(), JudgeConfig: worker.JudgeConfig{Kind: worker.JudgeHeuristic}, AgentWork: 20 * time.Millisecond,
		OpenGatesEvery: 500 * time.Millisecond}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	c, err := worker.Dial(dctx, cfg)
	cancel()
	require.NoError(t, err)
	t.Cleanup(c.Close)
	w, err := worker.New(c, cfg)
	require.NoError(t, err)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	// The learn workflow on the same metered client, as `overseer worker`
	// hosts it, so that its series reach the same /metrics.
	ltq := tq + "-learn"
	lw := sdkworker.New(c, ltq, sdkworker.Options{})
	learn.Register(lw, c)
	require.NoError(t, lw.Start())
	t.Cleanup(lw.Stop)
	prom := startPrometheus(t, exe, ms.URL())

	sc := srv.Client()
	continued := startJob(t, sc, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	aborted := startJob(t, sc, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	observed := startJobWithMemo(t, sc, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.OnTrack}, overseer.ModeObserve)
	eventually(t, aborted.GetID()+" to pause", 30*time.Second, func() bool { return status(t, sc, aborted.GetID()).Paused })
	eventually(t, "the open gates gauge to count the paused jobs", 30*time.Second, func() bool {
		return sum(scrape(t, ms.URL())["overseer_open_gates"], `task_queue="`+tq+`"`) >= 1
	})
	_, err = sc.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: aborted.GetID(), UpdateName: overseer.ResumeName,
		Args: []any{overseer.ResumeRequest{By: "grafana-reviewer", Action: overseer.ActionAbort}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.Error(t, aborted.Get(ctx, nil))
	_, err = finish(t, sc, continued, "grafana-reviewer")
	require.NoError(t, err)
	require.NoError(t, observed.Get(ctx, nil))

	where := fmt.Sprintf("TaskQueue = '%s'", tq)
	eventually(t, "the three jobs to be visible as closed", 30*time.Second, func() bool {
		n, err := sc.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: srv.Namespace(),
			Query: where + " AND ExecutionStatus != 'Running'"})
		return err == nil && n.GetCount() == 3
	})
	code, _, errOut := overseerCLI(srv, "learn", "run", "--type", workflows.JobWorkflowName, "--where", where, "--task-queue", ltq, "--json")
	require.Equal(t, 0, code, errOut)

	var got map[string][]labeled
	eventually(t, "the learn round's series on /metrics", 10*time.Second, func() bool {
		got = scrape(t, ms.URL())
		// The promise is the shipped policy's: the current model makes one.
		return len(got[overseer.MetricLearnFalsePauseRate]) > 0 && len(got[overseer.MetricLearnCatchRate]) > 0 &&
			len(got[overseer.MetricLearnPromisedFalsePause]) > 0
	})
	labelsOf := map[string]map[string]bool{}
	pair := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)
	for name, series := range got {
		labelsOf[name] = map[string]bool{}
		for _, s := range series {
			for _, p := range pair.FindAllStringSubmatch(s.labels, -1) {
				labelsOf[name][p[1]] = true
			}
		}
	}
	// Labels Prometheus adds to every scraped series.
	targetLabels := map[string]bool{"job": true, "instance": true}

	exprs, variables := dashboardQueries(t, grafanaDashboard)
	require.NotEmpty(t, exprs)
	check := func(t *testing.T, expr string, extraLabels ...string) {
		metrics, labels := promqlNames(grafanaVars.Replace(expr))
		require.NotEmpty(t, metrics, "the expression selects a metric")
		known := map[string]bool{}
		for _, name := range metrics {
			_, exported := got[name]
			require.True(t, exported, "%s is a series the worker exports", name)
			for l := range labelsOf[name] {
				known[l] = true
			}
		}
		for _, l := range append(labels, extraLabels...) {
			assert.True(t, known[l] || targetLabels[l], "label %s is one of %v's", l, metrics)
		}
	}
	for _, expr := range exprs {
		t.Run(expr, func(t *testing.T) {
			check(t, expr)
			// Prometheus itself parses and evaluates it.
			resp, err := http.Get(prom + "/api/v1/query?query=" + url.QueryEscape(grafanaVars.Replace(expr)))
			require.NoError(t, err)
			defer resp.Body.Close()
			var body struct {
				Status string `json:"status"`
				Error  string `json:"error"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
			assert.Equal(t, "success", body.Status, body.Error)
		})
	}
	for _, v := range variables {
		t.Run("label_values "+v[0]+" "+v[1], func(t *testing.T) { check(t, v[0], v[1]) })
	}
	// The dashboard covers what the issue asks of it.
	all := strings.Join(exprs, "\n")
	for _, name := range []string{"overseer_assessments_total", "overseer_open_gates", "overseer_gate_wait_seconds_bucket",
		"overseer_gate_escalations_total", "overseer_gates_expired_total", "overseer_notifications_failed_total",
		"overseer_judge_latency_seconds_bucket", "overseer_judge_errors_total", "overseer_learn_promotions_total",
		"overseer_learn_refusals_total", overseer.MetricLearnFalsePauseRate, overseer.MetricLearnPromisedFalsePause} {
		assert.Contains(t, all, name)
	}
	assert.True(t, slices.ContainsFunc(exprs, func(e string) bool { return strings.Contains(e, "band") }), "bands per type")
}
