package worker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/opentelemetry"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/overseer"
)

// Metrics exports the Temporal SDK's metrics and the overseer's (which the
// overseer emits from workflow code through the same handler) in the
// Prometheus text format. Give Handler to Config.MetricsHandler before Dial,
// and serve HTTPHandler on /metrics (ServeMetrics does both).
type Metrics struct {
	registry *prometheus.Registry
	provider *sdkmetric.MeterProvider
	handler  client.MetricsHandler
}

// Histogram buckets, in seconds.
var (
	// latencyBuckets fit RPCs, tasks and judge calls: 0.5 ms … 5 min.
	latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	// gateWaitBuckets fit a human at a gate: 1 s … 1 week.
	gateWaitBuckets = []float64{1, 10, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 86400, 3 * 86400, 7 * 86400}
)

// NewMetrics returns a Prometheus registry fed by an OpenTelemetry meter
// (go.temporal.io/sdk/contrib/opentelemetry), with the Go runtime and
// process collectors registered.
func NewMetrics() (*Metrics, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, fmt.Errorf("metrics: create Prometheus exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp), sdkmetric.WithView(histogramBuckets))
	handler := opentelemetry.NewMetricsHandler(opentelemetry.MetricsHandlerOptions{
		Meter:                provider.Meter("temporal-overseer"),
		UseMonotonicCounters: true,
		OnError:              func(error) {}, // a bad instrument must not crash a worker
	})
	return &Metrics{registry: reg, provider: provider, handler: handler}, nil
}

// Handler is the SDK metrics handler: set it as Config.MetricsHandler (or
// client.Options.MetricsHandler).
func (m *Metrics) Handler() client.MetricsHandler { return m.handler }

// Registry is the Prometheus registry, to register more collectors on.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// HTTPHandler serves the metrics in the Prometheus exposition format.
func (m *Metrics) HTTPHandler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// Shutdown flushes and stops the meter provider.
func (m *Metrics) Shutdown(ctx context.Context) error {
	if err := m.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("metrics: shut down: %w", err)
	}
	return nil
}

// histogramBuckets sets the buckets of every histogram (the SDK's timers
// are histograms in seconds): gate waits get hours and days, the rest
// milliseconds to minutes.
func histogramBuckets(i sdkmetric.Instrument) (sdkmetric.Stream, bool) {
	if i.Kind != sdkmetric.InstrumentKindHistogram {
		return sdkmetric.Stream{}, false
	}
	b := latencyBuckets
	if i.Name == overseer.MetricGateWait {
		b = gateWaitBuckets
	}
	return sdkmetric.Stream{Name: i.Name, Description: i.Description, Unit: i.Unit,
		Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: b}}, true
}

// MetricsServer serves /metrics over HTTP.
type MetricsServer struct {
	srv  *http.Server
	addr net.Addr
	done chan error
}

// ServeMetrics listens on addr (host:port; port 0 picks a free one) and
// serves m on /metrics until Close. Bind it to loopback unless a scraper
// elsewhere needs it: the metrics carry workflow types and task queues.
func ServeMetrics(addr string, m *Metrics, logger *zap.Logger) (*MetricsServer, error) {
	if logger == nil {
		logger = zap.NewNop()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.HTTPHandler())
	s := &MetricsServer{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		addr: ln.Addr(),
		done: make(chan error, 1),
	}
	go func() {
		err := s.srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		if err != nil {
			logger.Error("metrics server stopped", zap.Error(err))
		}
		s.done <- err
	}()
	logger.Info("serving metrics", zap.String("url", s.URL()))
	return s, nil
}

// Addr is the address the server listens on.
func (s *MetricsServer) Addr() net.Addr { return s.addr }

// URL is the metrics endpoint's URL.
func (s *MetricsServer) URL() string { return "http://" + s.addr.String() + "/metrics" }

// Close stops the server, waiting up to 5 seconds for scrapes in flight.
func (s *MetricsServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("metrics: stop server: %w", err)
	}
	return <-s.done
}
