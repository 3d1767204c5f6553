package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/corohq/temporal-overseer/overseer"
)

// PGStats are PostgreSQL's cumulative write counters: the rows the
// Temporal databases inserted, updated and deleted (pg_stat_database,
// every database whose name starts with "temporal") and the WAL the whole
// server wrote. They are read with psql, which must be on PATH.
type PGStats struct {
	Inserted int64 `json:"inserted"`
	Updated  int64 `json:"updated"`
	Deleted  int64 `json:"deleted"`
	Commits  int64 `json:"commits"`
	// WALBytes is pg_current_wal_lsn() as a byte offset.
	WALBytes int64 `json:"wal_bytes"`
}

// Rows are the rows written: inserted, updated and deleted.
func (s PGStats) Rows() int64 { return s.Inserted + s.Updated + s.Deleted }

func (s PGStats) sub(o PGStats) PGStats {
	return PGStats{Inserted: s.Inserted - o.Inserted, Updated: s.Updated - o.Updated, Deleted: s.Deleted - o.Deleted,
		Commits: s.Commits - o.Commits, WALBytes: s.WALBytes - o.WALBytes}
}

const pgStatsQuery = `select coalesce(sum(tup_inserted),0), coalesce(sum(tup_updated),0), coalesce(sum(tup_deleted),0), coalesce(sum(xact_commit),0),
 pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint from pg_stat_database where datname like 'temporal%'`

// ReadPGStats reads the counters of the PostgreSQL server dsn names
// (a libpq connection string or URL, e.g.
// postgres://temporal:temporal@127.0.0.1:15432/temporal).
func ReadPGStats(ctx context.Context, dsn string) (PGStats, error) {
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, "psql", "-X", "-A", "-t", "-F", " ", "-d", dsn, "-c", pgStatsQuery)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return PGStats{}, fmt.Errorf("bench: psql: %w: %s", err, strings.TrimSpace(errb.String()))
	}
	f := strings.Fields(out.String())
	if len(f) != 5 {
		return PGStats{}, fmt.Errorf("bench: psql answered %q", out.String())
	}
	var v [5]int64
	for i, s := range f {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return PGStats{}, fmt.Errorf("bench: psql answered %q: %w", out.String(), err)
		}
		v[i] = n
	}
	return PGStats{Inserted: v[0], Updated: v[1], Deleted: v[2], Commits: v[3], WALBytes: v[4]}, nil
}

// pgSettle is how long the bench waits after a batch before it reads
// PostgreSQL's counters: a backend publishes its statistics at most once a
// second.
const pgSettle = 2 * time.Second

// GateBurstOptions configure [RunGateBurst].
type GateBurstOptions struct {
	// Jobs paused at once and resumed in one burst. If not set, 500.
	Jobs int
	// Parallel is how many resumes are in flight at once. If not set, 64.
	Parallel int
	// Progress receives a line per step. If nil, nothing.
	Progress io.Writer
}

// GateBurstResult is what a gate burst measured: every job paused at its
// first boundary, then all resumed at once (the overseer.resume update).
type GateBurstResult struct {
	Jobs int `json:"jobs"`
	// OpenMS is from a job's first phase's completion to its gate's opening
	// (Status.PausedSince), by the server's and the worker's clocks (one
	// machine).
	OpenMS Percentiles `json:"open_ms"`
	// ResumeMS is the update's round trip, sent to completed.
	ResumeMS Percentiles `json:"resume_ms"`
	// NextPhaseMS is from sending the resume to the next phase's
	// scheduling, as the server recorded it.
	NextPhaseMS Percentiles `json:"next_phase_ms"`
	// BurstS is from the first resume sent to the last completed.
	BurstS float64 `json:"burst_s"`
}

// Percentiles of a set of samples.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
	N   int     `json:"n"`
}

