package e2e_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

var screenshots = flag.Bool("screenshots", false, "write the dashboard screenshots into docs/ (TestDashboardInChromium, TestDashboardInChromiumOnAnAgentLoop)")

// ChromiumEnv overrides the Chromium binary the browser test drives.
const ChromiumEnv = "OVERSEER_CHROMIUM"

// requireChromium returns Debian's chromium (or $OVERSEER_CHROMIUM); the
// test fails without it under CI=true and is skipped elsewhere.
func requireChromium(t *testing.T) string {
	t.Helper()
	p := os.Getenv(ChromiumEnv)
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and Chromium is missing (%v): .ci/run installs Debian's chromium", err)
		}
		t.Skipf("skipping: no Chromium at %s (apt-get install chromium, or set %s)", p, ChromiumEnv)
	}
	return p
}

// browser starts headless Chromium with a fresh profile and no network
// beyond this machine's loopback servers.
func browser(t *testing.T, exe string) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	}
	// The first call starts the browser and binds it to ctx; the steps run
	// under a deadline derived from it. A Chromium that exits before it
	// listens (once in CI, with a Temporal cluster and PostgreSQL on the
	// same 2 cores: "chrome failed to start") is started again, up to
	// three times, saying so; that is the browser's start, not the test.
	var err error
	for attempt := 1; attempt <= chromiumStarts; attempt++ {
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelBrowser := chromedp.NewContext(actx)
		if err = chromedp.Do(ctx); err == nil {
			t.Cleanup(func() { cancelBrowser(); cancelAlloc() })
			ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			t.Cleanup(cancel)
			return ctx
		}
		cancelBrowser()
		cancelAlloc()
		if !strings.Contains(err.Error(), "chrome failed to start") {
			break
		}
		t.Logf("Chromium exited before it listened (start %d of %d): %v", attempt, chromiumStarts, firstLine(err.Error()))
	}
	require.NoError(t, err, "start Chromium")
	return nil
}

// chromiumStarts bounds the starts of a Chromium that exits at launch.
const chromiumStarts = 3

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// tokenJudge is the heuristic judge reporting token usage, whose first
// answer is invalid (so the judge-error series has a sample).
func tokenJudge() jev.Judge {
	var calls atomic.Int64
	return jev.JudgeFunc(func(ctx context.Context, req jev.Request) (*jev.Response, error) {
		if calls.Add(1) == 1 {
			return nil, fmt.Errorf("%w: scripted first answer for the metrics test", jev.ErrInvalidAnswer)
		}
		resp, err := overseer.HeuristicJudge{}.Decide(ctx, req)
		if resp != nil {
			resp.Usage = jev.Usage{InputTokens: 850, OutputTokens: 42}
		}
		return resp, err
	})
}

