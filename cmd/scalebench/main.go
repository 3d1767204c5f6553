// Command scalebench measures the overseer's views at scale on a real
// cluster (make cluster): it fills the cluster with closed and paused
// reference jobs, times the dashboard's list and Waiting pages with and
// without a concurrent load, and times the physical floor they stand on
// (bare ListWorkflowExecutions pages, and history reads with 16 in
// flight). docs/performance.md ("Measured at scale") gives the commands.
//
//	scalebench populate -address A -closed 10000 -open 1000
//	scalebench pages    -url http://127.0.0.1:8090 -n 40 -conc 16
//	scalebench floor    -address A
//	scalebench queue    < list-paused.json   # checks the queue: every gate, oldest first
//	scalebench walk     -url http://127.0.0.1:8090   # pages through /waiting: every gate, oldest first
//	scalebench hwm      PID                  # peak RSS (VmHWM) of a running process
//	scalebench proxy    -listen A -target F -name N   # counts one process's visibility calls a second
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// ErrUsage marks a bad command line.
var ErrUsage = errors.New("scalebench: usage")

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout, os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer, in io.Reader) error {
	if len(args) == 0 {
		return fmt.Errorf("%w: give a subcommand: populate, pages, floor, queue, walk, proxy or hwm", ErrUsage)
	}
	switch args[0] {
	case "populate":
		return populate(ctx, args[1:], out)
	case "pages":
		return pages(ctx, args[1:], out)
	case "floor":
		return floor(ctx, args[1:], out)
	case "queue":
		return queue(in, out)
	case "walk":
		return walk(ctx, args[1:], out)
	case "proxy":
		return proxy(ctx, args[1:], out)
	case "hwm":
		if len(args) != 2 {
			return fmt.Errorf("%w: hwm takes one process id", ErrUsage)
		}
		kb, err := hwm(args[1])
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "VmHWM %d kB (%.1f MB)\n", kb, float64(kb)/1024)
		return nil
	}
	return fmt.Errorf("%w: unknown subcommand %q: use populate, pages, floor, queue, walk, proxy or hwm", ErrUsage, args[0])
}

func dial(ctx context.Context, address string) (client.Client, error) {
	return worker.Dial(ctx, worker.Config{Address: address})
}

// count is CountWorkflowExecutions of q.
func count(ctx context.Context, c client.Client, q string) (int64, error) {
	r, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: q})
	if err != nil {
		return 0, fmt.Errorf("scalebench: count %q: %w", q, err)
	}
	return r.GetCount(), nil
}

