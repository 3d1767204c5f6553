package dashboard_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
)

// waitingNow is the clock TestWaitingView's dashboard reads.
var waitingNow = t0.Add(time.Hour)

// waitingBackend is newBackend with a second paused job, paused before
// the first, whose gate has a deadline 3 hours after waitingNow.
func waitingBackend() *fakeBackend {
	b := newBackend()
	since := t0.Add(time.Minute)
	deadline := waitingNow.Add(3 * time.Hour)
	b.jobs = append(b.jobs, ops.Job{ID: "job-early", RunID: "r4", Type: "CoroJob", State: "running", Paused: true, Started: t0})
	b.statuses["job-early"] = overseer.Status{
		Mode: overseer.ModeManage, Phase: "spec", Paused: true, GateID: "spec-1", PausedSince: &since, PauseReason: "the spec skips the export",
		GateDeadline: &deadline, Approval: overseer.Approval{Approvers: []string{"lead@example.com", "group:sre"}, FourEyes: true},
		Gates: []overseer.Gate{{ID: "spec-1", Phase: "spec", Reason: "the spec skips the export", PausedAt: since, Deadline: &deadline}},
	}
	return b
}

var waitingRow = regexp.MustCompile(`<tr data-job="([^"]+)" data-gate="([^"]*)">`)

func TestWaitingView(t *testing.T) {
	srv := newServer(t, waitingBackend(), dashboard.Options{Now: func() time.Time { return waitingNow }})
	code, body := get(t, srv.Client(), srv.URL+"/waiting")
	require.Equal(t, http.StatusOK, code, body)
	rows := waitingRow.FindAllStringSubmatch(body, -1)
	require.Len(t, rows, 2, "the open gates, not the running or closed jobs")
	assert.Equal(t, []string{"job-early", "spec-1"}, rows[0][1:], "oldest first")
	assert.Equal(t, []string{"job-paused", "code-1"}, rows[1][1:])
	assert.Contains(t, body, "the spec skips the export")
	assert.Contains(t, body, "obligation[2] appears unmet")
	assert.Contains(t, body, "in 3h 0m", "the deadline's time left")
	assert.Contains(t, body, "<td data-approvers>lead@example.com, group:sre<div class=\"sub\">not the job's starter</div></td>", "who may open it")
	assert.Contains(t, body, `value="gate=spec-1&amp;job=job-early"`, "each checkbox names its job and gate")
	assert.Contains(t, body, `<a href="/waiting">Waiting</a>`, "the header links the view")
	assert.Regexp(t, byField, body, "without authentication the batch form asks who resumes")
	assert.NotContains(t, body, `http-equiv="refresh"`, "no meta refresh wipes a selection")

	_, frag := get(t, srv.Client(), srv.URL+"/waiting?fragment=rows")
	assert.Len(t, waitingRow.FindAllStringSubmatch(frag, -1), 2)
	assert.NotContains(t, frag, "<html")

	empty := newServer(t, &fakeBackend{statuses: map[string]overseer.Status{}}, dashboard.Options{})
	_, body = get(t, empty.Client(), empty.URL+"/waiting")
	assert.Contains(t, body, "No gate is open.")
}

