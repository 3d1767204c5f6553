package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/corohq/temporal-overseer/overseer"
)

// LoadOptions configure [RunLoad]. The zero value runs the default load.
type LoadOptions struct {
	// Jobs started at once. If not set, 200.
	Jobs int
	// Phases per job, all trivial. If not set, 10.
	Phases int
	// Rounds each variant runs, interleaved with the others. If not set, 3.
	Rounds int
	// Variants to run (see [LoadVariants]). If empty, LoadVariants.
	Variants []string
	// ProfileDir, if set, receives a CPU profile of each variant's batches
	// (the process, i.e. its worker and the client), one file per variant
	// and round: <variant>-r<round>.pprof.
	ProfileDir string
	// Progress receives a line per batch. If nil, nothing.
	Progress io.Writer
	// Settings describes the server, for the report.
	Settings string
	// PGDSN, if set, names the PostgreSQL server behind the Temporal
	// server (see [ReadPGStats]): each batch also measures the rows and
	// WAL bytes it cost the database.
	PGDSN string
	// GateBurst, if set, is how many jobs [RunGateBurst] pauses and
	// resumes at once after the rounds.
	GateBurst int
}

// LoadVariants are the variants the load mode runs by default: the bare
// job, each judge placement that waits nowhere but at the run's end or
// waits like the hand-written job, their hand-written baselines, and the
// hand-written job with the second coroutine manage mode's run has (what
// that coroutine alone costs under load).
func LoadVariants() []string {
	return []string{VariantBare, VariantHandwritten, VariantHandwrittenListening, VariantManageLocal, VariantHandwrittenBackground, VariantObserveRemote}
}

// LoadVariantResult is one variant under load.
type LoadVariantResult struct {
	Name string `json:"name"`
	// BatchS is the time from the first start to the last result;
	// CPUS the process' CPU time (getrusage) over it, the worker's and the
	// client's; CPUPerBoundaryUS that per phase boundary.
	BatchS           Stat   `json:"batch_s"`
	CPUS             Stat   `json:"cpu_s"`
	CPUPerBoundaryUS Stat   `json:"cpu_per_boundary_us"`
	Baseline         string `json:"baseline,omitempty"`
	// JobsPerS is Jobs over BatchS.
	JobsPerS Stat `json:"jobs_per_s"`
	// BatchVsBare, CPUVsBare, BatchVsBaseline and CPUVsBaseline are the
	// ratios of each round's batch to the bare job's and to the
	// Baseline's batch of the same round. Pairing by round takes out
	// what drifts over a run (a dev server slows as its database fills),
	// which ratios of medians over all rounds keep.
	BatchVsBare     Stat `json:"batch_vs_bare,omitzero"`
	CPUVsBare       Stat `json:"cpu_vs_bare,omitzero"`
	BatchVsBaseline Stat `json:"batch_vs_baseline,omitzero"`
	CPUVsBaseline   Stat `json:"cpu_vs_baseline,omitzero"`
	// With LoadOptions.PGDSN, per job of the batch: rows the Temporal
	// databases wrote (inserted, updated, deleted), their commits and the
	// WAL bytes of the server, over the batch and the pgSettle after it.
	RowsPerJob     Stat `json:"rows_per_job,omitzero"`
	CommitsPerJob  Stat `json:"commits_per_job,omitzero"`
	WALBytesPerJob Stat `json:"wal_bytes_per_job,omitzero"`
}

// LoadResult is a load run.
type LoadResult struct {
	Jobs     int                 `json:"jobs"`
	Phases   int                 `json:"phases"`
	Rounds   int                 `json:"rounds"`
	Variants []LoadVariantResult `json:"variants"`
	Took     time.Duration       `json:"took_ns"`
	Settings string              `json:"settings,omitempty"`
	// PG says the database figures were measured.
	PG        bool             `json:"pg,omitempty"`
	GateBurst *GateBurstResult `json:"gate_burst,omitempty"`
}

// Variant returns the named variant's result.
func (r *LoadResult) Variant(name string) (LoadVariantResult, bool) {
	i := slices.IndexFunc(r.Variants, func(v LoadVariantResult) bool { return v.Name == name })
	if i < 0 {
		return LoadVariantResult{}, false
	}
	return r.Variants[i], true
}

