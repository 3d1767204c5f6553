package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/proto"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// DevServerConfig returns the dev-server dynamic config the bench runs on
// by default: the server's stock task queues (4 partitions each, as a
// production cluster has them) with only the transfer queue polled 1,000
// times a second instead of 20, which would pace a job at about 100 ms per
// phase whatever runs it. Pass it as testsuite.DevServerOptions.DynamicConfig.
func DevServerConfig() map[string]string {
	return map[string]string{"history.transferProcessorMaxPollRPS": "1000"}
}

// TunedDevServerConfig is DevServerConfig with task queues of one
// partition (`overseer bench --tuned`). With 4 partitions and fewer
// pollers than partitions, a task written to a partition no poller is on,
// when the root partition has no poller waiting either, waits for the
// matcher's next forwarding attempt, 2 s later (the server's
// TaskMatcher.MustOffer): the tuned settings hide that, a cluster's
// defaults do not.
func TunedDevServerConfig() map[string]string {
	c := DevServerConfig()
	c["matching.numTaskqueueReadPartitions"] = "1"
	c["matching.numTaskqueueWritePartitions"] = "1"
	return c
}

// Options configure [Run]. The zero value runs the default bench.
type Options struct {
	// Phases per job. If not set, 20.
	Phases int
	// PhaseDuration is how long each phase works in the latency jobs; the
	// throughput jobs always run trivial phases. If not set, 50 ms.
	PhaseDuration time.Duration
	// Rounds each variant runs, interleaved with the others. If not set, 5.
	Rounds int
	// Concurrency is how many trivial jobs run at once in the throughput
	// measurement. If not set, 8.
	Concurrency int
	// LongPhases is the length of the job that measures the judge's
	// request size; it continues as new halfway. If not set, 1,000.
	LongPhases int
	// HangBudget is the budget (AssessTimeout and AssessTotalTimeout) of
	// the judge that hangs. If not set, 1 s.
	HangBudget time.Duration
	// Variants names the variants to run (see [Variants]). If empty, all.
	Variants []string
	// Progress receives a line per measurement. If nil, nothing.
	Progress io.Writer
	// Settings describes the server, for the report (e.g. "dev server,
	// stock task queues"). If not set, nothing is said.
	Settings string
}

