package dashboard_test

import (
	"context"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/testsuite/stalltest"
)

// fakeBackend holds jobs in memory and resumes them like the workflow's
// update validator would.
type fakeBackend struct {
	mu       sync.Mutex
	jobs     []ops.Job
	statuses map[string]overseer.Status
	resumed  []overseer.ResumeRequest
	// statusCalls are the "id@run" of every Status call; listCalls
	// counts the List calls.
	statusCalls []string
	listCalls   int
	queries     []string
}

// lastQuery is the visibility query of the last List call.
func (f *fakeBackend) lastQuery() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queries) == 0 {
		return ""
	}
	return f.queries[len(f.queries)-1]
}

func (f *fakeBackend) List(_ context.Context, opts ops.ListOptions) ([]ops.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listCalls++
	f.queries = append(f.queries, opts.Query)
	var out []ops.Job
	for _, j := range f.jobs {
		if strings.Contains(opts.Query, "OverseerPaused") && !j.Paused {
			continue
		}
		out = append(out, j)
	}
	return out, nil
}

func (f *fakeBackend) Describe(_ context.Context, id string) (ops.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, j := range f.jobs {
		if j.ID == id {
			return j, nil
		}
	}
	return ops.Job{}, fmt.Errorf("%w: no job with id %q in this namespace", ops.ErrNoJob, id)
}

// Status answers a run's own status (key "id@run") when it has one, else
// the job's latest (key "id").
func (f *fakeBackend) Status(_ context.Context, id, runID string) (overseer.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statusCalls = append(f.statusCalls, id+"@"+runID)
	if s, ok := f.statuses[id+"@"+runID]; ok && runID != "" {
		return s, nil
	}
	s, ok := f.statuses[id]
	if !ok {
		return s, fmt.Errorf("%w: job %q has no overseer.status query", ops.ErrNotOverseen, id)
	}
	return s, nil
}

func (f *fakeBackend) Resume(_ context.Context, id string, req overseer.ResumeRequest) (overseer.Gate, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := req.Validate(); err != nil {
		return overseer.Gate{}, err
	}
	s := f.statuses[id]
	if !s.Paused {
		return overseer.Gate{}, temporal.NewNonRetryableApplicationError("overseer: the job is not paused", overseer.NotPausedErrorType, nil)
	}
	if req.Gate != "" && req.Gate != s.GateID {
		return overseer.Gate{}, temporal.NewNonRetryableApplicationError("overseer: gate is not open", overseer.WrongGateErrorType, nil)
	}
	f.resumed = append(f.resumed, req)
	g := s.Gates[len(s.Gates)-1]
	now := g.PausedAt.Add(time.Minute)
	g.ResumedAt, g.By, g.Note, g.Action = &now, req.By, req.Note, req.Action
	if g.Action == "" {
		g.Action = overseer.ActionContinue
	}
	s.Gates[len(s.Gates)-1] = g
	s.Paused, s.PausedSince, s.PauseReason = false, nil, ""
	f.statuses[id] = s
	return g, nil
}

const evil = `<script>alert("x")</script>`

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func assessment(seq int, phase string, p float64, band overseer.Band, flagged bool) overseer.Assessment {
	return overseer.Assessment{
		Seq: seq, Phase: phase, At: t0.Add(time.Duration(seq) * time.Minute),
		Answers: &overseer.Answers{Breach: "obligation[2]", BreachText: "The phase made progress.", BreachConfidence: 0.6,
			OnObjective: p, Severity: 1.8, SeverityConfidence: 0.7, Blocked: 0.1},
		Verdict: &overseer.Verdict{Band: band, OnObjective: p, Flagged: flagged, Reason: "breach " + evil},
		Model:   "heuristic-v1", Usage: overseer.Assessment{}.Usage, Latency: 62 * time.Microsecond,
		Digest: "objective: " + evil,
	}
}

