package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/bench"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/worker"
)

// Bench is `overseer bench`: the same job bare, hand-written and under the
// plugin, side by side.
type Bench struct {
	// Progress receives a line per measurement. If not set, nothing.
	Progress io.Writer
}

// Synopsis implements Command.
func (*Bench) Synopsis() string {
	return "measure the plugin per phase boundary against the bare job and a hand-written judge loop"
}

// Run implements Command.
func (b *Bench) Run(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("bench", out)
	var conn connFlags
	conn.register(fs)
	phases := fs.Int("phases", 20, "phases per job")
	phaseDuration := fs.Duration("phase-duration", 0, "how long each phase works in the latency jobs (default 50ms)")
	rounds := fs.Int("rounds", 5, "rounds, each running every variant once")
	concurrency := fs.Int("concurrency", 8, "jobs at once in the throughput measurement")
	long := fs.Int("long-phases", 1000, "phases of the job that measures the judge's request size (continues as new halfway)")
	hang := fs.Duration("hang-budget", 0, "budget of the hanging judge (default 1s)")
	only := fs.String("variants", "", "comma-separated variants to run (default all: "+strings.Join(bench.Variants(), ", ")+")")
	stock := fs.Bool("stock-dev-server", false, "keep the dev server's defaults (transfer queue polled 20 times a second, 4 task-queue partitions), which pace each phase at ~100 ms")
	asJSON := fs.Bool("json", false, "write the result as JSON")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the bench process (workers and client) to this file")
	rest, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(rest); err != nil {
		return err
	}
	opts := bench.Options{Phases: *phases, PhaseDuration: *phaseDuration, Rounds: *rounds, Concurrency: *concurrency,
		LongPhases: *long, HangBudget: *hang, Progress: b.Progress}
	if *only != "" {
		for _, v := range strings.Split(*only, ",") {
			opts.Variants = append(opts.Variants, strings.TrimSpace(v))
		}
	}
	c, stop, err := b.connect(ctx, conn, *stock)
	if err != nil {
		return err
	}
	defer stop()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	res, err := bench.Run(ctx, c, opts)
	if err != nil {
		return err
	}
	if *asJSON {
		return bench.WriteJSON(out, res)
	}
	return bench.WriteTable(out, res)
}

// connect dials --address, or starts a dev server with bench.DevServerConfig
// (or, with stock, its defaults).
func (b *Bench) connect(ctx context.Context, conn connFlags, stock bool) (client.Client, func(), error) {
	if conn.address != "" {
		c, err := conn.dial(ctx)
		if err != nil {
			return nil, nil, err
		}
		return c, c.Close, nil
	}
	dc := bench.DevServerConfig()
	if stock {
		dc = nil
	}
	if b.Progress != nil {
		fmt.Fprintf(b.Progress, "starting the Temporal dev server (dynamic config %v)…\n", dc)
	}
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{Output: io.Discard, Logger: worker.SDKLogger(zap.NewNop()), DynamicConfig: dc})
	if err != nil {
		return nil, nil, err
	}
	return srv.Client(), func() { _ = srv.Stop() }, nil
}
