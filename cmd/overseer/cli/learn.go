package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/learn"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/registry"
	"github.com/corohq/temporal-overseer/worker"
)

// LearnCmd is `overseer learn`: the learn workflow a Temporal Schedule
// runs, one round now, and what the rounds did.
type LearnCmd struct{}

// Synopsis implements Command.
func (*LearnCmd) Synopsis() string {
	return "refit, recalibrate and promote the learned model from this deployment's jobs: learn schedule --type T --every 24h | run --type T | status [--type T]"
}

const learnUsage = `Usage:
  overseer learn schedule --type T [--every 24h] [--max-false-pause 0.05] [--promise expected|confidence] [--where CLAUSE] [--learn-task-queue Q] [--max-runs N] [--json]
  overseer learn run --type T [--max-false-pause 0.05] [--promise expected|confidence] [--where CLAUSE] [--learn-task-queue Q] [--max-runs N] [--wait 30m] [--json]
  overseer learn status [--type T] [--json]

Each round reads the jobs of workflow type T closed since the last round into the
worker's record store (overseer worker --learn-records; each job once), with their
outcomes and the reviewers' gate decisions, and once enough labelled runs exist
refits a candidate on the newest --max-runs of them, and promotes it in the model
registry only if it keeps the false-pause promise on the newest runs it did not
train on and ranks no worse than the current model. The rounds run on the overseer
worker (overseer worker hosts the learn workflow; give them a task queue of their
own with overseer worker --learn-task-queue); workers started with --model-registry
give new jobs the promoted model.`

// Run implements Command.
func (*LearnCmd) Run(ctx context.Context, args []string, out io.Writer) error {
	return runSubcommand(ctx, args, out, learnUsage, learnSubcommands())
}

func learnSubcommands() []subcommand {
	return []subcommand{
		{"schedule", learnSchedule}, {"run", learnRun}, {"status", learnStatus},
	}
}

func (*LearnCmd) subcommandNames() []string { return subcommandNames(learnSubcommands()) }

// learnFlags configure the learn rounds a worker hosts (worker, dev).
type learnFlags struct {
	// records is the record store's folder or bucket URL; taskQueue a
	// queue of the rounds' own that the worker polls too.
	records   string
	taskQueue string
}

func (l *learnFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&l.records, "learn-records", "", "where the learn rounds keep the run records they read from the jobs' histories, so that no round reads a job twice: a folder, "+
		"or a bucket URL (s3://BUCKET?region=R, gs://BUCKET, azblob://CONTAINER, file:///DIR) (default: $"+learn.EnvStore+", else $XDG_STATE_HOME/overseer/records)")
	fs.StringVar(&l.taskQueue, "learn-task-queue", "", "also poll this task queue for the learn rounds and their activities, with slots of its own, so that a round never takes a job's worker slot "+
		"(give the same queue to overseer learn schedule and run as --task-queue or --learn-task-queue) (default: none)")
}

// learnRoundSlots bounds the learn activities a worker runs at once on
// the rounds' own queue: each reads up to 16 histories at once already.
const learnRoundSlots = 2