// populate fills the cluster with a day of jobs: closed reference jobs
// (OnTrack, of the phases -closed-phases; -loops of them reference agent
// loops that finish in four turns; every -budgeted-every'th with a budget
// it stays inside, so it closes with its spend shown against a bound) and
// open jobs, paused at a gate in manage mode, spread evenly among the
// closed ones so the gates' ages spread: -verdict-gates of them Looping
// jobs the judge pauses (ids <prefix>-gate-N, what resume --query
// resumes), the rest jobs that reach a budget of one phase run (ids
// <prefix>-budget-N, a budget gate).
//
// It starts the jobs in batches and keeps at most -window of them started
// and not yet settled (closed, or paused at a gate): a server given its
// whole backlog at once spends its time on the backlog. It says its rate
// every 10 seconds. With -state it records the batches it has started and
// a second run with the same flags takes up where the first stopped (a job
// already started counts as started).
func populate(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("populate", flag.ContinueOnError)
	address := fs.String("address", "127.0.0.1:28233", "Temporal frontend")
	queue := fs.String("task-queue", worker.DefaultTaskQueue, "task queue of the jobs")
	closed := fs.Int("closed", 10000, "jobs that complete, agent loops included")
	open := fs.Int("open", 1000, "jobs that pause at a gate")
	verdictGates := fs.Int("verdict-gates", -1, "of the open jobs, how many the judge pauses (Looping); the rest reach a budget (default: all of them)")
	loops := fs.Int("loops", 0, "of the closed jobs, how many are reference agent loops")
	budgetedEvery := fs.Int("budgeted-every", 0, "every this many closed jobs carries a budget it stays inside (0: none)")
	conc := fs.Int("conc", 32, "starts in flight")
	window := fs.Int("window", 2000, "jobs started and not yet settled, at most")
	batch := fs.Int("batch", 500, "jobs started between two looks at the window and the state file")
	prefix := fs.String("prefix", "scale", "workflow id prefix")
	state := fs.String("state", "", "file that records the jobs started, to take up an interrupted run (default: none)")
	wait := fs.Duration("wait", 2*time.Hour, "how long to wait for the jobs to settle once all are started")
	closedPhases := fs.String("closed-phases", "", "phases of the closed jobs, comma-separated (default: all of activities.DefaultPhases)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if *verdictGates < 0 || *verdictGates > *open {
		*verdictGates = *open
	}
	if *loops > *closed {
		return fmt.Errorf("%w: -loops %d is more than -closed %d: give at most as many agent loops as closed jobs", ErrUsage, *loops, *closed)
	}
	c, err := dial(ctx, *address)
	if err != nil {
		return err
	}
	defer c.Close()
	plan := populationPlan{closed: *closed, open: *open, verdictGates: *verdictGates, loops: *loops, budgetedEvery: *budgetedEvery, prefix: *prefix}
	if *closedPhases != "" {
		plan.closedPhases = strings.Split(*closedPhases, ",")
	}
	total := plan.total()
	next := 0
	if *state != "" {
		if b, err := os.ReadFile(*state); err == nil {
			if next, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil || next < 0 || next > total {
				return fmt.Errorf("scalebench: populate: state file %s holds %q, not a job number from 0 to %d: remove it to start again", *state, b, total)
			}
			fmt.Fprintf(out, "taking up from job %d of %d (%s)\n", next, total, *state)
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("scalebench: populate: %w", err)
		}
	}
	mine := fmt.Sprintf("TaskQueue = '%s' AND WorkflowId STARTS_WITH '%s-'", *queue, *prefix)
	settled := func() (nc, np int64, err error) {
		// Closed in any way: a reference agent loop whose call was lost
		// under load fails (its calls are not retried), and counts here.
		if nc, err = count(ctx, c, mine+" AND ExecutionStatus != 'Running'"); err != nil {
			return 0, 0, err
		}
		np, err = count(ctx, c, mine+" AND ExecutionStatus = 'Running' AND OverseerPaused = true")
		return nc, np, err
	}
	t0 := time.Now()
	nc0, np0, err := settled()
	if err != nil {
		return err
	}
	progress := rateLine{out: out, t0: t0, settled0: nc0 + np0}
	started := next
	for next < total {
		nc, np, err := settled()
		if err != nil {
			return err
		}
		progress.say(started, nc, np, total, false)
		if int64(started)-(nc+np) >= int64(*window) {
			time.Sleep(2 * time.Second) // the window is full: look again in 2 s
			continue
		}
		end := min(total, next+*batch)
		if err := startBatch(ctx, c, *queue, plan, next, end, *conc); err != nil {
			return err
		}
		started, next = end, end
		if *state != "" {
			if err := os.WriteFile(*state, []byte(strconv.Itoa(next)+"\n"), 0o644); err != nil {
				return fmt.Errorf("scalebench: populate: %w", err)
			}
		}
	}
	deadline := time.Now().Add(*wait)
	for {
		nc, np, err := settled()
		if err != nil {
			return err
		}
		progress.say(started, nc, np, total, true)
		if nc+np >= int64(total) {
			failed, err := count(ctx, c, mine+" AND ExecutionStatus = 'Failed'")
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "%d closed (%d of them failed: a phase or call lost under load that the job did not run again), %d paused\n", nc, failed, np)
		}
		if nc >= int64(*closed) && np >= int64(*open) {
			return nil
		}
		if nc+np >= int64(total) {
			// Every job settled, but some meant to close paused at a gate:
			// under load the server hands a phase's task to a poll that has
			// already timed out, the phase fails at its heartbeat timeout,
			// and a job that fails a phase three times pauses. They wait for
			// a person, not for the benchmark.
			fmt.Fprintf(out, "every job settled: %d closed and %d paused; %d meant to close paused instead (phases lost under load), "+
				"which resume --query can resume\n", nc, np, int64(*closed)-nc)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("scalebench: populate: after %s, %d closed and %d paused, short of %d and %d", *wait, nc, np, *closed, *open)
		}
		time.Sleep(2 * time.Second) // the loop ends on the counts or the deadline
	}
}

