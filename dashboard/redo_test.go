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
	"go.temporal.io/sdk/temporal"

	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/overseer"
)

// The job page offers a third action beside continue and abort while the
// open gate's phase may be redone, with how many redos are left; none when
// the job allows no more.
func TestJobPageOffersARedoWhileTheBoundAllows(t *testing.T) {
	since := t0
	st := overseer.Status{Mode: overseer.ModeManage, Phase: "code", Paused: true, GateID: "code-2", PausedSince: &since, PauseReason: "off track",
		MaxRedos: 2, Gates: []overseer.Gate{
			{ID: "code-1", Phase: "code", Reason: "off track", PausedAt: t0.Add(-time.Hour), ResumedAt: &since, By: "alice",
				Note: "tests first", Action: overseer.ActionRedo, Attempt: 1},
			{ID: "code-2", Phase: "code", Reason: "off track", PausedAt: since, Attempt: 2},
		}}
	_, body := gateJob(t, "running", st)
	assert.Contains(t, body, `value="redo"`)
	text := pageText(body)
	assert.Contains(t, text, "Redo code with the note (its result is rejected and the phase runs again; 1 redo left)")
	assert.Contains(t, text, "redone by alice code runs again with the note")

	st.Gates[1].Attempt = 3
	_, body = gateJob(t, "running", st)
	assert.NotContains(t, body, `value="redo"`, "the bound is reached")
	st.Gates[1].Attempt, st.MaxRedos = 1, -1
	_, body = gateJob(t, "running", st)
	assert.NotContains(t, body, `value="redo"`, "the job allows no redo")
}

// redoRefusingBackend refuses a redo as the workflow's validator does past
// the bound.
type redoRefusingBackend struct{ *fakeBackend }

func (b redoRefusingBackend) Resume(context.Context, string, overseer.ResumeRequest) (overseer.Gate, error) {
	return overseer.Gate{}, temporal.NewNonRetryableApplicationError("overseer: gate code-1 cannot be redone: phase code was redone 2 time(s) already, "+
		"the most this job allows (Options.MaxRedos 2); continue with a note or abort", overseer.RedoRefusedErrorType, nil)
}

func TestJobPageRedoSendsTheActionAndSaysARefusal(t *testing.T) {
	b := newBackend()
	srv := newServer(t, b, dashboard.Options{})
	token, cookie := formToken(t, srv, "job-paused")
	form := url.Values{"id": {"job-paused"}, "by": {"alice"}, "note": {"tests first"}, "action": {"redo"}, "csrf": {token}, "gate": {"code-1"}}
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/job/resume", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(cookie)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, resp.Request.URL.RawQuery, "done=redo")
	require.Len(t, b.resumed, 1)
	assert.Equal(t, overseer.ActionRedo, b.resumed[0].Action)
	assert.Equal(t, "tests first", b.resumed[0].Note)

	d, err := dashboard.New(dashboard.Options{Backend: redoRefusingBackend{newBackend()}})
	require.NoError(t, err)
	srv = newServerFor(t, d)
	token, cookie = formToken(t, srv, "job-paused")
	form.Set("csrf", token)
	resp, body := post(t, srv.Client(), srv.URL+"/job/resume", form, map[string]string{"Cookie": cookie.Name + "=" + cookie.Value})
	assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	assert.Contains(t, pageText(body), "The redo was refused: gate code-1 cannot be redone: phase code was redone 2 time(s) already")
}

// The Waiting page's batch form redoes each selected gate's phase with the
// one note, and reports each as redone.
func TestBatchRedo(t *testing.T) {
	b := waitingBackend()
	srv := newServer(t, b, dashboard.Options{})
	c := jarClient(t, false)
	token := pageToken(t, c, srv.URL+"/waiting", nil)
	_, page := get(t, c, srv.URL+"/waiting")
	assert.Contains(t, page, `name="action" value="redo"`, "the batch form offers a redo")
	form := url.Values{"csrf": {token}, "by": {"alice"}, "note": {"same root cause: fix the writer"}, "action": {"redo"},
		"gate": {gateOf("job-early", "spec-1"), gateOf("job-paused", "code-1")}}
	resp, body := post(t, c, srv.URL+"/waiting/resume", form, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Len(t, b.resumed, 2)
	for _, r := range b.resumed {
		assert.Equal(t, overseer.ActionRedo, r.Action)
		assert.Equal(t, "same root cause: fix the writer", r.Note)
	}
	assert.Regexp(t, `<tr data-result="job-early" data-ok="true">\s*<td class="job">.*</td>\s*<td>spec-1</td>\s*<td><span class="badge on_track">redone</span> by alice`, body)
}
