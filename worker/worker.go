package worker

import (
	"context"
	"errors"
	"fmt"
	"go.opentelemetry.io/otel/trace"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/codec"
	"github.com/corohq/temporal-overseer/internal/visibility"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/registry"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
	"github.com/corohq/temporal-overseer/workflows"
)

// DefaultTaskQueue is the task queue of the reference job.
const DefaultTaskQueue = "overseer-jobs"

// Config configures a client and a worker. The zero value works against a
// local dev server.
type Config struct {
	// Address of the Temporal frontend (host:port). If not set, taken from
	// the SDK's environment/profile conventions (TEMPORAL_ADDRESS,
	// TEMPORAL_PROFILE, the temporal.toml config file), else localhost:7233.
	Address string
	// Namespace. If not set, from the same conventions, else "default".
	Namespace string
	// TaskQueue of the job workflow and its agents. If not set,
	// DefaultTaskQueue.
	TaskQueue string
	// TLS and the API key come only from the SDK's conventions
	// (TEMPORAL_TLS*, TEMPORAL_API_KEY or a profile), so they never appear
	// on a command line.

	// DataConverter is the data converter of a deployment that encodes its
	// payloads (converter.NewCodecDataConverter, e.g. package codec's
	// AES-GCM codec): Dial sets it on the client, and the overseer's
	// activities read the process note's header with it. Give New a
	// client with the same converter (and a failure converter with it, as
	// Dial's, so that failure details are encoded too). If not set, the
	// codec CodecEndpoint selects, else the SDK's default converter.
	DataConverter converter.DataConverter
	// CodecEndpoint is the URL of a codec server (Temporal's convention:
	// POST /encode and /decode, as `temporal --codec-endpoint` calls it)
	// when DataConverter is not set. If not set, $TEMPORAL_CODEC_ENDPOINT;
	// without one, the built-in AES-GCM codec when $OVERSEER_CODEC_KEY
	// holds its key (never a flag, so it shows in no process list), else
	// no codec.
	CodecEndpoint string

	// Judge answers the overseer's questions. If not set, the judge that
	// JudgeConfig selects.
	Judge jev.Judge
	// JudgeConfig selects the judge when Judge is not set: learned,
	// heuristic, Jev HTTP or OpenAI-compatible (JudgeConfigFromEnv reads it
	// from the environment). If not set, the learned judge with its
	// shipped model.
	JudgeConfig JudgeConfig
	// Policy holds the verdict thresholds (overseer.LoadPolicy reads the
	// file `overseer calibrate` writes). If not set, the policy that goes
	// with the judge (overseer.PolicyFor).
	Policy overseer.Policy
	// Mode for workflow types not in Modes. If not set, manage for the
	// reference job and the recorded job, observe for anything else.
	Mode overseer.Mode
	// Modes per workflow type.
	Modes map[string]overseer.Mode
	// DisableSearchAttributes turns off the overseer's search attributes
	// (they must be registered on the server when on). If not set, they are
	// on.
	DisableSearchAttributes bool
	// Supervision configures the in-phase supervisor of long phases. If not
	// set, it follows the code phase in SHADOW mode with the heuristic
	// judge.
	Supervision SupervisionConfig
	// AgentWork is how long each simulated phase agent pretends to work.
	AgentWork time.Duration
	// Logger. If not set, a production zap logger at info level.
	Logger *zap.Logger
	// MetricsHandler receives the SDK's metrics and the overseer's (see
	// NewMetrics). Dial sets it on the client; a worker built with New on
	// another client uses that client's handler. If not set, no metrics.
	MetricsHandler client.MetricsHandler
	// TracerProvider, when set, receives the worker's traces: its
	// workflows' and activities' spans (the SDK's tracing interceptor) and
	// the overseer's assessments, gates and budget stops in them (package
	// otel; docs/opentelemetry.md). TracesFromEnv makes one from
	// OpenTelemetry's environment. If not set, no traces.
	TracerProvider trace.TracerProvider
	// OpenGatesEvery is how often the overseer_open_gates gauge is counted
	// (with MetricsHandler and the search attributes). If not set, 15 s.
	OpenGatesEvery time.Duration

	// GateDeadline is the gate deadline of workflow types not in
	// GateDeadlines (overseer.ParseGateDeadline reads "24h:escalate,72h:abort").
	// If not set, gates wait for ever.
	GateDeadline  overseer.GateDeadline
	GateDeadlines map[string]overseer.GateDeadline
	// ContentWindows lets a model judge read the latest calls of each
	// listed workflow type (overseer.Options.ContentWindows). If not set,
	// off: the judge reads counters only.
	ContentWindows map[string]trajectory.ContentWindow
	// RelativeBudgetGates lets a type's learned relative budget stop its
	// jobs at a budget gate in manage mode, once per job
	// (overseer.Options.RelativeBudgetGates). If not set, it only advises.
	RelativeBudgetGates bool
	// MaxRedos bounds the redos of one held phase (overseer.Options.MaxRedos):
	// 0 is the default, 2; negative allows none.
	MaxRedos int
	// RedoSafe names further workflow types and phase activity types a
	// redo may run again (overseer.Options.RedoSafe). The reference jobs'
	// phases (CoroJob's simulated agents, CoroRecordedJob's recorded runs)
	// are declared safe: running them again repeats no side effect.
	RedoSafe []string
	// Approval says who may open gates (an approvers list, the four-eyes
	// rule) for workflow types not in Approvals; zero: anyone who can send
	// the update.
	Approval  overseer.Approval
	Approvals map[string]overseer.Approval
	// Notifier tells reviewers about gates (package notify: a signed
	// webhook, Slack; notify.FromEnv reads them from the environment). Its
	// secrets stay on this worker. If not set, no notifications.
	Notifier overseer.Notifier
	// DashboardURL is the dashboard's base URL, for the links in
	// notifications.
	DashboardURL string
	// ModelRegistry gives each new job the learned model promoted in the
	// namespace's model registry for its workflow type (overseer model
	// promote), read at the job's start and pinned for its whole run;
	// until a model is promoted, the judge's own model. The worker also
	// hosts the registry workflow. It needs the learned judge. If not set,
	// every job uses the judge's model.
	ModelRegistry bool
	// ModelRegistryTTL is how long the worker reuses the current version it
	// read from the registry: a promotion reaches new jobs within it. If
	// not set, registry.DefaultTTL.
	ModelRegistryTTL time.Duration
}

