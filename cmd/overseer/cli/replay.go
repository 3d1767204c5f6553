package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/learn"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/registry"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// ReplayCmd is `overseer replay`: recorded agent runs streamed through
// Temporal as recorded jobs, with a simulated reviewer at each gate and
// learn rounds between windows of jobs, and the prequential learning curve
// they make.
type ReplayCmd struct{}

// Synopsis implements Command.
func (*ReplayCmd) Synopsis() string {
	return "stream recorded agent runs through Temporal as jobs, with simulated reviewers and learn rounds, and print the learning curve: replay --traces DIR"
}

// reviewerName opens every gate of a replay.
const reviewerName = "replay-reviewer"

// Run implements Command.
func (*ReplayCmd) Run(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("replay", out)
	traces := fs.String("traces", "", "recorded runs: a directory or file in any format eval reads (required)")
	format := fs.String("format", "", "format of --traces (default: detected)")
	jobs := fs.Int("jobs", 0, "number of jobs to run, cycling through the runs when more than there are (default: one per run)")
	concurrency := fs.Int("concurrency", 4, "jobs running at once")
	mode := fs.String("mode", string(overseer.ModeManage), "overseer mode of the jobs: manage (gates a reviewer opens) or observe")
	learnEvery := fs.Int("learn-every", 30, "run a learn round after every this many closed jobs (0: none); the curve has one window per round")
	csvPath := fs.String("csv", "", "write the learning curve as CSV to this file")
	svgPath := fs.String("svg", "", "write the learning curve as an SVG plot to this file")
	address := fs.String("address", "", "Temporal frontend host:port (default: an embedded dev server)")
	namespace := fs.String("namespace", "", "Temporal namespace with --address (default: $TEMPORAL_NAMESPACE or profile, else default)")
	errorRate := fs.Float64("reviewer-error-rate", 0, "share of gates at which the simulated reviewer decides against the recorded outcome, in [0,1]")
	delay := fs.Duration("reviewer-delay", 100*time.Millisecond, "how long the simulated reviewer waits at a gate before deciding")
	speed := fs.Float64("speed", workflows.DefaultRecordedSpeed, "recorded time divided by this is the time a phase takes")
	stepTime := fs.Duration("step-time", workflows.DefaultRecordedStepTime, "time a step takes in a run recorded without timestamps")
	typ := fs.String("type", "", "workflow type of the jobs, whose model the learn rounds fit (a fresh one keeps a cluster's other replays apart; default: "+
		workflows.RecordedLoopWorkflowName+" for agents' runs, "+workflows.RecordedJobWorkflowName+" for jobs of phases)")
	asPhases := fs.Bool("as-phases", false, "replay agents' runs as a job of phases (one activity per phase of work) instead of the agent loop a team writes on Temporal (a model-call activity, then the tool activity it asked for)")
	budget := fs.Float64("max-false-pause", 0.05, "the false-pause promise a learn round's model must keep, in (0,1)")
	promise := promiseFlag(fs)
	pauseBudget := fs.Float64("pause-budget", 0, "until a promise can be certified, let a recalibrated model pause at most this share of jobs, in (0,1); default: no pause on P until then")
	seed := fs.Uint64("seed", 1, "seed of the reviewer's errors")
	deadline := fs.Duration("deadline", time.Hour, "give up after this long")
	var codecEndpoint string
	registerCodec(fs, &codecEndpoint)
	err := parseNoArgs(fs, args)
	if err != nil {
		return err
	}
	if *traces == "" {
		return fmt.Errorf("%w: give --traces, a directory of recorded runs", ErrUsage)
	}
	m, err := overseer.ParseMode(*mode)
	if err != nil || (m != overseer.ModeManage && m != overseer.ModeObserve) {
		return fmt.Errorf("%w: --mode %q: use manage or observe", ErrUsage, *mode)
	}
	switch {
	case *jobs < 0 || *concurrency < 1 || *learnEvery < 0:
		return fmt.Errorf("%w: --jobs and --learn-every take a count of 0 or more, --concurrency 1 or more", ErrUsage)
	case *errorRate < 0 || *errorRate > 1:
		return fmt.Errorf("%w: --reviewer-error-rate %v: give a share in [0,1], e.g. 0.1", ErrUsage, *errorRate)
	case *delay < 0 || !(*speed > 0) || *stepTime <= 0:
		return fmt.Errorf("%w: --reviewer-delay takes a duration of 0 or more, --step-time one above 0 and --speed a factor above 0", ErrUsage)
	}
	recs, src, err := eval.LoadSource(*traces, *format)
	if err != nil {
		return err
	}
	loops := !*asPhases && eval.ShapeOfRecords(recs) == overseer.ShapeAgentLoop && allSteps(recs)
	if *typ == "" {
		*typ = map[bool]string{true: workflows.RecordedLoopWorkflowName, false: workflows.RecordedJobWorkflowName}[loops]
	}
	lin, err := learnInput(*typ, "", *budget, *promise, *pauseBudget)
	if err != nil {
		return err
	}
	// The codec of every client, worker and read of the replay.
	codecOpts, err := codecOptions(worker.Config{CodecEndpoint: codecEndpoint, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	dc := codecOpts.DataConverter
	fmt.Fprintln(out, src)
	if loops {
		fmt.Fprintln(out, "Each run is a job of the agent loop a team writes on Temporal: a model-call activity, then the tool activity it asked for (--as-phases: phases of work).")
	}
	if note := src.SkippedNote(); note != "" {
		fmt.Fprintln(out, note)
	}
	ctx, cancel := context.WithTimeout(ctx, *deadline)
	defer cancel()

	var c client.Client
	ns := *namespace
	if *address == "" {
		fmt.Fprintln(out, "Starting the embedded Temporal dev server…")
		srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{Output: io.Discard, Logger: worker.SDKLogger(zap.NewNop())})
		if err != nil {
			return err
		}
		defer srv.Stop()
		ns = srv.Namespace()
		codecOpts.Namespace, codecOpts.Logger = ns, worker.SDKLogger(zap.NewNop())
		c, err = client.NewClientFromExisting(srv.Client(), codecOpts)
		if err != nil {
			return fmt.Errorf("connect to the embedded dev server: %w", err)
		}
	} else {
		c, err = worker.Dial(ctx, worker.Config{Address: *address, Namespace: ns, Logger: zap.NewNop(), DataConverter: dc})
		if err != nil {
			return err
		}
	}
	defer c.Close()
	opts := replayOptions{Records: recs, Loops: loops, Jobs: *jobs, Concurrency: *concurrency, Mode: m, LearnEvery: *learnEvery,
		Type: *typ, Namespace: ns, ErrorRate: *errorRate, Delay: *delay, Speed: *speed, StepTime: *stepTime, Seed: *seed, Learn: lin, Progress: out,
		DataConverter: dc}
	res, err := runReplay(ctx, c, opts)
	if err != nil {
		return err
	}
	fmt.Fprintln(out)
	res.print(out, opts)
	if *csvPath != "" {
		if err := writeFileWith(*csvPath, func(w io.Writer) error { return eval.WriteLearningCurveCSV(w, res.Windows) }); err != nil {
			return err
		}
		fmt.Fprintf(out, "Wrote the learning curve to %s\n", *csvPath)
	}
	if *svgPath != "" {
		title := fmt.Sprintf("%s: %d recorded jobs, %s mode, a learn round every %d", filepathBase(*traces), len(res.Jobs), m, *learnEvery)
		if err := writeFileWith(*svgPath, func(w io.Writer) error { return eval.WriteLearningCurveSVG(w, title, res.Windows) }); err != nil {
			return err
		}
		fmt.Fprintf(out, "Wrote the learning curve plot to %s\n", *svgPath)
	}
	return res.check()
}

func filepathBase(p string) string {
	p = strings.TrimRight(p, "/")
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

func writeFileWith(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// replayOptions configure runReplay.
type replayOptions struct {
	Records []eval.Record
	// Loops replays agents' runs (eval.UnitStep) as the agent loop a team
	// writes (workflows.RecordedLoop); otherwise every record is a job of
	// phases (workflows.RecordedJob).
	Loops       bool
	Jobs        int // 0: one per record
	Concurrency int
	Mode        overseer.Mode
	LearnEvery  int // 0: no learn rounds, one window
	Type        string
	Namespace   string
	ErrorRate   float64
	Delay       time.Duration
	Speed       float64
	StepTime    time.Duration // 0: the workflow's default
	Seed        uint64
	// Learn is the learn rounds' input (Type, Where and Previous are set
	// by the replay).
	Learn learn.Input
	// Progress gets a line per window and round; nil for none.
	Progress io.Writer
	// TaskQueue of the replay's worker. If not set, one of its own.
	TaskQueue string
	// Policy is the jobs' policy until a model is promoted. If not set,
	// the shipped model's.
	Policy overseer.Policy
	// DataConverter is the deployment's codec, c's own: the worker, the
	// learn rounds, the reads of the closed jobs and the history check use
	// it. If not set, none.
	DataConverter converter.DataConverter
}

// replayJob is one job of the stream.
type replayJob struct {
	n   int // from 1
	rec *eval.Record
	in  workflows.RecordedJobInput
	// loop is the job's input when it replays as an agent loop.
	loop     *workflows.RecordedLoopInput
	id       string
	runID    string
	outcome  eval.Outcome // as the job closed
	aborted  bool         // the reviewer aborted it at a gate
	gates    int          // gates the reviewer opened
	others   int          // gates closed by anyone else
	paused   bool         // paused (manage) or flagged (observe)
	scored   eval.ScoredRun
	closeErr string
}

// expected is the outcome the job must end with: the recorded one, and
// failed when the reviewer aborted it.
func (j *replayJob) expected() eval.Outcome { return expectedOutcome(j.rec.Outcome, j.aborted) }

// replayResult is what a replay did.
type replayResult struct {
	Jobs    []*replayJob
	Windows []eval.LearningWindow
	Rounds  []learn.Result
	Lost    []string // jobs that did not close
	// ReviewerErrors are the resumes the server refused.
	ReviewerErrors []string
	// Replayed counts the closed jobs whose history replayed clean on
	// the current code; ReplayErrors say which did not.
	Replayed     int
	ReplayErrors []string
}

// runReplay streams the jobs through Temporal on c, window by window: a
// window's jobs start at the set concurrency with the model and policy in
// force, a reviewer opens their gates, and once they have all closed the
// window is measured and a learn round runs on every job closed so far, so
// the next window's jobs pin what it promoted.
func runReplay(ctx context.Context, c client.Client, o replayOptions) (*replayResult, error) {
	if len(o.Records) == 0 {
		return nil, errors.New("no recorded runs to replay")
	}
	n := o.Jobs
	if n == 0 {
		n = len(o.Records)
	}
	stamp := time.Now().UTC().Format("20060102-150405.000")
	stamp = strings.ReplaceAll(stamp, ".", "")
	tq := o.TaskQueue
	if tq == "" {
		tq = "overseer-replay-" + stamp
	}
	learnRounds := o.LearnEvery > 0
	cfg := worker.Config{TaskQueue: tq, Namespace: o.Namespace, Mode: o.Mode, Modes: map[string]overseer.Mode{o.Type: o.Mode},
		Logger: zap.NewNop(), ModelRegistry: learnRounds, ModelRegistryTTL: time.Millisecond, Policy: o.Policy, DataConverter: o.DataConverter}
	w, err := worker.New(c, cfg)
	if err != nil {
		return nil, err
	}
	loopActs := &workflows.RecordedLoopActivities{}
	switch {
	case o.Loops:
		w.RegisterWorkflowWithOptions(workflows.RecordedLoop, workflow.RegisterOptions{Name: o.Type})
		loopActs.Register(w)
	case o.Type != workflows.RecordedJobWorkflowName:
		w.RegisterWorkflowWithOptions(workflows.RecordedJob, workflow.RegisterOptions{Name: o.Type})
	}
	if learnRounds {
		stop, err := hostLearnTemp(c, w, true, cfg)
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("start the replay's worker: %w", err)
	}
	defer w.Stop()

	rv := newReviewer(c, tq, o)
	rctx, stopReviewer := context.WithCancel(ctx)
	reviewing := make(chan struct{})
	go func() { defer close(reviewing); rv.run(rctx) }()

	res := &replayResult{}
	defer func() {
		stopReviewer()
		<-reviewing
		res.ReviewerErrors = rv.fails
	}()
	for i := range n {
		rec := &o.Records[i%len(o.Records)]
		in := eval.RecordedJob(*rec)
		in.Speed, in.StepTime = o.Speed, o.StepTime
		j := &replayJob{n: i + 1, rec: rec, in: in, id: fmt.Sprintf("replay-%s-%d-%s", stamp, i+1, rec.ID)}
		if o.Loops {
			loop := eval.LoopInput(*rec)
			j.loop = &loop
			loopActs.Add(j.id, loop)
		}
		res.Jobs = append(res.Jobs, j)
	}
	size := o.LearnEvery
	if size == 0 {
		size = n
	}
	where := fmt.Sprintf("TaskQueue = '%s'", tq)
	var previous *learn.Result
	for first := 0; first < n; first += size {
		window := res.Jobs[first:min(n, first+size)]
		force, err := inForce(ctx, c, o.Type, o.Policy, o.Loops)
		if err != nil {
			return nil, err
		}
		if err := runWindow(ctx, c, tq, o, window, rv); err != nil {
			res.Lost = lostJobs(res.Jobs)
			return res, err
		}
		win := measureWindow(len(res.Windows)+1, window, force, o)
		res.Windows = append(res.Windows, win)
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "window %d: jobs %d–%d closed (%d succeeded, %d failed), stage %d, model %s, %d gates\n",
				win.Window, win.FirstJob, win.LastJob, count(window, func(j *replayJob) bool { return j.outcome == eval.OutcomeSucceeded }),
				count(window, func(j *replayJob) bool { return j.outcome != eval.OutcomeSucceeded }), win.Stage, win.Model, win.Gates)
		}
		if !learnRounds || first+size >= n {
			continue
		}
		in := o.Learn
		in.Type, in.Where, in.Previous = o.Type, where, previous
		r, err := learnRound(ctx, c, tq, in, first+len(window))
		if err != nil {
			return res, err
		}
		previous = &r
		res.Rounds = append(res.Rounds, r)
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "learn round %d after %d jobs: %s\n", r.Rounds, first+len(window), r.Sentence)
		}
	}
	if err := replayHistories(ctx, c, o.Type, o.Loops, o.DataConverter, res); err != nil {
		return res, err
	}
	return res, nil
}

