package supervision

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

var _ clock = (*fakeClock)(nil)

// fakeClock moves only when the test says so.
type fakeClock struct {
	mu      sync.Mutex
	at      time.Time
	tickers []*fakeTicker
	sent    int // ticks delivered to a ticker's channel
}

type fakeTicker struct {
	clock   *fakeClock
	ch      chan time.Time
	every   time.Duration
	next    time.Time
	stopped bool
}

func (t *fakeTicker) c() <-chan time.Time { return t.ch }
func (t *fakeTicker) stop() {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	t.stopped = true
}

func newFakeClock() *fakeClock { return &fakeClock{at: time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.at }

func (c *fakeClock) newTicker(d time.Duration) ticker {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTicker{clock: c, ch: make(chan time.Time, 1), every: d, next: c.at.Add(d)}
	c.tickers = append(c.tickers, t)
	return t
}

// Advance moves time on and delivers due ticks (dropping them like a real
// ticker when the previous one was not taken).
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.at.Add(d)
	for _, t := range c.tickers {
		for !t.stopped && !t.next.After(c.at) {
			select {
			case t.ch <- t.next:
				c.sent++
			default:
			}
			t.next = t.next.Add(t.every)
		}
	}
}

// gateJudge answers every check with fixed probabilities; while held it
// blocks each call until released, and it fails calls while failing.
type gateJudge struct {
	mu       sync.Mutex
	calls    int
	inFlight int
	overlap  bool
	hold     chan struct{}
	entered  chan struct{}
	fail     bool
	states   []string
}

func newGateJudge() *gateJudge { return &gateJudge{entered: make(chan struct{}, 100)} }

func (g *gateJudge) Decide(ctx context.Context, req jev.Request) (*jev.Response, error) {
	g.mu.Lock()
	g.calls++
	g.inFlight++
	if g.inFlight > 1 {
		g.overlap = true
	}
	hold, fail := g.hold, g.fail
	g.states = append(g.states, string(req.State))
	g.mu.Unlock()
	defer func() { g.mu.Lock(); g.inFlight--; g.mu.Unlock() }()
	g.entered <- struct{}{}
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if fail {
		return nil, errors.New("judge down")
	}
	resp := &jev.Response{ModelVersion: "gate", Answers: map[string]jev.Answer{}}
	for k := range req.Questions {
		p := 0.05
		if strings.Contains(k, CheckImplementationComplete) || strings.Contains(k, CheckMeaningfulProgress) {
			p = 0.5
		}
		resp.Answers[k] = jev.Answer{Probability: jev.Prob(p)}
	}
	return resp, nil
}

func (g *gateJudge) Calls() int { g.mu.Lock(); defer g.mu.Unlock(); return g.calls }

type harness struct {
	t       *testing.T
	clock   *fakeClock
	judge   *gateJudge
	loop    *loop
	obs     chan Observation
	handled atomic.Int64 // ticks the loop dropped or processed
}

func newHarness(t *testing.T, sched Schedule, src EvidenceSource) *harness {
	t.Helper()
	h := &harness{t: t, clock: newFakeClock(), judge: newGateJudge(), obs: make(chan Observation, 100)}
	th, _ := NewThresholds(0.2, 0.8)
	sup, err := New(Options{Mode: ModeShadow, Judge: h.judge, Thresholds: th, Budget: jev.MaxBudget})
	require.NoError(t, err)
	c := &capture{limit: DefaultLimits().TextChars}
	c.setTask("Fix the export")
	h.loop = newLoop(context.Background(), &loop{sup: sup, sched: sched, clock: h.clock,
		scope: Scope{UserID: "ns", SessionID: "wf", RunID: "run-1"}, cap: c,
		evidence: func() EvidenceSource { return src }, publish: func(o Observation) { h.obs <- o },
		tickHandled: func() { h.handled.Add(1) }})
	return h
}

func (h *harness) next() Observation {
	h.t.Helper()
	select {
	case o := <-h.obs:
		return o
	case <-time.After(10 * time.Second):
		h.t.Fatal("no observation within 10s")
		return Observation{}
	}
}

func (h *harness) none() {
	h.t.Helper()
	select {
	case o := <-h.obs:
		h.t.Fatalf("unexpected observation %+v", o)
	default:
	}
}

// tick advances the clock by d and waits until the loop has handled every
// tick delivered so far (dropped it, or returned from its process()), so
// that a tick that published nothing is known to have been gated.
func (h *harness) tick(d time.Duration) {
	h.t.Helper()
	h.clock.Advance(d)
	h.settle()
}

// settle waits until the loop has handled every tick delivered so far.
func (h *harness) settle() {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for h.handled.Load() < int64(h.sentTicks()) {
		if time.Now().After(deadline) {
			h.t.Fatal("tick not handled")
		}
		time.Sleep(time.Millisecond) // polling interval
	}
}

