package ops

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/corohq/temporal-overseer/overseer"
)

// Patience is how a read of one job waits out a slow server: a loaded
// server, or a worker too busy to answer a query at once, lets a call time
// out although nothing is wrong. Each call has CallTimeout; one that timed
// out is made again, after a pause, until Wait has passed since the first
// began (or the caller's context ends). The zero value waits
// DefaultPatience, each call within DefaultCallTimeout, and says nothing.
type Patience struct {
	// CallTimeout bounds each call. If not set, DefaultCallTimeout.
	CallTimeout time.Duration
	// Wait bounds all the calls together, from the first one's start. If
	// not set, DefaultPatience. The caller's context may end it sooner.
	Wait time.Duration
	// Say receives, once, at the first call that timed out, a line that
	// says the server is slow and the read goes on ("the server is slow
	// to answer job j-1; still trying (10 s so far)"). If not set, nothing
	// is said.
	Say io.Writer
	// Backoff is the pause after the first call that timed out, doubled
	// after each later one up to maxPatienceBackoff. If not set, 1 s.
	Backoff time.Duration
	// Now is the clock the wait is measured by. If not set, time.Now.
	Now func() time.Time
}

// DefaultPatience is how long a read of one job waits out a slow server
// when Patience.Wait is not set.
const DefaultPatience = time.Minute

// Bounds of Patiently's retries, whatever the clock says.
const (
	maxPatienceBackoff  = 8 * time.Second
	maxPatienceAttempts = 30
)

// Patiently calls call for job id, each time within p.CallTimeout, and
// again after a call that timed out (TimedOut), until one answers, one
// fails otherwise, or p.Wait has passed: then it fails with a sentence
// that says how long it waited, wrapping the last call's error (TimedOut
// holds for it). Any other error is returned at once, as call returned it.
func Patiently[T any](ctx context.Context, id string, p Patience, call func(context.Context) (T, error)) (T, error) {
	now := p.Now
	if now == nil {
		now = time.Now
	}
	callTimeout := cmp.Or(p.CallTimeout, DefaultCallTimeout)
	backoff := cmp.Or(p.Backoff, time.Second)
	start := now()
	deadline := start.Add(cmp.Or(p.Wait, DefaultPatience))
	said := false
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, min(callTimeout, max(deadline.Sub(now()), time.Millisecond)))
		v, err := call(cctx)
		cancel()
		if err == nil || !TimedOut(err) || (ctx.Err() != nil && ctx.Err() != context.DeadlineExceeded) {
			return v, err
		}
		waited := now().Sub(start)
		if ctx.Err() != nil || !now().Add(backoff).Before(deadline) || attempt == maxPatienceAttempts {
			return v, wordedError{Msg: fmt.Sprintf("job %q: the server did not answer in %s (asked %s, each time waiting up to %s; is a worker running on the task queue?)",
				id, waited.Round(time.Second), times(attempt), callTimeout), Err: err}
		}
		if !said && p.Say != nil {
			fmt.Fprintf(p.Say, "the server is slow to answer job %s; still trying (%d s so far)\n", id, int(waited.Round(time.Second)/time.Second))
			said = true
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		backoff = min(2*backoff, maxPatienceBackoff)
	}
}

// times says n as "once", "twice", "3 times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

// StatusPatiently is RunStatus waiting out a slow server as p says: a
// query that timed out is asked again until p.Wait has passed.
func StatusPatiently(ctx context.Context, c client.Client, id, runID string, p Patience) (overseer.Status, error) {
	return Patiently(ctx, id, p, func(ctx context.Context) (overseer.Status, error) { return RunStatus(ctx, c, id, runID) })
}