// meteredWorker runs a worker whose client feeds a fresh Metrics, and
// serves them; it returns the task queue and the /metrics URL.
func meteredWorker(t *testing.T, srv server, cfg worker.Config) (string, string) {
	t.Helper()
	m, err := worker.NewMetrics()
	require.NoError(t, err)
	ms, err := worker.ServeMetrics("127.0.0.1:0", m, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ms.Close() })
	cfg.Address, cfg.Namespace, cfg.MetricsHandler = srv.FrontendHostPort(), srv.Namespace(), m.Handler()
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.TaskQueue == "" {
		cfg.TaskQueue = "e2e-" + strings.ReplaceAll(t.Name(), "/", "-")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := worker.Dial(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	w, err := worker.New(c, cfg)
	require.NoError(t, err)
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return cfg.TaskQueue, ms.URL()
}

func startDashboard(t *testing.T, srv server) string {
	t.Helper()
	d, err := dashboard.New(dashboard.Options{Client: srv.Client(), Namespace: srv.Namespace(), Refresh: time.Second,
		TemporalUI: "http://127.0.0.1:8233"})
	require.NoError(t, err)
	hs := httptest.NewServer(d)
	t.Cleanup(hs.Close)
	return hs.URL
}

func startJobWithMemo(t *testing.T, c client.Client, taskQueue string, in workflows.JobInput, mode overseer.Mode) client.WorkflowRun {
	t.Helper()
	opts := client.StartWorkflowOptions{ID: fmt.Sprintf("demo-%s-%d", in.Scenario, time.Now().UnixNano()), TaskQueue: taskQueue}
	if mode != "" {
		opts.Memo = map[string]any{overseer.ModeMemoKey: string(mode)}
	}
	run, err := c.ExecuteWorkflow(context.Background(), opts, workflows.JobWorkflowName, in)
	require.NoError(t, err)
	return run
}

// TestDashboardInChromium drives the dashboard in headless Chromium: the
// list shows a paused looping job with the Paused badge, its page shows the
// timeline, the basis of its verdicts and the policy's promise, the resume
// form resumes it, and Temporal shows it completed. It runs the default
// judge and policy, as a default install does.
// With -screenshots it writes docs/dashboard-list.png (with an observed
// agent loop among the neighbours),
// docs/dashboard-waiting.png and docs/dashboard-job.png.
func TestDashboardInChromium(t *testing.T) {
	exe, c, tq, url := defaultDashboardInChromium(t)

	if *screenshots {
		// Neighbours for the list: observed jobs never pause.
		for _, sc := range []activities.Scenario{activities.OnTrack, activities.Drifting, activities.Blocked} {
			startJobWithMemo(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: sc}, overseer.ModeObserve)
		}
		// And an agent loop, the shape most agents on Temporal have.
		_, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: fmt.Sprintf("agent-loop-repeating-%d", time.Now().UnixNano()),
			TaskQueue: tq, Memo: map[string]any{overseer.ModeMemoKey: string(overseer.ModeObserve)}},
			workflows.AgentLoopWorkflowName, workflows.AgentLoopInput{Objective: "Add CSV export", Scenario: activities.LoopRepeating})
		require.NoError(t, err)
	}
	run := startJobWithMemo(t, c, tq, workflows.JobInput{Objective: "Add CSV export to the reports page", Scenario: activities.Looping}, "")
	id := run.GetID()
	eventually(t, "the looping job to pause", 30*time.Second, func() bool { return status(t, c, id).Paused })

	ctx := browser(t, exe)
	row := fmt.Sprintf(`tr[data-job=%q]`, id)
	// The paused filter keeps the job on the first page however many jobs
	// the shared dev server has; the rows refresh until the search
	// attributes are visible.
	list := url + "/?filter=paused"
	if *screenshots {
		list = url + "/"
	}
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(list),
		chromedp.WaitVisible(chromedp.CSS(row+` .badge.paused`)),
	))
	badge, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(row+` .badge.paused`)))
	require.NoError(t, err)
	assert.Equal(t, "Paused", badge)
	// A paused job leads with why, in a few words from its evidence, and
	// never reads On track beside Paused (overseer.PausedBand).
	cell, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(row+` td:nth-child(2)`)))
	require.NoError(t, err)
	why, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(row+` [data-why]`)))
	require.NoError(t, err)
	want := status(t, c, id).PauseWhy()
	assert.Equal(t, want, why, "the list row says why it is paused")
	assert.NotContains(t, cell, "On track", "a paused row never reads as all is well: %q", cell)
	assert.Regexp(t, `(Needs a look|Off track)`, cell)
	if *screenshots {
		eventually(t, "the neighbours to be assessed", 30*time.Second, func() bool {
			n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("tbody svg.bar").length`))
			return n >= 5
		})
		shoot(t, ctx, "dashboard-list.png")
	}

	// The Waiting page: the job at its gate, and where this page sits in
	// the whole queue.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(url+"/waiting"),
		chromedp.WaitVisible(chromedp.CSS(row)),
	))
	pagerText, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-pager]`)))
	require.NoError(t, err)
	assert.Regexp(t, `^(\d+ open gates?, oldest first|Gates \d+–\d+ of \d+, oldest first \(page \d+ of \d+\).*)$`, pagerText)
	gateCell, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(row+` td:nth-child(2)`)))
	require.NoError(t, err)
	assert.Contains(t, gateCell, "gate "+status(t, c, id).GateID, "the row names its gate")
	if *screenshots {
		shoot(t, ctx, "dashboard-waiting.png")
	}
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(list), chromedp.WaitVisible(chromedp.CSS(row+` .badge.paused`))))

	// The job page: the timeline per phase, the chart and the form.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(row+` td a`)),
		chromedp.WaitVisible(chromedp.CSS(`form.resume`)),
		chromedp.WaitVisible(chromedp.CSS(`svg.chart circle.point`)),
	))
	phases, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll(".phase h3")].map(e => e.textContent)`))
	require.NoError(t, err)
	assert.Contains(t, phases, "code", "the timeline groups assessments by phase")
	// The verdict says what it is based on, and the chart shows the policy
	// with its promise.
	basis, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-basis]`)))
	require.NoError(t, err)
	assert.Contains(t, basis, "Latest verdict based on:")
	assert.Contains(t, basis, "sub-model", "the default judge names the sub-model it used")
	promise, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-promise]`)))
	require.NoError(t, err)
	assert.Equal(t, overseer.DefaultLearnedPolicy().Promise.String(), promise)
	gate, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.panel.gate`)))
	require.NoError(t, err)
	assert.Contains(t, gate, "Paused after ")
	// The default judge pauses the looping job on the breach of its
	// no-repeats obligation or on a P at or below the pause threshold,
	// whichever comes first.
	assert.Regexp(t, `obligation\[2\] .* appears unmet|P\(on objective\) [0-9.]+ is at or below`, gate)
	last, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-last-assessment]`)))
	require.NoError(t, err)
	assert.Contains(t, last, "the last assessment said ", "beside Paused, the last assessment's P")
	assert.NotContains(t, last, "On track", "beside Paused, never On track")
	pageWhy, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.cards [data-why]`)))
	require.NoError(t, err)
	assert.Equal(t, status(t, c, id).PauseWhy(), pageWhy, "the job page says why it is paused, first")
	if *screenshots {
		// The gate with its form, the chart and the timeline, as a
		// reviewer finds them.
		shoot(t, ctx, "dashboard-job.png")
	}

	// Resume through the form; the dashboard sends the overseer.resume update.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`input[name=by]`), "browser-reviewer"),
		chromedp.SendKeys(chromedp.CSS(`textarea[name=note]`), "Stop patching the same tests; find the root cause first."),
		chromedp.Click(chromedp.CSS(`form.resume button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`.flash`)),
	))
	flash, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.flash`)))
	require.NoError(t, err)
	assert.Equal(t, "The job was resumed.", flash)
	s := status(t, c, id)
	require.NotEmpty(t, s.Gates)
	assert.Equal(t, "browser-reviewer", s.Gates[0].By)
	assert.Equal(t, "Stop patching the same tests; find the root cause first.", s.Gates[0].Note)
	assert.Equal(t, overseer.ActionContinue, s.Gates[0].Action)

	// Later pauses are resumed through the client; Temporal shows the job
	// completed, and so does the dashboard.
	res, err := finish(t, c, run, "e2e-reviewer")
	require.NoError(t, err)
	assert.Equal(t, "delivered", res.Outcome)
	_ = chromedp.Do(ctx, chromedp.Navigate("about:blank")) // stop the page's polling
	d, err := c.DescribeWorkflow(context.Background(), id, "")
	require.NoError(t, err)
	assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED, d.RawResponse.GetWorkflowExecutionInfo().GetStatus())
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(url+"/job?id="+id),
		chromedp.WaitVisible(chromedp.CSS(`.badge.state-completed`)),
	))
	state, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.badge.state-completed`)))
	require.NoError(t, err)
	assert.Equal(t, "Completed", state)
}

// defaultDashboardInChromium is what the browser tests of the job pages
// share: Chromium, the dev server, a worker with the default judge and its
// calibrated policy (as a default install runs it: the screenshots show
// what a user sees) and the dashboard's URL.
func defaultDashboardInChromium(t *testing.T) (exe string, c client.Client, taskQueue, url string) {
	t.Helper()
	exe = requireChromium(t)
	srv := e2eServer(t)
	taskQueue, _ = meteredWorker(t, srv, worker.Config{})
	return exe, srv.Client(), taskQueue, startDashboard(t, srv)
}

// shoot writes a full-page PNG screenshot into docs/.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	root, err := testsuite.RepoRoot()
	require.NoError(t, err)
	p := filepath.Join(root, "docs", name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, png, 0o644))
	t.Logf("wrote %s (%d bytes)", p, len(png))
}

var sample = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$`)

