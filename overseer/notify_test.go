package overseer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
)

const (
	openedKey  = "default-test-workflow-id/default-test-run-id/code-1/opened"
	resumedKey = "default-test-workflow-id/default-test-run-id/code-1/resumed"
	abortedKey = "default-test-workflow-id/default-test-run-id/code-1/aborted"
)

// The run's end is read on the test clock: the phases take no time, so a
// run that waits for nothing ends when the gate is resumed, an hour after
// it started. The environment does not wait for the notifier workflow, so
// its clock stops when the run ends.
func TestAFailingNotifierNeverHoldsTheRunsEnd(t *testing.T) {
	t.Run("answers 500", func(t *testing.T) {
		n := &inbox{fail: func(overseer.GateEvent, int) error { return errors.New("HTTP 500") }}
		h, m := deadlineHarness(t, overseer.Options{Mode: overseer.ModeManage, Notifier: n}, onTrack(), flagged(), onTrack())
		h.env.SetDetachedChildWait(false)
		quietNotifier(h)
		start := h.env.Now()
		var during overseer.Status
		var duringMetric int64
		h.env.RegisterDelayedCallback(func() {
			during = h.status(t)
			m.mu.Lock()
			duringMetric = m.counts["overseer_notifications_failed{kind=opened}"]
			m.mu.Unlock()
		}, 2*time.Minute)
		h.env.RegisterDelayedCallback(func() { h.update(overseer.ResumeRequest{By: "carol"}) }, time.Hour)
		h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
		require.True(t, h.env.IsWorkflowCompleted())
		require.NoError(t, h.env.GetWorkflowError())
		assert.Equal(t, time.Hour, h.env.Now().Sub(start), "the run ended when the gate was resumed")

		assert.True(t, during.Paused)
		assert.Equal(t, 1, during.Counters.NotifyFailures, "counted at its first failure, while the gate is open")
		assert.Contains(t, during.NotifyError, "the opened notification of gate code-1 failed (retried while the job runs")
		assert.Contains(t, during.NotifyError, "HTTP 500")
		require.Len(t, during.Notifying, 1, "and still being retried")
		assert.Equal(t, openedKey, shortKey(during.Notifying[0]))
		assert.EqualValues(t, 1, duringMetric)
		assert.Greater(t, n.attemptsOf(openedKey), 3, "retried during the gate")

		s := h.status(t)
		assert.Zero(t, s.Counters.Notifications)
		assert.GreaterOrEqual(t, s.Counters.NotifyFailures, 1)
		assert.Empty(t, s.Notifying)
		assert.Equal(t, "overseer-notify/default-test-workflow-id/default-test-run-id", s.NotifyWorkflow)
	})
	t.Run("hangs", func(t *testing.T) {
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		n := &hanging{inbox: &inbox{}, release: release, kind: overseer.GateResumed}
		h, _ := deadlineHarness(t, overseer.Options{Mode: overseer.ModeManage, Notifier: n}, onTrack(), flagged(), onTrack())
		h.env.SetDetachedChildWait(false)
		quietNotifier(h)
		start := h.env.Now()
		h.env.RegisterDelayedCallback(func() { h.update(overseer.ResumeRequest{By: "carol"}) }, time.Hour)
		h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
		require.True(t, h.env.IsWorkflowCompleted())
		require.NoError(t, h.env.GetWorkflowError())
		assert.Equal(t, time.Hour, h.env.Now().Sub(start), "the run ended when the gate was resumed")
		assert.Equal(t, []overseer.GateEventKind{overseer.GateOpened}, n.kinds(), "the resume was never delivered")
		s := h.status(t)
		assert.Equal(t, 1, s.Counters.Notifications)
		assert.NotEmpty(t, s.NotifyWorkflow, "the run handed the hanging resume to the notifier workflow")
		assert.Empty(t, s.Notifying)
	})
}

// quietNotifier stands in for the notifier workflow the run hands its
// undelivered notifications to: the environment does not wait for it, and
// a real one would still be starting its attempts when the environment
// stops (the SDK's test environment races there).
// TestTheNotifierWorkflowDeliversWhatTheRunLeft runs the real one.
func quietNotifier(h *harness) {
	h.env.OnWorkflow(overseer.NotifyWorkflowName, mock.Anything, mock.Anything).Return(overseer.NotifyWorkflowResult{}, nil)
}

// hanging is an inbox whose notifications of kind hang until released.
type hanging struct {
	*inbox
	release chan struct{}
	kind    overseer.GateEventKind
}

func (n *hanging) Notify(ctx context.Context, ev overseer.GateEvent) error {
	if ev.Kind == n.kind {
		select {
		case <-n.release:
		case <-ctx.Done():
		}
		return errors.New("hung")
	}
	return n.inbox.Notify(ctx, ev)
}

func TestTheNotifierWorkflowDeliversWhatTheRunLeft(t *testing.T) {
	n := &inbox{fail: func(ev overseer.GateEvent, attempt int) error {
		if ev.Kind == overseer.GateAborted && attempt < 3 {
			return errors.New("HTTP 503")
		}
		return nil
	}}
	h, _ := deadlineHarness(t, overseer.Options{Mode: overseer.ModeManage, Notifier: n}, onTrack(), flagged())
	h.env.RegisterDelayedCallback(func() {
		h.update(overseer.ResumeRequest{By: "bob", Action: overseer.ActionAbort})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	assert.Equal(t, overseer.AbortedErrorType, overseer.ErrorType(h.env.GetWorkflowError()))
	assert.NotEmpty(t, h.status(t).NotifyWorkflow)
	assert.Equal(t, 3, n.attemptsOf(abortedKey), "retried by the notifier workflow after the run ended")
	assert.Equal(t, []overseer.GateEventKind{overseer.GateOpened, overseer.GateAborted}, n.kinds())
}