func (o Options) withDefaults() (Options, error) {
	if o.Phases == 0 {
		o.Phases = 20
	}
	if o.PhaseDuration == 0 {
		o.PhaseDuration = 50 * time.Millisecond
	}
	if o.Rounds == 0 {
		o.Rounds = 5
	}
	if o.Concurrency == 0 {
		o.Concurrency = 8
	}
	if o.LongPhases == 0 {
		o.LongPhases = 1000
	}
	if o.HangBudget == 0 {
		o.HangBudget = time.Second
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	switch {
	case o.Phases < 1 || o.Rounds < 1 || o.Concurrency < 1:
		return o, fmt.Errorf("bench: phases, rounds and concurrency must be at least 1 (got %d, %d, %d)", o.Phases, o.Rounds, o.Concurrency)
	case o.LongPhases < 20:
		return o, fmt.Errorf("bench: the long job needs at least 20 phases, not %d", o.LongPhases)
	case o.PhaseDuration < 0 || o.HangBudget < 0:
		return o, errors.New("bench: durations must not be negative")
	}
	known := Variants()
	for _, name := range o.Variants {
		if !slices.Contains(known, name) {
			return o, fmt.Errorf("bench: unknown variant %q: use one of %v", name, known)
		}
	}
	return o, nil
}

// variant is one way to run the same job.
type variant struct {
	Name        string
	Description string
	// plugin is nil for the variants without the overseer.
	plugin *overseer.Options
	// workflow is the hand-written job's workflow, if not the plugin's Job.
	workflow string
	// baseline is the hand-written variant that asks the judge the same
	// way; if not set, VariantHandwritten.
	baseline string
	// serve puts the judge behind an in-process Jev HTTP server.
	serve bool
	// loop runs the job as an agent loop (JobInput.Loop), measured against
	// VariantBareLoop.
	loop bool
}

// Variant names.
const (
	VariantBare                  = "bare"
	VariantHandwritten           = "hand-written"
	VariantHandwrittenBackground = "hand-written/background"
	VariantHandwrittenListening  = "hand-written/listening"
	VariantObserve               = "observe"
	VariantManage                = "manage"
	VariantManageSA              = "manage+search-attributes"
	VariantManageLocal           = "manage/local-activity"
	VariantObserveRemote         = "observe/remote-judge"
	VariantObserveHTTP           = "observe/http-judge"
	VariantObserveActivity       = "observe/activity"
	VariantObserveLocal          = "observe/local-activity"
	VariantObserveHang           = "observe/hanging-judge"
	VariantBareLoop              = "bare/agent-loop"
	VariantObserveLoop           = "observe/agent-loop"
	VariantManageLoop            = "manage/agent-loop"
)

func variants(o Options) []variant {
	plugin := func(opts overseer.Options) *overseer.Options { return &opts }
	remote := remoteJudge{judge: &overseer.LearnedJudge{}}
	learned := overseer.DefaultLearnedPolicy()
	return []variant{
		{Name: VariantBare, Description: "the job with no plugin"},
		{Name: VariantHandwritten, Description: "a local activity asks the same judge after each phase; a signal resumes a flagged job", workflow: HandwrittenWorkflowName},
		{Name: VariantHandwrittenListening, Description: "the hand-written job with a second coroutine that listens for signals while phases run, as the plugin's run does",
			workflow: HandwrittenListeningWorkflowName, baseline: VariantHandwritten},
		{Name: VariantHandwrittenBackground, Description: "observe by hand, the judge asked in the background like the plugin's (goroutine, side effect at the next boundary, local activity at the end)",
			workflow: HandwrittenBackgroundWorkflowName},
		{Name: VariantObserve, Description: "plugin defaults, observe mode (the learned judge in workflow code)", plugin: plugin(overseer.Options{Mode: overseer.ModeObserve})},
		{Name: VariantManage, Description: "plugin defaults, manage mode", plugin: plugin(overseer.Options{Mode: overseer.ModeManage})},
		{Name: VariantManageSA, Description: "manage mode with search attributes", plugin: plugin(overseer.Options{Mode: overseer.ModeManage, SearchAttributes: true})},
		{Name: VariantManageLocal, Description: "manage mode, the judge in a local activity like the hand-written job", plugin: plugin(overseer.Options{Mode: overseer.ModeManage, Placement: overseer.PlacementLocalActivity})},
		{Name: VariantObserveRemote, Description: "observe mode, the same judge as a remote one (not pure): in the background, the default",
			plugin: plugin(overseer.Options{Mode: overseer.ModeObserve, Judge: remote, Policy: learned}), baseline: VariantHandwrittenBackground},
		{Name: VariantObserveHTTP, Description: "observe mode, the same judge behind `judge serve` (Jev over HTTP, in-process): in the background",
			plugin: plugin(overseer.Options{Mode: overseer.ModeObserve, Policy: learned}), serve: true, baseline: VariantHandwrittenBackground},
		{Name: VariantObserveActivity, Description: "observe mode, the remote judge in a regular activity (the default before the background placement)",
			plugin: plugin(overseer.Options{Mode: overseer.ModeObserve, Judge: remote, Policy: learned, Placement: overseer.PlacementActivity})},
		{Name: VariantObserveLocal, Description: "observe mode, the remote judge in a local activity (holds the workflow task, and the next phase, for the judge)",
			plugin: plugin(overseer.Options{Mode: overseer.ModeObserve, Judge: remote, Policy: learned, Placement: overseer.PlacementLocalActivity})},
		{Name: VariantObserveHang, Description: fmt.Sprintf("observe mode, a remote judge that hangs for its whole %v budget (in the background)", o.HangBudget),
			plugin: plugin(overseer.Options{Mode: overseer.ModeObserve, Judge: hangingJudge{}, AssessTimeout: o.HangBudget, AssessTotalTimeout: o.HangBudget}), baseline: VariantHandwrittenBackground},
		{Name: VariantBareLoop, Description: "the job as an agent loop (a model call, then the tool call it asked for; each call a boundary) with no plugin", loop: true},
		{Name: VariantObserveLoop, Description: "the agent loop, plugin defaults, observe mode (the learned judge's loop model and rules in workflow code)",
			plugin: plugin(overseer.Options{Mode: overseer.ModeObserve}), loop: true},
		{Name: VariantManageLoop, Description: "the agent loop, plugin defaults, manage mode", plugin: plugin(overseer.Options{Mode: overseer.ModeManage}), loop: true},
	}
}

// Variants lists the variant names, in the order they are reported.
func Variants() []string {
	var names []string
	for _, v := range variants(Options{}) {
		names = append(names, v.Name)
	}
	return names
}

// Stat summarises one measurement over the rounds.
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

func statOf(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{}
	}
	s := slices.Clone(xs)
	sort.Float64s(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Stat{Median: m, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// VariantResult is what one variant measured.
type VariantResult struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// LatencyMS is one job's latency, start to result, with phases of
	// PhaseDuration; TrivialLatencyMS with phases that return at once.
	LatencyMS        Stat `json:"latency_ms"`
	TrivialLatencyMS Stat `json:"trivial_latency_ms"`
	// PhasesDoneMS is, in the same jobs as LatencyMS, the time from the
	// job's start to its last phase's completion, as the server recorded
	// them: how the phases were paced, whatever the run did after them.
	PhasesDoneMS Stat `json:"phases_done_ms"`
	// BoundaryMS is, in the jobs of TrivialLatencyMS, the median time from
	// a phase's completion to the next phase's scheduling, as the server
	// recorded them: what the workflow does at a boundary, without the
	// task queue's dispatch of the phases (where the 2 s stalls are).
	BoundaryMS Stat `json:"boundary_ms"`
	// ThroughputJobsPerS is how many trivial jobs per second Concurrency
	// jobs at once complete; CPUPerBoundaryUS is the bench process' CPU
	// time (workers and client; the server is another process) per phase
	// boundary in that measurement.
	ThroughputJobsPerS Stat `json:"throughput_jobs_per_s"`
	CPUPerBoundaryUS   Stat `json:"cpu_per_boundary_us"`
	// History of one job: events and bytes per phase boundary, and its
	// largest event.
	EventsPerBoundary float64 `json:"events_per_boundary"`
	BytesPerBoundary  float64 `json:"bytes_per_boundary"`
	Events            int     `json:"events"`
	LargestEventBytes int     `json:"largest_event_bytes"`
	// JudgeActivities counts the judge's regular activities in that job;
	// HeldPhases the phases scheduled only once the judge's activity of
	// the boundary before had closed, or more than heldGap after the phase
	// before completed (0: the judge held no phase back).
	JudgeActivities int `json:"judge_activities"`
	HeldPhases      int `json:"held_phases"`
	// MaxBoundaryMS is the longest time, in that job, from a phase's
	// completion to the next phase's scheduling.
	MaxBoundaryMS float64 `json:"max_boundary_ms"`
	// Baseline is the hand-written variant "÷ hand" divides by ("": none);
	// Bare the variant "÷ bare" divides by: the same job with no plugin.
	Baseline string `json:"baseline"`
	Bare     string `json:"bare,omitempty"`
}

// heldGap is how long after a phase's completion the next phase may be
// scheduled before the bench counts it as held back: no boundary of a
// healthy run takes a tenth of it.
const heldGap = 250 * time.Millisecond

// RequestSize is the judge's request size at one phase of the long job.
type RequestSize struct {
	Phase int    `json:"phase"`
	Bytes int    `json:"bytes"`
	Note  string `json:"note,omitempty"`
}

// Result is a bench run.
type Result struct {
	Phases        int             `json:"phases"`
	PhaseDuration time.Duration   `json:"phase_duration_ns"`
	Rounds        int             `json:"rounds"`
	Concurrency   int             `json:"concurrency"`
	HangBudget    time.Duration   `json:"hang_budget_ns"`
	Variants      []VariantResult `json:"variants"`
	// RequestSizes of the long job; CarriedStateBytes is the overseer state
	// its second run started with.
	RequestSizes      []RequestSize `json:"request_sizes"`
	CarriedStateBytes int           `json:"carried_state_bytes"`
	// WindowRequestSizes and WindowCarriedStateBytes are the same with a
	// content window on (trajectory.ContentWindow{Calls: 8}, the default
	// bytes), each phase returning WindowPrinted bytes of text: what a
	// model judge's window adds to a boundary.
	WindowRequestSizes      []RequestSize `json:"window_request_sizes,omitempty"`
	WindowCarriedStateBytes int           `json:"window_carried_state_bytes,omitempty"`
	WindowPrinted           int           `json:"window_printed,omitempty"`
	Took                    time.Duration `json:"took_ns"`
	// Settings describes the server the bench ran on (see Options.Settings).
	Settings string `json:"settings,omitempty"`
}

// Variant returns the named variant's result.
func (r *Result) Variant(name string) (VariantResult, bool) {
	i := slices.IndexFunc(r.Variants, func(v VariantResult) bool { return v.Name == name })
	if i < 0 {
		return VariantResult{}, false
	}
	return r.Variants[i], true
}

// Run runs the bench against the Temporal service c is connected to, with
// its own workers in this process (one task queue per variant).
func Run(ctx context.Context, c client.Client, opts Options) (*Result, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	prefix := fmt.Sprintf("bench-%d", start.UnixNano())
	var chosen []variant
	for _, v := range variants(o) {
		if len(o.Variants) == 0 || slices.Contains(o.Variants, v.Name) {
			chosen = append(chosen, v)
		}
	}
	res := &Result{Phases: o.Phases, PhaseDuration: o.PhaseDuration, Rounds: o.Rounds, Concurrency: o.Concurrency, HangBudget: o.HangBudget, Settings: o.Settings}
	type samples struct{ latency, paced, trivial, boundary, throughput, cpu []float64 }
	got := map[string]*samples{}
	hist := map[string]historyStats{}
	policy := overseer.DefaultLearnedPolicy()
	for round := 0; round < o.Rounds; round++ {
		// Rotate the order every round so no variant always runs first.
		for k := range chosen {
			v := chosen[(k+round)%len(chosen)]
			s := got[v.Name]
			if s == nil {
				s = &samples{}
				got[v.Name] = s
			}
			// Only the measured variant's worker runs, so the process' CPU
			// time is this variant's.
			queue := fmt.Sprintf("%s-r%d-%s", prefix, round, slug(v.Name))
			w, err := newWorker(ctx, c, queue, v)
			if err != nil {
				return nil, fmt.Errorf("bench: worker for %s: %w", v.Name, err)
			}
			m, err := measure(ctx, job{c: c, queue: queue, workflow: v.workflow, loop: v.loop, policy: policy, idPrefix: queue}, o, round == 0)
			w.Stop()
			if err != nil {
				return nil, fmt.Errorf("bench: %s: %w", v.Name, err)
			}
			if round == 0 {
				hist[v.Name] = m.history
			}
			s.latency = append(s.latency, ms(m.latency))
			s.paced = append(s.paced, ms(m.paced))
			s.trivial = append(s.trivial, ms(m.trivial))
			s.boundary = append(s.boundary, ms(m.boundary))
			s.throughput = append(s.throughput, float64(o.Concurrency)/m.batchWall.Seconds())
			s.cpu = append(s.cpu, float64(m.batchCPU.Microseconds())/float64(o.Concurrency*o.Phases))
			fmt.Fprintf(o.Progress, "round %d/%d  %-26s latency %7.1f ms (phases done %7.1f)  trivial %6.1f ms  %6.1f jobs/s  %5.0f µs CPU/boundary\n",
				round+1, o.Rounds, v.Name, ms(m.latency), ms(m.paced), ms(m.trivial), s.throughput[len(s.throughput)-1], s.cpu[len(s.cpu)-1])
		}
	}
	for _, v := range chosen {
		s, h := got[v.Name], hist[v.Name]
		res.Variants = append(res.Variants, VariantResult{
			Name: v.Name, Description: v.Description,
			LatencyMS: statOf(s.latency), PhasesDoneMS: statOf(s.paced), TrivialLatencyMS: statOf(s.trivial), BoundaryMS: statOf(s.boundary),
			ThroughputJobsPerS: statOf(s.throughput), CPUPerBoundaryUS: statOf(s.cpu),
			EventsPerBoundary: float64(h.events) / float64(o.Phases), BytesPerBoundary: float64(h.bytes) / float64(o.Phases),
			Events: h.events, LargestEventBytes: h.largest, JudgeActivities: h.judgeActivities, HeldPhases: h.heldPhases,
			MaxBoundaryMS: ms(h.maxBoundary), Baseline: v.baselineName(), Bare: v.bareName(),
		})
	}
	if err := requestSizes(ctx, c, prefix, o, res); err != nil {
		return nil, err
	}
	res.Took = time.Since(start)
	return res, nil
}

func (v variant) baselineName() string {
	switch {
	case v.baseline != "":
		return v.baseline
	case v.workflow != "" || v.plugin == nil || v.loop:
		return "" // no hand-written agent loop to measure against
	}
	return VariantHandwritten
}

func (v variant) bareName() string {
	if v.loop {
		return VariantBareLoop
	}
	return VariantBare
}

// worker is a variant's worker and, for the HTTP judge, its server.
type benchWorker struct {
	sdkworker.Worker
	stopServer func()
}

func (w benchWorker) Stop() {
	w.Worker.Stop()
	if w.stopServer != nil {
		w.stopServer()
	}
}

// registerWorkflow registers the variant's workflow, on a worker or a
// replayer.
func registerWorkflow(r sdkworker.WorkflowRegistry, v variant) {
	switch v.workflow {
	case HandwrittenWorkflowName:
		r.RegisterWorkflowWithOptions(HandwrittenJob, workflowOptions(HandwrittenWorkflowName))
	case HandwrittenListeningWorkflowName:
		r.RegisterWorkflowWithOptions(HandwrittenListeningJob, workflowOptions(HandwrittenListeningWorkflowName))
	case HandwrittenBackgroundWorkflowName:
		r.RegisterWorkflowWithOptions(HandwrittenBackgroundJob, workflowOptions(HandwrittenBackgroundWorkflowName))
	default:
		r.RegisterWorkflowWithOptions(Job, workflowOptions(JobWorkflowName))
	}
}

func newWorker(ctx context.Context, c client.Client, queue string, v variant) (benchWorker, error) {
	var (
		wo sdkworker.Options
		bw benchWorker
	)
	if v.plugin != nil {
		opts := *v.plugin
		if v.serve {
			judge, stop, err := serveJudge(ctx, &overseer.LearnedJudge{})
			if err != nil {
				return bw, err
			}
			opts.Judge, bw.stopServer = judge, stop
		}
		p, err := overseer.NewPlugin(opts)
		if err != nil {
			return bw, err
		}
		wo.Plugins = []sdkworker.Plugin{p}
	}
	w := sdkworker.New(c, queue, wo)
	bw.Worker = w
	w.RegisterActivityWithOptions(Phase, activity.RegisterOptions{Name: PhaseActivityName})
	w.RegisterActivityWithOptions(Model, activity.RegisterOptions{Name: ModelActivityName})
	w.RegisterActivityWithOptions(Tool, activity.RegisterOptions{Name: ToolActivityName})
	switch v.workflow {
	case HandwrittenWorkflowName, HandwrittenListeningWorkflowName:
		if err := overseer.RegisterActivities(w, overseer.Options{}); err != nil {
			return bw, err
		}
	case HandwrittenBackgroundWorkflowName:
		handCalls.mu.Lock()
		handCalls.judge = remoteJudge{judge: &overseer.LearnedJudge{}}
		handCalls.mu.Unlock()
		w.RegisterActivityWithOptions(handCalls.await, activity.RegisterOptions{Name: AwaitActivityName})
	}
	registerWorkflow(w, v)
	if err := w.Start(); err != nil && bw.stopServer != nil {
		bw.stopServer()
		return bw, err
	} else if err != nil {
		return bw, err
	}
	return bw, nil
}

// job starts bench jobs on one variant's task queue.
type job struct {
	c        client.Client
	queue    string
	workflow string // a hand-written job's workflow, or "" for Job
	loop     bool   // Job as an agent loop
	policy   overseer.Policy
	idPrefix string
	n        int
}

// measurement is one variant's measurements in one round.
type measurement struct {
	latency, paced, trivial, batchWall, batchCPU time.Duration
	// boundary is the trivial job's median phase completion → next phase
	// scheduled.
	boundary time.Duration
	history  historyStats
}

// measure runs one round of a variant: a warm-up job, one job with phases
// of PhaseDuration, one with trivial phases, and Concurrency trivial jobs
// at once.
func measure(ctx context.Context, j job, o Options, withHistory bool) (measurement, error) {
	var m measurement
	trivial := JobInput{Phases: o.Phases}
	if _, _, err := j.run(ctx, "warm-up", trivial); err != nil {
		return m, err
	}
	lat, id, err := j.run(ctx, "latency", JobInput{Phases: o.Phases, PhaseDuration: o.PhaseDuration})
	if err != nil {
		return m, err
	}
	m.latency = lat
	h, err := historyOf(ctx, j.c, id)
	if err != nil {
		return m, fmt.Errorf("history: %w", err)
	}
	m.paced = h.phasesDone
	if withHistory {
		m.history = h
	}
	var trivialID string
	if m.trivial, trivialID, err = j.run(ctx, "trivial", trivial); err != nil {
		return m, err
	}
	th, err := historyOf(ctx, j.c, trivialID)
	if err != nil {
		return m, fmt.Errorf("history: %w", err)
	}
	m.boundary = th.boundary
	m.batchWall, m.batchCPU, err = j.batch(ctx, o.Concurrency, trivial)
	return m, err
}

// jobTimeout bounds one job: a job that takes longer is stuck (a bench job
// that paused would wait for a human forever).
const jobTimeout = 3 * time.Minute

func (j *job) start(ctx context.Context, what string, in JobInput) (client.WorkflowRun, error) {
	j.n++
	in.Loop = j.loop
	opts := client.StartWorkflowOptions{ID: fmt.Sprintf("%s-%s-%d", j.idPrefix, what, j.n), TaskQueue: j.queue, WorkflowExecutionTimeout: jobTimeout}
	if j.workflow != "" {
		return j.c.ExecuteWorkflow(ctx, opts, j.workflow, HandwrittenInput{JobInput: in, Obligations: overseer.DefaultObligations(), Policy: j.policy})
	}
	return j.c.ExecuteWorkflow(ctx, opts, JobWorkflowName, in)
}

func (j *job) run(ctx context.Context, what string, in JobInput) (time.Duration, string, error) {
	t0 := time.Now()
	run, err := j.start(ctx, what, in)
	if err != nil {
		return 0, "", err
	}
	if err := wait(ctx, run, in.Phases); err != nil {
		return 0, "", err
	}
	return time.Since(t0), run.GetID(), nil
}

// batch runs n jobs at once and returns the wall time and this process'
// CPU time they took.
func (j *job) batch(ctx context.Context, n int, in JobInput) (time.Duration, time.Duration, error) {
	cpu0 := processCPU()
	t0 := time.Now()
	runs := make([]client.WorkflowRun, n)
	for i := range runs {
		var err error
		if runs[i], err = j.start(ctx, "batch", in); err != nil {
			return 0, 0, err
		}
	}
	for _, run := range runs {
		if err := wait(ctx, run, in.Phases); err != nil {
			return 0, 0, err
		}
	}
	return time.Since(t0), processCPU() - cpu0, nil
}

func wait(ctx context.Context, run client.WorkflowRun, phases int) error {
	var done int
	if err := run.Get(ctx, &done); err != nil {
		return fmt.Errorf("job %s: %w", run.GetID(), err)
	}
	if done != phases {
		return fmt.Errorf("job %s ran %d phases, not %d", run.GetID(), done, phases)
	}
	return nil
}

type historyStats struct {
	events, bytes, largest int
	// phasesDone is from the run's start to its last phase's completion.
	started    time.Time
	phasesDone time.Duration
	// judgeActivities counts overseer.assess activities; heldPhases the
	// phases scheduled only after the previous boundary's judge activity
	// closed: phases the judge held back.
	judgeActivities, heldPhases int
	// maxBoundary is the longest phase completion → next phase scheduled;
	// boundary the median.
	maxBoundary, boundary time.Duration
}

func historyOf(ctx context.Context, c client.Client, id string) (historyStats, error) {
	var (
		h                  historyStats
		started, lastPhase time.Time
		gaps               []time.Duration
		phases             = map[int64]bool{} // scheduled event ids of phase activities
		judges             = map[int64]bool{} // scheduled event ids of open judge activities
	)
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return h, err
		}
		size := proto.Size(e)
		h.events++
		h.bytes += size
		h.largest = max(h.largest, size)
		at := e.GetEventTime().AsTime()
		switch {
		case e.GetWorkflowExecutionStartedEventAttributes() != nil:
			started, h.started = at, at
		case e.GetActivityTaskScheduledEventAttributes() != nil:
			switch e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() {
			case PhaseActivityName, ModelActivityName, ToolActivityName:
				phases[e.GetEventId()] = true
				gap := time.Duration(0)
				if !lastPhase.IsZero() {
					gap = at.Sub(lastPhase)
					h.maxBoundary = max(h.maxBoundary, gap)
					gaps = append(gaps, gap)
				}
				if h.judgeActivities > 0 && len(judges) == 0 || gap > heldGap {
					h.heldPhases++ // every judge activity had closed before this phase was scheduled, or it came late
				}
			case overseer.AssessActivityName:
				judges[e.GetEventId()] = true
				h.judgeActivities++
			}
		case phases[e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()]:
			h.phasesDone = at.Sub(started)
			lastPhase = at
		default:
			delete(judges, closedActivity(e))
		}
	}
	if len(gaps) > 0 {
		slices.Sort(gaps)
		h.boundary = gaps[len(gaps)/2]
	}
	return h, nil
}

