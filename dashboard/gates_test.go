package dashboard_test

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
)

var (
	tags   = regexp.MustCompile(`<[^>]*>`)
	spaces = regexp.MustCompile(`\s+`)
)

// pageText is what a person reads on a page: its text without the markup,
// its runs of white space as one space.
func pageText(body string) string {
	return strings.TrimSpace(spaces.ReplaceAllString(html.UnescapeString(tags.ReplaceAllString(body, "")), " "))
}

// gateNow is the clock of the dashboard gateJob serves, a day after t0,
// so that the time left and waited is exact text.
var gateNow = t0.Add(25 * time.Hour)

// gateJob serves one job with status st; a closed job has state.
func gateJob(t *testing.T, state string, st overseer.Status) (*fakeBackend, string) {
	t.Helper()
	if st.Assessments == nil {
		a := assessment(1, "code", 0.2, overseer.BandOffTrack, true)
		a.At = t0.Add(-time.Minute) // before the gate opened: the chart marks the gate after it
		st.Assessments = []overseer.Assessment{a}
	}
	b := &fakeBackend{
		jobs:     []ops.Job{{ID: "job-gate", RunID: "r1", Type: "CoroJob", State: state, Paused: st.Paused, Started: t0}},
		statuses: map[string]overseer.Status{"job-gate": st},
	}
	srv := newServer(t, b, dashboard.Options{Now: func() time.Time { return gateNow }})
	code, body := get(t, srv.Client(), srv.URL+"/job?id=job-gate")
	require.Equal(t, http.StatusOK, code, body)
	return b, body
}

// An expired gate shows when and by which rule its deadline closed it and
// what the deadline did; it never reads as a resume "by" nobody. Its
// escalation shows when and by which rule.
func TestJobPageShowsAnExpiredGateByItsRule(t *testing.T) {
	esc, closed := t0.Add(24*time.Hour), t0.Add(72*time.Hour)
	st := overseer.Status{
		Mode: overseer.ModeManage, Phase: "code", Assessed: true, Band: overseer.BandOffTrack, OnObjective: 0.2,
		Gates: []overseer.Gate{
			{ID: "code-1", Phase: "code", Reason: "off track", PausedAt: t0, EscalatedAt: &esc, EscalatedBy: "deadline 24h: escalate", EscalatedLate: 7 * time.Second,
				ResumedAt: &closed, Action: overseer.ActionAbort, Expired: true, ExpiredBy: "deadline 72h: abort"},
		},
		Counters: overseer.Counters{Pauses: 1, Escalations: 1, Expired: 1},
	}
	_, body := gateJob(t, "failed", st)
	text := pageText(body)
	assert.Contains(t, text, "expired at 2026-12-03 09:00:00 UTC (deadline 72h: abort): abort, the job was aborted", "an expiry on time says nothing more")
	assert.Contains(t, text, "nobody resumed it in 3d 0h")
	assert.Contains(t, text, "escalated at 2026-12-01 09:00:00 UTC (deadline 24h: escalate, 7s late)", "a late escalation says how late")
	assert.Contains(t, text, "Aborted by the gate's deadline at 2026-12-03 09:00:00 UTC after code (deadline 72h: abort)")
	assert.Contains(t, body, `data-gate-event="expired" data-gate="code-1"`)
	assert.Contains(t, body, "expired (deadline 72h: abort): abort</title>", "the chart's gate marker says so too")
	for _, nobody := range []string{"resumed by", "aborted by", "Aborted by at", "abort by"} {
		assert.NotContains(t, text, nobody, "an expiry is not a resume by nobody")
	}
	assert.NotRegexp(t, `by\s*</b>`, body, "nobody named after a by")
	assert.NotContains(t, body, `action="/job/resume"`, "no resume form for a closed job")
}

