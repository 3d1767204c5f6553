package overseer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// inbox is a Notifier that keeps every event it is given; fail makes the
// first attempts of each event fail.
type inbox struct {
	mu       sync.Mutex
	events   []overseer.GateEvent
	attempts map[string]int
	fail     func(ev overseer.GateEvent, attempt int) error
}

func (n *inbox) Notify(_ context.Context, ev overseer.GateEvent) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.attempts == nil {
		n.attempts = map[string]int{}
	}
	n.attempts[shortKey(ev.IdempotencyKey)]++
	if n.fail != nil {
		if err := n.fail(ev, n.attempts[shortKey(ev.IdempotencyKey)]); err != nil {
			return err
		}
	}
	// Delivery is at least once (a run that ends while an attempt is in
	// flight hands it to its notifier workflow): like any receiver, the
	// inbox keeps one delivery per idempotency key.
	if !slices.ContainsFunc(n.events, func(d overseer.GateEvent) bool { return d.IdempotencyKey == ev.IdempotencyKey }) {
		n.events = append(n.events, ev)
	}
	return nil
}

// shortKey is an idempotency key without its gate's opening time
// (JOB/RUN/GATE/KIND), which the tests name it by.
func shortKey(key string) string {
	parts := strings.Split(key, "/")
	if len(parts) != 5 {
		return "not a key of five parts: " + key
	}
	return strings.Join(slices.Delete(parts, 3, 4), "/")
}

// attemptsOf says how often the event with this short key was tried;
// it reads under the lock because a notification the run handed off may
// still be retried by the environment's activity goroutine.
func (n *inbox) attemptsOf(key string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.attempts[key]
}

// kinds lists the delivered events' kinds, in order.
func (n *inbox) kinds() []overseer.GateEventKind {
	n.mu.Lock()
	defer n.mu.Unlock()
	var k []overseer.GateEventKind
	for _, ev := range n.events {
		k = append(k, ev.Kind)
	}
	return k
}

func (n *inbox) event(kind overseer.GateEventKind) overseer.GateEvent {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ev := range n.events {
		if ev.Kind == kind {
			return ev
		}
	}
	return overseer.GateEvent{}
}

// deadlineHarness is newHarness with a metrics capture.
func deadlineHarness(t *testing.T, opts overseer.Options, steps ...jev.Step) (*harness, *capture) {
	t.Helper()
	return deadlineHarnessWith(t, opts, nil, steps...)
}

// settled makes every phase of h take half a second of the test clock.
// The test environment moves its clock only once no activity runs, so a
// notification attempt started with a phase finishes before the phase
// does, as it would against a receiver faster than an agent: otherwise
// which one finishes first is up to the goroutines, and with it whether
// the run's end finds the attempt in flight and hands it to the notifier
// workflow (a duplicate the receiver drops by its key, but a different
// count in the status).
func settled(h *harness) *harness {
	for _, p := range testPhases {
		h.env.OnActivity(p, mock.Anything, mock.Anything).After(500 * time.Millisecond).Return(h.rec.phase)
	}
	return h
}

// deadlineHarnessWith is deadlineHarness with worker interceptors.
func deadlineHarnessWith(t *testing.T, opts overseer.Options, interceptors []interceptor.WorkerInterceptor, steps ...jev.Step) (*harness, *capture) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	m := newCapture()
	s.SetMetricsHandler(m)
	env := s.NewTestWorkflowEnvironment()
	judge := jev.NewScripted(steps...)
	opts.Judge, opts.Placement = judge, overseer.PlacementLocalActivity
	plugin, err := overseer.NewPlugin(opts)
	require.NoError(t, err)
	env.SetWorkerOptions(withoutLateActivityRace(worker.Options{Plugins: []worker.Plugin{plugin}, Interceptors: interceptors}))
	rec := &recorder{}
	env.RegisterWorkflow(phasesWorkflow)
	for _, p := range testPhases {
		env.RegisterActivityWithOptions(rec.phase, activity.RegisterOptions{Name: p})
	}
	return &harness{env: env, rec: rec, judge: judge}, m
}