// hostLearnWith registers the learn workflow and activities on a worker,
// reading the jobs' histories with cfg's data converter (its codec) into
// the record store of lf (opened now when lf or the environment names one,
// so that a wrong one stops the worker; the default folder on the first
// round), and on lf's queue of the rounds' own; and, unless it hosts the
// model registry already, hosts the registry so that a promotion can be
// recorded. The returned func stops what it started.
func hostLearnWith(c client.Client, w sdkworker.Worker, hostsRegistry bool, cfg worker.Config, lf learnFlags) (func(), error) {
	var dc converter.DataConverter
	if o, err := cfg.ClientOptions(); err == nil {
		dc = o.DataConverter
	}
	a := &learn.Activities{Client: c, DataConverter: dc}
	var stops []func()
	stop := func() {
		for _, s := range slices.Backward(stops) {
			s()
		}
	}
	if lf.records != "" || os.Getenv(learn.EnvStore) != "" {
		st, err := learn.OpenStore(context.Background(), lf.records)
		if err != nil {
			return nil, fmt.Errorf("%w: --learn-records: %v", ErrUsage, err)
		}
		a.Store = st
		stops = append(stops, func() { _ = st.Close() })
	}
	learn.RegisterActivities(w, a)
	if lf.taskQueue != "" {
		lw := sdkworker.New(c, lf.taskQueue, sdkworker.Options{MaxConcurrentActivityExecutionSize: learnRoundSlots})
		learn.RegisterActivities(lw, a)
		if err := lw.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("poll the learn rounds' task queue %s: %w", lf.taskQueue, err)
		}
		stops = append(stops, lw.Stop)
	}
	if !hostsRegistry {
		rw := registry.NewWorker(c, sdkworker.Options{})
		if err := rw.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("host the model registry: %w", err)
		}
		stops = append(stops, rw.Stop)
	}
	return stop, nil
}

// hostLearnTemp is hostLearnWith with a record store of its own in a
// temporary folder, removed by the returned func (a replay's rounds).
func hostLearnTemp(c client.Client, w sdkworker.Worker, hostsRegistry bool, cfg worker.Config) (func(), error) {
	dir, err := os.MkdirTemp("", "overseer-learn-records-")
	if err != nil {
		return nil, fmt.Errorf("a folder for the learn records: %w", err)
	}
	stop, err := hostLearnWith(c, w, hostsRegistry, cfg, learnFlags{records: dir})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return func() { stop(); _ = os.RemoveAll(dir) }, nil
}

func learnScheduleID(typ string) string { return learn.DefaultScheduleName + "-" + typ }

func learnInput(typ, where string, budget float64, promise string, pauseBudget float64) (learn.Input, error) {
	if strings.TrimSpace(typ) == "" {
		return learn.Input{}, fmt.Errorf("%w: give --type, the workflow type whose jobs to learn from", ErrUsage)
	}
	if err := checkBudget(budget); err != nil {
		return learn.Input{}, err
	}
	kind, err := overseer.ParsePromiseKind(promise)
	if err != nil {
		return learn.Input{}, fmt.Errorf("%w: --promise: %v", ErrUsage, err)
	}
	if pauseBudget != 0 && !(pauseBudget > 0 && pauseBudget < 1) {
		return learn.Input{}, fmt.Errorf("%w: --pause-budget %v: give a share of jobs in (0,1), e.g. 0.1", ErrUsage, pauseBudget)
	}
	return learn.Input{Type: typ, Where: where, Budget: budget, Promise: kind, PauseBudget: pauseBudget}, nil
}

// roundFlags are where a round's activities run and how many records it
// works on (learn schedule, learn run).
type roundFlags struct {
	taskQueue string
	maxRuns   int
}

func (r *roundFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.taskQueue, "learn-task-queue", "", "run the round's activities (reading the jobs, training) on this task queue, one that workers poll with --learn-task-queue, "+
		"so that they never take a job's worker slot (default: the round's own, --task-queue)")
	fs.IntVar(&r.maxRuns, "max-runs", learn.DefaultMaxRuns, "measure, refit and recalibrate on the newest this many closed jobs in the record store (older ones stay there)")
}

func (r roundFlags) apply(in *learn.Input) error {
	if r.maxRuns < 1 {
		return fmt.Errorf("%w: --max-runs %d: give how many of the newest closed jobs a round learns from, 1 or more", ErrUsage, r.maxRuns)
	}
	in.TaskQueue, in.MaxRuns = strings.TrimSpace(r.taskQueue), r.maxRuns
	return nil
}

