package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// Pattern is one workflow shape of the suite: a workflow as Temporal's
// own samples teach it, written without a thought for an overseer, and
// what its driver does to it while it runs.
type Pattern struct {
	// Name is the workflow type (registered under it) and names the case.
	Name     string
	Workflow func(workflow.Context, int) (string, error)
	// Input is the workflow's argument.
	Input int
	// Drive is what the driver sends, in order, each once the run has
	// reached the point it names.
	Drive []Step
	// Race, on a real server: the steps that make a phase's completion and
	// the other events land in one workflow task, taken while the
	// workflow's worker is stopped. Empty: the pattern runs with its
	// worker up throughout.
	Race []Step
	// DataConverter, if set, is every client's and worker's converter.
	DataConverter func() converter.DataConverter
	// SessionWorker: the worker runs sessions (worker.Options.EnableSessionWorker).
	SessionWorker bool
	// MocksUpsertMemo: the pattern's unit test mocks UpsertMemo.
	MocksUpsertMemo bool
	// CallsVary: which activities run depends on timing (a race's loser
	// may be cancelled before it starts), so the calls are not compared.
	CallsVary bool
	// Phases, if not 0, is how many phases the overseer counts in a run:
	// the workflow's own activities, never the SDK's.
	Phases int
}

// StepKind says what a Step does.
type StepKind int

// The driver's steps.
const (
	// StepSignal sends the signal Name with Arg.
	StepSignal StepKind = iota + 1
	// StepUpdate sends the update Name with Arg and records its outcome.
	StepUpdate
	// StepRelease lets the held activity of key Name complete.
	StepRelease
	// StepAwaitEvent waits until the run's history holds an event whose
	// description (Event) starts with Name: "ActivityTaskCompleted b",
	// "TimerFired", ….
	StepAwaitEvent
)

// Step is one thing the driver does.
type Step struct {
	Kind StepKind
	Name string
	Arg  int
}

// Activity names: the patterns' phases.
const (
	ActivityStep  = "Step"
	ActivityFail  = "Fail"
	ActivityFlaky = "Flaky"
	ActivityHeld  = "Held"
	ActivityBlock = "Block"
)

// Activities are the patterns' activities. One value serves one run (or
// one real server's runs): it counts the flaky attempts and holds the
// held activities until released.
type Activities struct {
	mu      sync.Mutex
	calls   []string
	flaky   map[string]int
	release map[string]chan struct{}
	// HoldAll: held activities wait for Release (a real server's race);
	// otherwise they complete at once.
	HoldAll bool
}

// NewActivities returns activities that complete at once.
func NewActivities() *Activities {
	return &Activities{flaky: map[string]int{}, release: map[string]chan struct{}{}}
}

// Register registers the activities on w under their names.
func (a *Activities) Register(w worker.ActivityRegistry) {
	w.RegisterActivityWithOptions(a.Step, activity.RegisterOptions{Name: ActivityStep})
	w.RegisterActivityWithOptions(a.Fail, activity.RegisterOptions{Name: ActivityFail})
	w.RegisterActivityWithOptions(a.Flaky, activity.RegisterOptions{Name: ActivityFlaky})
	w.RegisterActivityWithOptions(a.Held, activity.RegisterOptions{Name: ActivityHeld})
	w.RegisterActivityWithOptions(a.Block, activity.RegisterOptions{Name: ActivityBlock})
}

// Calls are the activity calls made so far, as "Name key", sorted: the
// order of concurrent calls is the scheduler's, not the workflow's.
func (a *Activities) Calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := slices.Clone(a.calls)
	sort.Strings(c)
	return c
}

func (a *Activities) called(name, key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls = append(a.calls, name+" "+key)
}

// Release lets the held activity key complete (at most once).
func (a *Activities) Release(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ch := a.channel(key)
	select {
	case <-ch:
	default:
		close(ch)
	}
}

func (a *Activities) channel(key string) chan struct{} {
	ch, ok := a.release[key]
	if !ok {
		ch = make(chan struct{})
		a.release[key] = ch
	}
	return ch
}

// Step does a step of work: "done <key>".
func (a *Activities) Step(_ context.Context, key string) (string, error) {
	a.called(ActivityStep, key)
	return "done " + key, nil
}

