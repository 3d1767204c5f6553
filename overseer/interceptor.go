package overseer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

const (
	// versionChangeID marks runs started with the overseer. Runs that began
	// before the plugin was added replay without it.
	versionChangeID = VersionChangeID
	// noteHeader carries the process note to the next phase activity.
	noteHeader = "overseer-note"
	// stateHeader carries overseer state across continue-as-new.
	stateHeader = "overseer-state"
)

// Search attribute keys upserted when Options.SearchAttributes is set.
var (
	SearchAttributeStatus      = temporal.NewSearchAttributeKeyKeyword("OverseerStatus")
	SearchAttributeOnObjective = temporal.NewSearchAttributeKeyFloat64("OverseerOnObjective")
	SearchAttributePaused      = temporal.NewSearchAttributeKeyBool("OverseerPaused")
	// SearchAttributeGateSince is when the job's oldest open gate opened,
	// unset when none is open (Options.GateSearchAttribute): a query finds
	// the overdue gates, e.g. OverseerGateSince < '2026-12-01T00:00:00Z'.
	SearchAttributeGateSince = temporal.NewSearchAttributeKeyTime("OverseerGateSince")
	// SearchAttributeBudget is how near the job is to its budget
	// (Options.BudgetSearchAttribute): BudgetNear at BudgetWarnShare of a
	// bound, BudgetReached at it, unset below or without a budget. A list
	// of jobs over budget reads visibility alone.
	SearchAttributeBudget = temporal.NewSearchAttributeKeyKeyword("OverseerBudget")
)

// VersionChangeID is the change id of the version marker (workflow.GetVersion)
// that a run started under the plugin in observe or manage mode records in
// its first workflow task: its history needs the plugin to replay.
const VersionChangeID = "temporal-overseer"

// OpenJobsQuery is the visibility query clause that selects the jobs still
// open: running, or held by an operator with Temporal's Workflow Pause
// (ExecutionStatus Paused, servers from v1.30). It names the closed
// statuses rather than Paused, which servers before it refuse as a value.
const OpenJobsQuery = "ExecutionStatus NOT IN ('Completed', 'Failed', 'Canceled', 'Terminated', 'ContinuedAsNew', 'TimedOut')"

// NeedsPluginQuery is the visibility query clause that selects the open
// runs that started under the plugin in observe or manage mode (of
// workflowType, unless it is ""): their histories carry the overseer's
// version marker (TemporalChangeVersion), and they replay only on a worker
// that has the plugin, in mode off at least. Retiring the plugin: switch
// the workflow type to off, and remove the plugin once this finds no run.
// workflowType must hold no quote (visibility queries have no escape the
// servers agree on).
func NeedsPluginQuery(workflowType string) string {
	versions := make([]string, 0, runStructureLatest)
	for v := 1; v <= runStructureLatest; v++ {
		versions = append(versions, fmt.Sprintf("'%s-%d'", versionChangeID, v))
	}
	q := "TemporalChangeVersion IN (" + strings.Join(versions, ", ") + ") AND " + OpenJobsQuery
	if workflowType != "" {
		q += " AND WorkflowType = '" + workflowType + "'"
	}
	return q
}

type workerInterceptor struct {
	interceptor.WorkerInterceptorBase
	opts Options
	// circuit is the judge's on this worker, for the runs that ask it in
	// the background.
	circuit *judgeCircuit
	// dc writes and reads the overseer's payloads (codec.go).
	dc *workerConverter
}

var (
	_ interceptor.WorkerInterceptor           = (*workerInterceptor)(nil)
	_ interceptor.ActivityInboundInterceptor  = (*activityInbound)(nil)
	_ interceptor.WorkflowInboundInterceptor  = (*workflowInbound)(nil)
	_ interceptor.WorkflowOutboundInterceptor = (*workflowOutbound)(nil)
)

// NewWorkerInterceptor returns the bare worker interceptor for users who
// wire interceptors themselves. They must also register the Overseer
// activity with [RegisterActivities]. [NewPlugin] does both.
func NewWorkerInterceptor(opts Options) (interceptor.WorkerInterceptor, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &workerInterceptor{opts: o, circuit: newJudgeCircuit(), dc: &workerConverter{set: o.DataConverter}}, nil
}

func (w *workerInterceptor) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &activityInbound{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, dc: w.dc}
}

func (w *workerInterceptor) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &workflowInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, opts: w.opts, circuit: w.circuit, dc: w.dc}
}

