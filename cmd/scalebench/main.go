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
		return fmt.Errorf("%w: give a subcommand: populate, pages, floor, queue, walk or hwm", ErrUsage)
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
	return fmt.Errorf("%w: unknown subcommand %q: use populate, pages, floor, queue, walk or hwm", ErrUsage, args[0])
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

// populate starts closed (OnTrack, they complete) and open (Looping, they
// pause at a gate in manage mode) reference jobs, conc at a time, every
// open job spread evenly among the closed ones so the gates' ages spread,
// then waits until the cluster counts them closed and paused.
func populate(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("populate", flag.ContinueOnError)
	address := fs.String("address", "127.0.0.1:28233", "Temporal frontend")
	queue := fs.String("task-queue", worker.DefaultTaskQueue, "task queue of the jobs")
	closed := fs.Int("closed", 10000, "jobs that complete; it waits until the queue counts at least this many closed (earlier jobs count too)")
	open := fs.Int("open", 1000, "jobs that pause at a gate; it waits until the queue counts at least this many paused")
	conc := fs.Int("conc", 32, "starts in flight")
	prefix := fs.String("prefix", "scale", "workflow id prefix")
	wait := fs.Duration("wait", 2*time.Hour, "how long to wait for the jobs to close and pause")
	closedPhases := fs.String("closed-phases", "", "phases of the closed jobs, comma-separated (default: all of activities.DefaultPhases)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	c, err := dial(ctx, *address)
	if err != nil {
		return err
	}
	defer c.Close()
	total := *closed + *open
	every := total + 1
	if *open > 0 {
		every = total / *open
	}
	t0 := time.Now()
	var started atomic.Int64
	var firstErr error
	var mu sync.Mutex
	work := make(chan int)
	var wg sync.WaitGroup
	for range *conc {
		wg.Go(func() {
			for i := range work {
				in := workflows.JobInput{Objective: "Add CSV export to the reports page", Scenario: activities.OnTrack}
				if *closedPhases != "" {
					in.Phases = strings.Split(*closedPhases, ",")
				}
				if *open > 0 && i%every == 0 && i/every < *open {
					in = workflows.JobInput{Objective: "Add CSV export to the reports page", Scenario: activities.Looping}
				}
				err := startJob(ctx, c, client.StartWorkflowOptions{ID: fmt.Sprintf("%s-%06d", *prefix, i), TaskQueue: *queue}, in)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("scalebench: start job %d: %w", i, err)
					}
					mu.Unlock()
					continue
				}
				started.Add(1)
			}
		})
	}
	for i := range total {
		work <- i
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	fmt.Fprintf(out, "started %d jobs in %s (%.1f/s)\n", started.Load(), time.Since(t0).Round(time.Millisecond), float64(started.Load())/time.Since(t0).Seconds())
	deadline := time.Now().Add(*wait)
	// This run's jobs only: a namespace that holds earlier runs' jobs
	// (another prefix) must not count them.
	mine := fmt.Sprintf("TaskQueue = '%s' AND WorkflowId STARTS_WITH '%s-'", *queue, *prefix)
	qClosed := mine + " AND ExecutionStatus = 'Completed'"
	qPaused := mine + " AND ExecutionStatus = 'Running' AND OverseerPaused = true"
	for {
		nc, err := count(ctx, c, qClosed)
		if err != nil {
			return err
		}
		np, err := count(ctx, c, qPaused)
		if err != nil {
			return err
		}
		el := time.Since(t0)
		fmt.Fprintf(out, "%s closed %d paused %d (%.1f jobs done/s)\n", el.Round(time.Second), nc, np, float64(nc+np)/el.Seconds())
		if nc >= int64(*closed) && np >= int64(*open) {
			return nil
		}
		if nc+np >= int64(*closed+*open) {
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
		time.Sleep(10 * time.Second) // a progress line every 10 s; the loop ends on the counts
	}
}

// startJob starts one job, three tries in all when a start gets no answer
// in time (a loaded server): the start may have been taken, so a retry that
// finds the job already started counts as started.
func startJob(ctx context.Context, c client.Client, o client.StartWorkflowOptions, in workflows.JobInput) error {
	for try := 1; ; try++ {
		_, err := c.ExecuteWorkflow(ctx, o, workflows.JobWorkflowName, in)
		var started *serviceerror.WorkflowExecutionAlreadyStarted
		switch {
		case err == nil, try > 1 && errors.As(err, &started):
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
