package supervision

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Schedule paces the observations of one supervised activity attempt.
type Schedule struct {
	// MinInterval is the tick period and the least time between two
	// decisions. Default 5 s.
	MinInterval time.Duration `json:"min_interval"`
	// Period re-checks an invocation that saw no new events. Default 30 s.
	Period time.Duration `json:"period"`
	// MaxAssessments per invocation. Default 60.
	MaxAssessments int `json:"max_assessments"`
	// MaxConsecutiveFailures stops observing the invocation (and recommends
	// manual review) after this many errors in a row. Default 3.
	MaxConsecutiveFailures int `json:"max_consecutive_failures"`
}

// DefaultSchedule returns 5 s, 30 s, 60 assessments, 3 failures.
func DefaultSchedule() Schedule {
	return Schedule{MinInterval: 5 * time.Second, Period: 30 * time.Second, MaxAssessments: 60, MaxConsecutiveFailures: 3}
}

// validate checks minInterval > 0, period ≥ minInterval, both counts ≥ 1.
func (s Schedule) validate() error {
	if s.MinInterval <= 0 || s.Period < s.MinInterval || s.MaxAssessments < 1 || s.MaxConsecutiveFailures < 1 {
		return fmt.Errorf("%w: schedule %+v: need min interval > 0, period ≥ min interval, counts ≥ 1", ErrInvalidConfig, s)
	}
	return nil
}

// clock is the loop's time source; tests inject a fake one.
type clock interface {
	now() time.Time
	newTicker(d time.Duration) ticker
}

// ticker delivers ticks until stopped.
type ticker interface {
	c() <-chan time.Time
	stop()
}

type realClock struct{}

var _ clock = realClock{}

func (realClock) now() time.Time                   { return time.Now() }
func (realClock) newTicker(d time.Duration) ticker { return realTicker{time.NewTicker(d)} }

type realTicker struct{ t *time.Ticker }

var _ ticker = realTicker{}

func (r realTicker) c() <-chan time.Time { return r.t.C }
func (r realTicker) stop()               { r.t.Stop() }

// EvidenceRequest asks the host for evidence about one observation. The
// host binds any verification receipt it returns to Scope.
type EvidenceRequest struct {
	Scope        Scope
	Sequence     int64
	WorkerActive bool
}

// EvidenceSource is supplied by the host, never by the model or tool
// arguments: it checks access, reads the current artifact and verifies the
// provenance of verification receipts.
type EvidenceSource interface {
	Evidence(ctx context.Context, req EvidenceRequest) (Evidence, error)
}

// EvidenceFunc adapts a function to EvidenceSource.
type EvidenceFunc func(ctx context.Context, req EvidenceRequest) (Evidence, error)

var _ EvidenceSource = EvidenceFunc(nil)

// Evidence calls f.
func (f EvidenceFunc) Evidence(ctx context.Context, req EvidenceRequest) (Evidence, error) {
	return f(ctx, req)
}

// Observation is one result of watching a supervised activity, as the
// observers get it. Advice is what the host may act on: the decision's
// advice, CONTINUE when it was superseded or after an isolated error, and
// MANUAL_REVIEW when the supervisor gave up (too many errors in a row, the
// assessment limit).
type Observation struct {
	Scope Scope `json:"scope"`
	// Assessment is the number of assessments at publish time.
	Assessment int      `json:"assessment"`
	Decision   Decision `json:"decision"`
	// Superseded is true when new events arrived while the judgment ran;
	// its advice is then consumed as CONTINUE, its scores kept for audit.
	Superseded          bool   `json:"superseded"`
	ConsecutiveFailures int    `json:"consecutive_failures"`
	Advice              Advice `json:"advice"`
	// Final is true for the observation made after the worker completed.
	Final bool `json:"final"`
}

// EventType labels an [Event]. Any label is allowed; the supervisor keeps
// the latest 32 for the judge. Types starting with THINKING_ are ignored
// entirely, types starting with DATA_BLOCK_ mark the evidence incomplete,
// and the types below have a meaning of their own.
type EventType string