func TestGateEscalatesAtItsDeadlineThenExpiresWithAbort(t *testing.T) {
	n := &inbox{}
	h, m := deadlineHarness(t, overseer.Options{
		Mode:         overseer.ModeManage,
		GateDeadline: overseer.GateDeadline{After: 24 * time.Hour, Action: overseer.DeadlineEscalate, FinalAfter: 72 * time.Hour, FinalAction: overseer.DeadlineAbort},
		Notifier:     n, DashboardURL: "https://overseer.example.com/",
	}, onTrack(), flagged(), onTrack())
	var open, escalated overseer.Status
	h.env.RegisterDelayedCallback(func() { open = h.status(t) }, time.Hour)
	h.env.RegisterDelayedCallback(func() { escalated = h.status(t) }, 25*time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.True(t, h.env.IsWorkflowCompleted())

	err := h.env.GetWorkflowError()
	require.Error(t, err)
	assert.Equal(t, overseer.AbortedErrorType, overseer.ErrorType(err), "%v", err)
	assert.ErrorContains(t, err, "nobody resumed it by its deadline 72h: abort")
	assert.Len(t, h.rec.Calls(), 2, "the phase after the gate never ran")

	require.True(t, open.Paused)
	require.NotNil(t, open.GateDeadline)
	opened := open.Gates[0].PausedAt
	assert.Equal(t, opened.Add(24*time.Hour), *open.GateDeadline, "the open gate shows its first deadline")
	assert.Equal(t, "deadline 24h: escalate", open.Gates[0].DeadlineBy, "and the rule it acts by")
	assert.Equal(t, overseer.DeadlineEscalate, open.Gates[0].DeadlineAction)
	assert.Nil(t, open.Gates[0].EscalatedAt)

	require.True(t, escalated.Paused, "escalation keeps the gate open")
	g := escalated.Gates[0]
	require.NotNil(t, g.EscalatedAt)
	assert.Equal(t, opened.Add(24*time.Hour), *g.EscalatedAt)
	assert.Equal(t, "deadline 24h: escalate", g.EscalatedBy)
	assert.Equal(t, opened.Add(72*time.Hour), *escalated.GateDeadline, "then the final deadline")
	assert.Equal(t, "deadline 72h: abort", g.DeadlineBy, "and what it will do")
	assert.Equal(t, overseer.DeadlineAbort, g.DeadlineAction)
	assert.Equal(t, 1, escalated.Counters.Escalations)

	s := h.status(t)
	assert.False(t, s.Paused)
	require.Len(t, s.Gates, 1)
	g = s.Gates[0]
	assert.True(t, g.Expired)
	assert.Equal(t, "expired", g.Outcome())
	assert.Equal(t, "deadline 72h: abort", g.ExpiredBy)
	assert.Equal(t, overseer.ActionAbort, g.Action)
	assert.Empty(t, g.By, "no person resumed it")
	require.NotNil(t, g.ResumedAt)
	assert.Equal(t, 72*time.Hour, g.ResumedAt.Sub(g.PausedAt))
	assert.Nil(t, g.Deadline)
	assert.Empty(t, g.DeadlineBy)
	assert.Empty(t, g.DeadlineAction)
	assert.NotNil(t, s.Aborted())
	assert.Equal(t, 1, s.Counters.Expired)
	assert.Equal(t, 0, s.Counters.Resumes, "an expiry is not a human resume")
	assert.Equal(t, 2, s.Counters.Notifications, "the expiry that ends the run goes to the notifier workflow")
	assert.Equal(t, "overseer-notify/default-test-workflow-id/default-test-run-id", s.NotifyWorkflow)
	assert.Zero(t, s.Counters.NotifyFailures)
	assert.Empty(t, s.Notifying)

	assert.Equal(t, []overseer.GateEventKind{overseer.GateOpened, overseer.GateEscalated, overseer.GateExpired}, n.kinds())
	ev := n.event(overseer.GateExpired)
	assert.Equal(t, fmt.Sprintf("default-test-workflow-id/default-test-run-id/code-1/%d/expired", ev.OpenedAt.UnixMilli()), ev.IdempotencyKey)
	assert.Equal(t, "code-1", ev.Gate)
	assert.Equal(t, "code", ev.Phase)
	assert.Equal(t, "phasesWorkflow", ev.WorkflowType)
	assert.Equal(t, "deadline 72h: abort", ev.Rule)
	assert.Equal(t, overseer.ActionAbort, ev.Action)
	assert.Equal(t, 72*time.Hour, ev.Wait)
	assert.Equal(t, "https://overseer.example.com/job?id=default-test-workflow-id", ev.DashboardURL)
	esc := n.event(overseer.GateEscalated)
	assert.Equal(t, "deadline 24h: escalate", esc.Rule)
	require.NotNil(t, esc.Deadline)
	assert.Equal(t, opened.Add(72*time.Hour), *esc.Deadline, "the escalation says when the gate will expire")

	m.mu.Lock()
	defer m.mu.Unlock()
	assert.EqualValues(t, 1, m.counts["overseer_gate_escalations{}"])
	assert.EqualValues(t, 1, m.counts["overseer_gates_expired{action=abort}"])
	require.Len(t, m.timers["overseer_gate_wait{action=expired}"], 1)
	assert.Equal(t, 72*time.Hour, m.timers["overseer_gate_wait{action=expired}"][0])
	assert.Zero(t, m.counts["overseer_resumes{action=abort}"])
}

// outage models a worker outage on the test clock, which fires timers
// exactly: from the workflow time at on, the workflow sees every event lag
// later, as when the server fired a timer at its time but no worker ran the
// workflow task until lag later.
type outage struct {
	interceptor.WorkerInterceptorBase
	at  time.Time
	lag time.Duration
}

func (o *outage) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return withOutbound(next, func(out interceptor.WorkflowOutboundInterceptor) interceptor.WorkflowOutboundInterceptor {
		return &outageClock{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: out}, o: o}
	})
}