// TestWaitingIsPagedOldestFirst: a queue longer than a page is paged
// through, oldest first; each page says where it is in the whole queue,
// its live fragment and a batch resume stay on it, and a page past the
// last (the queue shrank) is the last.
func TestWaitingIsPagedOldestFirst(t *testing.T) {
	b := waitingBackend()
	srv := newServer(t, b, dashboard.Options{Now: func() time.Time { return waitingNow }, WaitingPage: 1})
	pageRows := func(u string) ([][]string, string) {
		t.Helper()
		code, body := get(t, srv.Client(), srv.URL+u)
		require.Equal(t, http.StatusOK, code, body)
		var rows [][]string
		for _, m := range waitingRow.FindAllStringSubmatch(body, -1) {
			rows = append(rows, m[1:])
		}
		return rows, body
	}
	tests := []struct {
		url, wantJob, wantPager string
	}{
		{"/waiting", "job-early", `Gates 1–1 of 2, oldest first (page 1 of 2) · <a href="/waiting?page=2" rel="next">newer gates</a>`},
		{"/waiting?page=2", "job-paused", `Gates 2–2 of 2, oldest first (page 2 of 2) · <a href="/waiting" rel="prev">older gates</a>`},
		{"/waiting?page=9", "job-paused", "Gates 2–2 of 2"},
		{"/waiting?page=x", "job-early", "Gates 1–1 of 2"},
		{"/waiting?fragment=rows&page=2", "job-paused", "Gates 2–2 of 2"},
	}
	for _, tt := range tests {
		rows, body := pageRows(tt.url)
		require.Len(t, rows, 1, tt.url)
		assert.Equal(t, tt.wantJob, rows[0][0], tt.url)
		assert.Contains(t, body, tt.wantPager, tt.url)
	}
	_, body := pageRows("/waiting?page=2")
	assert.Contains(t, body, `data-live="/waiting?fragment=rows&amp;page=2"`, "the live refresh stays on the page")
	assert.Contains(t, body, `<input type="hidden" name="page" value="2">`)

	c := jarClient(t, false)
	token := pageToken(t, c, srv.URL+"/waiting", nil)
	form := url.Values{"csrf": {token}, "by": {"alice"}, "page": {"2"}, "gate": {gateOf("job-early", "spec-1")}}
	resp, body := post(t, c, srv.URL+"/waiting/resume", form, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, `<tr data-result="job-early" data-ok="true">`)
	assert.Contains(t, body, "1 open gate, oldest first", "the queue read again: one gate left, so page 2 is page 1")
	assert.Regexp(t, `<tr data-job="job-paused"`, body)
}

func gateOf(id, gate string) string {
	return url.Values{"job": {id}, "gate": {gate}}.Encode()
}

func TestBatchResume(t *testing.T) {
	b := waitingBackend()
	srv := newServer(t, b, dashboard.Options{})
	c := jarClient(t, false)
	token := pageToken(t, c, srv.URL+"/waiting", nil)
	form := url.Values{"csrf": {token}, "by": {"alice"}, "note": {"reviewed both"}, "action": {"continue"},
		"gate": {gateOf("job-early", "spec-1"), gateOf("job-paused", "code-1"), gateOf("job-off", ""), gateOf("job-early", "spec-1")}}
	resp, body := post(t, c, srv.URL+"/waiting/resume", form, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Len(t, b.resumed, 2, "one resume per paused gate, the duplicate sent once")
	assert.Equal(t, overseer.ResumeRequest{By: "alice", Note: "reviewed both", Action: overseer.ActionContinue, Gate: "spec-1"}, b.resumed[0])
	assert.Equal(t, overseer.ResumeRequest{By: "alice", Note: "reviewed both", Action: overseer.ActionContinue, Gate: "code-1"}, b.resumed[1])
	assert.Contains(t, body, `<tr data-result="job-early" data-ok="true">`)
	assert.Contains(t, body, `<tr data-result="job-paused" data-ok="true">`)
	assert.Contains(t, body, `<tr data-result="job-off" data-ok="false">`, "each result is reported, a refusal too")
	assert.Contains(t, body, "The job is not paused (any more)")
	assert.Contains(t, body, "No gate is open.", "the queue is read again after the batch")
}

func TestBatchResumeBoundToEachGate(t *testing.T) {
	b := waitingBackend()
	srv := newServer(t, b, dashboard.Options{})
	c := jarClient(t, false)
	token := pageToken(t, c, srv.URL+"/waiting", nil)
	// The page showed job-paused at an earlier gate: that resume is
	// refused, the other goes through.
	form := url.Values{"csrf": {token}, "by": {"alice"}, "gate": {gateOf("job-paused", "spec-0"), gateOf("job-early", "spec-1")}}
	resp, body := post(t, c, srv.URL+"/waiting/resume", form, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Len(t, b.resumed, 1)
	assert.Equal(t, "spec-1", b.resumed[0].Gate)
	assert.Contains(t, body, `<tr data-result="job-paused" data-ok="false">`)
	assert.Contains(t, body, "now paused at another one")
}

func TestBatchResumeRefusals(t *testing.T) {
	tests := []struct {
		name     string
		form     url.Values
		token    bool
		wantCode int
		wantBody string
	}{
		{"nothing selected", url.Values{"by": {"alice"}}, true, http.StatusUnprocessableEntity, "Select at least one gate"},
		{"no name", url.Values{"gate": {gateOf("job-early", "spec-1")}}, true, http.StatusUnprocessableEntity, "The request was refused"},
		{"too many", url.Values{"by": {"alice"}, "gate": manyGates(101)}, true, http.StatusUnprocessableEntity, "at most 100"},
		{"no token", url.Values{"by": {"alice"}, "gate": {gateOf("job-early", "spec-1")}}, false, http.StatusForbidden, "security token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := waitingBackend()
			srv := newServer(t, b, dashboard.Options{})
			c := jarClient(t, false)
			token := pageToken(t, c, srv.URL+"/waiting", nil)
			if tt.token {
				tt.form.Set("csrf", token)
			}
			resp, body := post(t, c, srv.URL+"/waiting/resume", tt.form, nil)
			assert.Equal(t, tt.wantCode, resp.StatusCode, body)
			assert.Contains(t, body, tt.wantBody)
			assert.Empty(t, b.resumed)
			if tt.wantCode == http.StatusUnprocessableEntity && len(tt.form["gate"]) == 1 {
				assert.Contains(t, body, `value="gate=spec-1&amp;job=job-early" checked`, "the selection is kept")
			}
		})
	}
}

func manyGates(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = gateOf("job-"+strings.Repeat("x", i+1), "g")
	}
	return out
}

