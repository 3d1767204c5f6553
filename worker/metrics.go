package worker

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/opentelemetry"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/internal/visibility"
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
	return &Metrics{registry: reg, provider: provider, handler: overseerTags{base: handler}}, nil
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
// milliseconds to minutes. It also gives the overseer's series their HELP
// text: the SDK's handler creates instruments without a description, and
// one view has to do both (two matching views would export two streams).
func histogramBuckets(i sdkmetric.Instrument) (sdkmetric.Stream, bool) {
	help := overseer.MetricHelp(i.Name)
	if i.Kind != sdkmetric.InstrumentKindHistogram && help == "" {
		return sdkmetric.Stream{}, false
	}
	st := sdkmetric.Stream{Name: i.Name, Description: i.Description, Unit: i.Unit}
	if help != "" {
		st.Description = help
	}
	if i.Kind == sdkmetric.InstrumentKindHistogram {
		b := latencyBuckets
		if i.Name == overseer.MetricGateWait {
			b = gateWaitBuckets
		}
		st.Aggregation = sdkmetric.AggregationExplicitBucketHistogram{Boundaries: b}
	}
	return st, true
}

// sdkOnlyTags are tags the SDK puts on every metric (client_name, and
// worker_type / activity_type, which are "none" in workflow code). The
// overseer's series drop them: they carry namespace, task_queue and
// workflow_type plus their own tags, and never a "none" value.
var sdkOnlyTags = map[string]bool{"client_name": true, "worker_type": true, "activity_type": true}

// overseerTags is the metrics handler the SDK gets: it passes everything
// through, except that overseer_* series leave out sdkOnlyTags.
type overseerTags struct {
	base   client.MetricsHandler // untagged
	tags   map[string]string
	tagged client.MetricsHandler // base with all tags, for the SDK's series; nil: base
}

func (h overseerTags) WithTags(tags map[string]string) client.MetricsHandler {
	merged := make(map[string]string, len(h.tags)+len(tags))
	maps.Copy(merged, h.tags)
	maps.Copy(merged, tags)
	// Tagged now, as the wrapped handler would be: the SDK records through
	// it often, the overseer rarely.
	return overseerTags{base: h.base, tags: merged, tagged: h.base.WithTags(merged)}
}

func (h overseerTags) handler(name string) client.MetricsHandler {
	if !strings.HasPrefix(name, "overseer_") {
		if h.tagged == nil {
			return h.base
		}
		return h.tagged
	}
	tags := maps.Clone(h.tags)
	maps.DeleteFunc(tags, func(k, _ string) bool { return sdkOnlyTags[k] })
	if len(tags) == 0 {
		return h.base
	}
	return h.base.WithTags(tags)
}

func (h overseerTags) Counter(name string) client.MetricsCounter {
	return h.handler(name).Counter(name)
}
func (h overseerTags) Gauge(name string) client.MetricsGauge { return h.handler(name).Gauge(name) }
func (h overseerTags) Timer(name string) client.MetricsTimer { return h.handler(name).Timer(name) }

// The metrics server's timeouts. A scrape has no body and renders in
// milliseconds, so the read timeout only cuts a client that stalls (it
// covers the headers and any body it announced); the write timeout is far
// above a scraper's own (Prometheus: 10 s); an idle keep-alive connection
// outlives a one-minute scrape interval. Variables, so that a test can
// shorten them.
var (
	metricsReadTimeout  = 10 * time.Second
	metricsWriteTimeout = 30 * time.Second
	metricsIdleTimeout  = 2 * time.Minute
)

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
		srv: &http.Server{Handler: mux, ReadHeaderTimeout: metricsReadTimeout, ReadTimeout: metricsReadTimeout,
			WriteTimeout: metricsWriteTimeout, IdleTimeout: metricsIdleTimeout},
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

// MetricsPluginOptions configure NewMetricsPlugin.
type MetricsPluginOptions struct {
	// Handler is the metrics handler the worker's client was given (e.g.
	// Metrics.Handler). Required.
	Handler client.MetricsHandler
	// Namespace of the worker's client, as a tag. Required.
	Namespace string
	// Client counts the jobs paused at a gate through visibility, for the
	// overseer_open_gates gauge. If not set, there is no gauge (the
	// OverseerPaused search attribute must be registered and upserted).
	Client client.Client
	// OpenGatesEvery is how often the gauge is refreshed. If not set, 15 s.
	OpenGatesEvery time.Duration
	// Logger reports failed counts. If not set, nothing is logged.
	Logger *zap.Logger
}