// replayHistories replays every closed job's history on the current
// workflow code with the overseer's interceptors, as a worker restarted
// on this code would: a non-determinism is a job that could not go on.
func replayHistories(ctx context.Context, c client.Client, typ string, loops bool, dc converter.DataConverter, res *replayResult) error {
	for _, j := range res.Jobs {
		if j.outcome == "" {
			continue
		}
		it := c.GetWorkflowHistory(ctx, j.id, j.runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		var h historypb.History
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				return fmt.Errorf("read the history of %s: %w", j.id, err)
			}
			h.Events = append(h.Events, ev)
		}
		// A replayer per history: its plugin registers the overseer's
		// workflows on each replay.
		plugin, err := overseer.NewPlugin(overseer.Options{DataConverter: dc})
		if err != nil {
			return err
		}
		rp, err := sdkworker.NewWorkflowReplayerWithOptions(sdkworker.WorkflowReplayerOptions{Plugins: []sdkworker.Plugin{plugin}, DataConverter: dc})
		if err != nil {
			return err
		}
		if loops {
			rp.RegisterWorkflowWithOptions(workflows.RecordedLoop, workflow.RegisterOptions{Name: typ})
		} else {
			rp.RegisterWorkflowWithOptions(workflows.RecordedJob, workflow.RegisterOptions{Name: typ})
		}
		if err := rp.ReplayWorkflowHistory(nil, &h); err != nil {
			res.ReplayErrors = append(res.ReplayErrors, fmt.Sprintf("the history of %s does not replay: %v", j.id, err))
			continue
		}
		res.Replayed++
	}
	return nil
}