// closedActivity is the scheduled event id of the activity e closes, or 0.
func closedActivity(e *historypb.HistoryEvent) int64 {
	switch {
	case e.GetActivityTaskCompletedEventAttributes() != nil:
		return e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()
	case e.GetActivityTaskFailedEventAttributes() != nil:
		return e.GetActivityTaskFailedEventAttributes().GetScheduledEventId()
	case e.GetActivityTaskTimedOutEventAttributes() != nil:
		return e.GetActivityTaskTimedOutEventAttributes().GetScheduledEventId()
	case e.GetActivityTaskCanceledEventAttributes() != nil:
		return e.GetActivityTaskCanceledEventAttributes().GetScheduledEventId()
	}
	return 0
}

// windowPrinted is what each phase of the long job prints when the
// bench measures a content window: more than the window's bytes per call,
// so that every call is cut and the window is at its bound.
const windowPrinted = 4 << 10

// requestSizes runs the long job, continued as new halfway, with a judge
// that records its request size at every boundary: without a content
// window, then with one.
func requestSizes(ctx context.Context, c client.Client, prefix string, o Options, res *Result) error {
	var err error
	if res.RequestSizes, res.CarriedStateBytes, err = longJobSizes(ctx, c, prefix+"-sizes", o, nil, 0); err != nil {
		return err
	}
	window := map[string]trajectory.ContentWindow{JobWorkflowName: {Calls: 8}}
	res.WindowPrinted = windowPrinted
	res.WindowRequestSizes, res.WindowCarriedStateBytes, err = longJobSizes(ctx, c, prefix+"-window", o, window, windowPrinted)
	return err
}