func TestBatchResumeByTheSignedInUser(t *testing.T) {
	b := waitingBackend()
	srv := newServer(t, b, dashboard.Options{TrustedProxy: dashboard.TrustedProxy{Addresses: []string{"127.0.0.1"}}})
	h := map[string]string{"X-Forwarded-User": "rev@example.com"}
	c := jarClient(t, false)
	token := pageToken(t, c, srv.URL+"/waiting", h)
	form := url.Values{"csrf": {token}, "by": {"mallory"}, "note": {"ok"},
		"gate": {gateOf("job-early", "spec-1"), gateOf("job-paused", "code-1")}}
	resp, body := post(t, c, srv.URL+"/waiting/resume", form, h)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Len(t, b.resumed, 2)
	for _, r := range b.resumed {
		assert.Equal(t, "rev@example.com", r.By)
	}
	assert.NotRegexp(t, byField, body)
	assert.Contains(t, body, "by rev@example.com")
}

// A four-eyes job that does not say who started it can be opened by
// nobody: the queue and the job page say so, and what to set, instead of
// listing approvers who would all be refused.
func TestWaitingViewOfAFourEyesJobWithoutAStarter(t *testing.T) {
	b := waitingBackend()
	st := b.statuses["job-early"]
	st.Approval.NoStarter = true
	b.statuses["job-early"] = st
	srv := newServer(t, b, dashboard.Options{Now: func() time.Time { return waitingNow }})
	nobody := "nobody: the four-eyes rule needs to know who started the job and it does not say; start jobs with the memo overseer.started_by set (overseer start --by NAME sets it)"
	_, body := get(t, srv.Client(), srv.URL+"/waiting")
	assert.Contains(t, body, "<td data-approvers>"+nobody+"</td>")
	_, body = get(t, srv.Client(), srv.URL+"/job?id=job-early")
	assert.Contains(t, body, "<b>Who may resume:</b> "+nobody+"</p>")
	assert.NotContains(t, body, "lead@example.com, group:sre (not the job&#39;s starter)")
}

// A signed-in user sees which gates of the queue they may not open before
// they send: those rows cannot be selected and say why; the others can.
func TestWaitingViewMarksTheGatesTheSignedInUserMayNotOpen(t *testing.T) {
	srv := newServer(t, waitingBackend(), dashboard.Options{Now: func() time.Time { return waitingNow },
		TrustedProxy: dashboard.TrustedProxy{Addresses: []string{"127.0.0.1"}}})
	c := jarClient(t, false)
	for user, mayOpenEarly := range map[string]bool{"rev@example.com": false, "lead@example.com": true} {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/waiting", nil)
		require.NoError(t, err)
		req.Header.Set("X-Forwarded-User", user)
		resp, err := c.Do(req)
		require.NoError(t, err)
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := string(raw)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		early := `value="gate=spec-1&amp;job=job-early"`
		if mayOpenEarly {
			assert.Contains(t, body, early, "%s may open job-early's gate: it can be selected", user)
			assert.NotContains(t, body, "data-not-you", user)
			continue
		}
		assert.NotContains(t, body, early, "%s may not open job-early's gate: it cannot be selected", user)
		assert.Contains(t, body, `<div class="sub form-error" data-not-you>Not you: &#34;rev@example.com&#34; may not resume this job: its approvers are lead@example.com, group:sre</div>`)
		assert.Contains(t, body, `value="gate=code-1&amp;job=job-paused"`, "a gate anyone may open stays selectable")
	}
}
