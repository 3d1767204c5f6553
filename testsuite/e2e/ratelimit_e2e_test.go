package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/cmd/overseer/cli"
	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/worker"
)

// A server that refuses visibility calls as over the namespace's rate
// limit (a dev server allowing the namespace 1 visibility call a second,
// as Temporal Cloud allows 30, while other callers use them): the
// dashboard's list says so in a sentence, keeps showing the jobs it read
// last with when it read them, and shows them afresh at a refresh once
// the server takes calls again; `overseer list` says so and exits 1,
// never an empty list and exit 0. Before, the page read "the server did
// not answer a List call within 1s" over an empty table.
func TestRateLimitedVisibilityIsSaidNotShownEmpty(t *testing.T) {
	requireCLI(t)
	if onCluster() {
		t.Skip("needs a server of its own with a visibility rate limit of 1 a second (dev server target)")
	}
	srv := testsuite.StartDevServerForTest(t, testsuite.DevServerOptions{
		Logger:        worker.SDKLogger(zap.NewNop()),
		DynamicConfig: map[string]string{"frontend.namespaceRPS.visibility": "1"},
	})
	cfg := worker.Config{Address: srv.FrontendHostPort(), Namespace: srv.Namespace()}
	opts, err := cfg.ClientOptions()
	require.NoError(t, err)
	c, err := client.Dial(opts)
	require.NoError(t, err)
	t.Cleanup(c.Close)

	// A job to list (no worker: it waits for one, running).
	id := fmt.Sprintf("e2e-ratelimit-%d", time.Now().UnixNano())
	_, err = c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: "e2e-ratelimit-none"}, "E2ERateLimited")
	require.NoError(t, err)

	d, err := dashboard.New(dashboard.Options{Client: c, Namespace: srv.Namespace(), Refresh: time.Second, Timeout: time.Second, ViewFresh: -1})
	require.NoError(t, err)
	hs := httptest.NewServer(d)
	t.Cleanup(hs.Close)
	get := func() string {
		resp, err := http.Get(hs.URL + "/")
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	eventually(t, "the job to be listed", time.Minute, func() bool {
		body := get()
		return strings.Contains(body, id) && !strings.Contains(body, `class="error"`)
	})

	// Other callers take the namespace's visibility calls.
	hammer, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for hammer.Err() == nil {
				ctx, cancel := context.WithTimeout(hammer, 200*time.Millisecond)
				_, _ = c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{})
				cancel()
			}
		}()
	}
	stopHammer := sync.OnceFunc(func() { stop(); wg.Wait() })
	t.Cleanup(stopHammer)

	var throttled string
	eventually(t, "the list page to say the server refused its List call", time.Minute, func() bool {
		throttled = get()
		return strings.Contains(throttled, "over the namespace&#39;s rate limit")
	})
	assert.Contains(t, throttled, "Temporal did not list the jobs: list jobs: the server refused a List call")
	assert.Contains(t, throttled, "RESOURCE_EXHAUSTED")
	assert.Contains(t, throttled, "showing what was read at ")
	assert.Contains(t, throttled, "this page tries again every 1s")
	assert.Contains(t, throttled, id, "the jobs read last are still shown")
	assert.NotContains(t, throttled, "No jobs match.")
	assert.NotContains(t, throttled, "did not answer a List call")

	var out, errOut bytes.Buffer
	var code int
	eventually(t, "overseer list to say the server refused its List call", time.Minute, func() bool {
		out.Reset()
		errOut.Reset()
		code = cli.Main(context.Background(), []string{"list", "--address", srv.FrontendHostPort(), "--namespace", srv.Namespace(), "--timeout", "1s"}, &out, &errOut)
		return strings.Contains(errOut.String(), "over the namespace's rate limit")
	})
	assert.Equal(t, 1, code, "a refused list is not a success")
	assert.Contains(t, errOut.String(), "try again in a few seconds")

	stopHammer()
	eventually(t, "the list page to read the jobs afresh", time.Minute, func() bool {
		body := get()
		return strings.Contains(body, id) && !strings.Contains(body, `class="error"`)
	})
}