func newBackend() *fakeBackend {
	since := t0.Add(4 * time.Minute)
	paused := overseer.Status{
		Mode: overseer.ModeManage, Band: overseer.BandNeedsALook, OnObjective: 0.56, Assessed: true, Phase: "code",
		Paused: true, GateID: "code-1", PausedSince: &since, PauseReason: "obligation[2] appears unmet " + evil,
		PendingNote: "Process note " + evil, Digest: "objective: " + evil,
		Assessments: []overseer.Assessment{
			assessment(1, "spec", 0.9, overseer.BandOnTrack, false),
			assessment(2, "plan", 0.8, overseer.BandOnTrack, false),
			{Seq: 3, Phase: "code", At: t0.Add(150 * time.Second), Error: "judge timed out"},
			assessment(4, "code", 0.56, overseer.BandNeedsALook, true),
		},
		Gates:    []overseer.Gate{{ID: "code-1", Phase: "code", Reason: "obligation[2] appears unmet", PausedAt: since}},
		Counters: overseer.Counters{Phases: 3, Assessments: 4, Failures: 1, Flags: 1, Pauses: 1},
		InPhase: []overseer.InPhaseAdvice{{ActivityType: "coro.code", ActivityID: "7", Assessment: 3, Advice: "REQUEST_VERIFICATION",
			Status: "DECIDED", Reason: "CURRENT_VERIFICATION_REQUIRED " + evil, Final: true, At: t0.Add(4 * time.Minute)}},
	}
	return &fakeBackend{
		jobs: []ops.Job{
			{ID: "job-paused", RunID: "r1", Type: "CoroJob", State: "running", Band: "needs_a_look", OnObjective: 0.56, Paused: true, Started: t0},
			{ID: "job-off", RunID: "r2", Type: "CoroJob", State: "running", Band: "off_track", OnObjective: 0.2, Started: t0},
			{ID: evil, RunID: "r3", Type: "Other", State: "completed", Started: t0},
		},
		statuses: map[string]overseer.Status{
			"job-paused": paused,
			"job-off":    {Mode: overseer.ModeObserve, Band: overseer.BandOffTrack, OnObjective: 0.2, Assessed: true, Phase: "test", Assessments: []overseer.Assessment{}},
		},
	}
}

func newServer(t *testing.T, b *fakeBackend, opts dashboard.Options) *httptest.Server {
	t.Helper()
	opts.Backend = b
	if opts.ViewFresh == 0 {
		// These tests change the backend between page loads: every load
		// reads (views_test.go tests the shared reads).
		opts.ViewFresh = -1
	}
	d, err := dashboard.New(opts)
	require.NoError(t, err)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	resp, err := c.Get(u)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

func TestListPage(t *testing.T) {
	srv := newServer(t, newBackend(), dashboard.Options{})
	tests := []struct {
		name, path string
		want       []string
		notWant    []string
	}{
		{"all jobs", "/", []string{`data-job="job-paused"`, `badge paused">Paused<`, `badge off_track">Off track<`, "56%", "20%",
			`badge none">Not overseen<`, `href="/job?id=job-paused"`, "&lt;script&gt;", `data-live="/?fragment=rows"`, "Refreshes every 5s"}, []string{evil}},
		{"paused filter", "/?filter=paused", []string{`data-job="job-paused"`, `class="active" aria-current="page">Paused`}, []string{`data-job="job-off"`}},
		{"rows fragment", "/?fragment=rows", []string{`data-job="job-off"`}, []string{"<html", "<thead>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, srv.Client(), srv.URL+tt.path)
			require.Equal(t, http.StatusOK, code, body)
			for _, w := range tt.want {
				assert.Contains(t, body, w)
			}
			for _, w := range tt.notWant {
				assert.NotContains(t, body, w)
			}
		})
	}
	code, _ := get(t, srv.Client(), srv.URL+"/?filter=nonsense")
	assert.Equal(t, http.StatusBadRequest, code)
}

func TestJobPage(t *testing.T) {
	srv := newServer(t, newBackend(), dashboard.Options{TemporalUI: "http://127.0.0.1:8233"})
	code, body := get(t, srv.Client(), srv.URL+"/job?id=job-paused")
	require.Equal(t, http.StatusOK, code)
	for _, w := range []string{
		"Paused after code", `<form method="post" action="/job/resume"`, `name="csrf" value="`, // the gate and its form
		`<svg class="chart"`, `class="point needs_a_look flagged"`, `class="point failed"`, `class="gate-marker"`, // the chart
		"<h3>spec</h3>", "<h3>plan</h3>", "<h3>code</h3>", "judge failed", "judge timed out", // the timeline per phase
		"obligation[2] — “The phase made progress.”", "1.8 ≈ Review", "P(the agent is blocked) 0.10", // answers
		"Trajectory digest", "The next phase will receive:", "the gate opened", // digest, note, pause
		"3 phases · 4 assessments (1 failed) · 1 flagged · 1 pause · 0 resumes", // the counters, in words
		"In-phase supervision", "<b>REQUEST_VERIFICATION</b>", "CURRENT_VERIFICATION_REQUIRED", // in-phase advice
		"http://127.0.0.1:8233/namespaces/default/workflows/job-paused/r1/history",
		"&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;",
	} {
		assert.Contains(t, body, w)
	}
	assert.NotContains(t, body, evil)

	code, body = get(t, srv.Client(), srv.URL+"/job?id=job-paused&fragment=live")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `data-paused="true"`)
	assert.NotContains(t, body, "<form")

	code, body = get(t, srv.Client(), srv.URL+"/job?id="+url.QueryEscape(evil))
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "The overseer status is not available")
	assert.NotContains(t, body, evil)

	code, body = get(t, srv.Client(), srv.URL+"/job?id=nope")
	assert.Equal(t, http.StatusNotFound, code)
	assert.Contains(t, body, "no job with id")
}

