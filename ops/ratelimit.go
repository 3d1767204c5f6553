package ops

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
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

// RateLimitInterceptor is a gRPC client interceptor that notes each try of
// a call the server refused with RESOURCE_EXHAUSTED, so that a call the
// SDK retried until its deadline is reported as refused (ErrRateLimited)
// rather than as a server that did not answer. It acts only on calls made
// through Call (it finds its note in the context); other calls pass
// through untouched. worker.Config.ClientOptions installs it; give it to
// a client of your own with
//
//	opts.ConnectionOptions.DialOptions = append(opts.ConnectionOptions.DialOptions,
//		grpc.WithChainUnaryInterceptor(ops.RateLimitInterceptor))
//
// (the SDK chains it inside its retries, so it sees every try).
func RateLimitInterceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
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
		return wordedError{msg: fmt.Sprintf("the server did not answer %s within %s", what, timeout), err: err}
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
	return wordedError{err: ErrRateLimited, msg: fmt.Sprintf("the server refused %s %s within %s as over the namespace's rate limit (RESOURCE_EXHAUSTED%s): "+
		"other views, batches or learn rounds are using the namespace's calls (Temporal Cloud allows 30 visibility calls a second); "+
		"nothing was read or changed by it, try again in a few seconds", what, tries, timeout, msg)}
}
