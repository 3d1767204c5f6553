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

// Environment variables of the dashboard's secrets: never flags, which
// any user of the machine can read in the process list.
const (
	// OIDCClientSecretEnv holds the OIDC client's secret (the default of
	// --oidc-client-secret-env).
	OIDCClientSecretEnv = "OVERSEER_OIDC_CLIENT_SECRET"
	// DashboardSessionKeyEnv holds the key (16 bytes or more) that seals
	// the dashboard's session cookies: give every replica the same one.
	DashboardSessionKeyEnv = "OVERSEER_DASHBOARD_SESSION_KEY"
)

// dashboardFlags configure the dashboard in `dashboard` and `dev`.
type dashboardFlags struct {
	listen       string
	refresh      time.Duration
	temporalUI   string
	allowedHosts string
	limit        int
	insecure     bool

	oidcIssuer, oidcClientID, oidcSecretEnv, oidcRedirect, oidcGroups string
	trustedProxy, proxyUserHeader, proxyGroupsHeader                  string
	sessionTTL                                                        time.Duration
}

func (d *dashboardFlags) register(fs *flag.FlagSet, listen string) {
	fs.StringVar(&d.listen, "listen", listen, "host:port the dashboard listens on; an address beyond loopback takes a sign-in (--oidc-issuer or --trusted-proxy) or --insecure")
	fs.BoolVar(&d.insecure, "insecure", false, "serve without a sign-in on an address beyond loopback: anyone who reaches it can resume and abort jobs under any name")
	fs.DurationVar(&d.refresh, "refresh", 5*time.Second, "how often pages update themselves")
	fs.StringVar(&d.temporalUI, "temporal-ui", "", "base URL of the Temporal Web UI, for links to a job's history")
	fs.StringVar(&d.allowedHosts, "allowed-hosts", "", "comma-separated host names the dashboard answers to besides localhost and IP addresses (e.g. the name of your proxy)")
	fs.IntVar(&d.limit, "limit", 50, "at most this many jobs on the list")
	fs.StringVar(&d.oidcIssuer, "oidc-issuer", "", "sign users in with this OpenID Connect issuer (e.g. https://accounts.google.com); a resume's by is then the signed-in user")
	fs.StringVar(&d.oidcClientID, "oidc-client-id", "", "the dashboard's OIDC client id")
	fs.StringVar(&d.oidcSecretEnv, "oidc-client-secret-env", OIDCClientSecretEnv, "environment variable holding the OIDC client secret (never a flag; empty for a public client)")
	fs.StringVar(&d.oidcRedirect, "oidc-redirect-url", "", "the dashboard's OIDC callback as registered at the provider: https://HOST/auth/callback")
	fs.StringVar(&d.oidcGroups, "oidc-groups-claim", "", "the ID token claim listing the user's groups (e.g. groups), sent with each resume for approvers lists")
	fs.StringVar(&d.trustedProxy, "trusted-proxy", "", "comma-separated IPs or CIDRs of an authenticating proxy whose identity header the dashboard takes (requests from anywhere else are refused)")
	fs.StringVar(&d.proxyUserHeader, "proxy-user-header", "X-Forwarded-User", "with --trusted-proxy: the header holding the user")
	fs.StringVar(&d.proxyGroupsHeader, "proxy-groups-header", "X-Forwarded-Groups", "with --trusted-proxy: the header holding the user's groups, comma-separated")
	fs.DurationVar(&d.sessionTTL, "session-ttl", 8*time.Hour, "with --oidc-issuer: how long a sign-in lasts (the session key is $"+DashboardSessionKeyEnv+", random per process if unset)")
}

func (d *dashboardFlags) options() dashboard.Options {
	opts := dashboard.Options{Refresh: d.refresh, TemporalUI: d.temporalUI, AllowedHosts: splitList(d.allowedHosts), Limit: d.limit}
	if d.oidcIssuer != "" {
		opts.OIDC = dashboard.OIDC{IssuerURL: d.oidcIssuer, ClientID: d.oidcClientID, RedirectURL: d.oidcRedirect, GroupsClaim: d.oidcGroups}
		if d.oidcSecretEnv != "" {
			opts.OIDC.ClientSecret = os.Getenv(d.oidcSecretEnv)
		}
		opts.SessionTTL = d.sessionTTL
		if k := os.Getenv(DashboardSessionKeyEnv); k != "" {
			opts.SessionKey = []byte(k)
		}
	}
	if d.trustedProxy != "" {
		opts.TrustedProxy = dashboard.TrustedProxy{Addresses: splitList(d.trustedProxy),
			UserHeader: d.proxyUserHeader, GroupsHeader: d.proxyGroupsHeader}
	}
	return opts
}

// authOn reports whether the dashboard signs its users in.
func (d *dashboardFlags) authOn() bool { return d.oidcIssuer != "" || d.trustedProxy != "" }

// splitList splits a comma-separated flag, dropping empty items.
func splitList(s string) []string {
	var out []string
	for h := range strings.SplitSeq(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// checkListen keeps a dashboard without a sign-in private: beyond loopback
// it takes --insecure, as judge serve takes it without an API key. It
// returns the warning to print when --insecure let it through.
func (d *dashboardFlags) checkListen() (warning string, err error) {
	if dashboard.IsLoopback(d.listen) || d.authOn() {
		return "", nil
	}
	if !d.insecure {
		return "", fmt.Errorf("%w: --listen %s reaches beyond loopback and the dashboard has no sign-in: give --oidc-issuer or --trusted-proxy, listen on 127.0.0.1, "+
			"or pass --insecure to let anyone who reaches it resume and abort jobs", ErrUsage, d.listen)
	}
	return fmt.Sprintf("Warning: --insecure: the dashboard has no sign-in and %s reaches beyond loopback: anyone who reaches it can resume and abort jobs", d.listen), nil
}

// open opens the dashboard's listener and logs a warning when it has no
// sign-in beyond loopback (checkListen let it through with --insecure).
func (d *dashboardFlags) open(log *zap.Logger) (net.Listener, error) {
	ln, err := net.Listen("tcp", d.listen)
	if err != nil {
		return nil, fmt.Errorf("dashboard: listen on %s: %w", d.listen, err)
	}
	if !dashboard.IsLoopback(d.listen) && !d.authOn() {
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
	err := parseNoArgs(fs, args)
	if err != nil {
		return err
	}
	// Refused before anything connects or listens.
	warning, err := df.checkListen()
	if err != nil {
		return err
	}
	if warning != "" {
		fmt.Fprintln(out, warning)
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
		opts.Namespace, opts.DataConverter = o.Namespace, o.DataConverter
	}
	h, err := dashboard.New(opts)
	if err != nil {
		return err
	}
	ln, err := df.open(log)
	if err != nil {
		return err
	}
	signIn := "no sign-in"
	switch {
	case opts.OIDC.IssuerURL != "":
		signIn = "sign-in with " + opts.OIDC.IssuerURL
	case len(opts.TrustedProxy.Addresses) > 0:
		signIn = "users from the proxy at " + strings.Join(opts.TrustedProxy.Addresses, ", ")
	}
	fmt.Fprintf(out, "Dashboard on http://%s/ (namespace %s, %s); Ctrl-C stops it.\n", ln.Addr(), opts.Namespace, signIn)
	// The client secret and session key are never logged.
	log.Info("dashboard started", zap.String("url", "http://"+ln.Addr().String()+"/"), zap.String("namespace", opts.Namespace),
		zap.String("oidc_issuer", opts.OIDC.IssuerURL), zap.Strings("trusted_proxy", opts.TrustedProxy.Addresses))
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