// An agent loop's page speaks of calls and draws the policy's loop
// section: its pause threshold, not the phases'.
func TestJobPageOfAnAgentLoop(t *testing.T) {
	b := newBackend()
	st := b.statuses["job-paused"]
	st.Shape = overseer.ShapeAgentLoop
	b.statuses["job-paused"] = st
	srv := newServer(t, b, dashboard.Options{})
	code, body := get(t, srv.Client(), srv.URL+"/job?id=job-paused")
	require.Equal(t, http.StatusOK, code)
	loop := overseer.DefaultLearnedPolicy().ForShape(overseer.ShapeAgentLoop)
	for _, w := range []string{"The next call will receive:", "Note for the next call", "Last call", "3 calls · 4 assessments",
		fmt.Sprintf("%.3f", loop.PauseAtOrBelow)} {
		assert.Contains(t, body, w)
	}
	for _, w := range []string{"next phase", "Last phase", "3 phases", fmt.Sprintf("%.3f", overseer.DefaultLearnedPolicy().PauseAtOrBelow)} {
		assert.NotContains(t, body, w)
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// formToken loads a job page and returns the page's CSRF token and cookie.
func formToken(t *testing.T, srv *httptest.Server, id string) (string, *http.Cookie) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + "/job?id=" + url.QueryEscape(id))
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := csrfField.FindStringSubmatch(string(body))
	require.NotNil(t, m, "no CSRF field")
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == dashboard.CSRFCookieName {
			cookie = c
		}
	}
	require.NotNil(t, cookie, "no CSRF cookie")
	assert.True(t, cookie.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, cookie.SameSite)
	return html.UnescapeString(m[1]), cookie
}

func TestResumeForm(t *testing.T) {
	noRedirect := func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	tests := []struct {
		name       string
		form       url.Values
		token      string // "valid" uses the page's token
		cookie     bool
		headers    map[string]string
		wantCode   int
		wantBody   string
		wantResume bool
	}{
		{"resumes", url.Values{"by": {"alice"}, "note": {"root cause first"}, "action": {"continue"}}, "valid", true,
			map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusSeeOther, "", true},
		{"aborts", url.Values{"by": {"alice"}, "action": {"abort"}}, "valid", true, nil, http.StatusSeeOther, "", true},
		{"missing by", url.Values{"by": {"  "}}, "valid", true, nil, http.StatusUnprocessableEntity, "who resumes the job", false},
		{"redoes", url.Values{"by": {"alice"}, "note": {"tests first"}, "action": {"redo"}}, "valid", true, nil, http.StatusSeeOther, "", true},
		{"unknown action", url.Values{"by": {"alice"}, "action": {"pause"}}, "valid", true, nil, http.StatusUnprocessableEntity, "must be &#34;continue&#34;, &#34;redo&#34; or &#34;abort&#34;", false},
		{"note too long", url.Values{"by": {"alice"}, "note": {strings.Repeat("x", overseer.MaxResumeNoteBytes+1)}}, "valid", true, nil,
			http.StatusUnprocessableEntity, "keep it to 4096 bytes", false},
		// A form loaded at an earlier gate, posted after the job paused again.
		{"other gate", url.Values{"by": {"alice"}, "gate": {"spec-0"}}, "valid", true, nil, http.StatusUnprocessableEntity, "now paused at another one", false},
		{"no token", url.Values{"by": {"alice"}}, "", true, nil, http.StatusForbidden, "security token", false},
		{"forged token", url.Values{"by": {"alice"}}, "forged", true, nil, http.StatusForbidden, "security token", false},
		{"no cookie", url.Values{"by": {"alice"}}, "valid", false, nil, http.StatusForbidden, "security token", false},
		{"cross-site", url.Values{"by": {"alice"}}, "valid", true, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden, "cross-origin", false},
		{"other origin", url.Values{"by": {"alice"}}, "valid", true, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden, "cross-origin", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBackend()
			srv := newServer(t, b, dashboard.Options{})
			token, cookie := formToken(t, srv, "job-paused")
			form := tt.form
			form.Set("id", "job-paused")
			switch tt.token {
			case "valid":
				form.Set("csrf", token)
			case "forged":
				form.Set("csrf", strings.Repeat("A", len(token)))
			}
			req, err := http.NewRequest(http.MethodPost, srv.URL+"/job/resume", strings.NewReader(form.Encode()))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range tt.headers {
				req.Header.Set(k, v)
			}
			if tt.cookie {
				req.AddCookie(cookie)
			}
			c := *srv.Client()
			c.CheckRedirect = noRedirect
			resp, err := c.Do(req)
			require.NoError(t, err)
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			assert.Equal(t, tt.wantCode, resp.StatusCode, string(body))
			if tt.wantBody != "" {
				assert.Contains(t, string(body), tt.wantBody)
			}
			if tt.wantResume {
				require.Len(t, b.resumed, 1)
				assert.Equal(t, "alice", b.resumed[0].By)
				assert.Equal(t, "/job?id=job-paused&done="+form.Get("action"), resp.Header.Get("Location"))
			} else {
				assert.Empty(t, b.resumed)
			}
			if tt.wantCode == http.StatusUnprocessableEntity {
				// The form keeps what was typed and a fresh token.
				assert.Contains(t, string(body), `name="csrf" value="`)
				assert.Contains(t, string(body), `value="`+strings.TrimSpace(form.Get("by"))+`"`)
			}
		})
	}
}