// longJobSizes runs the long job on queue with windows and phases that
// print printed bytes, and returns its request sizes and the state its
// second run started with.
func longJobSizes(ctx context.Context, c client.Client, queue string, o Options, windows map[string]trajectory.ContentWindow, printed int) ([]RequestSize, int, error) {
	judge := &sizingJudge{}
	w, err := newWorker(ctx, c, queue, variant{plugin: &overseer.Options{Mode: overseer.ModeObserve, Judge: judge, Policy: overseer.DefaultLearnedPolicy(),
		ContentWindows: windows}})
	if err != nil {
		return nil, 0, fmt.Errorf("bench: request sizes: %w", err)
	}
	defer w.Stop()
	half := o.LongPhases / 2
	j := job{c: c, queue: queue, idPrefix: queue}
	_, id, err := j.run(ctx, "long", JobInput{Phases: o.LongPhases, ContinueEvery: half, Printed: printed})
	if err != nil {
		return nil, 0, fmt.Errorf("bench: request sizes: %w", err)
	}
	var sizes []RequestSize
	for _, p := range []struct {
		phase int
		note  string
	}{{10, ""}, {100, ""}, {half, "last before continue-as-new"}, {half + 1, "first after continue-as-new"}, {o.LongPhases, ""}} {
		if p.phase <= o.LongPhases {
			sizes = append(sizes, RequestSize{Phase: p.phase, Bytes: judge.size(p.phase), Note: p.note})
		}
	}
	// The second run of the chain starts with the carried overseer state.
	carried := 0
	it := c.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, 0, fmt.Errorf("bench: request sizes: %w", err)
		}
		for _, p := range e.GetWorkflowExecutionStartedEventAttributes().GetHeader().GetFields() {
			carried += proto.Size(p)
		}
	}
	return sizes, carried, nil
}

var _ jev.Judge = remoteJudge{}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func slug(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if !(ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}