// Event types the supervisor treats specially.
const (
	// EventTextDelta appends the event's text to the worker's output.
	EventTextDelta EventType = "TEXT_DELTA"
	// EventFinalResult replaces the output with the event's text.
	EventFinalResult EventType = "FINAL_RESULT"
	// EventExceedMaxIters, EventRequestStop and EventAllToolsDenied mark
	// the worker failed: the supervisor advises manual review.
	EventExceedMaxIters EventType = "EXCEED_MAX_ITERS"
	EventRequestStop    EventType = "REQUEST_STOP"
	EventAllToolsDenied EventType = "ALL_TOOLS_DENIED"
)

// eventHeartbeat is the type of a heartbeat without an Event detail.
const eventHeartbeat EventType = "HEARTBEAT"

// Prefixes of the event types that are ignored or mark the evidence
// incomplete.
const (
	eventThinkingPrefix = "THINKING_"
	eventDataPrefix     = "DATA_BLOCK_"
)

// Event is one thing the supervised worker did.
type Event struct {
	// Type labels the event.
	Type EventType `json:"type"`
	// Text is appended to the output tail for TEXT_DELTA and replaces it
	// for FINAL_RESULT; it is ignored for other types (tool arguments and
	// results are not retained).
	Text string `json:"text,omitempty"`
	// NonText marks content that is not text (an image, a file): it makes
	// the evidence incomplete.
	NonText bool `json:"non_text,omitempty"`
}

// capture is the per-invocation state the loop snapshots.
type capture struct {
	mu        sync.Mutex
	limit     int
	task      string
	output    string
	events    []string
	sequence  int64
	failed    bool
	truncated bool
	complete  bool
}

func (c *capture) setTask(task string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Capped at limit+1 so an over-long task is detectable and abstains.
	if r := []rune(task); len(r) > c.limit+1 {
		task = string(r[:c.limit+1])
	}
	c.task = task
}

func (c *capture) event(e Event) {
	if strings.HasPrefix(string(e.Type), eventThinkingPrefix) {
		return // thinking is ignored completely, not even counted
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sequence++
	switch e.Type {
	case EventExceedMaxIters, EventRequestStop, EventAllToolsDenied:
		c.failed = true
	}
	c.events = append(c.events, string(e.Type))
	if len(c.events) > maxRecentEvents {
		c.events = c.events[len(c.events)-maxRecentEvents:]
	}
	if strings.HasPrefix(string(e.Type), eventDataPrefix) || e.NonText {
		c.truncated = true
	}
	switch e.Type {
	case EventTextDelta:
		c.appendOutput(e.Text)
	case EventFinalResult:
		c.output = ""
		c.appendOutput(e.Text)
	}
}

func (c *capture) appendOutput(piece string) {
	p := []rune(piece)
	if len(p) >= c.limit {
		if len(p) > c.limit || c.output != "" {
			c.truncated = true
		}
		c.output = string(p[len(p)-c.limit:])
		return
	}
	joined := []rune(c.output + piece)
	if len(joined) > c.limit {
		c.truncated = true
		joined = joined[len(joined)-c.limit:]
	}
	c.output = string(joined)
}

func (c *capture) markComplete() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.complete = true
	c.sequence++
}

// loop observes one invocation: at most one judgment in flight, the latest
// pending tick only, bursts of events coalesced by the dirty check.
type loop struct {
	sup      *Supervisor
	sched    Schedule
	clock    clock
	scope    Scope
	cap      *capture
	evidence func() EvidenceSource
	publish  func(Observation)
	start    time.Time
	// tickHandled, set by tests only, is called once per tick taken from
	// the ticker: when it is dropped for one already pending, or when its
	// process() has returned. Tests wait on it so that a tick that changed
	// nothing is known to have been considered.
	tickHandled func()

	// Guarded by cap.mu.
	assessments, failures int
	assessedSeq           int64
	lastDecision          time.Time
	decided               bool
	finalAssessed         bool
	exhausted             bool
	limitReported         bool

	ctx       context.Context
	cancel    context.CancelFunc
	pending   chan struct{}
	final     chan struct{}
	stopTicks chan struct{}
	done      chan struct{}
}

