package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/overseer"
)

// postResume posts the job page's resume form with form's fields.
func postResume(t *testing.T, srv interface{ Client() *http.Client }, base string, token string, cookie *http.Cookie, form url.Values) (int, string) {
	t.Helper()
	form.Set("id", "job-paused")
	form.Set("csrf", token)
	resp, body := post(t, srv.Client(), base+"/job/resume", form, map[string]string{"Cookie": cookie.Name + "=" + cookie.Value})
	return resp.StatusCode, body
}

// The job page asks whether the pause was needed in the click that sends
// the decision: two buttons beside plain Send, which leaves it to the rule.
func TestJobPageAsksWhetherThePauseWasNeededInOneClick(t *testing.T) {
	for _, tc := range []struct {
		name   string
		form   url.Values
		code   int
		needed *bool
		says   string
	}{
		{"needed", url.Values{"by": {"alice"}, "note": {"root cause first"}, "action": {"continue"}, "needed": {"yes"}}, http.StatusOK, new(true), ""},
		{"a false alarm", url.Values{"by": {"alice"}, "action": {"continue"}, "needed": {"no"}}, http.StatusOK, new(false), ""},
		{"plain send leaves it to the rule", url.Values{"by": {"alice"}, "action": {"continue"}}, http.StatusOK, nil, ""},
		{"an abort called a false alarm is refused", url.Values{"by": {"alice"}, "action": {"abort"}, "needed": {"no"}}, http.StatusUnprocessableEntity, nil,
			`The request was refused: resume action "abort" is always a needed pause: drop "needed": false, or continue instead.`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBackend()
			srv := newServer(t, b, dashboard.Options{})
			_, page := get(t, srv.Client(), srv.URL+"/job?id=job-paused")
			assert.Contains(t, page, `<button type="submit" name="needed" value="yes" data-needed="yes">Send — the pause was needed</button>`)
			assert.Contains(t, page, `<button type="submit" name="needed" value="no" data-needed="no">Send — a false alarm</button>`)
			token, cookie := formToken(t, srv, "job-paused")
			code, body := postResume(t, srv, srv.URL, token, cookie, tc.form)
			require.Equal(t, tc.code, code, body)
			if tc.says != "" {
				assert.Contains(t, pageText(body), tc.says)
				assert.Empty(t, b.resumed)
				return
			}
			require.Len(t, b.resumed, 1)
			assert.Equal(t, tc.needed, b.resumed[0].Needed)
		})
	}
}

// The timeline says of each closed gate whether its pause was needed and
// which rule said so.
func TestJobTimelineSaysWhetherEachPauseWasNeeded(t *testing.T) {
	at := t0.Add(time.Hour)
	expired := t0.Add(3 * time.Hour)
	st := overseer.Status{Mode: overseer.ModeManage, Phase: "test", Gates: []overseer.Gate{
		{ID: "code-1", Phase: "code", Reason: "off track", PausedAt: t0, ResumedAt: &at, By: "alice", Note: "root cause first",
			Action: overseer.ActionContinue, Needed: new(true), NeededBy: overseer.NeededByNote},
		{ID: "test-2", Phase: "test", Reason: "off track", PausedAt: at, ResumedAt: &expired, Action: overseer.ActionContinue,
			Expired: true, ExpiredBy: "deadline 2h: continue", Needed: new(false), NeededBy: overseer.NeededByDeadline},
	}}
	_, body := gateJob(t, "completed", st)
	text := pageText(body)
	assert.Contains(t, text, "resumed by alice after 1h 0m at the gate pause needed: a continue with a note counts as needed")
	assert.Contains(t, text, "pause not needed (a false alarm): nobody judged it; the deadline continued the job")
}

// judgingBackend closes gates with the judgement the workflow records.
type judgingBackend struct{ *fakeBackend }

func (b judgingBackend) Resume(ctx context.Context, id string, req overseer.ResumeRequest) (overseer.Gate, error) {
	g, err := b.fakeBackend.Resume(ctx, id, req)
	if err == nil && req.Needed != nil {
		g.Needed, g.NeededBy = req.Needed, overseer.NeededByReviewer
	}
	return g, err
}

// The Waiting page's batch resume asks it in the same click, for every
// selected gate, and says each judgement in the results.
func TestBatchResumeSaysWhetherThePausesWereNeeded(t *testing.T) {
	b := waitingBackend()
	d, err := dashboard.New(dashboard.Options{Backend: judgingBackend{b}})
	require.NoError(t, err)
	srv := newServerFor(t, d)
	c := jarClient(t, false)
	_, page := get(t, srv.Client(), srv.URL+"/waiting")
	assert.Contains(t, page, `<button type="submit" name="needed" value="no" data-needed="no">Send — false alarms</button>`)
	token := pageToken(t, c, srv.URL+"/waiting", nil)
	form := url.Values{"csrf": {token}, "by": {"alice"}, "action": {"continue"}, "needed": {"no"},
		"gate": {gateOf("job-early", "spec-1"), gateOf("job-paused", "code-1")}}
	resp, body := post(t, c, srv.URL+"/waiting/resume", form, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Len(t, b.resumed, 2)
	for _, r := range b.resumed {
		assert.Equal(t, new(false), r.Needed)
	}
	assert.Equal(t, 2, strings.Count(body, `<span class="sub" data-needed>pause not needed (a false alarm), the reviewer said</span>`))
}