// Fail always fails, without retry.
func (a *Activities) Fail(_ context.Context, key string) (string, error) {
	a.called(ActivityFail, key)
	return "", temporal.NewNonRetryableApplicationError(key+" is unavailable", "Unavailable", nil)
}

// Flaky fails its first two calls for a key, then succeeds.
func (a *Activities) Flaky(_ context.Context, key string) (string, error) {
	a.called(ActivityFlaky, key)
	a.mu.Lock()
	a.flaky[key]++
	n := a.flaky[key]
	a.mu.Unlock()
	if n <= 2 {
		return "", temporal.NewApplicationError(fmt.Sprintf("%s failed (call %d)", key, n), "Flaky")
	}
	return fmt.Sprintf("%s on call %d", key, n), nil
}

// Held completes when released (HoldAll), heartbeating meanwhile, else at
// once.
func (a *Activities) Held(ctx context.Context, key string) (string, error) {
	a.called(ActivityHeld, key)
	if !a.HoldAll && key == "a" {
		// Where nothing is held (the SDK's test environment, which runs
		// activities at once), b completes first, as in the server's race.
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	if a.HoldAll {
		a.mu.Lock()
		ch := a.channel(key)
		a.mu.Unlock()
	held:
		for {
			activity.RecordHeartbeat(ctx)
			select {
			case <-ch:
				break held
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return "held " + key, nil
}

// Block works, heartbeating, until it is cancelled.
func (a *Activities) Block(ctx context.Context, key string) (string, error) {
	a.called(ActivityBlock, key)
	for {
		activity.RecordHeartbeat(ctx)
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func options(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		HeartbeatTimeout:    5 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
}

func call(ctx workflow.Context, name, key string) (string, error) {
	var s string
	err := workflow.ExecuteActivity(options(ctx), name, key).Get(ctx, &s)
	return s, err
}

// Saga books a car, fails to book a hotel and compensates: it completes.
func Saga(ctx workflow.Context, _ int) (string, error) {
	var compensations []string
	car, err := call(ctx, ActivityStep, "book-car")
	if err != nil {
		return "", err
	}
	compensations = append(compensations, "cancel-car")
	if _, err := call(ctx, ActivityFail, "book-hotel"); err != nil {
		for _, c := range slices.Backward(compensations) {
			if _, cerr := call(ctx, ActivityStep, c); cerr != nil {
				return "", cerr
			}
		}
		return car + "; hotel failed, compensated", nil
	}
	return "", errors.New("the hotel was booked")
}

// RetryLoop retries a flaky call in workflow code, a second apart.
func RetryLoop(ctx workflow.Context, _ int) (string, error) {
	for i := range 5 {
		s, err := call(ctx, ActivityFlaky, "charge")
		if err == nil {
			return fmt.Sprintf("%s after %d failures", s, i), nil
		}
		if err := workflow.Sleep(ctx, time.Second); err != nil {
			return "", err
		}
	}
	return "", errors.New("gave up")
}

// RaceTimer races a phase against a timer, then lets the phase finish.
func RaceTimer(ctx workflow.Context, _ int) (string, error) {
	won := ""
	phase := workflow.ExecuteActivity(options(ctx), ActivityHeld, "race")
	s := workflow.NewSelector(ctx)
	s.AddFuture(phase, func(workflow.Future) { won = "phase" })
	s.AddFuture(workflow.NewTimer(ctx, 2*time.Second), func(workflow.Future) { won = "timer" })
	s.Select(ctx)
	return won, phase.Get(ctx, nil)
}

// RaceSignal races a phase against a signal, then lets the phase finish.
func RaceSignal(ctx workflow.Context, _ int) (string, error) {
	won := ""
	phase := workflow.ExecuteActivity(options(ctx), ActivityHeld, "race")
	s := workflow.NewSelector(ctx)
	s.AddFuture(phase, func(workflow.Future) { won = "phase" })
	s.AddReceive(workflow.GetSignalChannel(ctx, "poke"), func(c workflow.ReceiveChannel, _ bool) {
		var v int
		c.Receive(ctx, &v)
		won = "signal"
	})
	s.Select(ctx)
	return won, phase.Get(ctx, nil)
}

// RaceUpdate races a phase against an update whose handler says whether
// the phase had completed when it ran; the update's validator refuses a
// negative value.
func RaceUpdate(ctx workflow.Context, _ int) (string, error) {
	phase := workflow.ExecuteActivity(options(ctx), ActivityHeld, "race")
	sawDone := ""
	if err := workflow.SetUpdateHandlerWithOptions(ctx, "bump", func(ctx workflow.Context, v int) (string, error) {
		sawDone = fmt.Sprintf("update saw the phase done: %t", phase.IsReady())
		return sawDone, nil
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, v int) error {
		if v < 0 {
			return fmt.Errorf("bump by %d: must not be negative", v)
		}
		return nil
	}}); err != nil {
		return "", err
	}
	if err := workflow.Await(ctx, func() bool { return sawDone != "" }); err != nil {
		return "", err
	}
	var s string
	if err := phase.Get(ctx, &s); err != nil {
		return "", err
	}
	return sawDone + "; " + s, nil
}

// RaceTwoPhases runs two phases at once, takes the first to complete,
// then waits for the other.
func RaceTwoPhases(ctx workflow.Context, _ int) (string, error) {
	var done []string
	s := workflow.NewSelector(ctx)
	for _, key := range []string{"a", "b"} {
		s.AddFuture(workflow.ExecuteActivity(options(ctx), ActivityHeld, key), func(f workflow.Future) {
			var v string
			_ = f.Get(ctx, &v)
			done = append(done, v)
		})
	}
	s.Select(ctx)
	s.Select(ctx)
	return "first: " + done[0], nil
}

// SessionWork runs two steps in a session.
func SessionWork(ctx workflow.Context, _ int) (string, error) {
	sctx, err := workflow.CreateSession(options(ctx), &workflow.SessionOptions{CreationTimeout: time.Minute, ExecutionTimeout: time.Minute})
	if err != nil {
		return "", fmt.Errorf("create session: %w", err)
	}
	defer workflow.CompleteSession(sctx)
	a, err := call(sctx, ActivityStep, "in-session-1")
	if err != nil {
		return "", err
	}
	b, err := call(sctx, ActivityStep, "in-session-2")
	if err != nil {
		return "", err
	}
	return a + ", " + b, nil
}

// SessionLost asks for a session on a task queue no session worker
// serves and handles the failure.
func SessionLost(ctx workflow.Context, _ int) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: "conformance-nobody", StartToCloseTimeout: time.Minute})
	_, err := workflow.CreateSession(ctx, &workflow.SessionOptions{CreationTimeout: 2 * time.Second, ExecutionTimeout: time.Minute})
	if err == nil {
		return "", errors.New("a session was created")
	}
	return "no session: handled", nil
}

// Converted runs two phases; the pattern sets a data converter of its own.
func Converted(ctx workflow.Context, n int) (string, error) {
	a, err := call(ctx, ActivityStep, fmt.Sprint("first-", n))
	if err != nil {
		return "", err
	}
	b, err := call(ctx, ActivityStep, "second")
	return a + ", " + b, err
}

// Memo upserts its own memo and reads it back.
func Memo(ctx workflow.Context, _ int) (string, error) {
	if err := workflow.UpsertMemo(ctx, map[string]any{"owner": "team-a"}); err != nil {
		return "", err
	}
	if _, err := call(ctx, ActivityStep, "work"); err != nil {
		return "", err
	}
	if err := workflow.UpsertMemo(ctx, map[string]any{"stage": "done"}); err != nil {
		return "", err
	}
	return "memo: " + memoKeys(ctx), nil
}

func memoKeys(ctx workflow.Context) string {
	var keys []string
	//workflowcheck:ignore the order is discarded by the sort below
	for k := range workflow.GetInfo(ctx).Memo.GetFields() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}

// Validated takes updates through a validator while its phase runs.
func Validated(ctx workflow.Context, _ int) (string, error) {
	total := 0
	if err := workflow.SetUpdateHandlerWithOptions(ctx, "add", func(ctx workflow.Context, v int) (int, error) {
		total += v
		return total, nil
	}, workflow.UpdateHandlerOptions{Validator: func(ctx workflow.Context, v int) error {
		if v < 0 {
			return fmt.Errorf("add %d: must not be negative", v)
		}
		return nil
	}}); err != nil {
		return "", err
	}
	s, err := call(ctx, ActivityStep, "work")
	if err != nil {
		return "", err
	}
	if err := workflow.Await(ctx, func() bool { return total >= 5 }); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s, total %d", s, total), nil
}

// Parent runs a child workflow and one phase of its own.
func Parent(ctx workflow.Context, _ int) (string, error) {
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{WorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID + "-child"})
	var child string
	if err := workflow.ExecuteChildWorkflow(cctx, "Child", 0).Get(ctx, &child); err != nil {
		return "", err
	}
	s, err := call(ctx, ActivityStep, "after-child")
	return child + "; " + s, err
}

// Child is Parent's child.
func Child(ctx workflow.Context, _ int) (string, error) {
	return call(ctx, ActivityStep, "in-child")
}

// Continued does a phase a run and continues as new twice.
func Continued(ctx workflow.Context, n int) (string, error) {
	s, err := call(ctx, ActivityStep, fmt.Sprint("run-", n))
	if err != nil {
		return "", err
	}
	if n < 2 {
		return "", workflow.NewContinueAsNewError(ctx, "Continued", n+1)
	}
	return s, nil
}

// LocalWork runs a local activity and a phase.
func LocalWork(ctx workflow.Context, _ int) (string, error) {
	lctx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: time.Minute})
	var l string
	if err := workflow.ExecuteLocalActivity(lctx, func(_ context.Context, s string) (string, error) { return "local " + s, nil }, "x").Get(ctx, &l); err != nil {
		return "", err
	}
	s, err := call(ctx, ActivityStep, "after-local")
	return l + ", " + s, err
}

