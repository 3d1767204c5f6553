package otel_test

import (
	"context"
	"encoding/hex"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// receiver is an OTLP/gRPC trace receiver in the test's process: what a
// collector, Jaeger or Tempo would receive, decoded from the wire.
type receiver struct {
	coltracepb.UnimplementedTraceServiceServer
	addr string

	mu    sync.Mutex
	spans []*tracepb.Span
	// schema is each span's scope's schema URL.
	schema map[*tracepb.Span]string
}

// schemaOf is the schema URL of the scope span s came in.
func (r *receiver) schemaOf(s *tracepb.Span) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.schema[s]
}

func (r *receiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			r.spans = append(r.spans, ss.GetSpans()...)
			for _, s := range ss.GetSpans() {
				r.schema[s] = ss.GetSchemaUrl()
			}
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// startReceiver serves OTLP/gRPC on a free loopback port until t ends.
func startReceiver(t *testing.T) *receiver {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r := &receiver{addr: lis.Addr().String(), schema: map[*tracepb.Span]string{}}
	s := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(s, r)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	return r
}

// tracerProvider exports to r through the OTLP/gRPC exporter, batching as
// a deployment would; flush with ForceFlush.
func (r *receiver) tracerProvider(t *testing.T) *sdktrace.TracerProvider {
	t.Helper()
	exp, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithEndpoint(r.addr), otlptracegrpc.WithInsecure())
	require.NoError(t, err)
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(100*time.Millisecond)))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tp.Shutdown(ctx)
	})
	return tp
}

// named returns the received spans called name.
func (r *receiver) named(name string) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range r.spans {
		if s.GetName() == name {
			out = append(out, s)
		}
	}
	return out
}

// prefixed returns the received spans whose name starts with prefix.
func (r *receiver) prefixed(prefix string) []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range r.spans {
		if len(s.GetName()) >= len(prefix) && s.GetName()[:len(prefix)] == prefix {
			out = append(out, s)
		}
	}
	return out
}

// events returns the events called name of spans.
func events(spans []*tracepb.Span, name string) []*tracepb.Span_Event {
	var out []*tracepb.Span_Event
	for _, s := range spans {
		for _, e := range s.GetEvents() {
			if e.GetName() == name {
				out = append(out, e)
			}
		}
	}
	return out
}

// attrs decodes OTLP attributes: strings, float64s, int64s, bools and
// string slices.
func attrs(kvs []*commonpb.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.GetKey()] = v.StringValue
		case *commonpb.AnyValue_DoubleValue:
			m[kv.GetKey()] = v.DoubleValue
		case *commonpb.AnyValue_IntValue:
			m[kv.GetKey()] = v.IntValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.GetKey()] = v.BoolValue
		case *commonpb.AnyValue_ArrayValue:
			var ss []string
			for _, e := range v.ArrayValue.GetValues() {
				ss = append(ss, e.GetStringValue())
			}
			m[kv.GetKey()] = ss
		}
	}
	return m
}

func spanID(b []byte) string { return hex.EncodeToString(b) }