func (h *harness) sentTicks() int {
	h.clock.mu.Lock()
	defer h.clock.mu.Unlock()
	return h.clock.sent
}

func (h *harness) completed() bool {
	h.loop.cap.mu.Lock()
	defer h.loop.cap.mu.Unlock()
	return h.loop.cap.complete
}

// tickersStopped reports whether every ticker the loop made was stopped.
func (h *harness) tickersStopped() bool {
	h.clock.mu.Lock()
	defer h.clock.mu.Unlock()
	for _, t := range h.clock.tickers {
		if !t.stopped {
			return false
		}
	}
	return len(h.clock.tickers) > 0
}

var testSchedule = Schedule{MinInterval: 5 * time.Second, Period: 30 * time.Second, MaxAssessments: 60, MaxConsecutiveFailures: 3}

func TestFirstTickAssessesAndEventBurstsCoalesce(t *testing.T) {
	h := newHarness(t, testSchedule, nil)
	h.tick(5 * time.Second)
	o := h.next()
	assert.Equal(t, 1, o.Assessment)
	assert.Equal(t, AdviceContinue, o.Advice)

	// A burst of 100 events between two ticks makes one assessment.
	for range 100 {
		h.loop.cap.event(Event{Type: EventTextDelta, Text: "x"})
	}
	h.tick(5 * time.Second)
	o = h.next()
	assert.Equal(t, 2, o.Assessment)
	assert.Equal(t, int64(100), o.Decision.Report.Sequence)
	h.none()
	assert.Equal(t, 2, h.judge.Calls())
	h.loop.abort()
	assert.False(t, h.judge.overlap)
}

func TestPeriodicCheckWithoutNewEvents(t *testing.T) {
	h := newHarness(t, testSchedule, nil)
	h.tick(5 * time.Second)
	h.next()
	for range 5 { // 25 s without events: gated (not dirty, period not reached)
		h.tick(5 * time.Second)
	}
	h.none()
	assert.Equal(t, 1, h.judge.Calls())
	h.tick(5 * time.Second) // 30 s since the last decision
	o := h.next()
	assert.Equal(t, 2, o.Assessment)
	h.loop.abort()
}

func TestMinIntervalGatesDirtyObservations(t *testing.T) {
	sched := testSchedule
	sched.MinInterval = 5 * time.Second
	h := newHarness(t, sched, nil)
	h.tick(5 * time.Second)
	h.next()
	h.loop.cap.event(Event{Type: "TOOL_CALL"})
	// The judgment took no fake time, so the next tick is 5 s after it:
	// allowed. Make the decision arrive late to see the gate instead.
	h.judge.hold = make(chan struct{})
	h.clock.Advance(5 * time.Second) // not tick: its process() waits for the held judge
	<-h.judge.entered
	h.clock.Advance(4 * time.Second) // decision arrives 4 s after the tick
	close(h.judge.hold)
	h.next()
	h.loop.cap.event(Event{Type: "TOOL_CALL"})
	h.tick(1 * time.Second) // tick 1 s after the decision: gated although dirty
	h.none()
	assert.Equal(t, 2, h.judge.Calls())
	h.loop.abort()
}

func TestSupersededResultIsConsumedAsContinue(t *testing.T) {
	h := newHarness(t, testSchedule, nil)
	h.judge.hold = make(chan struct{})
	h.clock.Advance(5 * time.Second)
	<-h.judge.entered
	h.loop.cap.event(Event{Type: "TOOL_CALL"}) // overtakes the judgment in flight
	// More ticks while the judgment runs: at most one stays pending.
	h.clock.Advance(5 * time.Second)
	h.clock.Advance(5 * time.Second)
	close(h.judge.hold)
	o := h.next()
	assert.True(t, o.Superseded)
	assert.Equal(t, AdviceContinue, o.Advice)
	require.NotNil(t, o.Decision.Report, "the scores are kept for audit")
	h.settle() // the pending tick comes right after the decision: gated
	h.none()
	assert.Equal(t, 1, h.judge.Calls())
	h.loop.abort()
	assert.False(t, h.judge.overlap)
}