func percentiles(xs []float64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	at := func(q float64) float64 { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return Percentiles{P50: at(0.50), P99: at(0.99), Max: s[len(s)-1], N: len(s)}
}

// RunGateBurst runs Jobs two-phase jobs in manage mode with a policy that
// pauses at every boundary (the learned judge in workflow code), waits
// until every one is paused at its first gate, resumes them all at once,
// and reads from each job's history when its next phase was scheduled. The
// second gates are resumed without measuring.
func RunGateBurst(ctx context.Context, c client.Client, opts GateBurstOptions) (*GateBurstResult, error) {
	o := opts
	if o.Jobs == 0 {
		o.Jobs = 500
	}
	if o.Parallel == 0 {
		o.Parallel = 64
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	policy := overseer.DefaultLearnedPolicy()
	policy.PauseAtOrBelow = 1 // every boundary pauses
	queue := fmt.Sprintf("gates-%d", time.Now().UnixNano())
	w, err := newWorker(ctx, c, queue, variant{Name: "manage/gate-burst", plugin: &overseer.Options{Mode: overseer.ModeManage, Policy: policy}})
	if err != nil {
		return nil, fmt.Errorf("bench: gate burst: %w", err)
	}
	defer w.Stop()
	j := job{c: c, queue: queue, idPrefix: queue}
	in := JobInput{Phases: 2}
	runs := make([]client.WorkflowRun, o.Jobs)
	for i := range runs {
		if runs[i], err = j.start(ctx, "gate", in); err != nil {
			return nil, fmt.Errorf("bench: gate burst: %w", err)
		}
	}
	fmt.Fprintf(o.Progress, "gate burst: %d jobs started; waiting for every one to pause\n", o.Jobs)
	res := &GateBurstResult{Jobs: o.Jobs}
	var open []float64
	for _, run := range runs {
		st, err := awaitPaused(ctx, c, run.GetID(), 1)
		if err != nil {
			return nil, err
		}
		h, err := historyOf(ctx, c, run.GetID())
		if err != nil {
			return nil, err
		}
		if st.PausedSince != nil {
			open = append(open, ms(st.PausedSince.Sub(h.started.Add(h.phasesDone))))
		}
	}
	res.OpenMS = percentiles(open)
	fmt.Fprintf(o.Progress, "gate burst: %d jobs paused; resuming them all at once\n", o.Jobs)
	sent, rtt, err := resumeAll(ctx, c, runs, o.Parallel)
	if err != nil {
		return nil, err
	}
	first, last := sent[0], time.Time{}
	for i := range sent {
		first = minTime(first, sent[i])
		last = maxTime(last, sent[i].Add(rtt[i]))
	}
	res.BurstS = last.Sub(first).Seconds()
	var rtts, next []float64
	for i, run := range runs {
		rtts = append(rtts, ms(rtt[i]))
		at, err := phaseScheduled(ctx, c, run.GetID(), 2)
		if err != nil {
			return nil, err
		}
		next = append(next, ms(at.Sub(sent[i])))
	}
	res.ResumeMS, res.NextPhaseMS = percentiles(rtts), percentiles(next)
	// The second gates: resume and let the jobs end.
	for _, run := range runs {
		if _, err := awaitPaused(ctx, c, run.GetID(), 2); err != nil {
			return nil, err
		}
	}
	if _, _, err := resumeAll(ctx, c, runs, o.Parallel); err != nil {
		return nil, err
	}
	for _, run := range runs {
		if err := wait(ctx, run, in.Phases); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// awaitPaused polls the job's status until it is paused at its pauses-th
// gate.
func awaitPaused(ctx context.Context, c client.Client, id string, pauses int) (overseer.Status, error) {
	deadline := time.Now().Add(jobTimeout)
	for {
		var st overseer.Status
		v, err := c.QueryWorkflow(ctx, id, "", overseer.StatusQueryName)
		if err == nil {
			err = v.Get(&st)
		}
		if err == nil && st.Paused && st.Counters.Pauses >= pauses {
			return st, nil
		}
		if time.Now().After(deadline) {
			return st, fmt.Errorf("bench: job %s did not pause at gate %d in %v (last error: %v)", id, pauses, jobTimeout, err)
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return st, ctx.Err()
		}
	}
}

// resumeAll resumes every run's open gate, parallel at a time, and returns
// when each resume was sent and how long it took to complete.
func resumeAll(ctx context.Context, c client.Client, runs []client.WorkflowRun, parallel int) ([]time.Time, []time.Duration, error) {
	sent, took := make([]time.Time, len(runs)), make([]time.Duration, len(runs))
	errs := make([]error, len(runs))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, run := range runs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			sent[i] = time.Now()
			h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: overseer.ResumeName,
				Args: []any{overseer.ResumeRequest{By: "bench"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
			if err == nil {
				var g overseer.Gate
				err = h.Get(ctx, &g)
			}
			took[i], errs[i] = time.Since(sent[i]), err
		}()
	}
	wg.Wait()
	return sent, took, errors.Join(errs...)
}

// phaseScheduled is when the job's n-th phase activity was scheduled.
func phaseScheduled(ctx context.Context, c client.Client, id string, n int) (time.Time, error) {
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	seen := 0
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return time.Time{}, err
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == PhaseActivityName {
			if seen++; seen == n {
				return e.GetEventTime().AsTime(), nil
			}
		}
	}
	return time.Time{}, fmt.Errorf("bench: job %s has fewer than %d phases", id, n)
}
