package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/codec"

	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/notify"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
	"github.com/corohq/temporal-overseer/supervision"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// workerFlags configure the worker in `worker` and `dev`.
type workerFlags struct {
	mode      string
	modes     string
	agentWork time.Duration
	noSA      bool
	verbose   bool
	judge     judgeFlags
	policy    string
	// supervisionConfig is a supervision configuration file:
	// {"jev":{"supervision":…}}.
	supervisionConfig string
	// gateDeadline and gateDeadlines set gate deadlines; dashboardURL is
	// the dashboard notifications link to. The notifiers themselves (and
	// their secrets) come from the environment only (notify.FromEnv).
	gateDeadline  string
	gateDeadlines string
	// contentWindows is --content-window: TYPE=CALLS[:BYTES] pairs.
	contentWindows string
	relativeGates  bool
	maxRedos       int
	dashboardURL   string
	approvers      string
	fourEyes       bool
	modelRegistry  bool
	learn          learnFlags
}

// Environment variables of the gate deadline and the dashboard link.
const (
	envGateDeadline = "OVERSEER_GATE_DEADLINE"
	envDashboardURL = "OVERSEER_DASHBOARD_URL"
	envApprovers    = "OVERSEER_APPROVERS"
)

func (w *workerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&w.mode, "mode", "", "overseer mode for workflow types not in --modes: off, observe, manage (default: manage for CoroJob, CoroRecordedJob and CoroAgentLoop, observe otherwise)")
	fs.StringVar(&w.modes, "modes", "", "modes per workflow type, e.g. CoroJob=manage,Other=observe")
	fs.DurationVar(&w.agentWork, "agent-work", 500*time.Millisecond, "how long each simulated phase agent works")
	fs.BoolVar(&w.noSA, "no-search-attributes", false, "do not upsert the overseer search attributes")
	fs.BoolVar(&w.verbose, "v", false, "log the worker's activity")
	fs.StringVar(&w.supervisionConfig, "supervision-config", "", `in-phase supervision settings: a JSON file {"jev":{"supervision":{…}}} (default: SHADOW on the code phase)`)
	fs.StringVar(&w.policy, "policy", "", "policy file from overseer calibrate (default: $"+worker.EnvPolicy+", else the policy that goes with the judge)")
	fs.StringVar(&w.gateDeadline, "gate-deadline", "", "how long a gate waits and then: DURATION:escalate|continue|abort, e.g. 24h:escalate,72h:abort (default: $"+envGateDeadline+", else none)")
	fs.StringVar(&w.gateDeadlines, "gate-deadlines", "", "gate deadlines per workflow type, e.g. 'CoroJob=24h:escalate,72h:abort;Other=4h:continue'")
	fs.BoolVar(&w.relativeGates, "relative-budget-gates", false, "in manage mode, a job that reaches its type's relative budget (learned from its succeeded jobs) waits at a budget gate, once per job (default: it only reads Needs a look)")
	fs.StringVar(&w.contentWindows, "content-window", "", "let a model judge read the latest calls of these workflow types: TYPE=CALLS[:BYTES_PER_CALL], e.g. 'CoroAgentLoop=8;CoroJob=4:1024' (default: off; docs/judges.md)")
	fs.IntVar(&w.maxRedos, "max-redos", 0, "how many times a reviewer may redo one held phase (resume --redo); -1 allows none, for phases that are not safe to retry (default: 2)")
	fs.StringVar(&w.dashboardURL, "dashboard-url", "", "the dashboard's base URL that notifications link to (default: $"+envDashboardURL+"); "+
		"notifiers come from the environment: $"+notify.EnvWebhookURL+" with $"+notify.EnvWebhookSecret+", $"+notify.EnvSlackWebhookURL+" (and $"+notify.EnvSlackEscalationURL+")")
	fs.StringVar(&w.approvers, "approvers", "", "who may resume gates: identities and group:NAME, comma-separated (default: $"+envApprovers+", else anyone who can send the update)")
	fs.BoolVar(&w.fourEyes, "four-eyes", false, "refuse a resume by the identity that started the job (overseer start --by)")
	fs.BoolVar(&w.modelRegistry, "model-registry", false, "give each new job the learned model promoted in Temporal for its type (overseer model promote), pinned for its run; "+
		"until one is promoted, the judge's model (default: off)")
	w.judge.register(fs)
	w.learn.register(fs)
}