func count(jobs []*replayJob, f func(*replayJob) bool) int {
	k := 0
	for _, j := range jobs {
		if f(j) {
			k++
		}
	}
	return k
}

func lostJobs(jobs []*replayJob) []string {
	var lost []string
	for _, j := range jobs {
		if j.runID != "" && j.outcome == "" {
			lost = append(lost, j.id)
		}
	}
	return lost
}

// runWindow runs a window's jobs, at most o.Concurrency at once, and reads
// each one's outcome, gates and assessments once it has closed.
func runWindow(ctx context.Context, c client.Client, tq string, o replayOptions, window []*replayJob, rv *reviewer) error {
	sem := make(chan struct{}, o.Concurrency)
	errs := make(chan error, len(window))
	var wg sync.WaitGroup
	for _, j := range window {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return fmt.Errorf("the replay did not finish in time: %w", ctx.Err())
		}
		rv.expect(j)
		var in any = j.in
		if j.loop != nil {
			in = *j.loop
		}
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: j.id, TaskQueue: tq,
			Memo: map[string]any{ops.TaskFamilyMemoKey: j.in.Family}}, o.Type, in)
		if err != nil {
			<-sem
			wg.Wait()
			return fmt.Errorf("start job %s: %w", j.id, err)
		}
		j.runID = run.GetRunID()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := closeJob(ctx, c, run, j, o.Mode, o.Namespace, o.DataConverter); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return errors.Join(collect(errs)...)
}

