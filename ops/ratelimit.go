package ops

import (
	"context"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"

	"github.com/corohq/temporal-overseer/internal/visibility"
)

// ErrRateLimited: the Temporal server refused a call as over one of the
// namespace's rate limits (RESOURCE_EXHAUSTED) until the call gave up.
// Temporal Cloud allows a namespace 30 visibility calls (List, Count,
// Scan) a second, not configurable; a self-hosted server's limit is
// frontend.namespaceRPS.visibility. Nothing was read or changed by the
// refused call: trying again a few seconds later is safe.
var ErrRateLimited = visibility.ErrRateLimited

// RateLimitInterceptor is a gRPC client interceptor that notes each try
// of a call the server refused with RESOURCE_EXHAUSTED, so that a call
// the SDK retried until its deadline is reported as refused
// (ErrRateLimited) rather than as a server that did not answer. It acts
// only on calls made through Call; others pass through untouched.
// worker.Config.ClientOptions installs it; give it to a client of your
// own with
//
//	opts.ConnectionOptions.DialOptions = append(opts.ConnectionOptions.DialOptions,
//		grpc.WithChainUnaryInterceptor(ops.RateLimitInterceptor))
//
// (the SDK chains it inside its retries, so it sees every try).
func RateLimitInterceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return visibility.Interceptor(ctx, method, req, reply, cc, invoker, opts...)
}

// Call runs one remote call of a view or command (what names it, e.g. "a
// List call") within timeout, and words its error: a call the server
// refused as over the namespace's rate limit, then retried by the SDK
// until timeout, is ErrRateLimited with how many tries were refused and
// what to do; a call that got no answer says so with the timeout
// (TimedOut still holds); any other error is returned as it is, and so is
// ctx's own end.
func Call(ctx context.Context, timeout time.Duration, what string, call func(ctx context.Context) error) error {
	return visibility.Call(ctx, timeout, what, call)
}

// The process's budget of visibility calls (List, Count), shared by every
// view, batch, export and learn round the process runs, and the worker's
// open-gates gauge: one process stays well inside a namespace's limit
// (Temporal Cloud's 30 a second) and leaves room for the others. A call
// over it waits for its turn, within its context.
const (
	// DefaultVisibilityRate is the budget's calls a second.
	DefaultVisibilityRate = visibility.DefaultRate
	// DefaultVisibilityBurst is how many calls it lets go at once.
	DefaultVisibilityBurst = visibility.DefaultBurst
)

// SetVisibilityRate sets the process's budget of visibility calls a second
// (and its burst to half of it, at least 1); 0 or less: no budget. For a
// namespace whose limit is not Temporal Cloud's (a self-hosted server's
// frontend.namespaceRPS.visibility, 10 a frontend by default).
func SetVisibilityRate(perSecond float64) { visibility.SetRate(perSecond) }

// VisibilityCall is Call for a visibility call (a List page, a Count): it
// waits for its turn in the process's budget first (the wait counts in
// ctx, not in timeout).
func VisibilityCall(ctx context.Context, timeout time.Duration, what string, call func(ctx context.Context) error) error {
	return visibility.Budgeted(ctx, timeout, what, call)
}

// ListPage is one List call within timeout, as VisibilityCall makes it.
func ListPage(ctx context.Context, c client.Client, timeout time.Duration, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	return visibility.ListPage(ctx, c, timeout, req)
}

// Count is one Count call within timeout, as VisibilityCall makes it.
func Count(ctx context.Context, c client.Client, timeout time.Duration, req *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error) {
	return visibility.Count(ctx, c, timeout, req)
}

// ExportCallTimeout bounds each visibility call of an export or a learn
// round (a List page, a Count): they run in the background, and a page
// the server is slow to list is better waited for than failed.
const ExportCallTimeout = visibility.LongCallTimeout