func (w *workerFlags) apply(cfg *worker.Config) error {
	if err := w.judge.apply(cfg); err != nil {
		return err
	}
	if w.policy == "" {
		w.policy = os.Getenv(worker.EnvPolicy)
	}
	if w.policy != "" {
		p, err := overseer.LoadPolicy(w.policy)
		if err != nil {
			return fmt.Errorf("%w: --policy: %v", ErrUsage, err)
		}
		cfg.Policy = p
	}
	if w.mode != "" {
		m, err := overseer.ParseMode(w.mode)
		if err != nil {
			return fmt.Errorf("%w: --mode: %v", ErrUsage, err)
		}
		cfg.Mode = m
	}
	if w.modes != "" {
		cfg.Modes = map[string]overseer.Mode{}
		for _, pair := range strings.Split(w.modes, ",") {
			wt, m, ok := strings.Cut(pair, "=")
			mode, err := overseer.ParseMode(m)
			if !ok || wt == "" || err != nil {
				return fmt.Errorf("%w: --modes %q: write TYPE=MODE pairs separated by commas", ErrUsage, pair)
			}
			cfg.Modes[wt] = mode
		}
	}
	if w.supervisionConfig != "" {
		data, err := os.ReadFile(w.supervisionConfig)
		if err != nil {
			return fmt.Errorf("%w: --supervision-config: %v", ErrUsage, err)
		}
		sc, err := supervision.ParseConfig(data)
		if err != nil {
			return fmt.Errorf("%w: --supervision-config %s: %v", ErrUsage, w.supervisionConfig, err)
		}
		cfg.Supervision.Config = &sc
	}
	if err := w.applyGates(cfg, os.Getenv); err != nil {
		return err
	}
	cfg.AgentWork = w.agentWork
	cfg.ModelRegistry = w.modelRegistry
	cfg.DisableSearchAttributes = w.noSA
	cfg.Logger = zap.NewNop()
	if w.verbose {
		l, err := zap.NewDevelopment()
		if err == nil {
			cfg.Logger = l
		}
	}
	return nil
}

// applyGates sets the gate deadlines, the dashboard link and the
// notifiers (from the environment, which holds their secrets).
func (w *workerFlags) applyGates(cfg *worker.Config, getenv func(string) string) error {
	if w.gateDeadline == "" {
		w.gateDeadline = getenv(envGateDeadline)
	}
	d, err := overseer.ParseGateDeadline(w.gateDeadline)
	if err != nil {
		return fmt.Errorf("%w: --gate-deadline: %v", ErrUsage, err)
	}
	cfg.GateDeadline = d
	cfg.MaxRedos = w.maxRedos
	if w.gateDeadlines != "" {
		cfg.GateDeadlines = map[string]overseer.GateDeadline{}
		for _, pair := range strings.Split(w.gateDeadlines, ";") {
			wt, rule, ok := strings.Cut(strings.TrimSpace(pair), "=")
			d, err := overseer.ParseGateDeadline(rule)
			if !ok || wt == "" || err != nil {
				msg := "write TYPE=DEADLINE pairs separated by semicolons"
				if err != nil {
					msg = err.Error()
				}
				return fmt.Errorf("%w: --gate-deadlines %q: %s", ErrUsage, pair, msg)
			}
			cfg.GateDeadlines[wt] = d
		}
	}
	cfg.RelativeBudgetGates = w.relativeGates
	if w.contentWindows != "" {
		cfg.ContentWindows = map[string]trajectory.ContentWindow{}
		for _, pair := range strings.Split(w.contentWindows, ";") {
			win, wt, err := parseContentWindow(pair)
			if err != nil {
				return fmt.Errorf("%w: --content-window %q: %v", ErrUsage, pair, err)
			}
			cfg.ContentWindows[wt] = win
		}
	}
	if w.approvers == "" {
		w.approvers = getenv(envApprovers)
	}
	cfg.Approval = overseer.Approval{FourEyes: w.fourEyes}
	for _, a := range strings.Split(w.approvers, ",") {
		if a = strings.TrimSpace(a); a != "" {
			cfg.Approval.Approvers = append(cfg.Approval.Approvers, a)
		}
	}
	if err := cfg.Approval.Validate(); err != nil {
		return fmt.Errorf("%w: --approvers: %s", ErrUsage, strings.TrimPrefix(err.Error(), "overseer: "))
	}
	if w.dashboardURL == "" {
		w.dashboardURL = getenv(envDashboardURL)
	}
	cfg.DashboardURL = w.dashboardURL
	n, err := notify.FromEnv(getenv)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	cfg.Notifier = n
	return nil
}