func collect(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// closeJob waits for the job to close and reads what it did.
func closeJob(ctx context.Context, c client.Client, run client.WorkflowRun, j *replayJob, mode overseer.Mode, namespace string, dc converter.DataConverter) error {
	if err := run.Get(ctx, nil); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("job %s did not close in time: %w", j.id, ctx.Err())
		}
		j.closeErr = err.Error()
	}
	d, err := retryRead(ctx, func() (*client.WorkflowExecutionDescription, error) { return c.DescribeWorkflow(ctx, j.id, j.runID) })
	if err != nil {
		return ops.JobError(j.id, err)
	}
	switch d.RawResponse.GetWorkflowExecutionInfo().GetStatus() {
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		j.outcome = eval.OutcomeSucceeded
	default:
		j.outcome = eval.OutcomeFailed
	}
	st, err := retryRead(ctx, func() (overseer.Status, error) { return ops.RunStatus(ctx, c, j.id, j.runID) })
	if err != nil {
		return err
	}
	for _, g := range st.Gates {
		if g.By != reviewerName {
			j.others++
		}
		j.aborted = j.aborted || (g.By == reviewerName && g.Action == overseer.ActionAbort)
	}
	// Gates lists the latest pauses only; the counter has them all.
	j.gates = st.Counters.Pauses - j.others
	rec, err := retryRead(ctx, func() (eval.Record, error) {
		if dc != nil {
			return ops.RecordOfJobWith(ctx, c, namespace, j.id, j.runID, dc)
		}
		return ops.RecordOfJob(ctx, c, j.id, j.runID)
	})
	if err != nil {
		return err
	}
	j.scored = scoredOf(j, rec)
	for _, s := range rec.Steps {
		if s.Assessment != nil && s.Assessment.Flagged {
			j.paused = j.paused || mode == overseer.ModeObserve
		}
	}
	if mode == overseer.ModeManage {
		j.paused = slices.ContainsFunc(st.Gates, func(g overseer.Gate) bool { return g.Kind != overseer.GateKindBudget })
	}
	return nil
}