func TestJobPageFormNamesTheOpenGate(t *testing.T) {
	srv := newServer(t, newBackend(), dashboard.Options{})
	resp, err := srv.Client().Get(srv.URL + "/job?id=job-paused")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	assert.Contains(t, string(body), `<input type="hidden" name="gate" value="code-1">`, "the form resumes only the gate it shows")
	assert.Contains(t, string(body), "at gate code-1")
}

func TestClosedJobIsNotShownPaused(t *testing.T) {
	// Terminated at a gate: the status still replays as paused, and the
	// search attributes were never cleared.
	b := newBackend()
	for i, j := range b.jobs {
		if j.ID == "job-paused" {
			b.jobs[i].State = "terminated"
		}
	}
	srv := newServer(t, b, dashboard.Options{})
	resp, err := srv.Client().Get(srv.URL + "/job?id=job-paused")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	assert.NotContains(t, string(body), `action="/job/resume"`, "no resume form for a closed job")
	assert.Contains(t, string(body), `data-paused="false"`)
}

func TestResumeRefusedWhenNotPaused(t *testing.T) {
	b := newBackend()
	srv := newServer(t, b, dashboard.Options{})
	// A form left open on a page whose job was resumed elsewhere.
	token, cookie := formToken(t, srv, "job-paused")
	form := url.Values{"id": {"job-off"}, "by": {"alice"}, "csrf": {token}}
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/job/resume", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(cookie)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	assert.Contains(t, string(body), "The job is not paused")
}

func TestHostsAndHeaders(t *testing.T) {
	tests := []struct {
		host    string
		allowed []string
		want    int
	}{
		{"127.0.0.1:8080", nil, http.StatusOK},
		{"localhost:8080", nil, http.StatusOK},
		{"[::1]:8080", nil, http.StatusOK},
		{"10.1.2.3", nil, http.StatusOK},
		{"evil.example:8080", nil, http.StatusMisdirectedRequest},
		{"dashboard.internal:8080", []string{"dashboard.internal"}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			d, err := dashboard.New(dashboard.Options{Backend: newBackend(), AllowedHosts: tt.allowed})
			require.NoError(t, err)
			req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
			req.Host = tt.host
			rec := httptest.NewRecorder()
			d.ServeHTTP(rec, req)
			assert.Equal(t, tt.want, rec.Code)
			assert.Contains(t, rec.Header().Get("Content-Security-Policy"), "script-src 'self'")
			assert.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
			assert.Equal(t, "DENY", rec.Header().Get("X-Frame-Options"))
		})
	}
}