// An expiry with continue lets the job go on; a gate an expiry with abort
// closed along with another names that gate; a cancelled gate says so.
func TestJobPageShowsContinueExpiryClosedWithAndCancelledGates(t *testing.T) {
	t1, t2, t3 := t0.Add(4*time.Hour), t0.Add(5*time.Hour), t0.Add(6*time.Hour)
	st := overseer.Status{
		Mode: overseer.ModeManage, Phase: "test", Assessed: true, Band: overseer.BandOffTrack, OnObjective: 0.2,
		Assessments: []overseer.Assessment{assessment(-1, "code", 0.2, overseer.BandOffTrack, true), assessment(2, "test", 0.2, overseer.BandOffTrack, true)},
		Gates: []overseer.Gate{
			{ID: "code-1", Phase: "code", Reason: "off track", PausedAt: t0, ResumedAt: &t1, Action: overseer.ActionContinue,
				Expired: true, ExpiredBy: "deadline 4h: continue"},
			{ID: "test-2", Phase: "test", Reason: "off track", PausedAt: t2, ResumedAt: &t3, Action: overseer.ActionAbort,
				ExpiredBy: "closed with gate test-3 (deadline 1h: abort)"},
			{ID: "test-4", Phase: "test", Reason: "off track", PausedAt: t3, Cancelled: true},
		},
	}
	_, body := gateJob(t, "canceled", st)
	text := pageText(body)
	assert.Contains(t, text, "expired at 2026-11-30 13:00:00 UTC (deadline 4h: continue): continue, the job went on without a reviewer's note")
	assert.Contains(t, text, "closed at 2026-11-30 15:00:00 UTC (closed with gate test-3 (deadline 1h: abort)): abort, the job was aborted")
	assert.Contains(t, text, "cancelled with the run while the gate was open")
	assert.NotContains(t, text, "resumed by")
	assert.NotContains(t, text, "aborted by")
	assert.Contains(t, body, "expired (deadline 4h: continue): continue</title>")
}

// An open gate shows its deadline and the time left, its escalation, and
// who may resume it beside the form.
func TestJobPageShowsAnOpenGatesDeadlineEscalationAndApprovers(t *testing.T) {
	opened := gateNow.Add(-25 * time.Hour)
	esc := opened.Add(24 * time.Hour)
	deadline := opened.Add(72 * time.Hour) // 47h left
	st := overseer.Status{
		Mode: overseer.ModeManage, Phase: "code", Assessed: true, Band: overseer.BandOffTrack, OnObjective: 0.2,
		Paused: true, GateID: "code-1", PausedSince: &opened, PauseReason: "off track", GateDeadline: &deadline,
		Approval: overseer.Approval{Approvers: []string{"alice", "group:sre"}, FourEyes: true},
		Gates: []overseer.Gate{{ID: "code-1", Phase: "code", Reason: "off track", PausedAt: opened, Deadline: &deadline,
			EscalatedAt: &esc, EscalatedBy: "deadline 24h: escalate"}},
	}
	_, body := gateJob(t, "running", st)
	text := pageText(body)
	when := deadline.Format("2006-01-02 15:04:05 UTC")
	assert.Contains(t, text, "Deadline "+when+" (1d 23h left): if nobody resumes the gate by then", "the panel")
	assert.Contains(t, text, "deadline "+when+" (1d 23h left)", "the timeline")
	assert.Contains(t, text, "Escalated at "+esc.Format("2006-01-02 15:04:05 UTC")+" (deadline 24h: escalate)")
	assert.Contains(t, text, "escalated at "+esc.Format("2006-01-02 15:04:05 UTC")+" (deadline 24h: escalate) nobody had resumed it in 1d 0h")

	form := body[strings.Index(body, `<form method="post" action="/job/resume"`):]
	form = form[:strings.Index(form, "</form>")]
	assert.Contains(t, form, `<p class="approval" data-approval><b>Who may resume:</b> alice, group:sre (not the job&#39;s starter)</p>`,
		"who may resume, in the resume form")

	// The escalated gate names what its final deadline will do.
	st.Gates[0].DeadlineBy, st.Gates[0].DeadlineAction = "deadline 72h: abort", overseer.DeadlineAbort
	_, body = gateJob(t, "running", st)
	text = pageText(body)
	assert.Contains(t, text, "Deadline "+when+" (1d 23h left): if nobody resumes the gate by then, the job is aborted (deadline 72h: abort).", "the panel")
	assert.Contains(t, text, "deadline "+when+" (1d 23h left) deadline 72h: abort", "the timeline")
	st.Gates[0].DeadlineBy, st.Gates[0].DeadlineAction = "deadline 72h: continue", overseer.DeadlineContinue
	_, body = gateJob(t, "running", st)
	assert.Contains(t, pageText(body), "if nobody resumes the gate by then, the job goes on without a reviewer (deadline 72h: continue).")
	st.Gates[0].DeadlineBy, st.Gates[0].DeadlineAction = "", ""

	// Past its deadline, the gate is due: the worker acts any moment.
	past := gateNow.Add(-time.Minute)
	st.GateDeadline, st.Gates[0].Deadline = &past, &past
	_, body = gateJob(t, "running", st)
	text = pageText(body)
	assert.Contains(t, text, "Deadline "+past.UTC().Format("2006-01-02 15:04:05 UTC")+" (due now)")
	assert.Contains(t, text, "deadline "+past.UTC().Format("2006-01-02 15:04:05 UTC")+" (due now)")
}