type outageClock struct {
	interceptor.WorkflowOutboundInterceptorBase
	o *outage
}

func (c *outageClock) Now(ctx workflow.Context) time.Time {
	t := c.Next.Now(ctx)
	if !t.Before(c.o.at) {
		t = t.Add(c.o.lag)
	}
	return t
}

func TestGateDeadlinesCountFromTheOpeningAcrossAnOutage(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule string
		// The outage begins that long after the gate's opening and makes the
		// workflow lag by lag.
		outageAt, lag time.Duration
		// Zero escalatedAt: no escalation.
		escalatedAt, escalatedLate time.Duration
		expiredAt, expiredLate     time.Duration
	}{
		{name: "no outage", rule: "4s:escalate,8s:abort",
			escalatedAt: 4 * time.Second, expiredAt: 8 * time.Second},
		{name: "an outage past both deadlines acts on both at once", rule: "4s:escalate,8s:abort", outageAt: 4 * time.Second, lag: 5 * time.Second,
			escalatedAt: 9 * time.Second, escalatedLate: 5 * time.Second, expiredAt: 9 * time.Second, expiredLate: time.Second},
		{name: "an outage at the first deadline leaves the final one on time", rule: "4s:escalate,12s:abort", outageAt: 4 * time.Second, lag: 5 * time.Second,
			escalatedAt: 9 * time.Second, escalatedLate: 5 * time.Second, expiredAt: 12 * time.Second},
		{name: "an outage at the final deadline", rule: "4s:escalate,8s:abort", outageAt: 8 * time.Second, lag: 3 * time.Second,
			escalatedAt: 4 * time.Second, expiredAt: 11 * time.Second, expiredLate: 3 * time.Second},
		{name: "an outage at a single deadline", rule: "4s:abort", outageAt: 4 * time.Second, lag: 5100 * time.Millisecond,
			expiredAt: 9100 * time.Millisecond, expiredLate: 5100 * time.Millisecond},
		{name: "a workflow task's latency is not lateness", rule: "4s:abort", outageAt: 4 * time.Second, lag: 300 * time.Millisecond,
			expiredAt: 4300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := overseer.ParseGateDeadline(tc.rule)
			require.NoError(t, err)
			// The phases and the judge take no time on the test clock: the
			// gate opens when the run starts.
			start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
			o := &outage{at: start.Add(tc.outageAt), lag: tc.lag}
			if tc.lag == 0 {
				o.at = start.Add(1000 * time.Hour)
			}
			n := &inbox{}
			h, _ := deadlineHarnessWith(t, overseer.Options{Mode: overseer.ModeManage, GateDeadline: d, Notifier: n},
				[]interceptor.WorkerInterceptor{o}, onTrack(), flagged(), onTrack())
			h.env.SetStartTime(start)
			h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
			require.True(t, h.env.IsWorkflowCompleted())
			assert.Equal(t, overseer.AbortedErrorType, overseer.ErrorType(h.env.GetWorkflowError()))

			s := h.status(t)
			require.Len(t, s.Gates, 1)
			g := s.Gates[0]
			require.Equal(t, start, g.PausedAt)
			if tc.escalatedAt == 0 {
				assert.Nil(t, g.EscalatedAt)
			} else if assert.NotNil(t, g.EscalatedAt) {
				assert.Equal(t, tc.escalatedAt, g.EscalatedAt.Sub(g.PausedAt), "escalated")
			}
			assert.Equal(t, tc.escalatedLate, g.EscalatedLate, "escalated late")
			assert.True(t, g.Expired)
			require.NotNil(t, g.ResumedAt)
			assert.Equal(t, tc.expiredAt, g.ResumedAt.Sub(g.PausedAt), "expired")
			assert.Equal(t, tc.expiredLate, g.ExpiredLate, "expired late")
			assert.Equal(t, 1, s.Counters.Expired)
			assert.Equal(t, tc.expiredAt, n.event(overseer.GateExpired).Wait, "the expiry's event says how long the gate waited")
		})
	}
}