func TestStaticAssets(t *testing.T) {
	srv := newServer(t, newBackend(), dashboard.Options{})
	for _, p := range []string{"/static/style.css", "/static/app.js"} {
		code, body := get(t, srv.Client(), srv.URL+p)
		assert.Equal(t, http.StatusOK, code, p)
		assert.NotEmpty(t, body, p)
	}
}

func TestNewOptions(t *testing.T) {
	tests := []struct {
		name string
		opts dashboard.Options
		err  string
	}{
		{"no client", dashboard.Options{}, "Client (or Backend) is required"},
		{"bad UI URL", dashboard.Options{Backend: newBackend(), TemporalUI: "javascript:alert(1)"}, "not an http(s) URL"},
		{"bad policy", dashboard.Options{Backend: newBackend(), Policy: overseer.Policy{OnTrackAt: 2}}, "policy"},
		{"zero value works", dashboard.Options{Backend: newBackend()}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := dashboard.New(tt.opts)
			if tt.err == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.err)
		})
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost:0": true, "[::1]:80": true,
		"0.0.0.0:8080": false, ":8080": false, "10.0.0.1:80": false, "nonsense": false,
	} {
		assert.Equal(t, want, dashboard.IsLoopback(addr), addr)
	}
}

func TestListShowsEachRunsOwnStatusAfterContinueAsNew(t *testing.T) {
	b := &fakeBackend{
		jobs: []ops.Job{
			{ID: "long-job", RunID: "run-2", Type: "CoroJob", State: "running", Started: t0.Add(time.Hour)},
			{ID: "long-job", RunID: "run-1", Type: "CoroJob", State: "continued_as_new", Started: t0},
		},
		statuses: map[string]overseer.Status{
			"long-job":       {Mode: overseer.ModeObserve, Phase: "review-by-successor", Assessments: []overseer.Assessment{}},
			"long-job@run-2": {Mode: overseer.ModeObserve, Phase: "review-by-successor", Assessments: []overseer.Assessment{}},
			"long-job@run-1": {Mode: overseer.ModeObserve, Phase: "plan-by-predecessor", Assessments: []overseer.Assessment{}},
		},
	}
	srv := newServer(t, b, dashboard.Options{})
	for range 2 { // the second list comes from the closed run's cache
		code, body := get(t, srv.Client(), srv.URL+"/")
		require.Equal(t, http.StatusOK, code, body)
		assert.Contains(t, body, "plan-by-predecessor", "the closed run shows its own status")
		assert.Equal(t, 1, strings.Count(body, "review-by-successor"), "the successor's status only on its own row")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, c := range b.statusCalls {
		if c == "long-job@run-1" {
			n++
		}
	}
	assert.Equal(t, 1, n, "the closed run is queried by its run id once, then cached")
}

// serve runs Serve with h on a free loopback port until the test ends and
// returns its address.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- dashboard.Serve(ctx, ln, h) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	return ln.Addr().String()
}

// A POST whose body stalls is cut by Serve's read timeout, not kept for
// ever.
func TestServeCutsAStalledBody(t *testing.T) {
	dashboard.SetReadTimeout(t, 100*time.Millisecond)
	d, err := dashboard.New(dashboard.Options{Backend: newBackend()})
	require.NoError(t, err)
	addr := serve(t, d)
	assert.True(t, stalltest.BodyCut(t, addr, http.MethodPost, "/job/resume", 10*time.Second), "the server closed the stalled connection")
}

// A batch resume's answer waits for every resume: it extends Serve's write
// timeout by its own bound. Here the write timeout is already past when a
// page is written, so a page fails and the batch's answer arrives.
func TestBatchResumeOutlivesServesWriteTimeout(t *testing.T) {
	dashboard.SetWriteTimeout(t, time.Nanosecond)
	b := waitingBackend()
	d, err := dashboard.New(dashboard.Options{Backend: b})
	require.NoError(t, err)
	addr := serve(t, d)
	c := jarClient(t, false)
	// The token from a server without a write timeout: the cookie jar
	// gives both servers, on 127.0.0.1, the same CSRF cookie.
	token := pageToken(t, c, newServerFor(t, d).URL+"/waiting", nil)

	_, err = c.Get("http://" + addr + "/waiting")
	require.Error(t, err, "a page is cut by the write timeout")
	form := url.Values{"csrf": {token}, "by": {"alice"}, "gate": {gateOf("job-early", "spec-1")}}
	resp, body := post(t, c, "http://"+addr+"/waiting/resume", form, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, `<tr data-result="job-early" data-ok="true">`)
}