// Cancelled cancels its phase after a second of workflow time.
func Cancelled(ctx workflow.Context, _ int) (string, error) {
	pctx, cancel := workflow.WithCancel(options(ctx))
	pctx = workflow.WithWaitForCancellation(pctx, true)
	workflow.Go(ctx, func(ctx workflow.Context) {
		_ = workflow.Sleep(ctx, time.Second)
		cancel()
	})
	err := workflow.ExecuteActivity(pctx, ActivityBlock, "long").Get(ctx, nil)
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) {
		return "phase cancelled", nil
	}
	return "", fmt.Errorf("the phase was not cancelled: %v", err)
}

// PhaseScoped runs each of three phases in a context of its own that a
// helper cancels as it returns (pctx, cancel := workflow.WithCancel(ctx);
// defer cancel()), as a workflow that bounds each step does: the phase's
// context is cancelled as soon as the workflow has its result.
func PhaseScoped(ctx workflow.Context, _ int) (string, error) {
	step := func(key string) (string, error) {
		pctx, cancel := workflow.WithCancel(ctx)
		defer cancel()
		return call(pctx, ActivityStep, key)
	}
	var done []string
	for _, key := range []string{"spec", "code", "test"} {
		s, err := step(key)
		if err != nil {
			return "", err
		}
		done = append(done, s)
	}
	return strings.Join(done, ", "), nil
}