// scrape sums each series name's samples whose labels contain every one
// of the given label pairs.
func scrape(t *testing.T, url string) map[string][]labeled {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	out := map[string][]labeled{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := sample.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		require.NoError(t, err, sc.Text())
		out[m[1]] = append(out[m[1]], labeled{labels: m[2], value: v})
	}
	require.NoError(t, sc.Err())
	_, _ = io.Copy(io.Discard, resp.Body)
	return out
}

type labeled struct {
	labels string
	value  float64
}

func sum(series []labeled, labels ...string) float64 {
	var total float64
next:
	for _, s := range series {
		for _, l := range labels {
			if !strings.Contains(s.labels, l) {
				continue next
			}
		}
		total += s.value
	}
	return total
}

// TestMetricsAfterDemoJobs runs demo jobs on a worker with metrics and
// checks that /metrics exposes the overseer's series and the SDK's with
// non-zero counts.
func TestMetricsAfterDemoJobs(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	core, logs := observer.New(zap.DebugLevel) // the routine "phase assessed" line is at Debug
	tq, metricsURL := meteredWorker(t, srv, worker.Config{Judge: tokenJudge(), Logger: zap.New(core)})

	looping := startJobWithMemo(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping}, "")
	onTrack := startJobWithMemo(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.OnTrack}, overseer.ModeObserve)
	_, err := finish(t, c, looping, "metrics-reviewer")
	require.NoError(t, err)
	_, err = finish(t, c, onTrack, "metrics-reviewer")
	require.NoError(t, err)

	tests := []struct {
		series string
		labels []string
	}{
		{"overseer_assessments_total", []string{`mode="manage"`, `outcome="flagged"`}},
		{"overseer_assessments_total", []string{`outcome="error"`}}, // no band: the judge gave none
		{"overseer_assessments_total", []string{`mode="observe"`, `band="on_track"`, `outcome="ok"`}},
		{"overseer_assessments_total", []string{`workflow_type="CoroJob"`, `task_queue="` + tq + `"`}},
		{"overseer_judge_latency_seconds_count", nil},
		{"overseer_judge_latency_seconds_bucket", []string{`le="+Inf"`}},
		{"overseer_judge_tokens_total", []string{`kind="input"`}},
		{"overseer_judge_tokens_total", []string{`kind="output"`}},
		{"overseer_judge_errors_total", []string{`kind="invalid_answer"`}},
		{"overseer_pauses_total", []string{`cause="verdict"`}},
		{"overseer_resumes_total", []string{`action="continue"`}},
		{"overseer_gate_wait_seconds_count", []string{`action="continue"`}},
		// The SDK's own metrics, through the same handler.
		{"temporal_workflow_completed_total", []string{`workflow_type="CoroJob"`}},
		{"temporal_request_total", nil},
		{"temporal_workflow_task_execution_latency_seconds_count", nil},
		{"temporal_activity_execution_latency_seconds_count", nil},
		{"temporal_local_activity_total", nil},
	}
	var got map[string][]labeled
	// The meter reads on scrape; the last workflow task's metrics land
	// just after the run completes.
	eventually(t, "the workflow completions to be counted", 10*time.Second, func() bool {
		got = scrape(t, metricsURL)
		return sum(got["temporal_workflow_completed_total"]) >= 2
	})
	for _, tt := range tests {
		t.Run(tt.series+" "+strings.Join(tt.labels, ","), func(t *testing.T) {
			require.Contains(t, got, tt.series)
			assert.Positive(t, sum(got[tt.series], tt.labels...), "%s%v: %v", tt.series, tt.labels, got[tt.series])
		})
	}
	assert.Equal(t, 850*sum(got["overseer_judge_latency_seconds_count"]), sum(got["overseer_judge_tokens_total"], `kind="input"`),
		"every answered assessment reports its tokens once")

	// Replay does not count again: a query on a closed job makes the worker
	// replay its whole history.
	before := sum(got["overseer_assessments_total"]) + sum(got["overseer_pauses_total"]) + sum(got["overseer_resumes_total"])
	replays := sum(got["temporal_workflow_task_replay_latency_seconds_count"])
	s := status(t, c, looping.GetID())
	require.Positive(t, s.Counters.Assessments)
	got = scrape(t, metricsURL)
	require.Greater(t, sum(got["temporal_workflow_task_replay_latency_seconds_count"]), replays, "the query replayed the job")
	after := sum(got["overseer_assessments_total"]) + sum(got["overseer_pauses_total"]) + sum(got["overseer_resumes_total"])
	assert.Equal(t, before, after, "metrics are not emitted again on replay")

	// The worker logs through zap, the SDK included, with structured fields.
	assessed := logs.FilterMessage("overseer: phase assessed").All()
	require.NotEmpty(t, assessed)
	fields := assessed[0].ContextMap()
	for _, k := range []string{"WorkflowID", "RunID", "WorkflowType", "phase", "band", "on_objective"} {
		assert.Contains(t, fields, k, "structured field %s", k)
	}
	assert.Equal(t, looping.GetID(), logs.FilterMessage("overseer: job paused").All()[0].ContextMap()["WorkflowID"])
}