// ErrUnreachable wraps a failure to connect to the Temporal server.
var ErrUnreachable = errors.New("cannot reach the Temporal server")

// ClientOptions resolves the client options from cfg and the environment.
func (cfg Config) ClientOptions() (client.Options, error) {
	opts, err := envconfig.LoadClientOptions(envconfig.LoadClientOptionsRequest{})
	if err != nil {
		return client.Options{}, fmt.Errorf("load Temporal client configuration: %w", err)
	}
	if cfg.Address != "" {
		opts.HostPort = cfg.Address
	}
	if opts.HostPort == "" {
		opts.HostPort = client.DefaultHostPort
	}
	if cfg.Namespace != "" {
		opts.Namespace = cfg.Namespace
	}
	if opts.Namespace == "" {
		opts.Namespace = client.DefaultNamespace
	}
	opts.Logger = SDKLogger(cfg.logger())
	dc, err := cfg.dataConverter()
	if err != nil {
		return client.Options{}, err
	}
	if dc != nil {
		opts.DataConverter = dc
		// A failure's details (an abort's gate, with its note) through the
		// codec too: the SDK's default failure converter writes them in clear.
		opts.FailureConverter = temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{DataConverter: dc})
	}
	if cfg.MetricsHandler != nil {
		opts.MetricsHandler = cfg.MetricsHandler
	}
	// So that a view the server refused as over the namespace's rate limit
	// says so (ops.ErrRateLimited), not that the server did not answer.
	opts.ConnectionOptions.DialOptions = append(opts.ConnectionOptions.DialOptions, grpc.WithChainUnaryInterceptor(visibility.Interceptor))
	return opts, nil
}

// CodecEndpointEnv names the environment variable of the codec server's
// URL, as the Temporal CLI reads it.
const CodecEndpointEnv = "TEMPORAL_CODEC_ENDPOINT"

// CodecAuthEnv names the environment variable whose value is sent as the
// Authorization header of every codec server request, as the Temporal CLI
// reads it (never a flag: it is a credential).
const CodecAuthEnv = "TEMPORAL_CODEC_AUTH"

