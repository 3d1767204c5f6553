package overseer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// How PlacementBackground runs a judge that is not
// pure on the worker that runs the workflow, outside workflow code and
// outside any workflow task:
//
//   - at a boundary, one side effect starts the judge call in a goroutine
//     of this worker process and hands back the answers of the calls that
//     finished since the previous boundary; they are recorded in that side
//     effect's marker (one MarkerRecorded event per boundary), so a replay
//     reads them back and never calls the judge;
//   - at the run's end, the calls still in flight are awaited in local
//     activities (one marker each; the run is over, nothing else waits),
//     which adopt the call this process already runs, or ask the judge
//     again when the call was lost (the run moved to another worker).
//
// Nothing waits for the judge before the run's end: no task queue, no
// activity dispatch, no extra workflow task, and a hanging judge holds no
// phase. The price is freshness: a boundary's answer reaches the status at
// the next boundary (or the run's end).

// The placement of a judge that is not pure in observe mode, by default.
const (
	// PlacementBackground runs the judge on the worker that runs the
	// workflow, outside workflow code and outside any workflow task: the
	// call starts at the boundary and its answer is recorded at the next
	// boundary, in the one side-effect marker each boundary writes; at the
	// run's end a local activity (one marker) waits for the last one. No
	// task queue, no extra workflow task, and a slow or hanging judge holds
	// no phase; a boundary's answer reaches the status one boundary later.
	// It is for observe mode: in manage mode, where the verdict is waited
	// for, it means PlacementLocalActivity.
	PlacementBackground Placement = "background"
)

// backgroundKind is backgroundAnswers' Kind.
const backgroundKind = "overseer.background/v1"

// backgroundAnswers is what a boundary's side effect records: the answers
// of the background calls that had finished.
type backgroundAnswers struct {
	Kind    string             `json:"kind"`
	Answers []backgroundAnswer `json:"answers,omitempty"`
	// Failing is set at a run's end (runStructureV2) when the judge's
	// circuit on this worker is open: why the run does not wait for the
	// calls still in flight.
	Failing string `json:"failing,omitempty"`
}

// backgroundAnswer is one finished call: its output, or its error with the
// error's kind (one of the errorKind* of metrics.go) and, for application
// errors, their type.
type backgroundAnswer struct {
	Seq       int           `json:"seq"`
	Output    *AssessOutput `json:"output,omitempty"`
	Error     string        `json:"error,omitempty"`
	ErrorType string        `json:"error_type,omitempty"`
	Timeout   bool          `json:"timeout,omitempty"`
}

// BackgroundRef names a background call of a run. The Overseer activity
// given one adopts the call when this process runs it (see
// [PlacementBackground]); otherwise it asks the judge itself.
type BackgroundRef struct {
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	// Calls is the run's pinned runConfig.BackgroundCalls: unique even where
	// run ids are not (the SDK's test environment).
	Calls string `json:"calls"`
	Seq   int    `json:"seq"`
}

// backgroundPending is a background call the run waits for.
type backgroundPending struct {
	seq int
	in  AssessInput
}

// background is this process' background calls, by run and seq. Calls are
// deleted when their answer is recorded; one nobody collects (its run
// ended elsewhere) is dropped at the first sweep (backgroundSweep) a
// minute after its budget.
var background = &backgroundCalls{calls: map[BackgroundRef]*backgroundCall{}}

type backgroundCalls struct {
	mu    sync.Mutex
	calls map[BackgroundRef]*backgroundCall
	// swept is when calls was last swept for calls nobody collects.
	swept time.Time
}

// circuitThreshold is how many attempts in a row a judge asked in the
// background must fail on this worker for its circuit to open.
const circuitThreshold = 3

// JudgeFailingErrorType is the type of the error a boundary asked in the
// background is recorded with when the run ended without waiting for its
// judge, whose circuit was open.
const JudgeFailingErrorType = "OverseerJudgeFailing"