// startMetrics serves the worker's metrics on addr and sets the handler on
// cfg, so that the client Dial makes feeds them. An empty addr serves none.
func startMetrics(addr string, cfg *worker.Config) (*worker.MetricsServer, error) {
	if addr == "" {
		return nil, nil
	}
	m, err := worker.NewMetrics()
	if err != nil {
		return nil, err
	}
	srv, err := worker.ServeMetrics(addr, m, cfg.Logger)
	if err != nil {
		return nil, fmt.Errorf("%w (choose another address with --metrics)", err)
	}
	cfg.MetricsHandler = m.Handler()
	return srv, nil
}

// DefaultWorkflowCache is how many runs `overseer worker` keeps in memory
// between their tasks unless --workflow-cache says otherwise. Why not the
// SDK's 10,000: a job paused at a gate stays in the cache until it is
// resumed, so a worker's memory grew with the open gates, and at about
// 2,700 of them (with 600 jobs in flight) it sat at its 200 MiB limit,
// spent most of its CPU collecting garbage and settled jobs at half the
// rate (docs/performance.md, "A day's volume"). A run beyond the cache
// costs one history read at its next task: a resume.
const DefaultWorkflowCache = 1000

// Worker runs a worker against any Temporal server.
type Worker struct{}

// Synopsis implements Command.
func (*Worker) Synopsis() string {
	return "run a worker with the overseer plugin against a Temporal server"
}