// TestDashboardInChromiumOnAnAgentLoop opens the page of an agent
// loop paused by the default judge (a tool failing on every call, manage
// mode, the shipped loop policy) in headless Chromium: the reviewer reads
// what the calls did first, in the loop's words (never phase-of-work facts),
// the verdict's basis names the agent-loop rules, and the gate's form is
// there. With -screenshots it writes docs/dashboard-loop.png.
func TestDashboardInChromiumOnAnAgentLoop(t *testing.T) {
	exe, c, tq, url := defaultDashboardInChromium(t)

	id := fmt.Sprintf("agent-loop-tool-failing-%d", time.Now().UnixNano())
	_, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: tq},
		workflows.AgentLoopWorkflowName, workflows.AgentLoopInput{Objective: "Add CSV export to the reports page", Scenario: activities.LoopToolFailing})
	require.NoError(t, err)
	eventually(t, "the failing loop to pause", time.Minute, func() bool { return status(t, c, id).Paused })

	ctx := browser(t, exe)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(url+"/job?id="+id),
		chromedp.WaitVisible(chromedp.CSS(`form.resume`)),
	))
	pageWhy, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.cards [data-why]`)))
	require.NoError(t, err)
	assert.Equal(t, status(t, c, id).PauseWhy(), pageWhy, "the job page says why it is paused, first")
	gate, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.panel.gate`)))
	require.NoError(t, err)
	assert.Contains(t, gate, "run_tests failed each of its last 4 calls, the same error each time: exit status 1: TestExport: want 3 rows, got 0")
	// What happened comes before the number it moved.
	if i, j := strings.Index(gate, "run_tests failed"), strings.Index(gate, "P(on objective)"); j >= 0 {
		assert.Less(t, i, j, "the gate leads with what the calls did, then P: %q", gate)
	}
	assert.NotContains(t, gate, "phase run", "no phase-of-work facts on a loop: %q", gate)
	basis, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-basis]`)))
	require.NoError(t, err)
	assert.Contains(t, basis, "agent-loop rules", "a new loop type is read by the rules: %q", basis)
	assert.Contains(t, gate, "The next call will receive: Process note from the overseer: the last call (run_tests) was flagged: run_tests failed")
	cards, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.cards`)))
	require.NoError(t, err)
	assert.Contains(t, strings.ToLower(cards), "last call")
	// The chart's dashed line is the loop policy's pause threshold.
	pauseAt := fmt.Sprintf("%.3f", overseer.DefaultLearnedPolicy().ForShape(overseer.ShapeAgentLoop).PauseAtOrBelow)
	chart, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("svg.chart").textContent`))
	require.NoError(t, err)
	assert.Contains(t, chart, pauseAt)
	if *screenshots {
		shoot(t, ctx, "dashboard-loop.png")
	}
	_ = chromedp.Do(ctx, chromedp.Navigate("about:blank")) // stop the page's polling

	_, err = c.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: overseer.ResumeName,
		Args: []any{overseer.ResumeRequest{By: "reviewer", Action: overseer.ActionAbort}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
}