// NewMetricsPlugin returns a worker plugin that gives the overseer's metrics
// a worker lifecycle: when the worker starts it emits every overseer counter
// at zero for each workflow type registered on the worker, and until the
// worker stops it keeps the overseer_open_gates gauge (running jobs of that
// type and task queue paused at a gate) current from visibility. Every
// worker on a task queue reports the same count: aggregate with max, not sum.
func NewMetricsPlugin(o MetricsPluginOptions) (sdkworker.Plugin, error) {
	if o.Handler == nil || o.Namespace == "" {
		return nil, errors.New("metrics plugin: Handler and Namespace are required")
	}
	if o.OpenGatesEvery <= 0 {
		o.OpenGatesEvery = 15 * time.Second
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	return &metricsPlugin{o: o, workers: map[string]*metricsWorker{}}, nil
}

type metricsPlugin struct {
	sdkworker.PluginBase
	o MetricsPluginOptions

	mu      sync.Mutex
	workers map[string]*metricsWorker // by worker instance key
}

// metricsWorker is the plugin's state for one worker.
type metricsWorker struct {
	taskQueue string
	types     []string
	stop      context.CancelFunc
	done      chan struct{}
}

func (p *metricsPlugin) Name() string { return "overseer.metrics" }

func (p *metricsPlugin) ConfigureWorker(_ context.Context, o sdkworker.PluginConfigureWorkerOptions) error {
	mw := &metricsWorker{taskQueue: o.TaskQueue}
	p.mu.Lock()
	p.workers[o.WorkerInstanceKey] = mw
	p.mu.Unlock()
	reg := o.WorkerRegistryOptions
	prev := reg.OnRegisterWorkflow
	reg.OnRegisterWorkflow = func(w any, ro workflow.RegisterOptions) {
		if prev != nil {
			prev(w, ro)
		}
		name := ro.Name
		if name == "" {
			name = functionName(w)
		}
		p.mu.Lock()
		// The overseer's own workflows are never overseen: no series of theirs.
		if name != "" && !overseer.OwnWorkflow(name) && !slices.Contains(mw.types, name) {
			mw.types = append(mw.types, name)
		}
		p.mu.Unlock()
	}
	return nil
}

func (p *metricsPlugin) StartWorker(ctx context.Context, o sdkworker.PluginStartWorkerOptions,
	next func(context.Context, sdkworker.PluginStartWorkerOptions) error) error {
	if err := next(ctx, o); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	mw := p.workers[o.WorkerInstanceKey]
	if mw == nil {
		return nil
	}
	gauges := map[string]client.MetricsGauge{}
	for _, wt := range mw.types {
		h := p.o.Handler.WithTags(map[string]string{"namespace": p.o.Namespace, "task_queue": mw.taskQueue, "workflow_type": wt})
		overseer.ZeroMetrics(h)
		if p.o.Client != nil {
			gauges[wt] = h.Gauge(overseer.MetricOpenGates)
			gauges[wt].Update(0)
		}
	}
	if len(gauges) == 0 {
		return nil
	}
	wctx, cancel := context.WithCancel(context.Background())
	mw.stop, mw.done = cancel, make(chan struct{})
	go func() {
		defer close(mw.done)
		t := time.NewTicker(p.o.OpenGatesEvery)
		defer t.Stop()
		for {
			p.countOpenGates(wctx, mw.taskQueue, gauges)
			select {
			case <-wctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return nil
}

func (p *metricsPlugin) StopWorker(ctx context.Context, o sdkworker.PluginStopWorkerOptions,
	next func(context.Context, sdkworker.PluginStopWorkerOptions)) {
	next(ctx, o)
	p.mu.Lock()
	mw := p.workers[o.WorkerInstanceKey]
	delete(p.workers, o.WorkerInstanceKey)
	p.mu.Unlock()
	if mw != nil && mw.stop != nil {
		mw.stop()
		<-mw.done
	}
}

// countOpenGates sets each workflow type's gauge to its number of running
// jobs paused at a gate. A failed count leaves the gauge as it was.
func (p *metricsPlugin) countOpenGates(ctx context.Context, taskQueue string, gauges map[string]client.MetricsGauge) {
	for wt, g := range gauges {
		// Open, not only running: a job an operator holds with Workflow
		// Pause still waits at its gate.
		q := fmt.Sprintf("WorkflowType = %s AND TaskQueue = %s AND %s AND OverseerPaused = true",
			quoteQuery(wt), quoteQuery(taskQueue), overseer.OpenJobsQuery)
		resp, err := visibility.Count(ctx, p.o.Client, 10*time.Second, &workflowservice.CountWorkflowExecutionsRequest{Namespace: p.o.Namespace, Query: q})
		if err != nil {
			if ctx.Err() == nil {
				p.o.Logger.Warn("metrics: cannot count the jobs paused at a gate", zap.String("workflow_type", wt), zap.Error(err))
			}
			continue
		}
		g.Update(float64(resp.GetCount()))
	}
}

// quoteQuery quotes a value for a visibility query.
func quoteQuery(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// functionName is the workflow type the SDK gives a function registered
// without a name: its name after the last dot, without a method value's -fm.
func functionName(w any) string {
	v := reflect.ValueOf(w)
	if v.Kind() != reflect.Func {
		return ""
	}
	fn := runtime.FuncForPC(v.Pointer())
	if fn == nil {
		return ""
	}
	name := fn.Name()
	if i := strings.LastIndex(name, "."); i >= 0 {
		name = name[i+1:]
	}
	return strings.TrimSuffix(name, "-fm")
}