// readAttempts bounds retryRead: a closed job's status query is answered
// by a worker replaying its history, and a worker busy with the stream's
// running jobs can miss the query's deadline ("query timed out before a
// worker could process it"); on a loaded 2-core cluster, 1,000 jobs at 16
// at once, 120 jobs' reads did once.
const readAttempts = 5

// retryRead calls read until it succeeds, at most readAttempts times, 1, 2,
// 4 and 8 s apart, while ctx lasts, and returns its last error otherwise.
func retryRead[T any](ctx context.Context, read func() (T, error)) (T, error) {
	wait := time.Second
	for attempt := 1; ; attempt++ {
		v, err := read()
		if err == nil || attempt == readAttempts || ctx.Err() != nil {
			return v, err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return v, err
		}
		wait *= 2
	}
}

// scoredOf is the job's live assessments as a scored run: each phase's
// answer at the recorded step count it was given at, out of the recorded
// run's steps (a job aborted at a gate has answers for part of them).
func scoredOf(j *replayJob, rec eval.Record) eval.ScoredRun {
	sr := eval.ScoredRun{ID: j.id, Family: j.in.Family, Outcome: j.rec.Outcome, Steps: j.rec.NumSteps()}
	var turnOf []int
	if j.loop != nil {
		// A loop's calls, each at its turn, as eval scores them.
		_, turnOf = j.loop.Calls()
	}
	steps := 0
	for i, s := range rec.Steps {
		switch {
		case i < len(turnOf):
			steps = turnOf[i] + 1
		case j.loop == nil && i < len(j.in.Phases):
			steps += j.in.Phases[i].Steps
		default:
			steps += max(1, s.Turns)
		}
		if s.Assessment == nil {
			continue
		}
		p := eval.Point{Steps: steps, Model: s.Assessment.ModelVersion, Err: s.Assessment.Error,
			Answers: overseer.Answers{OnObjective: s.Assessment.OnObjective, OnObjectiveUnknown: s.Assessment.NotAssessed}}
		sr.Points = append(sr.Points, p)
	}
	return sr
}

