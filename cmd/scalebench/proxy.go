package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// visibilityMethods are the WorkflowService calls that read visibility:
// what a namespace's visibility rate limit counts.
var visibilityMethods = map[string]bool{
	"ListWorkflowExecutions":         true,
	"CountWorkflowExecutions":        true,
	"ScanWorkflowExecutions":         true,
	"ListOpenWorkflowExecutions":     true,
	"ListClosedWorkflowExecutions":   true,
	"ListArchivedWorkflowExecutions": true,
}

// rawCodec passes a call's bytes through untouched: the proxy neither
// decodes nor re-encodes what it forwards.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" }

// callCounter counts a process's calls by the second they ended in.
type callCounter struct {
	mu        sync.Mutex
	t0        time.Time
	perSecond map[int64]int // visibility calls by second since t0
	byMethod  map[string]int
	all       int
}

func (c *callCounter) add(method string) {
	name := method[strings.LastIndex(method, "/")+1:]
	c.mu.Lock()
	defer c.mu.Unlock()
	c.all++
	c.byMethod[name]++
	if visibilityMethods[name] {
		c.perSecond[int64(time.Since(c.t0)/time.Second)]++
	}
}

// report says the visibility calls: how many, the mean rate over the
// seconds from the first to the last, and the most in any one second.
func (c *callCounter) report(out io.Writer, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, peak := 0, 0
	first, last := int64(-1), int64(-1)
	for s, k := range c.perSecond {
		n += k
		peak = max(peak, k)
		if first < 0 || s < first {
			first = s
		}
		last = max(last, s)
	}
	var methods []string
	for m, k := range c.byMethod {
		if visibilityMethods[m] {
			methods = append(methods, fmt.Sprintf("%s %d", m, k))
		}
	}
	slices.Sort(methods)
	mean := 0.0
	if n > 0 {
		mean = float64(n) / float64(last-first+1)
	}
	fmt.Fprintf(out, "%s: %d visibility calls (%s) of %d calls (%d history reads) in %s; %.1f a second from the first to the last, at most %d in one second\n",
		name, n, strings.Join(methods, ", "), c.all, c.byMethod["GetWorkflowExecutionHistory"], time.Since(c.t0).Round(time.Second), mean, peak)
}

// proxy forwards every gRPC call it receives to the frontend and counts
// the visibility calls among them: give one process its address (and no
// other) to measure that process's visibility calls a second, whatever it
// is (the worker, the dashboard, a CLI command). It prints what it counted
// when it is interrupted.
func proxy(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("proxy", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:28300", "address to listen on")
	target := fs.String("target", "127.0.0.1:28233", "Temporal frontend")
	name := fs.String("name", "proxy", "what the counts are of, in the report")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	conn, err := grpc.NewClient(*target, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(128<<20)))
	if err != nil {
		return fmt.Errorf("scalebench: proxy: %w", err)
	}
	defer conn.Close()
	counter := &callCounter{t0: time.Now(), perSecond: map[int64]int{}, byMethod: map[string]int{}}
	forward := func(_ any, stream grpc.ServerStream) error {
		method, _ := grpc.MethodFromServerStream(stream)
		var in, reply []byte
		if err := stream.RecvMsg(&in); err != nil {
			return err
		}
		md, _ := metadata.FromIncomingContext(stream.Context())
		md = md.Copy()
		for k := range md {
			if strings.HasPrefix(k, ":") || k == "content-type" || k == "user-agent" {
				delete(md, k)
			}
		}
		var header, trailer metadata.MD
		err := conn.Invoke(metadata.NewOutgoingContext(stream.Context(), md), method, &in, &reply,
			grpc.ForceCodec(rawCodec{}), grpc.Header(&header), grpc.Trailer(&trailer))
		counter.add(method)
		_ = stream.SetHeader(header)
		stream.SetTrailer(trailer)
		if err != nil {
			return err // a status error: the caller sees the server's own
		}
		return stream.SendMsg(&reply)
	}
	srv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}), grpc.UnknownServiceHandler(forward), grpc.MaxRecvMsgSize(128<<20))
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("scalebench: proxy: %w", err)
	}
	fmt.Fprintf(out, "proxy %s on %s to %s\n", *name, ln.Addr(), *target)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		srv.Stop()
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return fmt.Errorf("scalebench: proxy: %w", err)
	}
	counter.report(out, *name)
	return nil
}
