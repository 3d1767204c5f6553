package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/overseer/jev/jevhttp"
	"github.com/corohq/temporal-overseer/worker"
)

// judgeFlags select the judge. Keys are never flags: they come from the
// environment only, so they do not show in ps.
type judgeFlags struct {
	kindFlag             string
	kind, url, model     string
	budget               time.Duration
	openaiBase, openaiMd string
}

func (j *judgeFlags) register(fs *flag.FlagSet) {
	if j.kindFlag == "" {
		j.kindFlag = "judge"
		fs.StringVar(&j.kind, j.kindFlag, "", "judge: learned, heuristic, jev or openai (default: $"+worker.EnvJudge+", else learned)")
	} else {
		fs.StringVar(&j.kind, j.kindFlag, worker.JudgeLearned, "judge behind the service: learned, heuristic, jev or openai")
	}
	fs.StringVar(&j.model, "model", "", "model file of the learned judge, from overseer train (default: $"+worker.EnvModel+", else the shipped model)")
	fs.StringVar(&j.url, "judge-url", "", "Jev decide endpoint (default: $"+worker.EnvJevURL+", else "+jevhttp.DefaultURL+"); key from $"+worker.EnvJevAPIKey)
	fs.DurationVar(&j.budget, "judge-budget", 0, "bound of one judge call, at most 30s (default: $"+worker.EnvJudgeBudget+", else 3s)")
	fs.StringVar(&j.openaiBase, "openai-base-url", "", "OpenAI-compatible API base URL (default: $"+worker.EnvOpenAIBaseURL+", else the OpenAI API); key from $"+worker.EnvOpenAIAPIKey)
	fs.StringVar(&j.openaiMd, "openai-model", "", "model of the OpenAI-compatible judge (default: $"+worker.EnvOpenAIModel+", else gpt-4o-mini)")
}

// config resolves the judge configuration: the environment, then the flags.
func (j *judgeFlags) config() (worker.JudgeConfig, error) {
	c, err := worker.JudgeConfigFromEnv(os.Getenv)
	if err != nil {
		return c, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if j.kindFlag != "judge" {
		c.Kind = "" // a service never takes its backend from $OVERSEER_JUDGE (it could name the service itself)
	}
	for dst, v := range map[*string]string{&c.Kind: j.kind, &c.Model: j.model, &c.JevURL: j.url, &c.OpenAIBaseURL: j.openaiBase, &c.OpenAIModel: j.openaiMd} {
		if v != "" {
			*dst = v
		}
	}
	if j.budget != 0 {
		c.Budget = j.budget
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	return c, nil
}

func (j *judgeFlags) apply(cfg *worker.Config) error {
	c, err := j.config()
	if err != nil {
		return err
	}
	cfg.JudgeConfig = c
	return nil
}

// JudgeCmd is `overseer judge serve`: it serves a judge over the Jev HTTP
// protocol so that a fleet of workers can share it.
type JudgeCmd struct{}

// Synopsis implements Command.
func (*JudgeCmd) Synopsis() string {
	return "serve a judge over the Jev HTTP protocol: judge serve"
}

func (*JudgeCmd) subcommandNames() []string { return []string{"serve"} }

// Run implements Command.
func (*JudgeCmd) Run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || args[0] != "serve" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
			fmt.Fprintln(out, "Usage: overseer judge serve [flags]; run `overseer judge serve -h` for the flags.")
			return nil
		}
		return fmt.Errorf("%w: the judge command has one subcommand: overseer judge serve", ErrUsage)
	}
	fs := newFlags("judge serve", out)
	addr := fs.String("listen", jevhttp.DefaultAddr, "address to listen on (host:port; port 0 picks a free one)")
	jf := judgeFlags{kindFlag: "backend"}
	jf.register(fs)
	maxBody := fs.Int64("max-request-bytes", jevhttp.DefaultMaxBodyBytes, "largest request body accepted (413 above)")
	readTimeout := fs.Duration("read-timeout", 10*time.Second, "bound of reading one request")
	writeTimeout := fs.Duration("write-timeout", 0, "bound of one request from its headers to the end of the answer (default: 35s)")
	verbose := fs.Bool("v", false, "log one line per decision (status, model, latency; never a header or a body)")
	insecure := fs.Bool("insecure", false, "serve without an API key on an address beyond loopback: anyone who reaches it can call the judge (and spend its tokens)")
	if err := parseNoArgs(fs, args[1:]); err != nil {
		return err
	}
	jc, err := jf.config()
	if err != nil {
		return err
	}
	judge, err := jc.NewJudge()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if j, ok := judge.(*jevhttp.Judge); ok {
		if u, err := url.Parse(j.URL()); err == nil && u.Host == *addr {
			return fmt.Errorf("%w: the jev backend at %s is this service itself; give its own address with --judge-url", ErrUsage, j.URL())
		}
	}
	if *maxBody <= 0 {
		return fmt.Errorf("%w: --max-request-bytes must be positive", ErrUsage)
	}
	logger := zap.NewNop()
	if *verbose {
		logger = zap.New(zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(out), zap.InfoLevel))
	}
	key := os.Getenv(worker.EnvServeAPIKey)
	// Without a key, anyone who reaches the address is served: beyond
	// loopback that takes a key or a flag that says so.
	anyone := key == "" && !dashboard.IsLoopback(*addr)
	if anyone && !*insecure {
		return fmt.Errorf("%w: --listen %s reaches beyond loopback and no API key is set: set $%s, listen on 127.0.0.1, or pass --insecure to serve anyone",
			ErrUsage, *addr, worker.EnvServeAPIKey)
	}
	srv, err := jevhttp.NewServer(judge, jevhttp.ServerOptions{
		HandlerOptions: jevhttp.HandlerOptions{APIKey: key, MaxRequestBytes: *maxBody, Logger: logger},
		ReadTimeout:    *readTimeout,
		WriteTimeout:   *writeTimeout,
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %v (choose another address with --listen)", *addr, err)
	}
	base := "http://" + ln.Addr().String()
	if anyone {
		fmt.Fprintf(out, "Warning: --insecure: no API key, and %s reaches beyond loopback: anyone who reaches it can call the judge\n", *addr)
	}
	fmt.Fprintf(out, "Serving the %s over the Jev HTTP protocol\n", jc)
	fmt.Fprintf(out, "Decide endpoint  POST %s%s\n", base, jevhttp.DecidePath)
	fmt.Fprintf(out, "Health           GET  %s%s   Readiness  GET  %s%s\n", base, jevhttp.HealthPath, base, jevhttp.ReadyPath)
	if key != "" {
		fmt.Fprintf(out, "API key          required (from $%s)\n", worker.EnvServeAPIKey)
	} else {
		fmt.Fprintf(out, "API key          none required (set $%s to require one)\n", worker.EnvServeAPIKey)
	}
	fmt.Fprintf(out, "Workers use it with: OVERSEER_JUDGE=jev %s=%s%s overseer worker\n", worker.EnvJevURL, base, jevhttp.DecidePath)
	fmt.Fprintln(out, "Ctrl-C stops it.")
	if err := srv.Serve(ctx, ln); err != nil {
		return err
	}
	fmt.Fprintln(out, "Judge service stopped.")
	return nil
}