// The workflow's current details say how late an escalation came.
func TestALateEscalationSaysSoInTheDetails(t *testing.T) {
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	h, _ := deadlineHarnessWith(t, overseer.Options{
		Mode:         overseer.ModeManage,
		GateDeadline: overseer.GateDeadline{After: 4 * time.Second, Action: overseer.DeadlineEscalate, FinalAfter: 12 * time.Second, FinalAction: overseer.DeadlineAbort},
	}, []interceptor.WorkerInterceptor{&outage{at: start.Add(4 * time.Second), lag: 5 * time.Second}}, onTrack(), flagged(), onTrack())
	h.env.SetStartTime(start)
	var details string
	// 6 s on the test clock is 11 s for the lagging workflow: escalated,
	// not yet expired.
	h.env.RegisterDelayedCallback(func() { details = currentDetails(t, h) }, 6*time.Second)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.True(t, h.env.IsWorkflowCompleted())
	assert.Contains(t, details, "Escalated at 2025-03-01 12:00:09 UTC (deadline 4s: escalate, 5s late).")
	assert.Contains(t, details, "Deadline: 2025-03-01 12:00:12 UTC.")
}

func TestGateExpiresWithContinueAndTheNextPhaseRuns(t *testing.T) {
	n := &inbox{}
	h, m := deadlineHarness(t, overseer.Options{
		Mode: overseer.ModeManage,
		// The type's own deadline wins over the default.
		GateDeadline:  overseer.GateDeadline{After: time.Hour, Action: overseer.DeadlineAbort},
		GateDeadlines: map[string]overseer.GateDeadline{"phasesWorkflow": {After: 4 * time.Hour, Action: overseer.DeadlineContinue}},
		Notifier:      n,
	}, onTrack(), flagged(), onTrack())
	settled(h)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())
	calls := h.rec.Calls()
	require.Len(t, calls, 3, "the next phase ran")
	require.NotNil(t, calls[2].InputNote, "with the process note")
	assert.Empty(t, calls[2].InputNote.ReviewerNote)

	s := h.status(t)
	require.Len(t, s.Gates, 1)
	g := s.Gates[0]
	assert.True(t, g.Expired)
	assert.Equal(t, "deadline 4h: continue", g.ExpiredBy)
	assert.Equal(t, overseer.ActionContinue, g.Action)
	assert.Nil(t, g.EscalatedAt)
	assert.Nil(t, s.Aborted())
	assert.Equal(t, []overseer.GateEventKind{overseer.GateOpened, overseer.GateExpired}, n.kinds())

	m.mu.Lock()
	defer m.mu.Unlock()
	assert.EqualValues(t, 1, m.counts["overseer_gates_expired{action=continue}"])
	assert.Equal(t, []time.Duration{4 * time.Hour}, m.timers["overseer_gate_wait{action=expired}"])
}