// RaceCancelsTheLoser runs two phases in one context, takes the first to
// complete and cancels that context to stop the other, then runs a last
// phase.
func RaceCancelsTheLoser(ctx workflow.Context, _ int) (string, error) {
	rctx, cancel := workflow.WithCancel(options(ctx))
	fast := workflow.ExecuteActivity(rctx, ActivityStep, "fast")
	// The loser is held a while (Held); the workflow waits for its
	// cancellation to take effect, however it ends, before going on.
	slow := workflow.ExecuteActivity(workflow.WithWaitForCancellation(rctx, true), ActivityHeld, "a")
	won := ""
	s := workflow.NewSelector(ctx)
	s.AddFuture(fast, func(f workflow.Future) { _ = f.Get(ctx, &won) })
	s.AddFuture(slow, func(f workflow.Future) { won = "slow" })
	s.Select(ctx)
	cancel()
	_ = slow.Get(ctx, nil)
	last, err := call(ctx, ActivityStep, "after-race")
	return "won: " + won + "; " + last, err
}

// SessionThenStep runs one phase in a session that a deferred
// workflow.CompleteSession ends as its helper returns, then a phase
// outside it: completing the session cancels the context the session's
// last phase ran in.
func SessionThenStep(ctx workflow.Context, _ int) (string, error) {
	inSession := func() (string, error) {
		sctx, err := workflow.CreateSession(options(ctx), &workflow.SessionOptions{CreationTimeout: time.Minute, ExecutionTimeout: time.Minute})
		if err != nil {
			return "", fmt.Errorf("create session: %w", err)
		}
		defer workflow.CompleteSession(sctx)
		return call(sctx, ActivityStep, "in-session")
	}
	a, err := inSession()
	if err != nil {
		return "", err
	}
	b, err := call(ctx, ActivityStep, "after-session")
	return a + ", " + b, err
}