// populationPlan says what job number i of a populate run is.
type populationPlan struct {
	closed, open, verdictGates, loops, budgetedEvery int
	closedPhases                                     []string
	prefix                                           string
}

func (p populationPlan) total() int { return p.closed + p.open }

// job is job i's workflow type, start options and input.
func (p populationPlan) job(i int, queue string) (string, client.StartWorkflowOptions, any) {
	const objective = "Add CSV export to the reports page"
	o := client.StartWorkflowOptions{ID: fmt.Sprintf("%s-%06d", p.prefix, i), TaskQueue: queue}
	every := p.total() + 1
	if p.open > 0 {
		every = p.total() / p.open
	}
	if p.open > 0 && i%every == 0 && i/every < p.open {
		// The verdict gates spread evenly among the gates too.
		if g, step := i/every, p.open/max(1, p.verdictGates); p.verdictGates > 0 && g%step == 0 && g/step < p.verdictGates {
			o.ID = fmt.Sprintf("%s-gate-%06d", p.prefix, i)
			return workflows.JobWorkflowName, o, workflows.JobInput{Objective: objective, Scenario: activities.Looping}
		}
		o.ID = fmt.Sprintf("%s-budget-%06d", p.prefix, i)
		o.Memo = map[string]any{overseer.BudgetMemoKey: `{"phase_runs": 1}`}
		return workflows.JobWorkflowName, o, workflows.JobInput{Objective: objective, Scenario: activities.OnTrack, Phases: []string{"spec", "plan"}}
	}
	// The closed jobs' own number, so that loops and budgets spread evenly.
	k := i - min(p.open, i/every+1)
	if p.loops > 0 && k%max(1, p.closed/p.loops) == 0 && k/max(1, p.closed/p.loops) < p.loops {
		o.ID = fmt.Sprintf("%s-loop-%06d", p.prefix, i)
		return workflows.AgentLoopWorkflowName, o, workflows.AgentLoopInput{Objective: objective, Scenario: activities.LoopHealthy}
	}
	if p.budgetedEvery > 0 && k%p.budgetedEvery == 1 {
		o.Memo = map[string]any{overseer.BudgetMemoKey: `{"phase_runs": 20, "elapsed_ns": 3600000000000}`}
	}
	return workflows.JobWorkflowName, o, workflows.JobInput{Objective: objective, Scenario: activities.OnTrack, Phases: p.closedPhases}
}