// A gate without deadline nor approval shows neither.
func TestJobPageWithoutDeadlineOrApproval(t *testing.T) {
	srv := newServer(t, newBackend(), dashboard.Options{})
	_, body := get(t, srv.Client(), srv.URL+"/job?id=job-paused")
	assert.NotContains(t, body, "data-deadline")
	assert.NotContains(t, body, "data-escalated")
	assert.NotContains(t, body, "data-approval")
}

// refusingBackend refuses every resume as the workflow's approval would.
type refusingBackend struct {
	*fakeBackend
	msg string
}

func (b refusingBackend) Resume(context.Context, string, overseer.ResumeRequest) (overseer.Gate, error) {
	return overseer.Gate{}, temporal.NewNonRetryableApplicationError(b.msg, overseer.NotAuthorizedErrorType, nil)
}

// A refusal by the approval says so in the form, beside who may resume.
func TestJobPageShowsTheApprovalRefusal(t *testing.T) {
	fb := newBackend()
	st := fb.statuses["job-paused"]
	st.Approval = overseer.Approval{Approvers: []string{"alice"}}
	fb.statuses["job-paused"] = st
	d, err := dashboard.New(dashboard.Options{Backend: refusingBackend{fb, `overseer: "mallory" may not resume this job: its approvers are alice`}})
	require.NoError(t, err)
	srv := newServerFor(t, d)
	token, cookie := formToken(t, srv, "job-paused")
	form := url.Values{"id": {"job-paused"}, "by": {"mallory"}, "csrf": {token}, "gate": {"code-1"}}
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/job/resume", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(cookie)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	text := pageText(string(b))
	assert.Contains(t, text, `You may not open this gate: "mallory" may not resume this job: its approvers are alice.`)
	assert.Contains(t, text, "Who may resume: alice")
}

func newServerFor(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// A signed-in user the gate's approval refuses sees why, in the refusal's
// words, instead of a resume form that would only be refused; an approver
// sees the form.
func TestJobPageTellsASignedInUserWhoMayNotOpenTheGateWhy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		approval overseer.Approval
		starter  string
		user     map[string]string
		want     string // "" for the form
	}{
		{"not an approver", overseer.Approval{Approvers: []string{"alice", "group:sre"}}, "",
			map[string]string{"X-Forwarded-User": "mallory", "X-Forwarded-Groups": "dev"},
			`You may not open this gate: "mallory" may not resume this job: its approvers are alice, group:sre.`},
		{"the job's starter", overseer.Approval{Approvers: []string{"alice"}, FourEyes: true}, "alice",
			map[string]string{"X-Forwarded-User": "alice"},
			`You may not open this gate: "alice" started this job and may not resume its own gate (four-eyes rule): ask another approver.`},
		{"no starter on record", overseer.Approval{Approvers: []string{"alice"}, FourEyes: true, NoStarter: true}, "",
			map[string]string{"X-Forwarded-User": "alice"},
			`You may not open this gate: this job's gates need a reviewer other than its starter, and the job does not say who started it`},
		{"an approver by group", overseer.Approval{Approvers: []string{"alice", "group:sre"}, FourEyes: true}, "alice",
			map[string]string{"X-Forwarded-User": "bob", "X-Forwarded-Groups": "sre"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend()
			st := b.statuses["job-paused"]
			st.Approval, st.StartedBy = tc.approval, tc.starter
			b.statuses["job-paused"] = st
			srv := newServer(t, b, dashboard.Options{TrustedProxy: dashboard.TrustedProxy{Addresses: []string{"127.0.0.0/8"}}})
			req, err := http.NewRequest(http.MethodGet, srv.URL+"/job?id=job-paused", nil)
			require.NoError(t, err)
			for k, v := range tc.user {
				req.Header.Set(k, v)
			}
			resp, err := srv.Client().Do(req)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			text := pageText(string(body))
			if tc.want == "" {
				assert.Contains(t, string(body), `<form method="post" action="/job/resume"`)
				assert.NotContains(t, string(body), "data-cannot-resume")
				return
			}
			assert.Contains(t, text, tc.want)
			assert.NotContains(t, string(body), `action="/job/resume"`, "no form that would only be refused")
			assert.Contains(t, text, "Who may resume: "+tc.approval.String())
		})
	}

	// Without sign-in the form asks who resumes: the approval is the
	// resume's to check.
	b := newBackend()
	st := b.statuses["job-paused"]
	st.Approval = overseer.Approval{Approvers: []string{"alice"}}
	b.statuses["job-paused"] = st
	srv := newServer(t, b, dashboard.Options{})
	_, body := get(t, srv.Client(), srv.URL+"/job?id=job-paused")
	assert.Contains(t, body, `<form method="post" action="/job/resume"`)
}
