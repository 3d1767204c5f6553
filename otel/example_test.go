package otel_test

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	overseerotel "github.com/corohq/temporal-overseer/otel"
	"github.com/corohq/temporal-overseer/overseer"
)

// A worker whose workflows are traced by the SDK's interceptor and whose
// verdicts join their traces: the overseer's spans are children of each
// workflow's span. The OTLP exporter sends to a collector, Jaeger or Tempo
// on localhost:4317 (OTEL_EXPORTER_OTLP_ENDPOINT overrides it); it
// connects when it first exports.
func ExampleNew() {
	exp, err := otlptracegrpc.New(context.Background(), otlptracegrpc.WithInsecure())
	if err != nil {
		panic(err)
	}
	// Batching: the overseer calls the exporter from workflow code, which
	// must not wait for the network.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp))
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(ctx)
	}()

	tel, err := overseerotel.New(overseerotel.Options{TracerProvider: tp})
	if err != nil {
		panic(err)
	}
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeManage, Telemetry: tel})
	if err != nil {
		panic(err)
	}
	tracing, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{Tracer: tp.Tracer("temporal-sdk-go")})
	if err != nil {
		panic(err)
	}
	opts := worker.Options{
		Plugins: []worker.Plugin{plugin},
		// The tracing interceptor runs outside the overseer's, so the
		// workflow's span is in the context the overseer reports with.
		Interceptors: []interceptor.WorkerInterceptor{tracing},
	}
	// w := worker.New(c, "jobs", opts)
	fmt.Println(len(opts.Plugins), len(opts.Interceptors))
	// Output: 1 1
}
