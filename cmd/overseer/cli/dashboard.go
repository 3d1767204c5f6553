package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/worker"
)

// DefaultDashboardListen is where the dashboard listens unless told
// otherwise: loopback only.
const DefaultDashboardListen = "127.0.0.1:8080"

// Dashboard serves the web dashboard.
type Dashboard struct{}

// Synopsis implements Command.
func (*Dashboard) Synopsis() string {
	return "serve the web dashboard (--listen 127.0.0.1:8080)"
}

// dashboardFlags configure the dashboard in `dashboard` and `dev`.
type dashboardFlags struct {
	listen       string
	refresh      time.Duration
	temporalUI   string
	allowedHosts string
	limit        int
}

func (d *dashboardFlags) register(fs *flag.FlagSet, listen string) {
	fs.StringVar(&d.listen, "listen", listen, "host:port the dashboard listens on; loopback unless you give another address (it has no login: put it behind your proxy's authentication)")
	fs.DurationVar(&d.refresh, "refresh", 5*time.Second, "how often pages update themselves")
	fs.StringVar(&d.temporalUI, "temporal-ui", "", "base URL of the Temporal Web UI, for links to a job's history")
	fs.StringVar(&d.allowedHosts, "allowed-hosts", "", "comma-separated host names the dashboard answers to besides localhost and IP addresses (e.g. the name of your proxy)")
	fs.IntVar(&d.limit, "limit", 50, "at most this many jobs on the list")
}

func (d *dashboardFlags) options() dashboard.Options {
	var hosts []string
	for h := range strings.SplitSeq(d.allowedHosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	return dashboard.Options{Refresh: d.refresh, TemporalUI: d.temporalUI, AllowedHosts: hosts, Limit: d.limit}
}

// listen opens the dashboard's listener and warns when it is not loopback.
func (d *dashboardFlags) open(log *zap.Logger) (net.Listener, error) {
	ln, err := net.Listen("tcp", d.listen)
	if err != nil {
		return nil, fmt.Errorf("dashboard: listen on %s: %w", d.listen, err)
	}
	if !dashboard.IsLoopback(d.listen) {
		log.Warn("the dashboard listens beyond loopback and has no login: anyone who reaches it can resume jobs",
			zap.String("listen", d.listen))
	}
	return ln, nil
}

// Run implements Command.
func (*Dashboard) Run(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("dashboard", out)
	var conn connFlags
	conn.register(fs)
	var df dashboardFlags
	df.register(fs, DefaultDashboardListen)
	verbose := fs.Bool("v", false, "log at debug level")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(pos); err != nil {
		return err
	}
	log := serverLogger(*verbose)
	defer func() { _ = log.Sync() }()
	cfg := conn.config()
	cfg.Logger = log // the SDK client logs through zap too
	dctx, cancel := context.WithTimeout(ctx, conn.timeout)
	defer cancel()
	c, err := worker.Dial(dctx, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	opts := df.options()
	opts.Client, opts.Logger, opts.Timeout = c, log, conn.timeout
	if o, err := cfg.ClientOptions(); err == nil {
		opts.Namespace = o.Namespace
	}
	h, err := dashboard.New(opts)
	if err != nil {
		return err
	}
	ln, err := df.open(log)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Dashboard on http://%s/ (namespace %s); Ctrl-C stops it.\n", ln.Addr(), opts.Namespace)
	log.Info("dashboard started", zap.String("url", "http://"+ln.Addr().String()+"/"), zap.String("namespace", opts.Namespace))
	return dashboard.Serve(ctx, ln, h)
}

// serverLogger is the zap logger of the long-running commands: JSON lines
// on stderr at info level (debug with verbose).
func serverLogger(verbose bool) *zap.Logger {
	cfg := zap.NewProductionConfig()
	cfg.OutputPaths, cfg.ErrorOutputPaths = []string{"stderr"}, []string{"stderr"}
	cfg.EncoderConfig.TimeKey, cfg.EncoderConfig.EncodeTime = "ts", zapcore.ISO8601TimeEncoder
	if verbose {
		cfg.Level = zap.NewAtomicLevelAt(zap.DebugLevel)
	}
	l, err := cfg.Build()
	if err != nil {
		return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(cfg.EncoderConfig), zapcore.Lock(os.Stderr), cfg.Level))
	}
	return l
}