// Run implements Command.
func (*Worker) Run(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("worker", out)
	var conn connFlags
	conn.register(fs)
	var wf workerFlags
	wf.register(fs)
	metrics := fs.String("metrics", "", "serve Prometheus metrics on this host:port at /metrics, e.g. 127.0.0.1:9090 (default: none)")
	types := fs.String("type", "", "serve the recorded job ("+workflows.RecordedJobWorkflowName+") under these workflow types too, comma-separated, "+
		"managed unless --mode or --modes say otherwise: the jobs of overseer replay --type NAME")
	memLimit := fs.String("memory-limit", "", "the process's soft memory limit, e.g. 200MiB or 1GiB; 0: none (default: $GOMEMLIMIT when set, else 200MiB)")
	cache := fs.Int("workflow-cache", DefaultWorkflowCache, "runs the worker keeps in memory between their tasks (the SDK's sticky cache); "+
		"a run beyond it is read again from its history at its next task; 0: the SDK's default, 10000")
	err := parseNoArgs(fs, args)
	if err != nil {
		return err
	}
	if *cache < 0 {
		return fmt.Errorf("%w: --workflow-cache %d: give a number of runs, or 0 for the SDK's default", ErrUsage, *cache)
	}
	restoreLimit, err := setMemoryLimit(*memLimit)
	if err != nil {
		return err
	}
	defer restoreLimit()
	if *cache > 0 {
		// Process-wide, and read when the first worker starts.
		sdkworker.SetStickyWorkflowCacheSize(*cache)
	}
	recordedTypes, err := parseRecordedTypes(*types)
	if err != nil {
		return err
	}
	cfg := conn.config()
	if err := wf.apply(&cfg); err != nil {
		return err
	}
	serveRecordedAs(&cfg, recordedTypes)
	// A worker is a server: it logs JSON lines on stderr, also for the SDK.
	cfg.Logger = serverLogger(wf.verbose)
	defer func() { _ = cfg.Logger.Sync() }()
	ms, err := startMetrics(*metrics, &cfg)
	if err != nil {
		return err
	}
	if ms != nil {
		defer ms.Close()
		fmt.Fprintf(out, "Metrics on %s\n", ms.URL())
	}
	tp, stopTraces, err := worker.TracesFromEnv(ctx)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if tp != nil {
		cfg.TracerProvider = tp
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = stopTraces(sctx) // the spans still batched
		}()
		fmt.Fprintf(out, "Traces over OTLP (%s=otlp)\n", worker.EnvTracesExporter)
	}
	dctx, cancel := context.WithTimeout(ctx, conn.timeout)
	defer cancel()
	c, err := worker.Dial(dctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	w, err := worker.New(c, cfg)
	if err != nil {
		return err
	}
	for _, typ := range recordedTypes {
		w.RegisterWorkflowWithOptions(workflows.RecordedJob, workflow.RegisterOptions{Name: typ})
	}
	stopLearn, err := hostLearnWith(c, w, cfg.ModelRegistry, cfg, wf.learn)
	if err != nil {
		return err
	}
	defer stopLearn()
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	if len(recordedTypes) > 0 {
		fmt.Fprintf(out, "Recorded jobs served as %s (besides %s)\n", strings.Join(recordedTypes, ", "), workflows.RecordedJobWorkflowName)
	}
	fmt.Fprintf(out, "Worker polling task queue %s; Ctrl-C stops it.\n", conn.taskQueue)
	<-ctx.Done()
	w.Stop()
	fmt.Fprintln(out, "Worker stopped.")
	return nil
}

// parseRecordedTypes reads worker --type: the workflow types to serve the
// recorded job under besides its own, without repeats. A name the worker
// gives a workflow of its own would collide with it.
func parseRecordedTypes(list string) ([]string, error) {
	if list == "" {
		return nil, nil
	}
	var types []string
	for _, typ := range strings.Split(list, ",") {
		typ = strings.TrimSpace(typ)
		switch {
		case typ == "":
			return nil, fmt.Errorf("%w: --type %q: give workflow type names separated by commas", ErrUsage, list)
		case typ == workflows.JobWorkflowName || strings.HasPrefix(typ, "overseer."):
			return nil, fmt.Errorf("%w: --type %s: the worker serves a workflow of its own under that name (%s and overseer.*); give another", ErrUsage, typ, workflows.JobWorkflowName)
		case typ == workflows.RecordedJobWorkflowName || slices.Contains(types, typ):
			continue // registered already
		}
		types = append(types, typ)
	}
	return types, nil
}

// serveRecordedAs gives the recorded job's other types what its own has:
// manage mode when no --mode or --modes says otherwise, and redo.
func serveRecordedAs(cfg *worker.Config, types []string) {
	for _, typ := range types {
		if _, set := cfg.Modes[typ]; cfg.Mode == "" && !set {
			if cfg.Modes == nil {
				cfg.Modes = map[string]overseer.Mode{}
			}
			cfg.Modes[typ] = overseer.ModeManage
		}
		cfg.RedoSafe = append(cfg.RedoSafe, typ)
	}
}

