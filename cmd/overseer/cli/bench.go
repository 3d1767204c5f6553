package cli

import (
	"context"
	"flag"
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
	load := fs.Int("load", 0, "instead of the bench, the load mode: this many trivial jobs at once per variant (e.g. 200), batch time and worker CPU; --rounds defaults to 3 and --variants to "+strings.Join(bench.LoadVariants(), ", "))
	loadPhases := fs.Int("load-phases", 10, "phases per job in the load mode")
	pgDSN := fs.String("pg-dsn", os.Getenv("OVERSEER_BENCH_PG_DSN"), "load mode: the PostgreSQL server behind --address (e.g. postgres://temporal:temporal@127.0.0.1:15432/temporal, make cluster's): rows and WAL bytes per job, read with psql (default $OVERSEER_BENCH_PG_DSN)")
	gateBurst := fs.Int("gate-burst", 0, "load mode: after the rounds, pause this many jobs in manage mode at once and resume them all (gate open → resume → next phase p50/p99)")
	describe := fs.String("settings", "", "describe the server at --address for the report (e.g. \"make cluster: Temporal 1.29.1, 4 history shards, PostgreSQL 15\")")
	profileDir := fs.String("profile-dir", "", "load mode: write a CPU profile of each variant's batch to this directory (<variant>-r<round>.pprof)")
	if err := parseNoArgs(fs, args); err != nil {
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
	if *describe != "" {
		settings += ": " + *describe
	}
	opts.Settings = settings
	if *load > 0 {
		lo := bench.LoadOptions{Jobs: *load, Phases: *loadPhases, Variants: opts.Variants, ProfileDir: *profileDir, Progress: b.Progress, Settings: settings,
			PGDSN: *pgDSN, GateBurst: *gateBurst}
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "rounds" {
				lo.Rounds = *rounds
			}
		})
		res, err := bench.RunLoad(ctx, c, lo)
		if err != nil {
			return err
		}
		if *asJSON {
			return bench.WriteLoadJSON(out, res)
		}
		return bench.WriteLoadTable(out, res)
	}
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