func TestResumeBeforeTheDeadlineCancelsIt(t *testing.T) {
	n := &inbox{}
	h, _ := deadlineHarness(t, overseer.Options{
		Mode:         overseer.ModeManage,
		GateDeadline: overseer.GateDeadline{After: 24 * time.Hour, Action: overseer.DeadlineAbort},
		Notifier:     n,
	}, onTrack(), flagged(), onTrack())
	settled(h) // the gate opens after two phases: a second after the start
	h.env.RegisterDelayedCallback(func() {
		h.update(overseer.ResumeRequest{By: "alice", Gate: "code-1", Note: "fine"})
	}, 2*time.Hour+time.Second)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())
	assert.Len(t, h.rec.Calls(), 3)
	s := h.status(t)
	g := s.Gates[0]
	assert.False(t, g.Expired)
	assert.Empty(t, g.ExpiredBy)
	assert.Nil(t, g.Deadline, "a closed gate has no deadline")
	assert.Equal(t, "resumed", g.Outcome())
	assert.Zero(t, s.Counters.Expired)
	assert.Equal(t, []overseer.GateEventKind{overseer.GateOpened, overseer.GateResumed}, n.kinds())
	ev := n.event(overseer.GateResumed)
	assert.Equal(t, "alice", ev.By)
	assert.Equal(t, "fine", ev.Note)
	assert.Equal(t, 2*time.Hour, ev.Wait)
}