// codecOptions are the client options of cfg's codec (its CodecEndpoint,
// $TEMPORAL_CODEC_ENDPOINT or $OVERSEER_CODEC_KEY): its data converter and
// a failure converter with it, none without one. The commands that start
// their own dev server give them to every client of it.
func codecOptions(cfg worker.Config) (client.Options, error) {
	o, err := cfg.ClientOptions()
	if err != nil {
		return client.Options{}, err
	}
	return client.Options{DataConverter: o.DataConverter, FailureConverter: o.FailureConverter}, nil
}

// codecSetting names the codec codecOptions chose for endpoint, and
// where its key comes from, never the key.
func codecSetting(endpoint string) string {
	if endpoint == "" {
		endpoint = os.Getenv(worker.CodecEndpointEnv)
	}
	if endpoint == "" {
		return "AES-GCM, key from $" + codec.KeyEnv
	}
	if u, err := url.Parse(endpoint); err == nil {
		endpoint = u.Redacted()
	}
	return "codec server " + endpoint
}

// devSettings are the lines `overseer dev` prints for the gate, approval,
// notification and sign-in settings it took, so that a user sees they took
// effect. They name where a secret comes from, never its value.
func devSettings(cfg worker.Config, df *dashboardFlags, dashboardOn bool) []string {
	var lines []string
	add := func(label, format string, args ...any) {
		lines = append(lines, fmt.Sprintf("%-21s", label)+fmt.Sprintf(format, args...))
	}
	if cfg.DataConverter != nil {
		add("Payload codec", "%s", codecSetting(cfg.CodecEndpoint))
	}
	if !cfg.GateDeadline.IsZero() {
		add("Gate deadline", "%s", cfg.GateDeadline)
	}
	for _, wt := range slices.Sorted(maps.Keys(cfg.GateDeadlines)) {
		add("Gate deadline", "%s for %s", cfg.GateDeadlines[wt], wt)
	}
	for _, wt := range slices.Sorted(maps.Keys(cfg.ContentWindows)) {
		w := cfg.ContentWindows[wt]
		add("Content window", "the judge reads the latest %d calls of %s (redacted, cut to the window's bytes)", w.Calls, wt)
	}
	if len(cfg.Approval.Approvers) > 0 {
		add("Approvers", "%s may resume gates", strings.Join(cfg.Approval.Approvers, ", "))
	}
	if cfg.Approval.FourEyes {
		add("Four-eyes", "on: a job's starter may not resume its gates; start jobs with overseer start --by NAME (memo %s)", overseer.StartedByMemoKey)
	}
	if cfg.Notifier != nil {
		// The notifiers' names redact their URLs, which may carry tokens.
		signed := ""
		if os.Getenv(notify.EnvWebhookSecret) != "" {
			signed = " (webhooks signed with the key in $" + notify.EnvWebhookSecret + ")"
		}
		add("Notifications", "%s%s", cfg.Notifier, signed)
	}
	if !dashboardOn {
		return lines
	}
	if df.trustedProxy != "" {
		add("Dashboard sign-in", "trusted proxy %s: user from %s, groups from %s", strings.Join(splitList(df.trustedProxy), ", "), df.proxyUserHeader, df.proxyGroupsHeader)
	}
	if df.oidcIssuer != "" {
		secret := "no client secret (a public client)"
		if df.oidcSecretEnv != "" && os.Getenv(df.oidcSecretEnv) != "" {
			secret = "client secret from $" + df.oidcSecretEnv
		}
		add("Dashboard sign-in", "OpenID Connect %s, client %s, %s", df.oidcIssuer, df.oidcClientID, secret)
	}
	return lines
}

// Dev runs an embedded Temporal dev server, a worker, the dashboard and the
// metrics endpoint in one process tree.
type Dev struct{}

// Synopsis implements Command.
func (*Dev) Synopsis() string {
	return "run an embedded Temporal dev server (with Web UI), a worker, the dashboard and /metrics"
}