// activityInbound makes the process note readable with ProcessNote.
type activityInbound struct {
	interceptor.ActivityInboundInterceptorBase
	dc *workerConverter
}

func (a *activityInbound) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	if p, ok := interceptor.Header(ctx)[noteHeader]; ok {
		if n, ok := a.dc.readNote(ctx, p); ok {
			ctx = context.WithValue(ctx, noteKey{}, n)
		}
	}
	return a.Next.ExecuteActivity(ctx, in)
}

type workflowInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	opts    Options
	circuit *judgeCircuit
	dc      *workerConverter
	// run is nil until ExecuteWorkflow decides the run is overseen.
	run *run
}

func (i *workflowInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&workflowOutbound{
		WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound},
		root:                            i,
	})
}

func (i *workflowInbound) ExecuteWorkflow(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) (any, error) {
	ctx = withWorkerConverter(ctx, i.dc)
	info := workflow.GetInfo(ctx)
	wfType := info.WorkflowType.Name
	modeOverride, modeErr := memoMode(ctx)
	off := modeErr == nil && i.opts.modeFor(wfType, modeOverride) == ModeOff
	// ModeOff writes nothing to history: no version marker (nor its
	// TemporalChangeVersion upsert), no pinned configuration. Replayed, such
	// a run has no version marker, so GetVersion (which records nothing
	// when replaying) sends it down the same untouched path as a run that
	// started before the plugin was added.
	version := workflow.DefaultVersion
	if !off || workflow.IsReplaying(ctx) {
		version = workflow.GetVersion(ctx, versionChangeID, workflow.DefaultVersion, runStructureLatest)
	}
	if version == workflow.DefaultVersion {
		if off {
			// Queries write nothing: an off run still says it is off.
			if err := registerStatusQuery(ctx, func() Status { return Status{Mode: ModeOff, Assessments: []Assessment{}} }); err != nil {
				return nil, err
			}
		}
		return i.Next.ExecuteWorkflow(ctx, in)
	}
	if modeErr != nil {
		return nil, temporal.NewNonRetryableApplicationError(modeErr.Error(), "OverseerInvalidMode", nil)
	}
	runBudget, budgetErr := budgetFromMemo(ctx)
	if budgetErr != nil {
		return nil, temporal.NewNonRetryableApplicationError(budgetErr.Error(), InvalidBudgetErrorType, nil)
	}
	var cfg runConfig
	pinned := workflow.SideEffect(ctx, func(workflow.Context) any {
		c := i.opts.runConfigFor(wfType, i.opts.modeFor(wfType, modeOverride))
		if runBudget != nil {
			c.Budget = runBudget
		}
		return c
	})
	if err := pinned.Get(&cfg); err != nil {
		return nil, fmt.Errorf("overseer: read pinned configuration: %w", err)
	}
	r := newRun(ctx, wfType, cfg, i.opts.Judge)
	r.runID = info.WorkflowExecution.RunID
	r.models, r.circuit, r.tel, r.redact = i.opts.Models, i.circuit, i.opts.Telemetry, i.opts.ContentRedactor
	r.restore(ctx, interceptor.WorkflowHeader(ctx)[stateHeader])
	if r.carriedPaused && r.cfg.SearchAttributes && workflow.GetVersion(ctx, carriedGateChangeID, workflow.DefaultVersion, 1) != workflow.DefaultVersion {
		// Continue-as-new copies the search attributes: say at once that
		// this run waits at no gate, not at its first boundary.
		r.publish(ctx)
	}
	if err := registerStatusQuery(ctx, r.status); err != nil {
		return nil, err
	}
	if cfg.Mode == ModeOff {
		// Pinned before ModeOff stopped writing to history.
		return i.Next.ExecuteWorkflow(ctx, in)
	}
	r.structure = version
	i.run = r
	ctx = workflow.WithValue(ctx, runKey{}, r)
	r.runCtx = ctx
	if version < runStructureV2 {
		return i.executeV1(ctx, in, r)
	}
	if err := r.registerResumeUpdate(ctx); err != nil {
		return nil, err
	}
	inbox := signalChannels(ctx)
	r.loop = true
	// See loop.go: the workflow's code runs on its own coroutine, this one
	// oversees its phases and receives the run's signals (until the run is
	// cancelled, as the first structure's listener did).
	code := i.startCode(ctx, in)
	// Waiting on a disconnected context lets the user's code handle its own
	// cancellation before we return.
	wait, _ := workflow.NewDisconnectedContext(ctx)
	signalled := func() bool { return ctx.Err() == nil && inbox.pending() }
	// ended: the workflow's code has returned and nothing holds the run's
	// end (holding).
	ended := func() bool { return code.done && !r.holding() }
	for {
		_ = workflow.Await(wait, func() bool { return ended() || r.aborted != nil || signalled() || r.hasReadyTask() })
		if signalled() {
			inbox.drain(ctx, r)
		}
		if r.aborted != nil {
			break
		}
		r.advance()
		if ended() {
			break
		}
	}
	return r.finishRun(wait, code.result, code.err)
}

