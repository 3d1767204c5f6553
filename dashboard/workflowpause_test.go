package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
)

// operatorPausable is the fake backend with Temporal's Workflow Pause: while
// paused, the status query and the resume update are refused as ops refuses
// them on a real server (an *ops.OperatorPausedError).
type operatorPausable struct {
	*fakeBackend
	paused atomic.Bool
}

func (b *operatorPausable) pause(id string) ops.OperatorPause {
	since := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	return ops.OperatorPause{JobID: id, Identity: "ops-oncall", Reason: "database migration", Since: &since, Unpause: ops.UnpauseCommand(id)}
}

func (b *operatorPausable) Status(ctx context.Context, id, runID string) (overseer.Status, error) {
	if b.paused.Load() {
		return overseer.Status{}, &ops.OperatorPausedError{Pause: b.pause(id), Err: serviceerror.NewFailedPrecondition("query rejected: paused")}
	}
	return b.fakeBackend.Status(ctx, id, runID)
}

func (b *operatorPausable) Resume(ctx context.Context, id string, req overseer.ResumeRequest) (overseer.Gate, error) {
	if b.paused.Load() {
		return overseer.Gate{}, &ops.OperatorPausedError{Pause: b.pause(id), Resume: true,
			Err: serviceerror.NewFailedPrecondition("Workflow is paused. Cannot update the workflow.")}
	}
	return b.fakeBackend.Resume(ctx, id, req)
}

// A job an operator paused at its gate: the page says so and how to unpause
// it instead of the form, a resume posted from a page loaded before the
// pause is refused in that sentence and leaves the gate open, and after the
// unpause the page shows the gate and its form again.
func TestJobPausedByAnOperatorWithWorkflowPause(t *testing.T) {
	fb := newBackend()
	b := &operatorPausable{fakeBackend: fb}
	d, err := dashboard.New(dashboard.Options{Backend: b})
	require.NoError(t, err)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	token, cookie := formToken(t, srv, "job-paused") // loaded before the pause

	b.paused.Store(true)
	form := url.Values{"id": {"job-paused"}, "csrf": {token}, "by": {"alice"}, "action": {"continue"}, "gate": {"code-1"}}
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/job/resume", strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.AddCookie(cookie)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	assert.Contains(t, string(body), "an operator paused the workflow with Temporal&#39;s Workflow Pause by ops-oncall")
	assert.Contains(t, string(body), "temporal workflow unpause --workflow-id job-paused")
	assert.Contains(t, string(body), "then resume it again")
	assert.Empty(t, fb.resumed, "nothing was resumed")

	code, page := get(t, srv.Client(), srv.URL+"/job?id=job-paused")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, `data-operator-paused>Job &#34;job-paused&#34; is paused by an operator`)
	assert.Contains(t, page, "temporal workflow unpause --workflow-id job-paused")
	assert.Contains(t, page, `badge paused">Paused by an operator<`)
	assert.NotContains(t, page, `<form method="post" action="/job/resume"`, "no form: the job takes no resume until it is unpaused")
	assert.NotContains(t, page, "The overseer status is not available")

	// The list names it too, from the search attributes.
	code, list := get(t, srv.Client(), srv.URL+"/")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, list, `badge paused">Paused by an operator<`)

	b.paused.Store(false)
	code, page = get(t, srv.Client(), srv.URL+"/job?id=job-paused")
	require.Equal(t, http.StatusOK, code)
	assert.NotContains(t, page, "data-operator-paused")
	assert.Contains(t, page, `<form method="post" action="/job/resume"`, "unpaused: the gate's form is back")
}