func learnSchedule(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("learn schedule", out)
	var conn connFlags
	conn.register(fs)
	typ := fs.String("type", "", "workflow type whose jobs to learn from (required)")
	every := fs.Duration("every", 24*time.Hour, "how often a round runs")
	budget := fs.Float64("max-false-pause", 0.05, "the false-pause promise a promoted model must keep, in (0,1)")
	promise := promiseFlag(fs)
	pauseBudget := fs.Float64("pause-budget", 0, "until a promise can be certified, let a recalibrated model pause at most this share of jobs (a reviewer-load control, not a false-pause promise), in (0,1); default: no pause on P until then")
	where := fs.String("where", "", "narrow the jobs with a visibility clause, e.g. \"TaskQueue = 'agents'\"")
	var rf roundFlags
	rf.register(fs)
	asJSON := fs.Bool("json", false, "print as JSON")
	err := parseNoArgs(fs, args)
	if err != nil {
		return err
	}
	in, err := learnInput(*typ, *where, *budget, *promise, *pauseBudget)
	if err != nil {
		return err
	}
	if err := rf.apply(&in); err != nil {
		return err
	}
	if *every < time.Minute {
		return fmt.Errorf("%w: --every %s: give at least 1m", ErrUsage, *every)
	}
	c, err := conn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	cctx, cancel := context.WithTimeout(ctx, conn.timeout)
	defer cancel()
	id := learnScheduleID(*typ)
	interval, first := intervalFromNow(time.Now(), *every)
	spec := client.ScheduleSpec{Intervals: []client.ScheduleIntervalSpec{interval}}
	action := &client.ScheduleWorkflowAction{ID: id, Workflow: learn.WorkflowName, Args: []any{in}, TaskQueue: conn.taskQueue}
	sc := c.ScheduleClient()
	verb := "created"
	_, err = sc.Create(cctx, client.ScheduleOptions{ID: id, Spec: spec, Action: action, Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_SKIP})
	if errors.Is(err, temporal.ErrScheduleAlreadyRunning) {
		verb = "updated"
		err = sc.GetHandle(cctx, id).Update(cctx, client.ScheduleUpdateOptions{DoUpdate: func(u client.ScheduleUpdateInput) (*client.ScheduleUpdate, error) {
			s := u.Description.Schedule
			s.Spec, s.Action = &spec, action
			return &client.ScheduleUpdate{Schedule: &s}, nil
		}})
	}
	if err != nil {
		return fmt.Errorf("schedule %s: %w", id, err)
	}
	if *asJSON {
		return writeJSON(out, struct {
			Schedule  string        `json:"schedule"`
			Action    string        `json:"action"`
			Type      string        `json:"type"`
			Every     string        `json:"every"`
			TaskQueue string        `json:"task_queue"`
			Budget    float64       `json:"max_false_pause"`
			Input     learn.Input   `json:"input"`
			Interval  time.Duration `json:"interval_ns"`
			First     time.Time     `json:"first_round"`
		}{id, verb, *typ, every.String(), conn.taskQueue, *budget, in, *every, first})
	}
	fmt.Fprintf(out, "schedule %s %s: a learn round for %s every %s on task queue %s, the first at %s (promise: at most %.1f%% false pauses); `overseer learn status --type %s` shows the rounds\n",
		id, verb, *typ, *every, conn.taskQueue, first.UTC().Format(time.RFC3339), 100**budget, *typ)
	return nil
}

// intervalFromNow is the interval spec whose first round is every from now,
// and that round's time. Temporal counts intervals from the Unix epoch (a
// 24h interval alone fires at midnight UTC), so the offset is now's phase
// in the interval. The server counts both in whole seconds.
func intervalFromNow(now time.Time, every time.Duration) (client.ScheduleIntervalSpec, time.Time) {
	secs := int64(every / time.Second)
	offset := time.Duration(now.Unix()%secs) * time.Second
	return client.ScheduleIntervalSpec{Every: every, Offset: offset}, time.Unix(now.Unix()+secs, 0).UTC()
}

