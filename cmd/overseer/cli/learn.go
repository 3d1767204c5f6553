package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
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
  overseer learn schedule --type T [--every 24h] [--max-false-pause 0.05] [--promise expected|confidence] [--where CLAUSE] [--json]
  overseer learn run --type T [--max-false-pause 0.05] [--promise expected|confidence] [--where CLAUSE] [--wait 30m] [--json]
  overseer learn status [--type T] [--json]

Each round exports the closed jobs of workflow type T with their outcomes and the
reviewers' gate decisions, and once enough labelled runs exist refits a candidate,
and promotes it in the model registry only if it keeps the false-pause promise on
the newest runs it did not train on and ranks no worse than the current model.
The rounds run on the overseer worker (overseer worker hosts the learn workflow);
workers started with --model-registry give new jobs the promoted model.`

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

// hostLearn registers the learn workflow and activities on a worker and,
// unless it hosts the model registry already, hosts the registry so that
// a promotion can be recorded. The returned func stops what it started.
func hostLearn(c client.Client, w sdkworker.Worker, hostsRegistry bool) (func(), error) {
	return hostLearnWith(c, w, hostsRegistry, worker.Config{})
}

// hostLearnWith is hostLearn with the learn activities reading the jobs'
// histories with cfg's data converter (its codec).
func hostLearnWith(c client.Client, w sdkworker.Worker, hostsRegistry bool, cfg worker.Config) (func(), error) {
	var dc converter.DataConverter
	if o, err := cfg.ClientOptions(); err == nil {
		dc = o.DataConverter
	}
	learn.RegisterActivities(w, &learn.Activities{Client: c, DataConverter: dc})
	if hostsRegistry {
		return func() {}, nil
	}
	rw := registry.NewWorker(c, sdkworker.Options{})
	if err := rw.Start(); err != nil {
		return nil, fmt.Errorf("host the model registry: %w", err)
	}
	return rw.Stop, nil
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
	asJSON := fs.Bool("json", false, "print as JSON")
	err := parseNoArgs(fs, args)
	if err != nil {
		return err
	}
	in, err := learnInput(*typ, *where, *budget, *promise, *pauseBudget)
	if err != nil {
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
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: learn.RoundsQuery, PageSize: 50, NextPageToken: token})
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
		if errors.As(err, &nf) || errors.Is(err, context.DeadlineExceeded) {
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
	if res.Rates != nil {
		fmt.Fprintf(out, "false pauses and catches %s\n", res.Rates.Sentence)
	}
	switch {
	case res.Decision != nil && res.Decision.Figures.Labels.Any():
		fmt.Fprintln(out, res.Decision.Figures.Labels)
	case res.Labels != nil:
		fmt.Fprintln(out, *res.Labels)
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