func newLoop(ctx context.Context, l *loop) *loop {
	l.ctx, l.cancel = context.WithCancel(ctx)
	l.start = l.clock.now()
	l.pending = make(chan struct{}, 1)
	l.final = make(chan struct{}, 1)
	l.stopTicks = make(chan struct{})
	l.done = make(chan struct{})
	tk := l.clock.newTicker(l.sched.MinInterval)
	go func() {
		defer tk.stop()
		for {
			select {
			case <-tk.c():
				select {
				case l.pending <- struct{}{}:
				default: // a tick is already pending: keep only that one
					l.handled()
				}
			case <-l.stopTicks:
				return
			case <-l.ctx.Done():
				return
			}
		}
	}()
	go func() {
		defer close(l.done)
		for {
			select {
			case <-l.final:
				l.process()
				return
			case <-l.pending:
				l.process()
				l.handled()
			case <-l.ctx.Done():
				return
			}
		}
	}()
	return l
}

func (l *loop) handled() {
	if l.tickHandled != nil {
		l.tickHandled()
	}
}

// complete is called when the worker finished normally: ticks stop, the
// judgment in flight is awaited, then one final assessment runs if the
// budgets allow.
func (l *loop) complete() {
	l.cap.markComplete()
	close(l.stopTicks)
	l.final <- struct{}{}
	<-l.done
	l.cancel()
}

// abort stops ticks, evidence reads and the judgment in flight; nothing
// more is published.
func (l *loop) abort() {
	l.cancel()
	<-l.done
}

func (l *loop) process() {
	c := l.cap
	c.mu.Lock()
	if l.finalAssessed || l.exhausted {
		c.mu.Unlock()
		return
	}
	if l.assessments >= l.sched.MaxAssessments {
		report := !l.limitReported
		l.limitReported, l.exhausted = true, true
		n := l.assessments
		c.mu.Unlock()
		if report {
			l.publish(Observation{Scope: l.scope, Assessment: n, Advice: AdviceManualReview,
				Decision: Decision{Status: StatusSkipped, Reason: reasonAssessmentLimit}})
		}
		return
	}
	now := l.clock.now()
	if !c.complete && l.decided {
		since := now.Sub(l.lastDecision)
		if since < l.sched.MinInterval || (c.sequence == l.assessedSeq && since < l.sched.Period) {
			c.mu.Unlock()
			return
		}
	}
	l.assessments++
	l.finalAssessed = c.complete
	snap := Snapshot{
		Scope: l.scope, Sequence: c.sequence, Task: c.task, Output: c.output,
		RecentEvents: append([]string(nil), c.events...), WorkerActive: !c.complete,
		WorkerFailed: c.failed, Truncated: c.truncated, Elapsed: now.Sub(l.start),
	}
	l.assessedSeq = c.sequence
	final := c.complete
	c.mu.Unlock()

	d := l.sup.observe(l.ctx, func(ctx context.Context) (Snapshot, error) {
		src := l.evidence()
		if src == nil {
			return snap, nil // missing evidence
		}
		ev, err := src.Evidence(ctx, EvidenceRequest{Scope: snap.Scope, Sequence: snap.Sequence, WorkerActive: snap.WorkerActive})
		if err != nil {
			return Snapshot{}, err
		}
		snap.Evidence = &ev
		return snap, nil
	})
	if d.Status == StatusCancelled || l.ctx.Err() != nil {
		return // cancelled: nothing is published
	}
	c.mu.Lock()
	l.lastDecision, l.decided = l.clock.now(), true
	if d.Status == StatusError {
		l.failures++
	} else {
		l.failures = 0
	}
	superseded := c.sequence != snap.Sequence
	if l.failures >= l.sched.MaxConsecutiveFailures {
		l.exhausted = true
	}
	obs := Observation{Scope: l.scope, Assessment: l.assessments, Decision: d, Superseded: superseded,
		ConsecutiveFailures: l.failures, Final: final}
	c.mu.Unlock()
	obs.Advice = consumable(obs, l.sched.MaxConsecutiveFailures)
	l.publish(obs)
}

// consumable is the advice a host may act on.
func consumable(o Observation, maxFailures int) Advice {
	switch {
	case o.Superseded && o.Decision.Report != nil:
		return AdviceContinue
	case o.Decision.Report != nil:
		return o.Decision.Report.Selected.Advice
	case o.Decision.Status == StatusError && o.ConsecutiveFailures < maxFailures:
		return AdviceContinue
	default:
		return AdviceManualReview
	}
}