// judgeCircuit is what this worker process has seen of the judge it asks in
// the background (one circuit per plugin): how many of its latest attempts
// failed in a row, timing out or with an error that is retried. At
// circuitThreshold the circuit opens, and a run's end no longer waits for
// that judge's calls: a judge that hangs would hold every observed job's
// end for its whole budget (AssessTotalTimeout) although no phase waits
// for it. The next answer closes the circuit. Runs keep asking the judge
// at every boundary meanwhile, which is how it closes. A run reads the
// circuit only at its end, in the end's side effect (collect) and its
// local activities (adopt), so what it decided is in their markers and
// replays. Fail-open: a boundary not waited for is
// recorded as not assessed, with the reason.
type judgeCircuit struct {
	failed int
	last   string
	// open is closed while the circuit is open.
	open chan struct{}
}

func newJudgeCircuit() *judgeCircuit { return &judgeCircuit{open: make(chan struct{})} }

// isOpen says the circuit is open; a nil circuit, which nothing reports
// to, never is. backgroundCalls.mu is held.
func (c *judgeCircuit) isOpen() bool { return c != nil && c.failed >= circuitThreshold }

// report records the outcome of one attempt of a judge's call. A refusal
// that is not retried (an invalid answer, a rejected request) ends its
// call at once, so nothing would wait for it: it leaves the circuit as it
// is.
func (b *backgroundCalls) report(c *judgeCircuit, err error) {
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.NonRetryable() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err == nil {
		if c.isOpen() {
			c.open = make(chan struct{})
		}
		c.failed, c.last = 0, ""
		return
	}
	c.failed++
	c.last = err.Error()
	if c.failed == circuitThreshold {
		close(c.open)
	}
}

// failing returns why a run's end must not wait for c's judge, when c is
// open.
func (b *backgroundCalls) failing(c *judgeCircuit) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !c.isOpen() {
		return "", false
	}
	return c.why(), true
}

// why says why a run's end did not wait for a call of c's judge.
// backgroundCalls.mu is held, so that the count and the last error are
// read together.
func (c *judgeCircuit) why() string {
	return fmt.Sprintf("not assessed: the run ended without waiting for the judge, whose last %d attempts on this worker failed (last: %s)",
		c.failed, trajectory.Clip(c.last, 300))
}

// backgroundSweep is how often exchange sweeps the calls: a sweep visits
// every call of the process (under load, hundreds), so not at every
// boundary.
const backgroundSweep = 10 * time.Second

type backgroundCall struct {
	done     chan struct{}
	answer   backgroundAnswer
	deadline time.Time
	// circuit is its judge's: each attempt reports to it.
	circuit *judgeCircuit
}

// exchange starts the calls of pending that this process does not run and
// returns the answers of those that have finished. It runs inside a side
// effect: never on replay.
func (b *backgroundCalls) exchange(run BackgroundRef, pending []backgroundPending, judge jev.Judge, circuit *judgeCircuit, cfg runConfig) backgroundAnswers {
	got := backgroundAnswers{Kind: backgroundKind}
	b.mu.Lock()
	defer b.mu.Unlock()
	if now := time.Now(); now.Sub(b.swept) >= backgroundSweep {
		b.swept = now
		for ref, c := range b.calls {
			if now.After(c.deadline.Add(time.Minute)) {
				delete(b.calls, ref)
			}
		}
	}
	for _, p := range pending {
		ref := run
		ref.Seq = p.seq
		c, ok := b.calls[ref]
		if !ok {
			// Asked at this boundary: never taken in the exchange that
			// started it.
			b.calls[ref] = startBackground(judge, circuit, p.in, cfg)
			continue
		}
		if a, ok := b.take(ref, c); ok {
			got.Answers = append(got.Answers, a)
		}
	}
	return got
}

// takeFinished returns the answers of the calls of pending that have
// finished, and forgets those calls. b.mu is held.
func (b *backgroundCalls) takeFinished(run BackgroundRef, pending []backgroundPending) []backgroundAnswer {
	var answers []backgroundAnswer
	for _, p := range pending {
		ref := run
		ref.Seq = p.seq
		if c, ok := b.calls[ref]; ok {
			if a, ok := b.take(ref, c); ok {
				answers = append(answers, a)
			}
		}
	}
	return answers
}