// RunLoad starts Jobs trivial jobs at once per variant, on a worker of the
// variant's own in this process, over Rounds interleaved rounds (each
// batch after one warm-up job), and measures the batch's wall time and
// the process' CPU time.
func RunLoad(ctx context.Context, c client.Client, opts LoadOptions) (*LoadResult, error) {
	o := opts
	if o.Jobs == 0 {
		o.Jobs = 200
	}
	if o.Phases == 0 {
		o.Phases = 10
	}
	if o.Rounds == 0 {
		o.Rounds = 3
	}
	if len(o.Variants) == 0 {
		o.Variants = LoadVariants()
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Jobs < 1 || o.Phases < 1 || o.Rounds < 1 {
		return nil, fmt.Errorf("bench: jobs, phases and rounds must be at least 1 (got %d, %d, %d)", o.Jobs, o.Phases, o.Rounds)
	}
	var chosen []variant
	for _, name := range o.Variants {
		i := slices.IndexFunc(variants(Options{HangBudget: time.Second}), func(v variant) bool { return v.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("bench: unknown variant %q: use one of %v", name, Variants())
		}
		chosen = append(chosen, variants(Options{HangBudget: time.Second})[i])
	}
	start := time.Now()
	prefix := fmt.Sprintf("load-%d", start.UnixNano())
	type samples struct{ wall, cpu, rows, commits, wal []float64 }
	got := map[string]*samples{}
	policy := overseer.DefaultLearnedPolicy()
	in := JobInput{Phases: o.Phases}
	for round := 0; round < o.Rounds; round++ {
		for k := range chosen {
			v := chosen[(k+round)%len(chosen)]
			queue := fmt.Sprintf("%s-r%d-%s", prefix, round, slug(v.Name))
			w, err := newWorker(ctx, c, queue, v)
			if err != nil {
				return nil, fmt.Errorf("bench: worker for %s: %w", v.Name, err)
			}
			j := job{c: c, queue: queue, workflow: v.workflow, policy: policy, idPrefix: queue}
			if _, _, err := j.run(ctx, "warm-up", in); err != nil {
				w.Stop()
				return nil, fmt.Errorf("bench: %s: %w", v.Name, err)
			}
			// Every batch starts from a collected heap, so that one does
			// not pay for the garbage of the batches before it.
			runtime.GC()
			stopProfile, err := startProfile(o.ProfileDir, fmt.Sprintf("%s-r%d.pprof", slug(v.Name), round))
			if err != nil {
				w.Stop()
				return nil, err
			}
			var pg0, pg1 PGStats
			if o.PGDSN != "" {
				if pg0, err = ReadPGStats(ctx, o.PGDSN); err != nil {
					stopProfile()
					w.Stop()
					return nil, err
				}
			}
			wall, cpu, err := j.batch(ctx, o.Jobs, in)
			stopProfile()
			w.Stop()
			if err != nil {
				return nil, fmt.Errorf("bench: %s: %w", v.Name, err)
			}
			s := got[v.Name]
			if s == nil {
				s = &samples{}
				got[v.Name] = s
			}
			if o.PGDSN != "" {
				time.Sleep(pgSettle)
				if pg1, err = ReadPGStats(ctx, o.PGDSN); err != nil {
					return nil, err
				}
				d, n := pg1.sub(pg0), float64(o.Jobs)
				s.rows = append(s.rows, float64(d.Rows())/n)
				s.commits = append(s.commits, float64(d.Commits)/n)
				s.wal = append(s.wal, float64(d.WALBytes)/n)
				fmt.Fprintf(o.Progress, "load round %d/%d  %-26s database per job: %.1f rows, %.1f commits, %.0f WAL bytes\n",
					round+1, o.Rounds, v.Name, float64(d.Rows())/n, float64(d.Commits)/n, float64(d.WALBytes)/n)
			}
			s.wall = append(s.wall, wall.Seconds())
			s.cpu = append(s.cpu, cpu.Seconds())
			fmt.Fprintf(o.Progress, "load round %d/%d  %-26s %d jobs in %6.2f s  CPU %6.2f s  %5.0f µs/boundary\n",
				round+1, o.Rounds, v.Name, o.Jobs, wall.Seconds(), cpu.Seconds(), cpu.Seconds()*1e6/float64(o.Jobs*o.Phases))
		}
	}
	res := &LoadResult{Jobs: o.Jobs, Phases: o.Phases, Rounds: o.Rounds, Settings: o.Settings, PG: o.PGDSN != ""}
	for _, v := range chosen {
		s := got[v.Name]
		per, rate := make([]float64, len(s.cpu)), make([]float64, len(s.wall))
		for i, x := range s.cpu {
			per[i] = x * 1e6 / float64(o.Jobs*o.Phases)
		}
		for i, x := range s.wall {
			rate[i] = float64(o.Jobs) / x
		}
		lv := LoadVariantResult{Name: v.Name, BatchS: statOf(s.wall), CPUS: statOf(s.cpu), CPUPerBoundaryUS: statOf(per),
			Baseline: v.baselineName(), JobsPerS: statOf(rate), RowsPerJob: statOf(s.rows), CommitsPerJob: statOf(s.commits), WALBytesPerJob: statOf(s.wal)}
		if bare := got[VariantBare]; bare != nil && v.Name != VariantBare {
			lv.BatchVsBare, lv.CPUVsBare = pairedStat(s.wall, bare.wall), pairedStat(s.cpu, bare.cpu)
		}
		if base := got[lv.Baseline]; base != nil {
			lv.BatchVsBaseline, lv.CPUVsBaseline = pairedStat(s.wall, base.wall), pairedStat(s.cpu, base.cpu)
		}
		res.Variants = append(res.Variants, lv)
	}
	if o.GateBurst > 0 {
		g, err := RunGateBurst(ctx, c, GateBurstOptions{Jobs: o.GateBurst, Progress: o.Progress})
		if err != nil {
			return nil, err
		}
		res.GateBurst = g
	}
	res.Took = time.Since(start)
	return res, nil
}

// pairedStat is the spread of xs[i]/base[i], round by round.
func pairedStat(xs, base []float64) Stat {
	ratios := make([]float64, 0, len(xs))
	for i := range min(len(xs), len(base)) {
		ratios = append(ratios, div(xs[i], base[i]))
	}
	return statOf(ratios)
}

func startProfile(dir, name string) (func(), error) {
	if dir == "" {
		return func() {}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// pairedCell prints a paired ratio as median [min–max], or "–" without one.
func pairedCell(s Stat) string {
	if s.N == 0 {
		return "–"
	}
	if s.N == 1 {
		return fmt.Sprintf("%.3f", s.Median)
	}
	return fmt.Sprintf("%.3f [%.2f–%.2f]", s.Median, s.Min, s.Max)
}

// WriteLoadJSON writes a load run as indented JSON.
func WriteLoadJSON(w io.Writer, r *LoadResult) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

// WriteLoadTable writes a load run as a table.
func WriteLoadTable(w io.Writer, r *LoadResult) error {
	fmt.Fprintf(w, "overseer bench --load: %d jobs at once, %d trivial phases each, %d rounds interleaved; took %v\n\n",
		r.Jobs, r.Phases, r.Rounds, r.Took.Round(time.Second))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "variant\tbatch s\tjobs/s\t÷ bare\t÷ hand\tworker CPU s\t÷ bare\t÷ hand\tCPU µs/boundary\t"
	if r.PG {
		head += "DB rows/job\t÷ bare\tcommits/job\tWAL KiB/job\t÷ bare\t"
	}
	fmt.Fprintln(tw, head)
	bare, hasBare := r.Variant(VariantBare)
	for _, v := range r.Variants {
		fmt.Fprintf(tw, "%s\t%.2f [%.2f–%.2f]\t%.1f\t%s\t%s\t%.2f [%.2f–%.2f]\t%s\t%s\t%.0f\t", v.Name,
			v.BatchS.Median, v.BatchS.Min, v.BatchS.Max, v.JobsPerS.Median, pairedCell(v.BatchVsBare), pairedCell(v.BatchVsBaseline),
			v.CPUS.Median, v.CPUS.Min, v.CPUS.Max, pairedCell(v.CPUVsBare), pairedCell(v.CPUVsBaseline),
			v.CPUPerBoundaryUS.Median)
		if r.PG {
			ratio := func(of func(LoadVariantResult) float64) string {
				if !hasBare {
					return "–"
				}
				return fmt.Sprintf("%.3f", div(of(v), of(bare)))
			}
			rows := func(x LoadVariantResult) float64 { return x.RowsPerJob.Median }
			wal := func(x LoadVariantResult) float64 { return x.WALBytesPerJob.Median }
			fmt.Fprintf(tw, "%.1f\t%s\t%.1f\t%.1f\t%s\t", v.RowsPerJob.Median, ratio(rows), v.CommitsPerJob.Median,
				v.WALBytesPerJob.Median/1024, ratio(wal))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if g := r.GateBurst; g != nil {
		fmt.Fprintf(w, "\ngate burst: %d jobs in manage mode paused at once, then all resumed (overseer.resume update, 64 in flight; the burst took %.2f s):\n", g.Jobs, g.BurstS)
		fmt.Fprintf(w, "  phase done → gate open  p50 %6.1f ms  p99 %6.1f ms  max %6.1f ms\n", g.OpenMS.P50, g.OpenMS.P99, g.OpenMS.Max)
		fmt.Fprintf(w, "  resume sent → answered  p50 %6.1f ms  p99 %6.1f ms  max %6.1f ms\n", g.ResumeMS.P50, g.ResumeMS.P99, g.ResumeMS.Max)
		fmt.Fprintf(w, "  resume sent → next phase scheduled  p50 %6.1f ms  p99 %6.1f ms  max %6.1f ms\n", g.NextPhaseMS.P50, g.NextPhaseMS.P99, g.NextPhaseMS.Max)
	}
	if r.Settings != "" {
		fmt.Fprintf(w, "\nserver: %s\n", r.Settings)
	}
	if r.PG {
		fmt.Fprintf(w, "database: per job of the batch, rows inserted+updated+deleted in the temporal* databases (pg_stat_database), commits, and the server's WAL bytes,\n"+
			"over the batch and %v after it (background writes of the server included); their ÷ bare: the ratio of the medians\n", pgSettle)
	}
	_, err := fmt.Fprintln(w, "\nmedian [min–max] over the rounds. ÷ bare, ÷ hand: the median [min–max] of each round's ratio to the bare job and to the hand-written\n"+
		"job that asks the judge the same way, run in the same round (the order turns every round, so a server that slows over the run cancels out).\n"+
		"worker CPU: this process (the variant's worker and the client starting and awaiting the jobs), by getrusage; not the server.")
	return err
}