func TestCompletionAwaitsJudgmentThenAssessesOnceMore(t *testing.T) {
	var reads []EvidenceRequest
	var mu sync.Mutex
	src := EvidenceFunc(func(_ context.Context, r EvidenceRequest) (Evidence, error) {
		mu.Lock()
		reads = append(reads, r)
		mu.Unlock()
		return Evidence{Revision: "r1"}, nil
	})
	h := newHarness(t, testSchedule, src)
	h.judge.hold = make(chan struct{})
	h.clock.Advance(5 * time.Second)
	<-h.judge.entered
	done := make(chan struct{})
	go func() { h.loop.complete(); close(done) }()
	// Release the judgment only once the worker is known to be complete.
	deadline := time.Now().Add(10 * time.Second)
	for !h.completed() {
		require.False(t, time.Now().After(deadline), "completion not marked")
		time.Sleep(time.Millisecond) // polling interval
	}
	close(h.judge.hold)
	first := h.next()
	assert.True(t, first.Superseded, "captured before completion")
	final := h.next()
	<-done
	assert.True(t, final.Final)
	assert.False(t, final.Superseded)
	assert.Equal(t, 2, final.Assessment)
	require.Len(t, reads, 2)
	assert.True(t, reads[0].WorkerActive)
	assert.False(t, reads[1].WorkerActive, "the final assessment sees an idle worker")
	assert.Equal(t, "run-1", reads[1].Scope.RunID)
}

func TestCancellationStopsEverythingWithoutFinal(t *testing.T) {
	h := newHarness(t, testSchedule, nil)
	h.judge.hold = make(chan struct{})
	h.clock.Advance(5 * time.Second)
	<-h.judge.entered
	h.loop.abort()
	h.none() // abort waited for the processor: the cancelled judgment was not published
	// The ticker stops too (its goroutine is not awaited by abort).
	deadline := time.Now().Add(10 * time.Second)
	for !h.tickersStopped() {
		require.False(t, time.Now().After(deadline), "the ticker was not stopped")
		time.Sleep(time.Millisecond) // polling interval
	}
	sent := h.sentTicks()
	h.clock.Advance(time.Minute)
	assert.Equal(t, sent, h.sentTicks(), "no tick delivered after abort")
	h.none()
	assert.Equal(t, 1, h.judge.Calls())
}

func TestFailureBudgetStopsObserving(t *testing.T) {
	h := newHarness(t, testSchedule, nil)
	h.judge.fail = true
	var advice []Advice
	for range 3 {
		h.loop.cap.event(Event{Type: "TOOL_CALL"})
		h.tick(5 * time.Second)
		o := h.next()
		assert.Equal(t, StatusError, o.Decision.Status)
		advice = append(advice, o.Advice)
	}
	assert.Equal(t, []Advice{AdviceContinue, AdviceContinue, AdviceManualReview}, advice)
	h.loop.cap.event(Event{Type: "TOOL_CALL"})
	h.tick(5 * time.Second)
	h.tick(30 * time.Second)
	h.none()
	assert.Equal(t, 3, h.judge.Calls(), "no judgment after the failure budget")
	h.loop.complete()
	h.none() // not even a final one
}

func TestAssessmentCap(t *testing.T) {
	sched := testSchedule
	sched.MaxAssessments = 2
	h := newHarness(t, sched, nil)
	for i := range 2 {
		h.loop.cap.event(Event{Type: "TOOL_CALL"})
		h.tick(5 * time.Second)
		assert.Equal(t, i+1, h.next().Assessment)
	}
	h.loop.cap.event(Event{Type: "TOOL_CALL"})
	h.tick(5 * time.Second)
	o := h.next()
	assert.Equal(t, StatusSkipped, o.Decision.Status)
	assert.Equal(t, reasonAssessmentLimit, o.Decision.Reason)
	assert.Equal(t, AdviceManualReview, o.Advice)
	h.loop.cap.event(Event{Type: "TOOL_CALL"})
	h.tick(5 * time.Second)
	h.loop.complete()
	h.none()
	assert.Equal(t, 2, h.judge.Calls())
}

func TestCaptureRules(t *testing.T) {
	c := &capture{limit: 10}
	c.setTask(strings.Repeat("t", 50))
	assert.Len(t, c.task, 11, "capped at limit+1 so an over-long task abstains")
	c.event(Event{Type: "THINKING_DELTA", Text: "ignored"})
	assert.Zero(t, c.sequence)
	c.event(Event{Type: EventTextDelta, Text: "hello "})
	c.event(Event{Type: EventTextDelta, Text: "world"})
	assert.Equal(t, "ello world", c.output)
	assert.True(t, c.truncated, "overflow flags truncation")
	c2 := &capture{limit: 10}
	c2.event(Event{Type: EventTextDelta, Text: "0123456789"})
	assert.False(t, c2.truncated, "exactly the limit, nothing earlier")
	c2.event(Event{Type: EventFinalResult, Text: "done"})
	assert.Equal(t, "done", c2.output)
	c2.event(Event{Type: EventRequestStop})
	assert.True(t, c2.failed)
	c3 := &capture{limit: 10}
	c3.event(Event{Type: "DATA_BLOCK_IMAGE"})
	assert.True(t, c3.truncated)
	for range 40 {
		c3.event(Event{Type: "TOOL_CALL"})
	}
	assert.Len(t, c3.events, maxRecentEvents)
	assert.Equal(t, int64(41), c3.sequence)
}