// take returns the answer of c, the call ref names, and forgets it, if it
// has finished. b.mu is held.
func (b *backgroundCalls) take(ref BackgroundRef, c *backgroundCall) (backgroundAnswer, bool) {
	select {
	case <-c.done:
		a := c.answer
		a.Seq = ref.Seq
		delete(b.calls, ref)
		return a, true
	default:
		return backgroundAnswer{}, false
	}
}

// adopt waits for the call ref names, if this process runs it: ok is false
// when it does not. The call is forgotten once it has answered.
func (b *backgroundCalls) adopt(ctx context.Context, ref BackgroundRef) (AssessOutput, error, bool) {
	b.mu.Lock()
	c, ok := b.calls[ref]
	var open <-chan struct{}
	if ok {
		open = c.circuit.open
	}
	b.mu.Unlock()
	if !ok {
		return AssessOutput{}, nil, false
	}
	select {
	case <-c.done:
	case <-open:
		select {
		case <-c.done: // it answered all the same
		default:
			b.mu.Lock()
			why := c.circuit.why()
			b.mu.Unlock()
			return AssessOutput{}, temporal.NewNonRetryableApplicationError(why, JudgeFailingErrorType, nil), true
		}
	case <-ctx.Done():
		return AssessOutput{}, ctx.Err(), true // retried by the activity, which adopts it again
	}
	b.mu.Lock()
	delete(b.calls, ref)
	b.mu.Unlock()
	a := c.answer
	if a.Output != nil {
		return *a.Output, nil, true
	}
	// The call has had all its attempts: do not retry it.
	t := a.ErrorType
	if t == "" {
		t = "OverseerJudgeError"
	}
	return AssessOutput{}, temporal.NewNonRetryableApplicationError(a.Error, t, nil), true
}

// startBackground calls judge in a goroutine with the Overseer activity's
// policy: attempts of at most AssessTimeout each, 1 s then 2 s apart, all
// within totalAssessTimeout; answers that are invalid or rejected are not
// retried.
func startBackground(judge jev.Judge, circuit *judgeCircuit, in AssessInput, cfg runConfig) *backgroundCall {
	total := cfg.totalAssessTimeout()
	c := &backgroundCall{done: make(chan struct{}), deadline: time.Now().Add(total), circuit: circuit}
	go func() {
		defer close(c.done)
		ctx, cancel := context.WithDeadline(context.Background(), c.deadline)
		defer cancel()
		c.answer = callJudge(ctx, judge, in, cfg.AssessTimeout, circuit)
	}()
	return c
}

func callJudge(ctx context.Context, judge jev.Judge, in AssessInput, attempt time.Duration, circuit *judgeCircuit) (a backgroundAnswer) {
	defer func() {
		if p := recover(); p != nil {
			a = backgroundAnswer{Error: fmt.Sprintf("overseer.assess: judge panicked: %v", p)}
		}
	}()
	backoff := assessBackoff
	for n := 1; ; n++ {
		actx, cancel := context.WithTimeout(ctx, attempt)
		out, err := decide(actx, judge, in)
		timedOut := actx.Err() != nil
		cancel()
		background.report(circuit, err)
		if err == nil {
			return backgroundAnswer{Output: &out}
		}
		a = backgroundAnswer{Error: err.Error(), Timeout: timedOut}
		var app *temporal.ApplicationError
		if errors.As(err, &app) {
			a.ErrorType = app.Type()
			if app.NonRetryable() {
				return a
			}
		}
		if n == assessAttempts {
			return a
		}
		select {
		case <-time.After(backoff):
			backoff *= 2
		case <-ctx.Done():
			a.Timeout = true
			return a
		}
	}
}

// err rebuilds the error of a failed answer, for the status and metrics.
func (a backgroundAnswer) err() error {
	switch {
	case a.Output != nil:
		return nil
	case a.ErrorType != "":
		return temporal.NewNonRetryableApplicationError(a.Error, a.ErrorType, nil)
	case a.Timeout:
		return temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_START_TO_CLOSE, errors.New(a.Error))
	}
	return errors.New(a.Error)
}

