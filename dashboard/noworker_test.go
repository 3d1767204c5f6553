package dashboard_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/dashboard"
)

// workerless is the fake backend with a WorkerChecker: polled says
// whether a worker polls the jobs' queue, checks counts the checks.
type workerless struct {
	*fakeBackend
	polled atomic.Bool
	checks atomic.Int64
}

func (b *workerless) WorkerPolls(context.Context, string) (bool, error) {
	b.checks.Add(1)
	return b.polled.Load(), nil
}

// With no worker polling the job's task queue, the job page does not ask
// the status query (which a server holds until its own timeout) and says
// why at once; the pages share one check a few seconds; once a worker
// polls again, the status is read.
func TestJobPageWithNoWorkerSaysSoWithoutQuerying(t *testing.T) {
	fb := newBackend()
	for i := range fb.jobs {
		fb.jobs[i].TaskQueue = "overseer-jobs"
	}
	b := &workerless{fakeBackend: fb}
	d, err := dashboard.New(dashboard.Options{Backend: b})
	require.NoError(t, err)
	srv := httptest.NewServer(d)
	defer srv.Close()
	get := func() string {
		resp, err := http.Get(srv.URL + "/job?id=job-off")
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		return string(body)
	}
	for range 3 {
		page := get()
		assert.Contains(t, page, "no worker polls the job&#39;s task queue (overseer-jobs): its overseer status comes from a worker; start one")
	}
	fb.mu.Lock()
	calls := len(fb.statusCalls)
	fb.mu.Unlock()
	assert.Zero(t, calls, "no status query while no worker polls")
	assert.EqualValues(t, 1, b.checks.Load(), "three page views share one check")

	b.polled.Store(true)
	d2, err := dashboard.New(dashboard.Options{Backend: b})
	require.NoError(t, err)
	srv2 := httptest.NewServer(d2)
	defer srv2.Close()
	resp, err := http.Get(srv2.URL + "/job?id=job-off")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.NotContains(t, string(body), "no worker polls")
	fb.mu.Lock()
	calls = len(fb.statusCalls)
	fb.mu.Unlock()
	assert.Equal(t, 1, calls, "with a worker polling, the status is read")
}