// dataConverter is DataConverter, else the converter with the codec
// CodecEndpoint or the environment selects, else nil (the SDK's default).
func (cfg Config) dataConverter() (converter.DataConverter, error) {
	if cfg.DataConverter != nil {
		return cfg.DataConverter, nil
	}
	endpoint := cfg.CodecEndpoint
	if endpoint == "" {
		endpoint = os.Getenv(CodecEndpointEnv)
	}
	var header http.Header
	if auth := os.Getenv(CodecAuthEnv); auth != "" && endpoint != "" {
		header = http.Header{"Authorization": {auth}}
	}
	c, err := codec.FromConfig(codec.Config{Endpoint: endpoint, Header: header})
	if err != nil || c == nil {
		return nil, err
	}
	return codec.DataConverter(c), nil
}

// Dial connects to Temporal. A server that does not answer is reported as
// ErrUnreachable with the address, within the context's deadline.
func Dial(ctx context.Context, cfg Config) (client.Client, error) {
	opts, err := cfg.ClientOptions()
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("%w at %s (namespace %s): %s", ErrUnreachable, opts.HostPort, opts.Namespace, firstLine(err))
	}
	return c, nil
}

func firstLine(err error) string {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Error()
	}
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i > 0 {
		msg = msg[:i]
	}
	return msg
}

// PluginOptions are the overseer options this configuration implies.
func (cfg Config) PluginOptions() overseer.Options {
	mode := cfg.Mode
	modes := map[string]overseer.Mode{}
	for k, v := range cfg.Modes {
		modes[k] = v
	}
	if mode == "" {
		mode = overseer.ModeObserve
		for _, t := range []string{workflows.JobWorkflowName, workflows.RecordedJobWorkflowName, workflows.AgentLoopWorkflowName} {
			if _, ok := modes[t]; !ok {
				modes[t] = overseer.ModeManage
			}
		}
	}
	return overseer.Options{
		Judge:               cfg.Judge,
		Policy:              cfg.Policy,
		Mode:                mode,
		Modes:               modes,
		SearchAttributes:    !cfg.DisableSearchAttributes,
		AssessTimeout:       cfg.JudgeConfig.assessTimeout(),
		GateDeadline:        cfg.GateDeadline,
		GateDeadlines:       cfg.GateDeadlines,
		ContentWindows:      cfg.ContentWindows,
		RelativeBudgetGates: cfg.RelativeBudgetGates,
		MaxRedos:            cfg.MaxRedos,
		RedoSafe:            append([]string{workflows.JobWorkflowName, workflows.RecordedJobWorkflowName}, cfg.RedoSafe...),
		Approval:            cfg.Approval,
		Approvals:           cfg.Approvals,
		Notifier:            cfg.Notifier,
		DashboardURL:        cfg.DashboardURL,
		DataConverter:       cfg.DataConverter,
	}
}

