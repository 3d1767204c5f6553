// Package visibility is the budget and the wording of the Temporal calls
// that views, batches, exports and learn rounds make (ops re-exports it;
// the worker's gauge uses it directly, without ops' dependencies).
package visibility

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrRateLimited: the Temporal server refused a call as over one of the
// namespace's rate limits (RESOURCE_EXHAUSTED) until the call gave up.
// Temporal Cloud allows a namespace 30 visibility calls (List, Count,
// Scan) a second, not configurable; a self-hosted server's limit is
// frontend.namespaceRPS.visibility. Nothing was read or changed by the
// refused call: trying again a few seconds later is safe.
var ErrRateLimited = errors.New("the Temporal server refused the call as over the namespace's rate limit (RESOURCE_EXHAUSTED)")

// Interceptor is a gRPC client interceptor that notes each try of
// a call the server refused with RESOURCE_EXHAUSTED, so that a call the
// SDK retried until its deadline is reported as refused (ErrRateLimited)
// rather than as a server that did not answer. It acts only on calls made
// through Call (it finds its note in the context); other calls pass
// through untouched. worker.Config.ClientOptions installs it; give it to
// a client of your own with
//
//	opts.ConnectionOptions.DialOptions = append(opts.ConnectionOptions.DialOptions,
//		grpc.WithChainUnaryInterceptor(visibility.Interceptor))
//
// (the SDK chains it inside its retries, so it sees every try).
func Interceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	err := invoker(ctx, method, req, reply, cc, opts...)
	if err != nil && status.Code(err) == codes.ResourceExhausted {
		if n, ok := ctx.Value(refusalsKey{}).(*refusals); ok {
			n.add(status.Convert(err).Message())
		}
	}
	return err
}

type refusalsKey struct{}

// refusals counts the tries of one call the server refused.
type refusals struct {
	mu   sync.Mutex
	n    int
	last string
}

func (r *refusals) add(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	r.last = msg
}

func (r *refusals) get() (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n, r.last
}

// Call runs one remote call of a view or command (what names it, e.g. "a
// List call") within timeout, and words its error: a call the server
// refused as over the namespace's rate limit, then retried by the SDK
// until timeout, is ErrRateLimited with how many tries were refused and
// what to do; a call that got no answer says so with the timeout; any
// other error is returned as it is. ctx's own end is not the call's
// fault: its error is returned as it is.
func Call(ctx context.Context, timeout time.Duration, what string, call func(ctx context.Context) error) error {
	r := &refusals{}
	cctx, cancel := context.WithTimeout(context.WithValue(ctx, refusalsKey{}, r), timeout)
	defer cancel()
	err := call(cctx)
	if err == nil || ctx.Err() != nil {
		return err
	}
	var exhausted *serviceerror.ResourceExhausted
	n, msg := r.get()
	if errors.As(err, &exhausted) && n == 0 {
		n, msg = 1, exhausted.Message
	}
	if n > 0 && (TimedOut(err) || errors.As(err, &exhausted)) {
		return rateLimited(what, n, timeout, msg)
	}
	if TimedOut(err) {
		return Worded{Msg: fmt.Sprintf("the server did not answer %s within %s", what, timeout), Err: err}
	}
	return err
}

// rateLimited is the sentence of a call refused n times within timeout.
func rateLimited(what string, n int, timeout time.Duration, msg string) error {
	tries := "once"
	if n > 1 {
		tries = fmt.Sprintf("%d times", n)
	}
	if msg != "" {
		msg = ": " + msg
	}
	return Worded{Err: ErrRateLimited, Msg: fmt.Sprintf("the server refused %s %s within %s as over the namespace's rate limit (RESOURCE_EXHAUSTED%s): "+
		"other views, batches or learn rounds are using the namespace's calls (Temporal Cloud allows 30 visibility calls a second); "+
		"nothing was read or changed by it, try again in a few seconds", what, tries, timeout, msg)}
}

// The process's budget of visibility calls (List, Count), shared by every
// view, batch, export and learn round the process runs, so that one
// process stays well inside a namespace's limit (Temporal Cloud's 30 a
// second) and leaves room for the others (dashboards, workers, people's
// own tools). A call over it waits for its turn, within its context.
const (
	// DefaultRate is the budget's calls a second.
	DefaultRate = 10
	// DefaultBurst is how many calls it lets go at once.
	DefaultBurst = 5
)

var visibilityBudget = rate.NewLimiter(DefaultRate, DefaultBurst)

// SetRate sets the process's budget of visibility calls a second
// (and its burst to half of it, at least 1); 0 or less: no budget. For a
// namespace whose limit is not Temporal Cloud's (a self-hosted server's
// frontend.namespaceRPS.visibility, 10 a frontend by default).
func SetRate(perSecond float64) {
	if perSecond <= 0 {
		visibilityBudget.SetLimit(rate.Inf)
		return
	}
	visibilityBudget.SetBurst(max(1, int(perSecond/2)))
	visibilityBudget.SetLimit(rate.Limit(perSecond))
}

// Budgeted is Call for a visibility call (a List page, a Count):
// it waits for its turn in the process's budget first (the wait counts in
// ctx, not in timeout).
func Budgeted(ctx context.Context, timeout time.Duration, what string, call func(ctx context.Context) error) error {
	if err := visibilityBudget.Wait(ctx); err != nil {
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("waiting for a turn in the process's budget of visibility calls for %s: %w", what, ctx.Err())
		}
		// The limiter refuses at once a wait that would outlast the
		// deadline, in words of its own that wrap nothing: say it as the
		// time-out it is (TimedOut matches it).
		return Worded{Err: context.DeadlineExceeded, Msg: fmt.Sprintf("no turn in this process's budget of visibility calls (%g a second) "+
			"came for %s before its deadline: its views, batches and learn rounds are making more calls than the budget allows; "+
			"nothing was read or changed by it, try again in a few seconds", float64(visibilityBudget.Limit()), what)}
	}
	return Call(ctx, timeout, what, call)
}

// ListPage is one List call within timeout, as Budgeted makes it.
func ListPage(ctx context.Context, c client.Client, timeout time.Duration, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	var resp *workflowservice.ListWorkflowExecutionsResponse
	err := Budgeted(ctx, timeout, "a List call", func(ctx context.Context) (err error) {
		resp, err = c.ListWorkflow(ctx, req)
		return err
	})
	return resp, err
}

// Count is one Count call within timeout, as Budgeted makes it.
func Count(ctx context.Context, c client.Client, timeout time.Duration, req *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error) {
	var resp *workflowservice.CountWorkflowExecutionsResponse
	err := Budgeted(ctx, timeout, "a Count call", func(ctx context.Context) (err error) {
		resp, err = c.CountWorkflow(ctx, req)
		return err
	})
	return resp, err
}

// LongCallTimeout bounds each visibility call of an export or a learn
// round (a List page, a Count): they run in the background, and a page
// the server is slow to list is better waited for than failed.
const LongCallTimeout = time.Minute

// TimedOut says whether err is a call that got no answer in time: the
// caller's own deadline (context.DeadlineExceeded) or the SDK's call
// timeout, which reaches the caller as a *serviceerror.DeadlineExceeded
// that errors.Is does not match to the context's (ops.TimedOut).
func TimedOut(err error) bool {
	var deadline *serviceerror.DeadlineExceeded
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &deadline)
}

// Worded says Err in other words (Msg) and still wraps it.
type Worded struct {
	Msg string
	Err error
}

func (e Worded) Error() string { return e.Msg }
func (e Worded) Unwrap() error { return e.Err }