// Info reads its own workflow info (history length aside).
func Info(ctx workflow.Context, _ int) (string, error) {
	if _, err := call(ctx, ActivityStep, "work"); err != nil {
		return "", err
	}
	i := workflow.GetInfo(ctx)
	return fmt.Sprintf("type %s, attempt %d, memo [%s], continued %t", i.WorkflowType.Name, i.Attempt, memoKeys(ctx),
		i.ContinuedExecutionRunID != ""), nil
}

// Patterns are the suite's patterns.
func Patterns() []Pattern {
	release := func(key string) []Step {
		return []Step{{Kind: StepRelease, Name: key}, {Kind: StepAwaitEvent, Name: "ActivityTaskCompleted " + key}}
	}
	return []Pattern{
		{Name: "Saga", Workflow: Saga, Phases: 3},
		{Name: "RetryLoop", Workflow: RetryLoop},
		{Name: "RaceTimer", Workflow: RaceTimer,
			Race: append(release("race"), Step{Kind: StepAwaitEvent, Name: "TimerFired"})},
		{Name: "RaceSignal", Workflow: RaceSignal, Drive: []Step{{Kind: StepSignal, Name: "poke", Arg: 1}},
			Race: append(release("race"), Step{Kind: StepSignal, Name: "poke", Arg: 1}, Step{Kind: StepAwaitEvent, Name: "WorkflowExecutionSignaled"})},
		{Name: "RaceUpdate", Workflow: RaceUpdate, Drive: []Step{{Kind: StepUpdate, Name: "bump", Arg: -1}, {Kind: StepUpdate, Name: "bump", Arg: 1}},
			Race: append(release("race"), Step{Kind: StepUpdate, Name: "bump", Arg: 1})},
		{Name: "RaceTwoPhases", Workflow: RaceTwoPhases, Race: append(release("b"), release("a")...)},
		{Name: "SessionWork", Workflow: SessionWork, SessionWorker: true, Phases: 2},
		{Name: "SessionLost", Workflow: SessionLost, Phases: 0},
		{Name: "HandWrittenConverter", Workflow: Converted, Input: 7, DataConverter: func() converter.DataConverter { return HandWrittenConverter{} }},
		{Name: "ContextBoundCodec", Workflow: Converted, Input: 8, DataConverter: contextBoundConverter},
		{Name: "Memo", Workflow: Memo, MocksUpsertMemo: true},
		{Name: "Validated", Workflow: Validated, Drive: []Step{{Kind: StepUpdate, Name: "add", Arg: -3}, {Kind: StepUpdate, Name: "add", Arg: 5}}},
		{Name: "Parent", Workflow: Parent},
		{Name: "Continued", Workflow: Continued},
		{Name: "LocalWork", Workflow: LocalWork},
		{Name: "Cancelled", Workflow: Cancelled},
		{Name: "Info", Workflow: Info},
		{Name: "PhaseScoped", Workflow: PhaseScoped, Phases: 3},
		{Name: "RaceCancelsTheLoser", Workflow: RaceCancelsTheLoser, CallsVary: true},
		{Name: "SessionThenStep", Workflow: SessionThenStep, SessionWorker: true, Phases: 2},
	}
}

// Register registers p's workflow (and Parent's child) on w.
func (p Pattern) Register(w worker.WorkflowRegistry) {
	w.RegisterWorkflowWithOptions(p.Workflow, workflow.RegisterOptions{Name: p.Name})
	if p.Name == "Parent" {
		w.RegisterWorkflowWithOptions(Child, workflow.RegisterOptions{Name: "Child"})
	}
}