// Run implements Command.
func (*Dev) Run(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("dev", out)
	var wf workerFlags
	wf.register(fs)
	taskQueue := fs.String("task-queue", worker.DefaultTaskQueue, "task queue of the job workflow")
	var df dashboardFlags
	df.register(fs, DefaultDashboardListen)
	noDashboard := fs.Bool("no-dashboard", false, "do not serve the dashboard")
	metrics := fs.String("metrics", "127.0.0.1:9090", "serve the worker's Prometheus metrics on this host:port at /metrics (empty: none)")
	port := fs.Int("port", 7233, "the dev server's gRPC port on 127.0.0.1 (0: any free port)")
	uiPort := fs.Int("ui-port", 8233, "the Temporal Web UI's port (0: any free port)")
	traces := fs.String("traces", "", "start one recorded job per run of this directory (any format eval reads), e.g. examples/traces/mini-swe-agent, so real agents are judged live in the dashboard")
	tracesFormat := fs.String("traces-format", "", "format of --traces (default: detected)")
	speed := fs.Float64("speed", 20, "with --traces: a recorded phase takes its recorded time divided by this")
	asPhases := asPhasesFlag(fs)
	var codecEndpoint string
	registerCodec(fs, &codecEndpoint)
	err := parseNoArgs(fs, args)
	if err != nil {
		return err
	}
	var dashWarning string
	if !*noDashboard {
		if dashWarning, err = df.checkListen(); err != nil {
			return err
		}
	}
	if !(*speed > 0) {
		return fmt.Errorf("%w: --speed %v: give a factor above 0, e.g. 20", ErrUsage, *speed)
	}
	var recorded []eval.Record
	if *traces != "" {
		// Read the runs first: a bad directory is said before anything starts.
		recs, src, err := eval.LoadSource(*traces, *tracesFormat)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, src)
		recorded = recast(recs, *asPhases)
	}
	if *port < 0 || *port > 65535 || *uiPort < 0 || *uiPort > 65535 {
		return fmt.Errorf("%w: --port and --ui-port take a port number from 0 to 65535", ErrUsage)
	}
	cfg := worker.Config{TaskQueue: *taskQueue, CodecEndpoint: codecEndpoint}
	if err := wf.apply(&cfg); err != nil {
		return err
	}
	// One converter for every client of the dev server: the worker's, the
	// recorded jobs' starter's and the dashboard's.
	codecOpts, err := codecOptions(cfg)
	if err != nil {
		return err
	}
	cfg.DataConverter = codecOpts.DataConverter
	if cfg.DashboardURL == "" && !*noDashboard {
		cfg.DashboardURL = "http://" + df.listen // notifications link to this dashboard
	}
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{UI: true, Output: io.Discard, Port: *port, UIPort: *uiPort})
	if err != nil {
		return err
	}
	defer srv.Stop()
	cfg.Namespace = srv.Namespace()
	ms, err := startMetrics(*metrics, &cfg)
	if err != nil {
		return err
	}
	if ms != nil {
		defer ms.Close()
	}
	// The worker's own client, on the dev server's connection, carries the
	// metrics handler and the logger.
	co := codecOpts
	co.Namespace, co.Logger, co.MetricsHandler = srv.Namespace(), worker.SDKLogger(cfg.Logger), cfg.MetricsHandler
	c, err := client.NewClientFromExisting(srv.Client(), co)
	if err != nil {
		return fmt.Errorf("connect the worker to the dev server: %w", err)
	}
	defer c.Close()
	w, err := worker.New(c, cfg)
	if err != nil {
		return err
	}
	loops := &workflows.RecordedLoopActivities{}
	registerRecordedLoops(w, loops)
	stopLearn, err := hostLearnWith(c, w, cfg.ModelRegistry, cfg, wf.learn)
	if err != nil {
		return err
	}
	defer stopLearn()
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	defer w.Stop()
	dashURL := ""
	if !*noDashboard {
		// The dashboard's own client: its calls are not the worker's metrics.
		co := codecOpts
		co.Namespace, co.Logger = srv.Namespace(), worker.SDKLogger(cfg.Logger)
		dashClient, err := client.NewClientFromExisting(srv.Client(), co)
		if err != nil {
			return fmt.Errorf("connect the dashboard to the dev server: %w", err)
		}
		defer dashClient.Close()
		opts := df.options()
		opts.Client, opts.Namespace, opts.Logger, opts.DataConverter = dashClient, srv.Namespace(), cfg.Logger, cfg.DataConverter
		if opts.TemporalUI == "" {
			opts.TemporalUI = srv.UIAddress()
		}
		h, err := dashboard.New(opts)
		if err != nil {
			return err
		}
		ln, err := df.open(cfg.Logger)
		if err != nil {
			return fmt.Errorf("%w (choose another address with --listen, or --no-dashboard)", err)
		}
		dashURL = "http://" + ln.Addr().String() + "/"
		served := make(chan error, 1)
		dctx, stop := context.WithCancel(ctx)
		go func() { served <- dashboard.Serve(dctx, ln, h) }()
		defer func() { stop(); <-served }()
	}
	fmt.Fprintf(out, "Temporal dev server  %s (namespace %s)\n", srv.FrontendHostPort(), srv.Namespace())
	fmt.Fprintf(out, "Temporal Web UI      %s\n", srv.UIAddress())
	fmt.Fprintf(out, "Worker task queue    %s\n", *taskQueue)
	if dashURL != "" {
		fmt.Fprintf(out, "Overseer dashboard   %s\n", dashURL)
		if dashWarning != "" {
			fmt.Fprintln(out, dashWarning)
		}
	}
	if ms != nil {
		fmt.Fprintf(out, "Worker metrics       %s\n", ms.URL())
	}
	for _, l := range devSettings(cfg, &df, dashURL != "") {
		fmt.Fprintln(out, l)
	}
	address := ""
	if !strings.HasSuffix(srv.FrontendHostPort(), ":7233") { // the CLI's default needs no flag
		address = " --address " + srv.FrontendHostPort()
	}
	if codecEndpoint != "" { // the environment's codec reaches overseer start by itself
		address += " --codec-endpoint " + codecEndpoint
	}
	fmt.Fprintf(out, "Start a job:         overseer start%s --scenario looping --objective \"Add CSV export\"\n", address)
	fmt.Fprintf(out, "Or an agent loop:    overseer start%s --loop tool_failing --objective \"Add CSV export\"\n", address)
	if len(recorded) > 0 {
		jobs, err := startRecordedJobs(ctx, c, *taskQueue, recorded, *speed, time.Now().Format("150405"), loops)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "Recorded jobs        %d started from %s as %s (e.g. %s), judged live; resume or abort their gates in the dashboard\n",
			len(jobs), *traces, recordedShape(recorded), jobs[0].id)
	}
	fmt.Fprintln(out, "Ctrl-C stops everything (the dev server keeps no data).")
	<-ctx.Done()
	fmt.Fprintln(out, "Stopping.")
	return nil
}

// parseContentWindow reads one TYPE=CALLS[:BYTES_PER_CALL] of
// --content-window.
func parseContentWindow(pair string) (trajectory.ContentWindow, string, error) {
	wt, spec, ok := strings.Cut(strings.TrimSpace(pair), "=")
	if !ok || strings.TrimSpace(wt) == "" {
		return trajectory.ContentWindow{}, "", fmt.Errorf("write TYPE=CALLS[:BYTES_PER_CALL] pairs separated by semicolons")
	}
	callsText, bytesText, hasBytes := strings.Cut(spec, ":")
	var w trajectory.ContentWindow
	var err error
	if w.Calls, err = strconv.Atoi(strings.TrimSpace(callsText)); err != nil {
		return w, "", fmt.Errorf("%q is not a number of calls", callsText)
	}
	if hasBytes {
		if w.CallBytes, err = strconv.Atoi(strings.TrimSpace(bytesText)); err != nil {
			return w, "", fmt.Errorf("%q is not a number of bytes per call", bytesText)
		}
	}
	return w, strings.TrimSpace(wt), w.Validate()
}