func TestAbortNotifiesBeforeTheRunEnds(t *testing.T) {
	n := &inbox{}
	h, _ := deadlineHarness(t, overseer.Options{Mode: overseer.ModeManage, Notifier: n}, onTrack(), flagged())
	h.env.RegisterDelayedCallback(func() {
		h.update(overseer.ResumeRequest{By: "bob", Action: overseer.ActionAbort, Note: "wrong approach"})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	assert.Equal(t, overseer.AbortedErrorType, overseer.ErrorType(h.env.GetWorkflowError()))
	assert.Equal(t, []overseer.GateEventKind{overseer.GateOpened, overseer.GateAborted}, n.kinds())
	assert.Equal(t, "wrong approach", n.event(overseer.GateAborted).Note)
	assert.Equal(t, 1, n.attemptsOf("default-test-workflow-id/default-test-run-id/code-1/aborted"), "sent once, by the notifier workflow")
	s := h.status(t)
	assert.Equal(t, 1, s.Counters.Notifications, "the run delivered the opening")
	assert.NotEmpty(t, s.NotifyWorkflow, "and handed the abort to the notifier workflow")
	assert.Empty(t, s.Notifying)
}

func TestNotificationFailuresNeverHoldTheJobAndAreShown(t *testing.T) {
	t.Run("retried until delivered", func(t *testing.T) {
		n := &inbox{fail: func(_ overseer.GateEvent, attempt int) error {
			if attempt < 3 {
				return errors.New("HTTP 503")
			}
			return nil
		}}
		h, _ := deadlineHarness(t, overseer.Options{Mode: overseer.ModeManage, Notifier: n}, onTrack(), flagged(), onTrack())
		settled(h)
		h.env.RegisterDelayedCallback(func() { h.update(overseer.ResumeRequest{By: "carol"}) }, time.Hour)
		h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
		require.NoError(t, h.env.GetWorkflowError())
		assert.Equal(t, []overseer.GateEventKind{overseer.GateOpened, overseer.GateResumed}, n.kinds())
		for key, a := range n.attempts {
			assert.Equal(t, 3, a, "%s: delivered on the third attempt", key)
		}
		s := h.status(t)
		assert.Equal(t, 1, s.Counters.Notifications, "the opening, retried during the gate")
		assert.Equal(t, 1, s.Counters.NotifyFailures, "the resume had failed when the run ended, at once after it")
		assert.NotEmpty(t, s.NotifyWorkflow, "which handed it to the notifier workflow, which delivered it")
	})
	t.Run("rejected for good", func(t *testing.T) {
		n := &inbox{fail: func(ev overseer.GateEvent, _ int) error {
			if ev.Kind == overseer.GateOpened {
				return fmt.Errorf("%w: HTTP 400 bad payload", overseer.ErrNotifyRejected)
			}
			return nil
		}}
		h, m := deadlineHarness(t, overseer.Options{Mode: overseer.ModeManage, Notifier: n}, onTrack(), flagged(), onTrack())
		settled(h)
		var during overseer.Status
		h.env.RegisterDelayedCallback(func() {
			during = h.status(t)
			h.update(overseer.ResumeRequest{By: "carol"})
		}, time.Hour)
		h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
		require.NoError(t, h.env.GetWorkflowError(), "a failed notification never fails the job")
		assert.Len(t, h.rec.Calls(), 3)
		assert.True(t, during.Paused, "nor opens the gate")
		assert.Equal(t, 1, n.attemptsOf("default-test-workflow-id/default-test-run-id/code-1/opened"), "not retried")
		s := h.status(t)
		assert.Equal(t, 1, s.Counters.NotifyFailures)
		assert.Equal(t, 1, s.Counters.Notifications)
		assert.Contains(t, s.NotifyError, "the opened notification of gate code-1 failed")
		assert.Contains(t, s.NotifyError, "HTTP 400 bad payload")
		m.mu.Lock()
		defer m.mu.Unlock()
		assert.EqualValues(t, 1, m.counts["overseer_notifications_failed{kind=opened}"])
	})
}

// memoDeadlineWorkflow sets its own gate deadline in its memo (the test
// environment does not pass a start memo to the workflow), then runs the
// phases.
func memoDeadlineWorkflow(ctx workflow.Context, deadline string) ([]string, error) {
	if err := workflow.UpsertMemo(ctx, map[string]any{overseer.GateDeadlineMemoKey: deadline}); err != nil {
		return nil, err
	}
	return phasesWorkflow(ctx, testPhases)
}

func TestGateDeadlineFromTheMemo(t *testing.T) {
	h, _ := deadlineHarness(t, overseer.Options{Mode: overseer.ModeManage}, onTrack(), flagged(), onTrack())
	h.env.RegisterWorkflow(memoDeadlineWorkflow)
	h.env.ExecuteWorkflow(memoDeadlineWorkflow, "90m:continue")
	require.NoError(t, h.env.GetWorkflowError())
	s := h.status(t)
	require.Len(t, s.Gates, 1)
	assert.Equal(t, "deadline 1h30m: continue", s.Gates[0].ExpiredBy)
	assert.Zero(t, s.Counters.Notifications, "no notifier, no notification")
}

func TestParseGateDeadline(t *testing.T) {
	for in, want := range map[string]overseer.GateDeadline{
		"":                         {},
		"none":                     {},
		"24h:abort":                {After: 24 * time.Hour, Action: overseer.DeadlineAbort},
		" 30m : Continue ":         {After: 30 * time.Minute, Action: overseer.DeadlineContinue},
		"24h:escalate":             {After: 24 * time.Hour, Action: overseer.DeadlineEscalate},
		"24h:escalate,72h:abort":   {After: 24 * time.Hour, Action: overseer.DeadlineEscalate, FinalAfter: 72 * time.Hour, FinalAction: overseer.DeadlineAbort},
		"1h:escalate, 2h:continue": {After: time.Hour, Action: overseer.DeadlineEscalate, FinalAfter: 2 * time.Hour, FinalAction: overseer.DeadlineContinue},
	} {
		got, err := overseer.ParseGateDeadline(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
		back, err := overseer.ParseGateDeadline(got.String())
		require.NoError(t, err)
		assert.Equal(t, got, back, "String parses back: %q", got.String())
	}
	for in, msg := range map[string]string{
		"24h":                       "write DURATION:ACTION",
		"tomorrow:abort":            "is not a duration",
		"24h:skip":                  "use escalate, continue or abort",
		"-1h:abort":                 "positive duration",
		"24h:abort,48h:continue":    "only escalate can be followed",
		"24h:escalate,12h:abort":    "must be later than the first",
		"24h:escalate,48h:escalate": "use continue or abort",
		"1h:escalate,2h:abort,3h:x": "give one or two",
	} {
		_, err := overseer.ParseGateDeadline(in)
		assert.ErrorContains(t, err, msg, in)
	}
	_, err := overseer.NewPlugin(overseer.Options{GateDeadlines: map[string]overseer.GateDeadline{"Job": {After: time.Hour}}})
	assert.ErrorContains(t, err, `GateDeadlines["Job"]`)
}