// lastRounds is the latest completed round of each of types that has one,
// from one listing of the rounds, newest first. It reads each round's
// result, not its memo (learn.LatestRounds), because a new round needs
// its predecessor's refusals, which the memo leaves out.
func lastRounds(ctx context.Context, c client.Client, types []string) (map[string]*learn.Result, error) {
	found := map[string]*learn.Result{}
	wanted := func(t string) bool { _, done := found[t]; return !done && slices.Contains(types, t) }
	var token []byte
	for page := 0; page < 10 && len(found) < len(types); page++ {
		resp, err := ops.ListPage(ctx, c, ops.DefaultCallTimeout, &workflowservice.ListWorkflowExecutionsRequest{Query: learn.RoundsQuery, PageSize: 50, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list the learn rounds: %w", err)
		}
		for _, e := range resp.Executions {
			id := e.GetExecution().GetWorkflowId()
			if !slices.ContainsFunc(types, func(t string) bool { return wanted(t) && strings.HasPrefix(id, learnScheduleID(t)+"-") }) {
				continue
			}
			var res learn.Result
			if err := c.GetWorkflow(ctx, id, e.GetExecution().GetRunId()).Get(ctx, &res); err != nil {
				return nil, fmt.Errorf("read learn round %s: %w", id, err)
			}
			if wanted(res.Type) {
				found[res.Type] = &res
			}
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	return found, nil
}

func learnRun(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("learn run", out)
	var conn connFlags
	conn.register(fs)
	typ := fs.String("type", "", "workflow type whose jobs to learn from (required)")
	budget := fs.Float64("max-false-pause", 0.05, "the false-pause promise a promoted model must keep, in (0,1)")
	promise := promiseFlag(fs)
	pauseBudget := fs.Float64("pause-budget", 0, "until a promise can be certified, let a recalibrated model pause at most this share of jobs (a reviewer-load control, not a false-pause promise), in (0,1); default: no pause on P until then")
	where := fs.String("where", "", "narrow the jobs with a visibility clause, e.g. \"TaskQueue = 'agents'\"")
	var rf roundFlags
	rf.register(fs)
	wait := fs.Duration("wait", 30*time.Minute, "how long to wait for the round")
	asJSON := fs.Bool("json", false, "print the round's result as JSON")
	err := parseNoArgs(fs, args)
	if err != nil {
		return err
	}
	in, err := learnInput(*typ, *where, *budget, *promise, *pauseBudget)
	if err != nil {
		return err
	}
	if err := rf.apply(&in); err != nil {
		return err
	}
	c, err := conn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	wctx, cancel := context.WithTimeout(ctx, *wait)
	defer cancel()
	last, err := lastRounds(wctx, c, []string{*typ})
	if err != nil {
		return err
	}
	in.Previous = last[*typ]
	id := fmt.Sprintf("%s-run-%d", learnScheduleID(*typ), time.Now().UnixNano())
	run, err := c.ExecuteWorkflow(wctx, client.StartWorkflowOptions{ID: id, TaskQueue: conn.taskQueue}, learn.WorkflowName, in)
	if err != nil {
		return fmt.Errorf("start the learn round: %w", err)
	}
	var res learn.Result
	if err := run.Get(wctx, &res); err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) || ops.TimedOut(err) {
			return fmt.Errorf("the learn round %s did not finish within %s: is an overseer worker polling task queue %s?", id, *wait, conn.taskQueue)
		}
		return fmt.Errorf("the learn round %s failed: %w", id, err)
	}
	if *asJSON {
		return writeJSON(out, res)
	}
	printRound(out, res)
	return nil
}

func printRound(out io.Writer, res learn.Result) {
	fmt.Fprintln(out, res.Sentence)
	fmt.Fprintf(out, "rounds %d, promoted %d, refused %d; %d jobs closed since the round before\n", res.Rounds, res.Promoted, res.Refused, res.NewRuns)
	if res.Current != "" {
		fmt.Fprintf(out, "current model: %s\n", res.Current)
	}
	if n := res.Readiness.Next; n != "" && !strings.Contains(res.Sentence, n) {
		fmt.Fprintf(out, "next: %s\n", n)
	}
	if s := res.Readiness.StageNeeds; s != "" {
		fmt.Fprintf(out, "stages: %s\n", s)
	}
	if res.Rates != nil {
		fmt.Fprintf(out, "false pauses and catches %s\n", res.Rates.Sentence)
	}
	if res.Saved != nil {
		fmt.Fprintf(out, "spend and waits: %s\n", res.Saved.Sentence())
	}
	if res.RelativeBudget != "" {
		fmt.Fprintln(out, res.RelativeBudget)
	}
	printRescue(out, res)
	switch {
	case res.Decision != nil && res.Decision.Figures.Labels.Any():
		fmt.Fprintln(out, res.Decision.Figures.Labels)
	case res.Labels != nil:
		fmt.Fprintln(out, *res.Labels)
	}
	if res.Series != "" { // rounds before the record store kept none
		fmt.Fprintf(out, "read %d job histories into the record store, which keeps %d records of the type's jobs (series %s)\n", res.Read, res.Stored, res.Series)
	}
}

func learnStatus(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("learn status", out)
	var conn connFlags
	conn.register(fs)
	typ := fs.String("type", "", "workflow type (default: every scheduled type)")
	asJSON := fs.Bool("json", false, "print as JSON")
	err := parseNoArgs(fs, args)
	if err != nil {
		return err
	}
	c, err := conn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	sctx, cancel := context.WithTimeout(ctx, conn.timeout)
	defer cancel()
	types := []string{}
	if *typ != "" {
		types = append(types, *typ)
	} else {
		it, err := c.ScheduleClient().List(sctx, client.ScheduleListOptions{PageSize: 100})
		if err != nil {
			return fmt.Errorf("list schedules: %w", err)
		}
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				return fmt.Errorf("list schedules: %w", err)
			}
			if t, ok := strings.CutPrefix(e.ID, learn.DefaultScheduleName+"-"); ok {
				types = append(types, t)
			}
		}
	}
	type typeStatus struct {
		Type     string        `json:"type"`
		Schedule string        `json:"schedule,omitempty"`
		Next     *time.Time    `json:"next_round,omitempty"`
		Last     *learn.Result `json:"last_round,omitempty"`
	}
	last, err := lastRounds(sctx, c, types)
	if err != nil {
		return err
	}
	var all []typeStatus
	for _, t := range types {
		ts := typeStatus{Type: t}
		if d, err := c.ScheduleClient().GetHandle(sctx, learnScheduleID(t)).Describe(sctx); err == nil {
			ts.Schedule = learnScheduleID(t)
			if n := d.Info.NextActionTimes; len(n) > 0 {
				ts.Next = &n[0]
			}
		}
		ts.Last = last[t]
		all = append(all, ts)
	}
	if *asJSON {
		if all == nil {
			all = []typeStatus{}
		}
		return writeJSON(out, all)
	}
	if len(all) == 0 {
		fmt.Fprintln(out, "no learn schedule: `overseer learn schedule --type T --every 24h` creates one")
		return nil
	}
	for i, ts := range all {
		if i > 0 {
			fmt.Fprintln(out)
		}
		sched := "no schedule"
		if ts.Schedule != "" {
			sched = "schedule " + ts.Schedule
			if ts.Next != nil {
				sched += ", next round " + ts.Next.UTC().Format(time.RFC3339)
			}
		}
		fmt.Fprintf(out, "%s: %s\n", ts.Type, sched)
		if ts.Last == nil {
			fmt.Fprintln(out, "no round has run yet")
			continue
		}
		printRound(out, *ts.Last)
		for _, r := range ts.Last.Refusals {
			fmt.Fprintf(out, "  %s\n", r)
		}
	}
	return nil
}
