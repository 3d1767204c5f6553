package dashboard_test

import (
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
)

// TestViewsReadSummariesAndShowWhatTheyCannotRead: a paused job with a
// summary is listed and queued from it without a status query; one
// without a summary whose query fails is a row that says it was not read,
// never dropped; a gate's attempt shows in the queue.
func TestViewsReadSummariesAndShowWhatTheyCannotRead(t *testing.T) {
	b := newBackend()
	since := t0.Add(time.Hour)
	b.jobs = append(b.jobs,
		ops.Job{ID: "job-summary", Type: "CoroJob", State: "running", Paused: true, Started: t0,
			Summary: &overseer.Summary{Mode: overseer.ModeManage, Phase: "test", Band: overseer.BandOnTrack, OnObjective: 0.8, Assessed: true, Pauses: 2,
				Gates: []overseer.SummaryGate{{ID: "test-2", Phase: "test", PausedAt: since, Why: "the tests failed the same way three times", Attempt: 2}}}},
		ops.Job{ID: "job-no-worker", Type: "CoroJob", State: "running", Paused: true, Started: t0})
	srv := newServer(t, b, dashboard.Options{Now: func() time.Time { return t0.Add(2 * time.Hour) }})
	code, page := get(t, srv.Client(), srv.URL+"/waiting")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, page, "the tests failed the same way three times")
	assert.Contains(t, page, "gate test-2 · run 2 of its phase")
	assert.Contains(t, page, `data-job="job-no-worker"`, "a job that could not be read keeps its row")
	assert.Contains(t, page, "Not read: ")
	_, list := get(t, srv.Client(), srv.URL+"/?filter=paused")
	assert.Contains(t, list, `<div class="sub why" data-why>the tests failed the same way three times</div><div class="sub last">Needs a look; the last assessment said 80%</div>`)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.statusCalls {
		assert.NotContains(t, c, "job-summary", "its summary was enough")
	}
}

// TestTabsShareOneReadOfAView: sixteen tabs loading the Waiting page and
// the list at once cost one List call each, not sixteen; a resume from the
// dashboard clears them, so the next load reads afresh and no longer shows
// the gate it closed.
func TestTabsShareOneReadOfAView(t *testing.T) {
	b := newBackend()
	srv := newServer(t, b, dashboard.Options{ViewFresh: time.Minute, Refresh: time.Minute})
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			code, page := get(t, srv.Client(), srv.URL+"/waiting")
			assert.Equal(t, http.StatusOK, code)
			assert.Contains(t, page, `data-job="job-paused"`)
		})
		wg.Go(func() {
			code, _ := get(t, srv.Client(), srv.URL+"/")
			assert.Equal(t, http.StatusOK, code)
		})
	}
	wg.Wait()
	b.mu.Lock()
	assert.Equal(t, 2, b.listCalls, "one read of each view for the sixteen tabs")
	b.mu.Unlock()

	c := jarClient(t, false)
	token := pageToken(t, c, srv.URL+"/waiting", nil)
	resp, body := post(t, c, srv.URL+"/waiting/resume", url.Values{"csrf": {token}, "by": {"alice"}, "gate": {gateOf("job-paused", "code-1")}, "action": {"continue"}}, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	_, page := get(t, c, srv.URL+"/waiting")
	assert.NotContains(t, page, `data-job="job-paused"`, "read afresh after the resume")
}
