package worker

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"

	overseerotel "github.com/corohq/temporal-overseer/otel"
)

// EnvTracesExporter is OpenTelemetry's own switch for traces: "otlp"
// turns the worker's traces on (TracesFromEnv), sent where
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) says,
// over gRPC, as OpenTelemetry's exporter reads them.
const EnvTracesExporter = "OTEL_TRACES_EXPORTER"

// TracesFromEnv is the tracer provider the worker's traces go to when
// OTEL_TRACES_EXPORTER is "otlp" (a batching OTLP/gRPC exporter, service
// name temporal-overseer-worker unless OTEL_SERVICE_NAME says otherwise),
// with its shutdown; nil and a no-op when traces are off. Another value
// than "otlp" or "none" is refused in one sentence.
func TracesFromEnv(ctx context.Context) (trace.TracerProvider, func(context.Context) error, error) {
	switch v := strings.TrimSpace(os.Getenv(EnvTracesExporter)); v {
	case "", "none":
		return nil, func(context.Context) error { return nil }, nil
	case "otlp":
	default:
		return nil, nil, fmt.Errorf("%s=%q: the worker sends traces over OTLP only; set it to otlp, or none", EnvTracesExporter, v)
	}
	exp, err := otlptracegrpc.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("traces: %w", err)
	}
	// The environment (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) wins
	// over the default name.
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "temporal-overseer-worker")),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil {
		return nil, nil, fmt.Errorf("traces: %w", err)
	}
	// Batching: the overseer's spans are made in workflow code, which must
	// not wait for the network.
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// tracing is what Config.TracerProvider turns on: the SDK's tracing
// interceptor (spans of workflows and activities) and the overseer's
// verdicts, gates and budget stops in the same traces.
func (cfg Config) tracing() (interceptor.WorkerInterceptor, *overseerotel.Telemetry, error) {
	if cfg.TracerProvider == nil {
		return nil, nil, nil
	}
	ti, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{Tracer: cfg.TracerProvider.Tracer("temporal-sdk-go")})
	if err != nil {
		return nil, nil, fmt.Errorf("traces: %w", err)
	}
	tel, err := overseerotel.New(overseerotel.Options{TracerProvider: cfg.TracerProvider})
	if err != nil {
		return nil, nil, fmt.Errorf("traces: %w", err)
	}
	return ti, tel, nil
}