// force is the model and policy in force for a window's jobs.
type force struct {
	stage   int
	version string
	policy  overseer.Policy
}

// inForce reads the type's current model and policy from the model
// registry, as new jobs will (the shipped model, with policy when set,
// when it has none).
func inForce(ctx context.Context, c client.Client, typ string, policy overseer.Policy, loops bool) (force, error) {
	cur := learn.Current{Model: overseer.DefaultLearnedModel(), Policy: overseer.DefaultLearnedPolicy()}
	if policy != (overseer.Policy{}) {
		cur.Policy = policy
	}
	st, err := registry.Get(ctx, c, registry.Query{Types: []string{typ, registry.DefaultType}, CurrentOnly: true, Content: true})
	switch {
	case errors.Is(err, registry.ErrNoRegistry):
	case err != nil:
		return force{}, fmt.Errorf("read the model registry: %w", err)
	default:
		if t := st.Resolve(typ); t != nil {
			if v := t.CurrentVersion(); v != nil && len(v.Model) > 0 {
				m, err := overseer.ParseLearnedModel(v.Model)
				if err != nil {
					return force{}, fmt.Errorf("the registry's current model of %s: %w", typ, err)
				}
				p, err := overseer.ParsePolicy(v.Policy)
				if err != nil {
					return force{}, fmt.Errorf("the registry's current policy of %s: %w", typ, err)
				}
				cur = learn.Current{Model: m, Policy: p}
			}
		}
	}
	if loops {
		cur = cur.ForShape(overseer.ShapeAgentLoop)
	}
	return force{stage: learn.StageOf(cur), version: cur.Model.Version, policy: cur.Policy}, nil
}

// allSteps says every record is an agent's run (eval.UnitStep), which can
// replay as the loop that made it.
func allSteps(records []eval.Record) bool {
	for _, r := range records {
		if r.Unit != "" && r.Unit != eval.UnitStep {
			return false
		}
	}
	return true
}

// measureWindow is the window's point of the learning curve.
func measureWindow(n int, window []*replayJob, f force, o replayOptions) eval.LearningWindow {
	w := eval.LearningWindow{Window: n, FirstJob: window[0].n, LastJob: window[len(window)-1].n, Jobs: len(window),
		Stage: f.stage, Model: f.version, Guarantee: f.policy.Guarantee()}
	switch {
	case f.policy.PauseBudget.Set():
		w.Bound = f.policy.PauseBudget.MaxShare
	case f.policy.Promise.Certified():
		w.Bound = f.policy.Promise.MaxFalsePause
	}
	models := map[string]int{}
	var runs []eval.ScoredRun
	for _, j := range window {
		runs = append(runs, j.scored)
		for _, p := range j.scored.Points {
			if v, _, _ := strings.Cut(p.Model, "/"); v != "" {
				models[v]++
			}
		}
		if j.rec.Outcome.Failed() {
			w.Failed++
			if j.paused {
				w.FailedCaught++
			}
		} else {
			w.Succeeded++
			if j.paused {
				w.SucceededPaused++
			}
		}
		w.Gates += j.gates
	}
	best := 0
	for v, k := range models {
		if k > best || (k == best && v < w.Model) {
			w.Model, best = v, k
		}
	}
	w.Online = eval.AfterSteps(runs, eval.LeadSteps)
	w.MidRun = eval.MidRun(runs)
	w.ReviewerTime = time.Duration(w.Gates) * o.Delay
	return w
}

