package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/worker"
)

// workerFlags configure the worker in `worker` and `dev`.
type workerFlags struct {
	mode      string
	modes     string
	agentWork time.Duration
	noSA      bool
	verbose   bool
}

func (w *workerFlags) register(fs interface {
	StringVar(*string, string, string, string)
	DurationVar(*time.Duration, string, time.Duration, string)
	BoolVar(*bool, string, bool, string)
}) {
	fs.StringVar(&w.mode, "mode", "", "overseer mode for workflow types not in --modes: off, observe, manage (default: manage for CoroJob, observe otherwise)")
	fs.StringVar(&w.modes, "modes", "", "modes per workflow type, e.g. CoroJob=manage,Other=observe")
	fs.DurationVar(&w.agentWork, "agent-work", 500*time.Millisecond, "how long each simulated phase agent works")
	fs.BoolVar(&w.noSA, "no-search-attributes", false, "do not upsert the overseer search attributes")
	fs.BoolVar(&w.verbose, "v", false, "log the worker's activity")
}

func (w *workerFlags) apply(cfg *worker.Config) error {
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
	cfg.AgentWork = w.agentWork
	cfg.NoSearchAttributes = w.noSA
	cfg.Logger = zap.NewNop()
	if w.verbose {
		l, err := zap.NewDevelopment()
		if err == nil {
			cfg.Logger = l
		}
	}
	return nil
}

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
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(pos); err != nil {
		return err
	}
	cfg := conn.config()
	if err := wf.apply(&cfg); err != nil {
		return err
	}
	c, err := conn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	w, err := worker.New(c, cfg)
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	fmt.Fprintf(out, "Worker polling task queue %s; Ctrl-C stops it.\n", conn.taskQueue)
	<-ctx.Done()
	w.Stop()
	fmt.Fprintln(out, "Worker stopped.")
	return nil
}

// Dev runs an embedded Temporal dev server and a worker in one process tree.
type Dev struct{}

// Synopsis implements Command.
func (*Dev) Synopsis() string {
	return "run an embedded Temporal dev server (with Web UI) and a worker"
}

// Run implements Command.
func (*Dev) Run(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("dev", out)
	var wf workerFlags
	wf.register(fs)
	taskQueue := fs.String("task-queue", worker.DefaultTaskQueue, "task queue of the job workflow")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(pos); err != nil {
		return err
	}
	cfg := worker.Config{TaskQueue: *taskQueue}
	if err := wf.apply(&cfg); err != nil {
		return err
	}
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{UI: true, Output: io.Discard})
	if err != nil {
		return err
	}
	defer srv.Stop()
	w, err := worker.New(srv.Client(), cfg)
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	defer w.Stop()
	fmt.Fprintf(out, "Temporal dev server  %s (namespace %s)\n", srv.FrontendHostPort(), srv.Namespace())
	fmt.Fprintf(out, "Temporal Web UI      %s\n", srv.UIAddress())
	fmt.Fprintf(out, "Worker task queue    %s\n", *taskQueue)
	fmt.Fprintf(out, "Start a job:         overseer start --address %s --scenario looping --objective \"Add CSV export\"\n", srv.FrontendHostPort())
	fmt.Fprintln(out, "Ctrl-C stops everything (the dev server keeps no data).")
	<-ctx.Done()
	fmt.Fprintln(out, "Stopping.")
	return nil
}