// startBatch starts jobs from to end (end excluded), conc at a time.
func startBatch(ctx context.Context, c client.Client, queue string, plan populationPlan, from, end, conc int) error {
	work := make(chan int)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for i := range work {
				wf, o, in := plan.job(i, queue)
				if err := startJob(ctx, c, wf, o, in); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("scalebench: start job %d (%s): %w", i, o.ID, err)
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := from; i < end; i++ {
		work <- i
	}
	close(work)
	wg.Wait()
	return firstErr
}

// rateLine prints populate's progress at most every 10 seconds (and at
// the end): jobs started and settled, and the rate since the start and
// over the last interval.
type rateLine struct {
	out      io.Writer
	t0, last time.Time
	settled0 int64
	lastN    int64
}

func (r *rateLine) say(started int, nc, np int64, total int, waiting bool) {
	now := time.Now()
	n := nc + np
	if !r.last.IsZero() && now.Sub(r.last) < 10*time.Second && !(waiting && n >= int64(total)) {
		return
	}
	el := now.Sub(r.t0)
	recent := ""
	if !r.last.IsZero() {
		recent = fmt.Sprintf(", %.1f/s in the last %s", float64(n-r.lastN)/now.Sub(r.last).Seconds(), now.Sub(r.last).Round(time.Second))
	}
	rate := float64(n-r.settled0) / el.Seconds()
	eta := "–"
	if rate > 0 && n < int64(total) {
		eta = (time.Duration(float64(int64(total)-n)/rate) * time.Second).Round(time.Minute).String()
	}
	fmt.Fprintf(r.out, "%s started %d of %d, closed %d paused %d: %.1f jobs settled/s since the start%s; about %s to go\n",
		el.Round(time.Second), started, total, nc, np, rate, recent, eta)
	r.last, r.lastN = now, n
}

// startJob starts one job, three tries in all when a start gets no answer
// in time (a loaded server). A job already started counts as started: a
// retry's start may have been taken, and a populate run taken up again
// starts its last batch again.
func startJob(ctx context.Context, c client.Client, workflowType string, o client.StartWorkflowOptions, in any) error {
	for try := 1; ; try++ {
		_, err := c.ExecuteWorkflow(ctx, o, workflowType, in)
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		switch {
		case err == nil, errors.As(err, &started):
			return nil
		case try < 3 && ops.TimedOut(err):
			continue
		}
		return err
	}
}

// pages times GET of each path n times one at a time, then n times with
// conc clients at once, and prints p50, p95 and max.
func pages(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("pages", flag.ContinueOnError)
	base := fs.String("url", "http://127.0.0.1:8090", "the dashboard's base URL")
	paths := fs.String("paths", "/,/waiting", "paths, comma-separated")
	n := fs.Int("n", 40, "requests per path and mode")
	conc := fs.Int("conc", 16, "clients at once under load")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	hc := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: *conc}}
	get := func(path string) (time.Duration, int, error) {
		t := time.Now()
		b, err := fetch(ctx, hc, *base+path)
		return time.Since(t), len(b), err
	}
	for _, path := range strings.Split(*paths, ",") {
		if _, _, err := get(path); err != nil { // warm the connection
			return err
		}
		var seq []time.Duration
		size := 0
		for range *n {
			d, sz, err := get(path)
			if err != nil {
				return err
			}
			seq = append(seq, d)
			size = sz
		}
		report(out, path, "1 at a time", seq, size)
		var mu sync.Mutex
		var load []time.Duration
		var firstErr error
		minSize, maxSize := -1, 0
		work := make(chan struct{})
		var wg sync.WaitGroup
		t0 := time.Now()
		for range *conc {
			wg.Go(func() {
				for range work {
					d, sz, err := get(path)
					mu.Lock()
					if err != nil && firstErr == nil {
						firstErr = err
					}
					if err == nil {
						// A page cut short by its bound is smaller than the whole one.
						maxSize = max(sz, maxSize)
						if minSize < 0 || sz < minSize {
							minSize = sz
						}
					}
					load = append(load, d)
					mu.Unlock()
				}
			})
		}
		for range *n * *conc / 4 {
			work <- struct{}{}
		}
		close(work)
		wg.Wait()
		if firstErr != nil {
			return firstErr
		}
		report(out, path, fmt.Sprintf("%d at once", *conc), load, size)
		fmt.Fprintf(out, "    %d requests in %s: %.1f pages/s; bodies %d to %d bytes\n", len(load), time.Since(t0).Round(time.Millisecond), float64(len(load))/time.Since(t0).Seconds(), minSize, maxSize)
	}
	return nil
}

func pct(xs []time.Duration, p float64) time.Duration {
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.5) - 1
	return s[max(0, min(len(s)-1, i))]
}