// learnRound runs one learn round on the replay's worker once visibility
// shows every job closed so far, and returns its result.
func learnRound(ctx context.Context, c client.Client, tq string, in learn.Input, closed int) (learn.Result, error) {
	q := learn.Query(in.Type, in.Where, time.Time{})
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		r, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: q})
		if err != nil {
			return learn.Result{}, fmt.Errorf("count the closed jobs: %w", err)
		}
		if r.GetCount() >= int64(closed) {
			break
		}
		select {
		case <-ctx.Done():
			return learn.Result{}, fmt.Errorf("visibility did not show the %d closed jobs in time: %w", closed, ctx.Err())
		case <-tick.C:
		}
	}
	id := fmt.Sprintf("%s-%s-%d", learnScheduleID(in.Type), tq, closed)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: tq}, learn.WorkflowName, in)
	if err != nil {
		return learn.Result{}, fmt.Errorf("start the learn round: %w", err)
	}
	var res learn.Result
	if err := run.Get(ctx, &res); err != nil {
		return learn.Result{}, fmt.Errorf("the learn round %s failed: %w", id, err)
	}
	return res, nil
}

// reviewer is the simulated reviewer: it watches the replay's task queue
// for open gates and, after its delay, continues a job whose recording
// succeeded and aborts one whose recording failed — the other way round
// at a share ErrorRate of gates.
type reviewer struct {
	c     client.Client
	tq    string
	o     replayOptions
	mu    sync.Mutex
	jobs  map[string]*replayJob
	seen  map[string]bool // job id and gate id of the gates handled (gate ids are the job's own)
	rng   *rand.Rand
	wg    sync.WaitGroup
	fails []string
}

func newReviewer(c client.Client, tq string, o replayOptions) *reviewer {
	return &reviewer{c: c, tq: tq, o: o, jobs: map[string]*replayJob{}, seen: map[string]bool{}, rng: rand.New(rand.NewPCG(o.Seed, 28))}
}

func (r *reviewer) expect(j *replayJob) {
	r.mu.Lock()
	r.jobs[j.id] = j
	r.mu.Unlock()
}

func (r *reviewer) run(ctx context.Context) {
	defer r.wg.Wait()
	if r.o.Mode != overseer.ModeManage {
		return
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		gates, err := ops.Waiting(ctx, r.c, ops.ListOptions{Query: fmt.Sprintf("TaskQueue = '%s'", r.tq), Limit: 1000, DataConverter: r.o.DataConverter})
		if err != nil {
			continue // the next tick asks again
		}
		for _, g := range gates {
			r.mu.Lock()
			j, ok := r.jobs[g.JobID]
			key := g.JobID + "\x00" + g.GateID
			if !ok || r.seen[key] {
				r.mu.Unlock()
				continue
			}
			r.seen[key] = true
			action := overseer.ActionContinue
			if j.rec.Outcome.Failed() {
				action = overseer.ActionAbort
			}
			if r.rng.Float64() < r.o.ErrorRate {
				action = map[overseer.Action]overseer.Action{overseer.ActionContinue: overseer.ActionAbort, overseer.ActionAbort: overseer.ActionContinue}[action]
			}
			r.mu.Unlock()
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				r.decide(ctx, g, action)
			}()
		}
	}
}