func (r *run) ref(ctx workflow.Context) BackgroundRef {
	info := workflow.GetInfo(ctx)
	return BackgroundRef{WorkflowID: info.WorkflowExecution.ID, RunID: info.WorkflowExecution.RunID, Calls: r.cfg.BackgroundCalls}
}

// newCallsID is a new run's runConfig.BackgroundCalls.
func newCallsID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// assessInBackground starts this boundary's judge call in the background
// and records the answers of earlier calls that have finished: one side
// effect, never a wait.
func (r *run) assessInBackground(ctx workflow.Context, rec Assessment, in AssessInput) {
	in.Trajectory = r.traj.Clone()
	r.inFlight++
	r.pending = append(r.pending, rec)
	r.background = append(r.background, backgroundPending{seq: rec.Seq, in: in})
	// SideEffect runs the function inline, or not at all on replay:
	// r.background needs no copy.
	run := r.ref(ctx)
	var got backgroundAnswers
	err := workflow.SideEffect(ctx, func(workflow.Context) any {
		return background.exchange(run, r.background, r.judge, r.circuit, r.cfg)
	}).Get(&got)
	if err != nil {
		r.logger.Warn("overseer: read the recorded background answers", "error", err.Error())
		return
	}
	for _, a := range got.Answers {
		r.land(ctx, a.Seq, a.Output, a.err())
	}
}

// land records the answer of the background call seq.
func (r *run) land(ctx workflow.Context, seq int, out *AssessOutput, err error) {
	i := -1
	for k, p := range r.pending {
		if p.Seq == seq {
			i = k
		}
	}
	if i < 0 || r.abandoned {
		return // recorded already (or as not assessed)
	}
	rec := r.pending[i]
	r.pending = append(r.pending[:i:i], r.pending[i+1:]...)
	var traj Trajectory // the one the judge was asked about
	for k, p := range r.background {
		if p.seq == seq {
			traj = p.in.Trajectory
			r.background = append(r.background[:k:k], r.background[k+1:]...)
			break
		}
	}
	r.inFlight--
	var o AssessOutput
	if out != nil {
		o = *out
	}
	r.finish(ctx, rec, traj, o, err)
}

// collect returns, at a run's end, the answers of the calls of pending
// that have finished and, when circuit is open, why not to wait for the
// others. It runs inside a side effect: never on replay.
func (b *backgroundCalls) collect(run BackgroundRef, pending []backgroundPending, circuit *judgeCircuit) backgroundAnswers {
	got := backgroundAnswers{Kind: backgroundKind}
	b.mu.Lock()
	defer b.mu.Unlock()
	got.Answers = b.takeFinished(run, pending)
	if len(got.Answers) < len(pending) && circuit.isOpen() {
		got.Failing = circuit.why()
	}
	return got
}

// awaitBackground starts, at the run's end, a local activity for each
// background call still in flight; each lands its answer when it closes.
// A run of runStructureV2 first records, in one side effect, the answers
// that came meanwhile and whether the judge's circuit is open: then it
// returns why, starts nothing, and the run does not wait.
func (r *run) awaitBackground(ctx workflow.Context) (failing string) {
	if r.loop && len(r.background) > 0 {
		run := r.ref(ctx)
		var got backgroundAnswers
		err := workflow.SideEffect(ctx, func(workflow.Context) any {
			return background.collect(run, r.background, r.circuit)
		}).Get(&got)
		if err != nil {
			r.logger.Warn("overseer: read the recorded background answers", "error", err.Error())
		}
		for _, a := range got.Answers {
			r.land(ctx, a.Seq, a.Output, a.err())
		}
		if got.Failing != "" {
			return got.Failing
		}
	}
	run := r.ref(ctx)
	for _, p := range r.background {
		in := p.in
		ref := run
		ref.Seq = p.seq
		in.Background = &ref
		f := r.executeAssess(ctx, in, true)
		seq := p.seq
		workflow.Go(ctx, func(ctx workflow.Context) {
			var out AssessOutput
			err := f.Get(ctx, &out)
			if err != nil {
				r.land(ctx, seq, nil, err)
				return
			}
			r.land(ctx, seq, &out, nil)
		})
	}
	return ""
}