// workflowCode is the workflow's own code, run on a coroutine of its own so
// that an abort at a gate can end the run wherever that code is blocked.
type workflowCode struct {
	result any
	err    error
	done   bool
}

func (i *workflowInbound) startCode(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput) *workflowCode {
	c := &workflowCode{}
	workflow.Go(ctx, func(ctx workflow.Context) {
		c.result, c.err = i.Next.ExecuteWorkflow(ctx, in)
		c.done = true
	})
	return c
}

// Release names this release of the plugin (CHANGELOG.md has a section
// per release; the corpus of histories each release recorded is under
// testsuite/conformance/testdata/corpus/RELEASE, and every later release
// replays it). `overseer --version` prints it.
const Release = "v0.2.0"

// The versions of versionChangeID: 1 is the first structure of an overseen
// run (a coroutine for the workflow's code, one listening for signals and
// one per phase in flight); runStructureV2 oversees the phases and receives
// the signals on the run's own coroutine (loop.go); runStructureV3 keeps
// out of the workflow's way (invisible.go): observe mode hands the
// workflow the SDK's own future of each phase, a held result is handed
// back as the activity returned it, the SDK's own activities are never
// phases, the workflow's GetInfo does not show the overseer's memo, and
// the summary's volatile fields are refreshed at most once per
// summaryRefresh of workflow time; runStructureV4 asks the judge and waits
// at the gate in the run's own context (run.verdictCtx), which nothing
// the workflow does to a phase's context cancels, lets observe mode go on
// past a Boundary while its judge answers, and offers no redo at a
// Boundary.
const (
	runStructureV2 = 2
	runStructureV3 = 3
	runStructureV4 = 4
	// runStructureLatest is the structure new runs record.
	runStructureLatest = runStructureV4
)

// executeV1 runs a run pinned to the first structure.
func (i *workflowInbound) executeV1(ctx workflow.Context, in *interceptor.ExecuteWorkflowInput, r *run) (any, error) {
	if err := r.listen(ctx); err != nil {
		return nil, err
	}
	code := i.startCode(ctx, in)
	wait, _ := workflow.NewDisconnectedContext(ctx)
	_ = workflow.Await(wait, func() bool { return code.done || r.aborted != nil })
	return r.finishRun(wait, code.result, code.err)
}

// finishRun ends a run whose workflow code has returned (or that a gate
// aborted).
func (r *run) finishRun(wait workflow.Context, result any, wfErr error) (any, error) {
	r.ended = true
	metricSpend(wait, spendOf(r.traj, 0), r.carriedSpend, r.aborted != nil, wfErr)
	if r.aborted != nil {
		r.endNotifications(wait) // tell the abort before the run ends
		return nil, abortError(*r.aborted)
	}
	// Record the last boundary's assessment before the run ends, unless the
	// judge is failing. This is the one wait observe mode has on a judge in
	// an activity: it delays the end of the run, never a phase.
	r.awaitAssessments(wait)
	r.settleRunBand(wait)
	if r.invisible() {
		r.publishSummary(wait) // the volatile fields it held back
	}
	r.endNotifications(wait)
	var can *workflow.ContinueAsNewError
	if errors.As(wfErr, &can) {
		r.abandonOpenGates(wait)
		r.carryOver(wait, can)
	}
	return result, wfErr
}

