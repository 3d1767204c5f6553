package supervision

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"

	"github.com/corohq/temporal-overseer/overseer"
)

// InterceptorOptions configure the activity interceptor.
type InterceptorOptions struct {
	// Supervisor judges the observations. Required. In ModeOff the
	// interceptor passes every activity through untouched.
	Supervisor *Supervisor
	// Schedule paces observations. If not set, DefaultSchedule().
	Schedule Schedule
	// Activities names the activity types to supervise. Required: only
	// designated long activities are supervised.
	Activities []string
	// Evidence is the default evidence source; an activity can set its own
	// with SetEvidenceSource. If neither is set, evidence is missing (which
	// never yields completion review).
	Evidence EvidenceSource
	// Observers receive every observation, in order, off the activity's
	// goroutine through a bounded queue: a slow or panicking observer never
	// affects the activity.
	Observers []func(Observation)
	// OnRecord receives the supervision.advice and supervision.<check>
	// records of every observation, through the same queue.
	OnRecord func(Record)
	// DisableWorkflowAdvice stops signalling advice to the workflow. If not
	// set, the workflow gets an overseer.InPhaseAdvice on the
	// overseer.InPhaseSignalName signal whenever the advice changes and for
	// the final observation.
	DisableWorkflowAdvice bool
	// Logger receives the warnings of the queue that runs the observer
	// callbacks for every activity (a callback that panicked, a queue that
	// is full). If not set, they are not logged. What concerns one activity
	// goes to that activity's own logger (activity.GetLogger).
	Logger log.Logger

	// clock is the time source; tests set it. If not set, the real clock.
	clock clock
}

// Interceptor is the worker interceptor that supervises designated long
// activities. Its observers run on a goroutine of their own, started with
// the first observation; Close stops it. NewPlugin does both for you.
type Interceptor struct {
	interceptor.WorkerInterceptorBase
	o InterceptorOptions
	q *dispatcher
}

var (
	_ interceptor.WorkerInterceptor           = (*Interceptor)(nil)
	_ interceptor.ActivityInboundInterceptor  = (*activityInbound)(nil)
	_ interceptor.ActivityOutboundInterceptor = (*activityOutbound)(nil)
	_ signaler                                = client.Client(nil)
)

// NewInterceptor returns the worker interceptor that supervises designated
// long activities. Prefer NewPlugin, which ties it to the worker's
// lifecycle; with worker.Options.Interceptors, call Close after the worker
// stopped.
func NewInterceptor(o InterceptorOptions) (*Interceptor, error) {
	if o.Supervisor == nil {
		return nil, fmt.Errorf("%w: InterceptorOptions.Supervisor is required", ErrInvalidConfig)
	}
	if len(o.Activities) == 0 && o.Supervisor.mode != ModeOff {
		return nil, fmt.Errorf("%w: InterceptorOptions.Activities must name the activities to supervise", ErrInvalidConfig)
	}
	if o.Schedule == (Schedule{}) {
		o.Schedule = DefaultSchedule()
	}
	if err := o.Schedule.validate(); err != nil {
		return nil, err
	}
	if o.clock == nil {
		o.clock = realClock{}
	}
	if o.Logger == nil {
		o.Logger = log.NewStructuredLogger(slog.New(slog.DiscardHandler))
	}
	return &Interceptor{o: o, q: newDispatcher(recordQueueSize, o.Logger)}, nil
}

// Close stops the observer goroutine after the callbacks already queued
// have run (waiting at most 10 s for them); observations after Close reach
// the workflow but no longer the observers. Call it once the worker has
// stopped. Safe to call more than once.
func (w *Interceptor) Close() { w.q.close(10 * time.Second) }

func (w *Interceptor) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &activityInbound{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, w: w}
}

type activityInbound struct {
	interceptor.ActivityInboundInterceptorBase
	w *Interceptor
}

func (a *activityInbound) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	return a.Next.Init(&activityOutbound{ActivityOutboundInterceptorBase: interceptor.ActivityOutboundInterceptorBase{Next: outbound}})
}

type invocationKey struct{}

// invocation is one supervised activity attempt.
type invocation struct {
	cap      *capture
	mu       sync.Mutex
	evidence EvidenceSource
}