// New builds a worker on c with the overseer plugin, the job workflow and
// its phase agents, and the recorded job (workflows.RecordedJob) and its
// phases registered. Run it with Run or Start.
func New(c client.Client, cfg Config) (sdkworker.Worker, error) {
	dc, err := cfg.dataConverter()
	if err != nil {
		return nil, err
	}
	cfg.DataConverter = dc
	opts := cfg.PluginOptions()
	if opts.Judge == nil {
		judge, err := cfg.JudgeConfig.NewJudge()
		if err != nil {
			return nil, err
		}
		opts.Judge = judge
		cfg.logger().Info("overseer judge", zap.String("judge", cfg.JudgeConfig.String()))
	}
	if opts.SearchAttributes {
		ns, err := cfg.namespace()
		if err != nil {
			return nil, err
		}
		has := registeredSearchAttributes(context.Background(), c, ns, cfg.logger(), gateSinceAttribute, budgetAttribute)
		opts.GateSearchAttribute, opts.BudgetSearchAttribute = has[0], has[1]
	}
	if cfg.ModelRegistry {
		models, err := cfg.modelSource(c, opts)
		if err != nil {
			return nil, err
		}
		opts.Models = models
	}
	tracing, tel, err := cfg.tracing()
	if err != nil {
		return nil, err
	}
	if tel != nil && opts.Telemetry == nil {
		opts.Telemetry = tel
	}
	plugin, err := overseer.NewPlugin(opts)
	if err != nil {
		return nil, err
	}
	tq := cfg.TaskQueue
	if tq == "" {
		tq = DefaultTaskQueue
	}
	supervisors, err := cfg.supervisionPlugins()
	if err != nil {
		return nil, err
	}
	// Supervision first: its interceptor stays the outermost, as before.
	plugins := append(supervisors, plugin)
	if cfg.MetricsHandler != nil {
		mp, err := cfg.metricsPlugin(c)
		if err != nil {
			return nil, err
		}
		plugins = append(plugins, mp)
	}
	// Pollers scale with the backlog (the SDK's poller autoscaling), not
	// two of each: a worker taking a thousand resumes at once, or a burst
	// of jobs, polls as fast as the server hands it tasks (1,000 resumes:
	// 49 s, against 1 min 53 s with two). The price, on an overloaded
	// server: more open polls, more tasks handed to a poll that never
	// receives them (31-71 of 1,000 phases in a burst, none with two), so
	// no activity scheduled here waits longer than its heartbeat timeout
	// or its attempt's own work plus a minute (docs/performance.md).
	autoscaling := sdkworker.NewPollerBehaviorAutoscaling(sdkworker.PollerBehaviorAutoscalingOptions{})
	wo := sdkworker.Options{Plugins: plugins, WorkflowTaskPollerBehavior: autoscaling, ActivityTaskPollerBehavior: autoscaling}
	if tracing != nil {
		wo.Interceptors = append(wo.Interceptors, tracing)
	}
	w := sdkworker.New(c, tq, wo)
	workflows.Register(w)
	(&activities.Agents{Work: cfg.AgentWork}).Register(w)
	workflows.RegisterRecorded(w)
	(&activities.Recorded{}).Register(w)
	workflows.RegisterAgentLoop(w)
	(&activities.LoopAgent{Work: cfg.AgentWork}).Register(w)
	if cfg.ModelRegistry {
		return withRegistry{Worker: w, registry: registry.NewWorker(c, sdkworker.Options{})}, nil
	}
	return w, nil
}

// metricsPlugin zeroes the overseer's counters when the worker starts and,
// with the search attributes on, keeps the open-gates gauge current.
func (cfg Config) metricsPlugin(c client.Client) (sdkworker.Plugin, error) {
	ns, err := cfg.namespace()
	if err != nil {
		return nil, err
	}
	o := MetricsPluginOptions{Handler: cfg.MetricsHandler, Namespace: ns, Logger: cfg.logger(), OpenGatesEvery: cfg.OpenGatesEvery}
	if !cfg.DisableSearchAttributes {
		o.Client = c
	}
	return NewMetricsPlugin(o)
}

// namespace is the namespace the worker's client connects to.
func (cfg Config) namespace() (string, error) {
	if cfg.Namespace != "" {
		return cfg.Namespace, nil
	}
	opts, err := cfg.ClientOptions()
	if err != nil {
		return "", err
	}
	return opts.Namespace, nil
}

func (cfg Config) logger() *zap.Logger {
	if cfg.Logger != nil {
		return cfg.Logger
	}
	l, err := zap.NewProduction()
	if err != nil {
		return zap.NewNop()
	}
	return l
}

// SDKLogger adapts zap to the SDK's logger interface, so the SDK logs
// through the same zap logger as the rest of the worker.
func SDKLogger(l *zap.Logger) sdklog.Logger {
	// Skip the adapter's own frame: entries report the caller's file and line.
	return zapAdapter{l.WithOptions(zap.AddCallerSkip(1)).Sugar()}
}

type zapAdapter struct{ s *zap.SugaredLogger }

var (
	_ sdklog.WithLogger      = zapAdapter{}
	_ sdklog.WithSkipCallers = zapAdapter{}
)

// WithCallerSkip implements log.WithSkipCallers: the SDK's own wrappers
// (the replay-aware workflow logger) skip their frames too.
func (z zapAdapter) WithCallerSkip(depth int) sdklog.Logger {
	return zapAdapter{z.s.WithOptions(zap.AddCallerSkip(depth))}
}

func (z zapAdapter) Debug(msg string, kv ...any) { z.s.Debugw(msg, kv...) }
func (z zapAdapter) Info(msg string, kv ...any)  { z.s.Infow(msg, kv...) }
func (z zapAdapter) Warn(msg string, kv ...any)  { z.s.Warnw(msg, kv...) }
func (z zapAdapter) Error(msg string, kv ...any) { z.s.Errorw(msg, kv...) }
func (z zapAdapter) With(kv ...any) sdklog.Logger {
	return zapAdapter{z.s.With(kv...)}
}