// abandonOpenGates closes the gates still open when the run continues as
// new: the workflow never awaited the phases they hold, so no resume can
// reach them, and neither this run's status nor its successor's may show
// them open (or offer to redo them).
//
// Abandoning wakes the gate's coroutine, which publishes that the job is
// not paused: commands that v0.0.9 and earlier did not send (they left
// such a gate open; the successor marks it abandoned, restore). So it is
// behind abandonGatesChangeID, recorded only when a gate is open; v0.1.0
// abandoned with no marker, and a history without one is taken for
// v0.1.0's when the run's pin is (pinnedWithRedoSafe).
func (r *run) abandonOpenGates(ctx workflow.Context) {
	if len(r.open) == 0 {
		return
	}
	if workflow.GetVersion(ctx, abandonGatesChangeID, workflow.DefaultVersion, 1) == workflow.DefaultVersion && !r.cfg.pinnedWithRedoSafe() {
		return
	}
	for _, g := range r.open {
		g.Abandoned = true
		g.clearDeadline()
		r.recordGate(*g)
	}
	r.open = nil
	r.syncGates(ctx)
}

func registerStatusQuery(ctx workflow.Context, status func() Status) error {
	err := workflow.SetQueryHandlerWithOptions(ctx, StatusQueryName, func() (Status, error) { return status(), nil },
		workflow.QueryHandlerOptions{Description: "The overseer's status of this job: band, P(on objective), " +
			"the open gate (gate_id, pause_reason, pending_note), gates, recent assessments and counters."})
	if err != nil {
		return fmt.Errorf("overseer: register %s query: %w", StatusQueryName, err)
	}
	return nil
}

type workflowOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	root *workflowInbound
}

func (o *workflowOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	r := o.root.run
	if r == nil || !r.cfg.isPhase(activityType) || (r.invisible() && sdkInternalActivity(activityType)) {
		return o.Next.ExecuteActivity(ctx, activityType, args...)
	}
	// A redo (redo.go) brings the held phase through again, with its own
	// note and the future the workflow already holds.
	var rd *redoing
	var note *Note
	if r.redoing != nil && r.redoing.activityType == activityType {
		rd, r.redoing = r.redoing, nil
		note = &rd.note
	} else {
		r.awaitGatesBeforePhase(ctx)
		note = r.takeNote()
	}
	if note != nil {
		// The worker's converter: the note is as private as the input
		// that carries it.
		if p, err := o.root.dc.writeNote(ctx, activityType, *note); err == nil {
			interceptor.WorkflowHeader(ctx)[noteHeader] = p
		} else {
			r.logger.Error("overseer: cannot pass the process note in a header", "error", err.Error())
		}
		if len(args) > 0 {
			if nr, ok := args[0].(NoteReceiver); ok {
				nr.SetProcessNote(*note)
			}
		}
	}
	started := workflow.Now(ctx)
	phase := o.Next.ExecuteActivity(ctx, activityType, args...)
	if r.traj.Shape == ShapeDeclared {
		// One call of a phase the workflow ends with Boundary.
		r.calls = append(r.calls, declaredCall{name: phaseName(activityType), f: phase})
		return phase
	}
	if r.loop {
		t := &boundaryTask{ctx: ctx, phase: phaseName(activityType), started: started, f: phase,
			activityType: activityType, args: args, attempt: 1, asIs: r.invisible()}
		if r.cfg.ContentWindow.On() {
			t.input = o.root.dc.inputPayloads(ctx, activityType, args)
		}
		if r.mayRedo(t.phase) {
			t.held = holdArgs(ctx, args)
		}
		if rd != nil {
			t.out, t.attempt = rd.out, rd.attempt
			r.tasks = append(r.tasks, t)
			return phase // the redo's caller holds no future of its own
		}
		if r.invisible() && (r.cfg.Mode == ModeObserve || t.held == nil) {
			// Nothing is held: the workflow gets the SDK's own future,
			// settled when and as the SDK settles it. A gate of a phase no
			// redo may run again holds the workflow's next phase and the
			// run's end instead (invisible.go).
			r.tasks = append(r.tasks, t)
			return phase
		}
		result, settle := workflow.NewFuture(ctx)
		t.out = settle
		r.tasks = append(r.tasks, t)
		return result
	}
	result, settle := workflow.NewFuture(ctx)
	workflow.Go(ctx, func(ctx workflow.Context) {
		r.boundary(ctx, phaseName(activityType), started, phase, func() { letThrough(ctx, settle, phase) })
	})
	return result
}

// ModeMemoKey is the memo field that sets the overseer mode of one run,
// overriding the mode of its workflow type: start a workflow with memo
// {"overseer.mode": "manage"} to manage just that job.
const ModeMemoKey = "overseer.mode"

// memoMode reads the run's mode override, with the worker's data
// converter when its codec encoded the memo (memoString).
func memoMode(ctx workflow.Context) (Mode, error) {
	s, ok, err := memoString(ctx, ModeMemoKey)
	if err != nil || !ok {
		return "", err
	}
	return ParseMode(s)
}