func (a *activityInbound) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	o := a.w.o
	info := activity.GetInfo(ctx)
	if o.Supervisor.mode == ModeOff || !slices.Contains(o.Activities, info.ActivityType.Name) {
		return a.Next.ExecuteActivity(ctx, in)
	}
	inv := &invocation{cap: &capture{limit: o.Supervisor.limits.TextChars}, evidence: o.Evidence}
	if len(in.Args) > 0 {
		if t, ok := in.Args[0].(Tasker); ok {
			inv.cap.setTask(t.SupervisionTask())
		}
	}
	// Scope: namespace / workflow id, and a fresh id per activity attempt:
	// the host takes it from EvidenceRequest.Scope for its receipts.
	scope := activityScope(info.Namespace, info.WorkflowExecution.ID, newRunID())
	n := &notifier{w: a.w, info: info, client: activityClient(ctx), scope: scope, log: activity.GetLogger(ctx)}
	l := newLoop(ctx, &loop{
		sup: o.Supervisor, sched: o.Schedule, clock: o.clock, scope: scope, cap: inv.cap,
		evidence: func() EvidenceSource { inv.mu.Lock(); defer inv.mu.Unlock(); return inv.evidence },
		publish:  n.publish,
	})
	result, err := a.Next.ExecuteActivity(context.WithValue(ctx, invocationKey{}, inv), in)
	if err != nil {
		l.abort() // the error propagates unchanged and is never retried here
		return result, err
	}
	l.complete()
	return result, nil
}

type activityOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
}

// RecordHeartbeat counts every heartbeat of a supervised activity as an
// event (an Event detail gives it a type and text), then heartbeats as usual.
func (o *activityOutbound) RecordHeartbeat(ctx context.Context, details ...any) {
	if inv, ok := ctx.Value(invocationKey{}).(*invocation); ok {
		e := Event{Type: eventHeartbeat}
		if len(details) > 0 {
			switch d := details[0].(type) {
			case Event:
				e = d
			case *Event:
				e = *d
			}
		}
		inv.cap.event(e)
	}
	o.Next.RecordHeartbeat(ctx, details...)
}

// Tasker is implemented by a supervised activity's input to name its task
// (the original job the supervisor judges progress against).
type Tasker interface {
	SupervisionTask() string
}

// RecordEvent records one event of the running activity. It does nothing
// outside a supervised activity, so agents can call it unconditionally.
func RecordEvent(ctx context.Context, e Event) {
	if inv, ok := ctx.Value(invocationKey{}).(*invocation); ok {
		inv.cap.event(e)
	}
}

// SetTask sets the supervised activity's task.
func SetTask(ctx context.Context, task string) {
	if inv, ok := ctx.Value(invocationKey{}).(*invocation); ok {
		inv.cap.setTask(task)
	}
}

// SetEvidenceSource gives the running activity its own trusted evidence
// source, replacing the interceptor's default.
func SetEvidenceSource(ctx context.Context, src EvidenceSource) {
	if inv, ok := ctx.Value(invocationKey{}).(*invocation); ok {
		inv.mu.Lock()
		inv.evidence = src
		inv.mu.Unlock()
	}
}

// notifier hands observations to the observers and the workflow.
type notifier struct {
	w      *Interceptor
	info   activity.Info
	client signaler
	scope  Scope
	last   Advice
	// log is the activity's own logger.
	log log.Logger
}

type signaler interface {
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
}

func activityClient(ctx context.Context) (s signaler) {
	defer func() {
		if recover() != nil {
			s = nil // no client (e.g. some test environments)
		}
	}()
	if c := activity.GetClient(ctx); c != nil {
		return c
	}
	return nil
}

func (n *notifier) publish(obs Observation) {
	o := n.w.o
	for _, f := range o.Observers {
		n.w.q.submit(func() { f(obs) })
	}
	if o.OnRecord != nil {
		for _, r := range adviceRecords(n.w.o.Supervisor.version, obs) {
			n.w.q.submit(func() { o.OnRecord(r) })
		}
	}
	if o.DisableWorkflowAdvice || n.client == nil || (obs.Advice == n.last && !obs.Final) {
		return
	}
	n.last = obs.Advice
	sig := overseer.InPhaseAdvice{ActivityType: n.info.ActivityType.Name, ActivityID: n.info.ActivityID, RunID: n.scope.RunID,
		Assessment: obs.Assessment, Advice: string(obs.Advice), Status: string(obs.Decision.Status), Reason: string(obs.Decision.Reason),
		Superseded: obs.Superseded, ConsecutiveFailures: obs.ConsecutiveFailures, Final: obs.Final, At: o.clock.now().UTC()}
	if obs.Decision.Report != nil {
		sig.VerifiedRevision = obs.Decision.Report.VerifiedRevision
	}
	// Bounded: the activity's completion waits at most this long for the
	// final advice to reach the workflow.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := n.client.SignalWorkflow(ctx, n.info.WorkflowExecution.ID, n.info.WorkflowExecution.RunID, overseer.InPhaseSignalName, sig); err != nil {
		n.log.Warn("supervision: cannot signal advice to the workflow", "error", err)
	}
}