func report(out io.Writer, what, mode string, xs []time.Duration, size int) {
	fmt.Fprintf(out, "%-10s %-12s n=%-4d p50 %7.1f ms  p95 %7.1f ms  max %7.1f ms  (%d bytes)\n", what, mode, len(xs),
		ms(pct(xs, 0.5)), ms(pct(xs, 0.95)), ms(pct(xs, 1)), size)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// floor times what the views cannot beat: one bare ListWorkflowExecutions
// page of 1000 with each view's query (and the 50-row list page), a full
// scan of the closed jobs page by page, and GetWorkflowExecutionHistory of
// closed jobs with 16 in flight (what a learn round reads).
func floor(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("floor", flag.ContinueOnError)
	address := fs.String("address", "127.0.0.1:28233", "Temporal frontend")
	queue := fs.String("task-queue", worker.DefaultTaskQueue, "task queue of the jobs")
	n := fs.Int("n", 20, "repetitions of each page")
	histories := fs.Int("histories", 1000, "closed histories to read")
	conc := fs.Int("conc", 16, "history reads in flight")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	c, err := dial(ctx, *address)
	if err != nil {
		return err
	}
	defer c.Close()
	paused := fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus = 'Running' AND OverseerPaused = true", *queue)
	all := fmt.Sprintf("TaskQueue = '%s'", *queue)
	closedQ := fmt.Sprintf("TaskQueue = '%s' AND ExecutionStatus = 'Completed'", *queue)
	for _, p := range []struct {
		name, q string
		size    int32
	}{{"list page (50, all jobs)", all, 50}, {"paused page (1000)", paused, 1000}, {"all-jobs page (1000)", all, 1000}} {
		var ds []time.Duration
		rows := 0
		for range *n {
			t := time.Now()
			r, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: p.q, PageSize: p.size})
			if err != nil {
				return fmt.Errorf("scalebench: list %q: %w", p.q, err)
			}
			ds = append(ds, time.Since(t))
			rows = len(r.Executions)
		}
		fmt.Fprintf(out, "%-26s rows %-5d p50 %7.1f ms  p95 %7.1f ms\n", p.name, rows, ms(pct(ds, 0.5)), ms(pct(ds, 0.95)))
		// The same page with conc calls at once: the floor of a view under load.
		var mu sync.Mutex
		var loaded []time.Duration
		var wg sync.WaitGroup
		var failed atomic.Int64
		var firstErr atomic.Value
		for range *conc {
			wg.Go(func() {
				for range max(1, *n/4) {
					t := time.Now()
					if _, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: p.q, PageSize: p.size}); err != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
						continue
					}
					mu.Lock()
					loaded = append(loaded, time.Since(t))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(loaded) == 0 {
			fmt.Fprintf(out, "%-26s %d at once: every one of %d calls failed (%v)\n", "", *conc, failed.Load(), firstErr.Load())
			continue
		}
		fmt.Fprintf(out, "%-26s %d at once: p50 %7.1f ms  p95 %7.1f ms  (%d calls, %d failed)\n", "", *conc, ms(pct(loaded, 0.5)), ms(pct(loaded, 0.95)), len(loaded), failed.Load())
	}
	// Every closed job, page by page: the listing a learn round starts with.
	t := time.Now()
	var ids []string
	var token []byte
	for {
		r, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: closedQ, PageSize: 1000, NextPageToken: token})
		if err != nil {
			return fmt.Errorf("scalebench: list %q: %w", closedQ, err)
		}
		for _, e := range r.Executions {
			if e.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
				ids = append(ids, e.GetExecution().GetWorkflowId()+"\x00"+e.GetExecution().GetRunId())
			}
		}
		if token = r.NextPageToken; len(token) == 0 {
			break
		}
	}
	fmt.Fprintf(out, "%-26s rows %-5d in %s\n", "closed jobs, all pages", len(ids), time.Since(t).Round(time.Millisecond))
	ids = ids[:min(len(ids), *histories)]
	t = time.Now()
	work := make(chan string)
	var wg sync.WaitGroup
	var events, fails atomic.Int64
	for range *conc {
		wg.Go(func() {
			for id := range work {
				wid, rid, _ := strings.Cut(id, "\x00")
				it := c.GetWorkflowHistory(ctx, wid, rid, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
				for it.HasNext() {
					if _, err := it.Next(); err != nil {
						fails.Add(1)
						break
					}
					events.Add(1)
				}
			}
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	el := time.Since(t)
	fmt.Fprintf(out, "%-26s %d histories (%d events, %d failed) in %s with %d in flight: %.1f histories/s\n", "history reads", len(ids), events.Load(), fails.Load(),
		el.Round(time.Millisecond), *conc, float64(len(ids))/el.Seconds())
	return nil
}

// queue reads `overseer list --paused --json` and checks it holds every
// gate once, oldest first.
func queue(in io.Reader, out io.Writer) error {
	var gates []struct {
		JobID      string    `json:"job_id"`
		GateID     string    `json:"gate_id"`
		PausedAt   time.Time `json:"paused_at"`
		Unreadable string    `json:"unreadable"`
	}
	if err := json.NewDecoder(bufio.NewReader(in)).Decode(&gates); err != nil {
		return fmt.Errorf("scalebench: queue: read overseer list --paused --json: %w", err)
	}
	var check queueCheck
	unread := 0
	for _, g := range gates {
		if g.Unreadable != "" {
			unread++
		}
		check.add(g.JobID, g.GateID, g.PausedAt)
	}
	fmt.Fprintf(out, "queue: %d gates, %d jobs, %d unreadable, %d duplicates, %d out of order (oldest first)\n", len(gates), len(check.seen), unread, check.dup, check.disorder)
	if !check.whole() {
		return errors.New("scalebench: queue: not every gate once, oldest first")
	}
	return nil
}

var (
	waitingRowRE   = regexp.MustCompile(`<tr data-job="([^"]+)" data-gate="([^"]*)">(?s:.*?)<td title="paused at ([^"]+)">`)
	waitingTotalRE = regexp.MustCompile(`data-pager data-total="(\d+)"`)
	waitingNextRE  = regexp.MustCompile(`<a href="([^"]+)" rel="next">`)
)

// walk pages through the dashboard's Waiting page from its first page,
// following each page's link to the next, and checks that the pages hold
// every gate the page counts, once each, oldest first (to the second the
// page shows).
func walk(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("walk", flag.ContinueOnError)
	base := fs.String("url", "http://127.0.0.1:8090", "the dashboard's base URL")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	hc := &http.Client{Timeout: time.Minute}
	start := time.Now()
	var check queueCheck
	pages, gates, total := 0, 0, -1
	for path := "/waiting"; path != ""; pages++ {
		b, err := fetch(ctx, hc, *base+html.UnescapeString(path))
		if err != nil {
			return err
		}
		body := string(b)
		if m := waitingTotalRE.FindStringSubmatch(body); m != nil && total < 0 {
			total, _ = strconv.Atoi(m[1])
		}
		for _, m := range waitingRowRE.FindAllStringSubmatch(body, -1) {
			at, err := time.Parse("2006-01-02 15:04:05 UTC", m[3])
			if err != nil {
				return fmt.Errorf("scalebench: walk: %s/%s: paused at %q: %w", m[1], m[2], m[3], err)
			}
			gates++
			check.add(m[1], m[2], at)
		}
		path = ""
		if m := waitingNextRE.FindStringSubmatch(body); m != nil {
			path = m[1]
		}
	}
	fmt.Fprintf(out, "waiting walk: %d pages in %s, %d gates of the %d the first page counts, %d duplicates, %d out of order (oldest first)\n",
		pages, time.Since(start).Round(time.Millisecond), gates, total, check.dup, check.disorder)
	if !check.whole() || gates != total {
		return errors.New("scalebench: walk: the Waiting pages do not hold every gate once, oldest first")
	}
	return nil
}

// fetch GETs u and returns its body; anything but 200 is an error.
func fetch(ctx context.Context, hc *http.Client, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scalebench: GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scalebench: GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scalebench: GET %s: %s", u, resp.Status)
	}
	return b, nil
}

// queueCheck counts, over gates seen in order, the duplicates and the
// gates that opened before the one seen before them.
type queueCheck struct {
	seen          map[string]bool
	last          time.Time
	dup, disorder int
}

func (q *queueCheck) add(jobID, gateID string, pausedAt time.Time) {
	if q.seen == nil {
		q.seen = map[string]bool{}
	}
	k := jobID + "/" + gateID
	if q.seen[k] {
		q.dup++
	}
	q.seen[k] = true
	if pausedAt.Before(q.last) {
		q.disorder++
	}
	q.last = pausedAt
}

// whole says whether every gate was seen once, oldest first.
func (q *queueCheck) whole() bool { return q.dup == 0 && q.disorder == 0 }

// hwm is VmHWM of process pid in kB.
func hwm(pid string) (int64, error) {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, fmt.Errorf("scalebench: hwm: %w", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int64
			_, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb)
			return kb, err
		}
	}
	return 0, errors.New("scalebench: hwm: no VmHWM line")
}