// phaseName is the activity type without its namespace prefix:
// "coro.code" is phase "code".
func phaseName(activityType string) string {
	if i := strings.LastIndexByte(activityType, '.'); i >= 0 && i < len(activityType)-1 {
		return activityType[i+1:]
	}
	return activityType
}

// carriedGateChangeID versions the upsert a run continued from a run
// paused at a gate makes at its start (OverseerPaused false); runs before
// it kept the copied true until their first boundary.
const carriedGateChangeID = "temporal-overseer/carried-gate"

// abandonGatesChangeID versions the abandonment of the gates open when a
// run continues as new (abandonOpenGates).
const abandonGatesChangeID = "temporal-overseer/abandon-gates"

// carriedState is what a run hands to its continue-as-new successor.
type carriedState struct {
	Status     Status     `json:"status"`
	Trajectory Trajectory `json:"trajectory"`
	Seq        int        `json:"seq"`
	Note       *Note      `json:"note,omitempty"`
	// Started is when the job's first run started: a budget's elapsed
	// time counts from it across continue-as-new. Budget is the run's
	// budget as it ended, raised at a gate or not.
	Started *time.Time `json:"started,omitempty"`
	Budget  *Budget    `json:"budget,omitempty"`
}

func (r *run) carryOver(ctx workflow.Context, can *workflow.ContinueAsNewError) {
	// The worker's converter: the status and trajectory are as private as
	// the run's own payloads.
	started := r.started(ctx)
	p, err := toWorkflowPayload(ctx, carriedState{Status: r.st, Trajectory: r.traj, Seq: r.seq, Note: r.note, Started: &started, Budget: r.cfg.Budget})
	if err != nil {
		r.logger.Error("overseer: cannot carry state across continue-as-new", "error", err)
		return
	}
	if can.Header == nil {
		can.Header = &commonpb.Header{}
	}
	if can.Header.Fields == nil {
		can.Header.Fields = map[string]*commonpb.Payload{}
	}
	can.Header.Fields[stateHeader] = p
}

func (r *run) restore(ctx workflow.Context, p *commonpb.Payload) {
	if p == nil {
		return
	}
	var c carriedState
	if err := fromWorkflowPayload(ctx, p, &c); err != nil {
		workflow.GetLogger(ctx).Warn("overseer: ignoring unreadable carried state", "error", err)
		return
	}
	c.Status.Mode = r.cfg.Mode
	r.carriedPaused = c.Status.Paused
	c.Status.Paused, c.Status.PausedSince, c.Status.PauseReason, c.Status.GateID = false, nil, "", ""
	for i, g := range c.Status.Gates {
		if g.Outcome() == "open" { // carried by a worker before abandonOpenGates
			c.Status.Gates[i].Abandoned = true
			c.Status.Gates[i].clearDeadline()
		}
	}
	r.st, r.traj, r.seq, r.applied, r.note = c.Status, c.Trajectory, c.Seq, c.Seq, c.Note
	r.carriedSpend = spendOf(c.Trajectory, 0)
	if c.Started != nil {
		r.jobStarted = *c.Started
	}
	switch {
	case r.cfg.Budget != nil && c.Budget != nil:
		// A budget a reviewer raised at a gate of an earlier run stays
		// raised: the job continues as new, not anew.
		raised := r.cfg.Budget.atLeast(*c.Budget)
		r.cfg.Budget = &raised
	case c.Budget != nil && r.budgetRulesOn(ctx, true):
		// The successor pins none (its memo or type sets none): the job's
		// budget is its predecessor's, raised or not.
		carried := *c.Budget
		r.cfg.Budget = &carried
	}
}

// modeFor is the mode a new run of wfType gets: off for the overseer's own
// workflows (OwnWorkflow), else the memo's override, else the options'
// mode for its type.
func (o Options) modeFor(wfType string, override Mode) Mode {
	if OwnWorkflow(wfType) {
		return ModeOff
	}
	if override != "" {
		return override
	}
	if m, ok := o.Modes[wfType]; ok {
		return m
	}
	return o.Mode
}

// OwnWorkflow says workflowType is one of the overseer's own workflows
// (named overseer.*: the learn loop's overseer.Learn, the notifier
// workflow), which have no phases to oversee and are never overseen: no
// assessment series is theirs.
func OwnWorkflow(workflowType string) bool { return strings.HasPrefix(workflowType, "overseer.") }
