package ops_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
)

// slowClient is a server whose status query times out the first
// timeouts times it is asked, then answers status; each query moves the
// fake clock on by took, as a query that waited out its call timeout
// would.
type slowClient struct {
	client.Client // nil: a call the test does not expect panics
	timeouts      int
	status        overseer.Status
	clock         *fakeClock
	took          time.Duration
	queries       int
}

func (c *slowClient) QueryWorkflow(ctx context.Context, id, runID, query string, _ ...any) (converter.EncodedValue, error) {
	c.queries++
	c.clock.t = c.clock.t.Add(c.took)
	if query != overseer.StatusQueryName {
		return nil, errors.New("unexpected query " + query)
	}
	if _, ok := ctx.Deadline(); !ok {
		return nil, errors.New("the query has no deadline")
	}
	if c.queries <= c.timeouts {
		// As the SDK reports its own call timeout.
		return nil, serviceerror.NewDeadlineExceeded("context deadline exceeded")
	}
	return jsonValue{c.status}, nil
}

type jsonValue struct{ v any }

func (v jsonValue) HasValue() bool { return true }
func (v jsonValue) Get(ptr any) error {
	b, err := json.Marshal(v.v)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, ptr)
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// A status query that times out twice is asked again, and the third answer
// is the status; the slow server is said once, with the time so far. One
// that keeps timing out fails after the overall wait, saying how long it
// waited, and is still a timeout (TimedOut).
func TestStatusPatientlyWaitsOutASlowServer(t *testing.T) {
	tests := []struct {
		name     string
		timeouts int
		wait     time.Duration
		queries  int
		says     string
		err      string
	}{
		{name: "answers at once", timeouts: 0, wait: time.Minute, queries: 1},
		{name: "times out twice, then answers", timeouts: 2, wait: time.Minute, queries: 3,
			says: "the server is slow to answer job j-1; still trying (10 s so far)\n"},
		{name: "never answers", timeouts: 100, wait: 35 * time.Second, queries: 4,
			says: "the server is slow to answer job j-1; still trying (10 s so far)\n",
			err:  `job "j-1": the server did not answer in 40s (asked 4 times, each time waiting up to 10s; is a worker running on the task queue?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)}
			c := &slowClient{timeouts: tt.timeouts, status: overseer.Status{Phase: "code", Mode: overseer.ModeManage}, clock: clock, took: 10 * time.Second}
			var said bytes.Buffer
			p := ops.Patience{CallTimeout: 10 * time.Second, Wait: tt.wait, Say: &said, Backoff: time.Millisecond, Now: clock.now}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := ops.StatusPatiently(ctx, c, "j-1", "", p)
			assert.Equal(t, tt.queries, c.queries, "queries")
			assert.Equal(t, tt.says, said.String())
			assert.LessOrEqual(t, strings.Count(said.String(), "\n"), 1, "said at most once")
			if tt.err != "" {
				require.Error(t, err)
				assert.Equal(t, tt.err, err.Error())
				assert.True(t, ops.TimedOut(err), "still a timeout: %v", err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "code", s.Phase)
		})
	}
}

// An error other than a timeout is not asked again; a timeout is worded
// by JobError and stays a timeout, so that a caller can ask again.
func TestPatientlyRetriesOnlyTimeouts(t *testing.T) {
	calls := 0
	boom := errors.New("boom")
	_, err := ops.Patiently(context.Background(), "j-1", ops.Patience{Backoff: time.Millisecond}, func(context.Context) (int, error) {
		calls++
		return 0, boom
	})
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, 1, calls)

	err = ops.JobError("j-1", serviceerror.NewDeadlineExceeded("context deadline exceeded"))
	assert.True(t, ops.TimedOut(err), "JobError keeps the timeout: %v", err)
	assert.EqualError(t, err, `job "j-1": the server did not answer in time (is a worker running on the task queue?)`)
}

// The caller's context bounds the wait too: a cancelled one ends it at
// once with the call's own error.
func TestPatientlyStopsWhenTheCallerCancels(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	_, err := ops.Patiently(ctx, "j-1", ops.Patience{Backoff: time.Millisecond}, func(context.Context) (int, error) {
		calls++
		cancel()
		return 0, context.Canceled
	})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, calls)
}
