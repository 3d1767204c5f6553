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
	tuned := fs.Bool("tuned", false, "run the dev server with task queues of one partition (bench.TunedDevServerConfig), which hides the dispatch stalls of the 4 partitions every server has by default")
	stock := fs.Bool("stock-dev-server", false, "keep all the dev server's defaults, the transfer queue polled 20 times a second included (paces each phase at ~100 ms)")
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
	if *tuned && *stock {
		return fmt.Errorf("bench: --tuned and --stock-dev-server contradict each other; pick one")
	}
	c, settings, stop, err := b.connect(ctx, conn, *tuned, *stock)
	if err != nil {
		return err
	}
	defer stop()
	opts.Settings = settings
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

// connect dials --address, or starts a dev server with
// bench.DevServerConfig (stock task queues), bench.TunedDevServerConfig
// with tuned, or its bare defaults with stock. settings says which.
func (b *Bench) connect(ctx context.Context, conn connFlags, tuned, stock bool) (client.Client, string, func(), error) {
	if conn.address != "" {
		c, err := conn.dial(ctx)
		if err != nil {
			return nil, "", nil, err
		}
		return c, "the server at " + conn.address, c.Close, nil
	}
	dc, settings := bench.DevServerConfig(), "Temporal CLI dev server, stock task queues (4 partitions), transfer queue polled 1000/s"
	switch {
	case tuned:
		dc, settings = bench.TunedDevServerConfig(), "Temporal CLI dev server, tuned (--tuned): task queues of 1 partition, transfer queue polled 1000/s"
	case stock:
		dc, settings = nil, "Temporal CLI dev server, all defaults (--stock-dev-server)"
	}
	if b.Progress != nil {
		fmt.Fprintf(b.Progress, "starting the Temporal dev server (dynamic config %v)…\n", dc)
	}
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{Output: io.Discard, Logger: worker.SDKLogger(zap.NewNop()), DynamicConfig: dc})
	if err != nil {
		return nil, "", nil, err
	}
	return srv.Client(), settings, func() { _ = srv.Stop() }, nil
}