func (r *reviewer) decide(ctx context.Context, g ops.WaitingGate, action overseer.Action) {
	if r.o.Delay > 0 {
		t := time.NewTimer(r.o.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
	note := "The recording succeeded: carry on."
	if action == overseer.ActionAbort {
		note = "The recording failed: stop here."
	}
	req := overseer.ResumeRequest{By: reviewerName, Note: note, Action: action, Gate: g.GateID}
	if action != overseer.ActionAbort {
		// The recording succeeded whatever the note says: the pause was not
		// needed, a false pause as the replay counts them.
		req.Needed = new(false)
	}
	if _, err := ops.Resume(ctx, r.c, g.JobID, req); err != nil && ctx.Err() == nil {
		r.mu.Lock()
		r.fails = append(r.fails, fmt.Sprintf("%s gate %s: %v", g.JobID, g.GateID, err))
		r.mu.Unlock()
	}
}

// print writes the curve and the outcome check.
func (res *replayResult) print(out io.Writer, o replayOptions) {
	fmt.Fprintf(out, "Learning curve, prequential: each window's jobs judged live by the model in force, before any round learned from them. "+
		"The ranking after %d steps is among the window's jobs still running then, as a live judge sees them; at 50%% of each job it knows the job's length, which no live judge does.\n", eval.LeadSteps)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "WINDOW\tJOBS\tSTAGE\tMODEL\tBRIER@50%%\tBASE BRIER\tSUCCESS RATE\tAUROC@%d STEPS\tAUROC@50%% (KNOWS LENGTH)\tSUCCEEDED PAUSED\tBOUND\tFAILED CAUGHT\tGATES\tREVIEWER TIME\n", eval.LeadSteps)
	unreliable := false
	for _, w := range res.Windows {
		bound := "none"
		if w.Bound > 0 {
			bound = fmt.Sprintf("%.1f%%", 100*w.Bound)
		}
		// As eval marks it: an AUROC from fewer than MinRunsPerOutcome runs
		// of either outcome moves by a tenth with one run.
		mark := func(c eval.Checkpoint) string {
			a := c.AUROC.String()
			if c.Unreliable && !math.IsNaN(float64(c.AUROC)) {
				a += "*"
				unreliable = true
			}
			return a
		}
		online := fmt.Sprintf("%s (%d jobs)", mark(w.Online), w.Online.Runs)
		rate := pct(eval.Num(float64(w.Succeeded) / float64(w.Succeeded+w.Failed)))
		fmt.Fprintf(tw, "%d\t%d–%d\t%d\t%s\t%s\t%s\t%s (%d/%d)\t%s\t%s\t%d/%d (%s)\t%s\t%d/%d (%s)\t%d\t%s\n", w.Window, w.FirstJob, w.LastJob, w.Stage, w.Model,
			w.MidRun.Brier, w.MidRun.BaseBrier, rate, w.Succeeded, w.Succeeded+w.Failed, online, mark(w.MidRun), w.SucceededPaused, w.Succeeded, pct(eval.Num(w.PausedShare())), bound,
			w.FailedCaught, w.Failed, pct(eval.Num(w.CaughtShare())), w.Gates, w.ReviewerTime)
	}
	tw.Flush()
	if unreliable {
		fmt.Fprintf(out, "* unreliable: fewer than %d runs of one outcome stand behind this AUROC\n", eval.MinRunsPerOutcome)
	}
	for _, r := range res.Rounds {
		fmt.Fprintf(out, "round %d: %s\n", r.Rounds, r.Sentence)
	}
	matched, aborted, gates, others := 0, 0, 0, 0
	for _, j := range res.Jobs {
		if j.outcome == j.expected() {
			matched++
		}
		if j.aborted {
			aborted++
		}
		gates += j.gates
		others += j.others
	}
	if len(res.Jobs) > len(o.Records) && len(o.Records) > 0 {
		fmt.Fprintf(out, "Jobs beyond the first %d repeat recorded runs: a window after a round that learned from their runs is not held out from it.\n", len(o.Records))
	}
	fmt.Fprintf(out, "Outcomes: %d of %d jobs ended as recorded (%d aborted at a gate, counted failed); %d gates, %d opened by the simulated reviewer; %d jobs lost or stuck; %d histories replay clean.\n",
		matched, len(res.Jobs), aborted, gates+others, gates, len(res.Lost), res.Replayed)
}

// check fails the replay when a job did not end as recorded, a gate was
// opened by someone other than the reviewer, or a job was lost.
func (res *replayResult) check() error {
	var bad []string
	for _, j := range res.Jobs {
		switch {
		case j.outcome == "":
			bad = append(bad, fmt.Sprintf("%s did not close", j.id))
		case j.outcome != j.expected():
			bad = append(bad, fmt.Sprintf("%s ended %s, recorded %s", j.id, j.outcome, j.rec.Outcome))
		case j.others > 0:
			bad = append(bad, fmt.Sprintf("%s had %d gates not opened by the simulated reviewer", j.id, j.others))
		}
	}
	sort.Strings(bad)
	bad = append(bad, res.ReviewerErrors...)
	bad = append(bad, res.ReplayErrors...)
	if len(bad) == 0 {
		return nil
	}
	more := ""
	if len(bad) > 5 {
		more = fmt.Sprintf(" and %d more", len(bad)-5)
		bad = bad[:5]
	}
	return fmt.Errorf("the replay's outcome check failed: %s%s", strings.Join(bad, "; "), more)
}