// adviceRecords turns an observation into its audit records: one
// supervision.advice record and, with a report, one supervision.<check>
// record per finding. Their elapsed is zero: no extra model request.
func adviceRecords(version string, obs Observation) []Record {
	run, n := obs.Scope.RunID, strconv.Itoa(obs.Assessment)
	recs := []Record{{Purpose: "supervision.advice", Version: version, Mode: ModeShadow, Status: obs.Decision.Status,
		Reason: string(obs.Decision.Reason), Recommendation: map[string]string{
			"runId": run, "assessment": n, "advice": string(obs.Advice),
			"superseded": strconv.FormatBool(obs.Superseded), "consecutiveFailures": strconv.Itoa(obs.ConsecutiveFailures)}}}
	if obs.Decision.Report == nil {
		return recs
	}
	for _, f := range obs.Decision.Report.Findings {
		status := StatusDecided
		if f.Truth == TruthUnknown {
			status = StatusInconclusive
		}
		recs = append(recs, Record{Purpose: "supervision." + f.Key, Version: version, Mode: ModeShadow, Status: status,
			Reason: string(f.Truth), Recommendation: map[string]string{
				"runId": run, "assessment": n, "probability": strconv.FormatFloat(f.Probability, 'f', -1, 64),
				"superseded": strconv.FormatBool(obs.Superseded)}})
	}
	return recs
}

// activityScope builds the scope of one activity attempt: a user or
// session that is blank or longer than maxScopeChars (Temporal allows longer workflow ids; an activity run
// outside a workflow has none) becomes "unscoped-<run id>" instead of
// failing every assessment.
func activityScope(namespace, workflowID, runID string) Scope {
	orUnscoped := func(v string) string {
		if strings.TrimSpace(v) == "" || utf8.RuneCountInString(v) > maxScopeChars {
			return "unscoped-" + runID
		}
		return v
	}
	return Scope{UserID: orUnscoped(namespace), SessionID: orUnscoped(workflowID), RunID: runID}
}

func newRunID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// recordQueueSize bounds the observer queue.
const recordQueueSize = 256

// dispatcher runs callbacks one at a time on its own goroutine, started
// with the first callback and stopped by close. A full queue drops the
// callback with a log line instead of blocking the worker; a panicking
// callback is swallowed.
type dispatcher struct {
	size   int
	logger log.Logger

	mu     sync.Mutex
	ch     chan func()
	closed bool
	done   chan struct{}
}

func newDispatcher(size int, logger log.Logger) *dispatcher {
	return &dispatcher{size: size, logger: logger}
}

func (d *dispatcher) run(ch <-chan func(), done chan<- struct{}) {
	defer close(done)
	for f := range ch {
		func() {
			defer func() {
				if p := recover(); p != nil {
					d.logger.Warn("supervision: observer panicked", "panic", p)
				}
			}()
			f()
		}()
	}
}

func (d *dispatcher) submit(f func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		d.logger.Warn("supervision: the worker has stopped; dropping an observation callback")
		return
	}
	if d.ch == nil {
		d.ch, d.done = make(chan func(), d.size), make(chan struct{})
		go d.run(d.ch, d.done)
	}
	select {
	case d.ch <- f:
	default:
		d.logger.Warn("supervision: observer queue full; dropping an observation callback")
	}
}

// close lets the queued callbacks run, then stops the goroutine. It waits
// at most wait for them: a stuck observer must not hang the worker's stop.
func (d *dispatcher) close(wait time.Duration) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.closed = true
	done := d.done
	if d.ch != nil {
		close(d.ch)
	}
	d.mu.Unlock()
	if done == nil {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		d.logger.Warn("supervision: observers still busy after the worker stopped; not waiting for them")
	}
}
