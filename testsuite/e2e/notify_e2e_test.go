package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/notify"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// hookReceiver is a webhook receiver on a real HTTP server: it verifies
// every request's signature and keeps each event once by its idempotency
// key; the first attempt of every event answers 503, so each is delivered
// by a retry.
type hookReceiver struct {
	srv      *httptest.Server
	secret   []byte
	mu       sync.Mutex
	events   map[string]overseer.GateEvent
	attempts map[string]int
	refused  int
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	h := &hookReceiver{secret: []byte("e2e-webhook-secret"), events: map[string]overseer.GateEvent{}, attempts: map[string]int{}}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ev, err := notify.ReadEvent(r, h.secret, time.Now(), 0)
		h.mu.Lock()
		defer h.mu.Unlock()
		if err != nil {
			h.refused++
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		h.attempts[ev.IdempotencyKey]++
		if h.attempts[ev.IdempotencyKey] == 1 {
			http.Error(w, "busy, try again", http.StatusServiceUnavailable)
			return
		}
		if _, seen := h.events[ev.IdempotencyKey]; !seen {
			h.events[ev.IdempotencyKey] = ev
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

// of returns the events kept for a job, by kind, and how many of each.
func (h *hookReceiver) of(jobID string) map[overseer.GateEventKind][]overseer.GateEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[overseer.GateEventKind][]overseer.GateEvent{}
	for _, ev := range h.events {
		if ev.WorkflowID == jobID {
			out[ev.Kind] = append(out[ev.Kind], ev)
		}
	}
	return out
}

func (h *hookReceiver) notifier(t *testing.T) overseer.Notifier {
	t.Helper()
	n, err := notify.NewWebhook(h.srv.URL+"/overseer", h.secret)
	require.NoError(t, err)
	return n
}

// TestE2EGateEscalatesThenExpiresAndNotifiesAcrossAWorkerRestart: a job
// nobody resumes escalates at its first deadline and is aborted at its
// second, with the workers replaced while its gate is open; a webhook
// receiver that verifies every signature sees opened, escalated and
// expired once each (the first attempt of each fails and is retried; the
// expiry that ends the run by the run's notifier workflow). A second job
// resumed in time sends opened and resumed.
func TestE2EGateEscalatesThenExpiresAndNotifiesAcrossAWorkerRestart(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	hook := newHookReceiver(t)
	cfg := func() worker.Config {
		return worker.Config{
			GateDeadlines: map[string]overseer.GateDeadline{workflows.JobWorkflowName: {
				After: 8 * time.Second, Action: overseer.DeadlineEscalate, FinalAfter: 20 * time.Second, FinalAction: overseer.DeadlineAbort,
			}},
			Notifier:     hook.notifier(t),
			DashboardURL: "http://127.0.0.1:8080",
		}
	}
	first := cfg()
	tq, stop := startWorkers(t, srv, first)
	run := startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	id := run.GetID()
	eventually(t, "the job to pause and its gate to be announced", 30*time.Second, func() bool {
		return len(hook.of(id)[overseer.GateOpened]) == 1
	})
	open := status(t, c, id)
	require.True(t, open.Paused)
	require.NotNil(t, open.GateDeadline, "the status shows the open gate's deadline")
	assert.Equal(t, open.PausedSince.Add(8*time.Second), *open.GateDeadline)

	// Replace the workers while the gate is open, before its deadline.
	stop()
	second := cfg()
	second.TaskQueue = tq
	startWorker(t, srv, second)

	var res workflows.JobResult
	err := run.Get(context.Background(), &res)
	require.Error(t, err, "aborted at the final deadline")
	assert.Equal(t, overseer.AbortedErrorType, overseer.ErrorType(err), "%v", err)

	s := status(t, c, id)
	require.NotEmpty(t, s.Gates)
	g := s.Gates[len(s.Gates)-1]
	assert.Equal(t, open.GateID, g.ID)
	assert.True(t, g.Expired)
	assert.Equal(t, "deadline 20s: abort", g.ExpiredBy)
	require.NotNil(t, g.EscalatedAt)
	// At the deadline, or as soon after as a worker took the timer.
	assert.WithinRange(t, *g.EscalatedAt, g.PausedAt.Add(8*time.Second), g.PausedAt.Add(13*time.Second))
	require.NotNil(t, g.ResumedAt)
	assert.WithinRange(t, *g.ResumedAt, g.PausedAt.Add(20*time.Second), g.PausedAt.Add(25*time.Second))
	assert.Equal(t, 1, s.Counters.Escalations)
	assert.Equal(t, 1, s.Counters.Expired)
	assert.Equal(t, 2, s.Counters.Notifications, "opened and escalated, by the run")
	assert.Zero(t, s.Counters.NotifyFailures, "each delivered by a retry")
	assert.Equal(t, "overseer-notify/"+id+"/"+run.GetRunID(), s.NotifyWorkflow, "the expiry that ended the run, by its notifier workflow")
	eventually(t, "the notifier workflow to deliver the expiry", 30*time.Second, func() bool {
		return len(hook.of(id)[overseer.GateExpired]) == 1
	})

	got := hook.of(id)
	for _, kind := range []overseer.GateEventKind{overseer.GateOpened, overseer.GateEscalated, overseer.GateExpired} {
		require.Len(t, got[kind], 1, "%s once", kind)
		ev := got[kind][0]
		assert.Equal(t, fmt.Sprintf("%s/%s/%s/%d/%s", id, run.GetRunID(), g.ID, g.PausedAt.UnixMilli(), kind), ev.IdempotencyKey)
		assert.Equal(t, "http://127.0.0.1:8080/job?id="+id, ev.DashboardURL)
	}
	assert.Len(t, got, 3, "nothing else: %v", got)
	assert.Equal(t, "deadline 8s: escalate", got[overseer.GateEscalated][0].Rule)
	assert.Equal(t, overseer.ActionAbort, got[overseer.GateExpired][0].Action)
	hook.mu.Lock()
	assert.Zero(t, hook.refused, "every signature verified")
	for key, n := range hook.attempts {
		assert.GreaterOrEqual(t, n, 2, "%s was retried after its first attempt failed", key)
	}
	hook.mu.Unlock()

	// Resumed in time: opened, then resumed, and no deadline acts.
	run2, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{
		ID: id + "-resumed", TaskQueue: tq, Memo: map[string]any{overseer.GateDeadlineMemoKey: "10m:abort"},
	}, workflows.JobWorkflowName, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	require.NoError(t, err)
	eventually(t, "the second job to pause", 30*time.Second, func() bool { return status(t, c, run2.GetID()).Paused })
	s2 := status(t, c, run2.GetID())
	assert.Equal(t, s2.PausedSince.Add(10*time.Minute), *s2.GateDeadline, "the memo's deadline")
	_, err = finish(t, c, run2, "alice")
	require.NoError(t, err)
	// What the run had not delivered at its end (a first attempt the
	// receiver failed) its notifier workflow delivers after it.
	final := status(t, c, run2.GetID())
	require.Positive(t, final.Counters.Resumes)
	eventually(t, "every opening and resume to be announced", 30*time.Second, func() bool {
		got := hook.of(run2.GetID())
		return len(got[overseer.GateOpened]) >= final.Counters.Pauses && len(got[overseer.GateResumed]) >= final.Counters.Resumes
	})
	got = hook.of(run2.GetID())
	assert.Len(t, got[overseer.GateOpened], final.Counters.Pauses, "one opened per gate")
	assert.Len(t, got[overseer.GateResumed], final.Counters.Resumes, "one resumed per gate")
	assert.Equal(t, "alice", got[overseer.GateResumed][0].By)
	assert.Empty(t, got[overseer.GateExpired])
	assert.Zero(t, final.Counters.Expired)
}

// A job reset to before its gate opened pauses anew at a gate of the same
// id (the phase and the count of pauses are the same): the receiver, which
// keeps one event per idempotency key, keeps both announcements, because
// the key names the gate's opening too. Before, the key was the same
// (WORKFLOW_ID/RUN_ID/GATE_ID/KIND, the run being the one the reset started
// from) and the second announcement was dropped as a retry of the first.
func TestE2EAGateOpenedAnewAfterAResetIsAnnounced(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	hook := newHookReceiver(t)
	tq, _ := startWorkers(t, srv, worker.Config{Notifier: hook.notifier(t)})
	run := startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	id := run.GetID()
	t.Cleanup(func() { _ = c.TerminateWorkflow(context.Background(), id, "", "e2e: done") })
	eventually(t, "the job to pause and its gate to be announced", 30*time.Second, func() bool {
		return len(hook.of(id)[overseer.GateOpened]) == 1
	})
	first := status(t, c, id)
	require.True(t, first.Paused)

	var reset int64
	for _, e := range historyOfRun(t, c, id, run.GetRunID()) {
		if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
			reset = e.GetEventId()
			break
		}
	}
	require.NotZero(t, reset)
	newRun := resetTo(t, c, srv.Namespace(), id, run.GetRunID(), reset, "e2e: reset to before the gate")
	eventually(t, "the reset run to pause and its gate to be announced", time.Minute, func() bool {
		return len(hook.of(id)[overseer.GateOpened]) == 2
	})
	second := status(t, c, id)
	require.True(t, second.Paused)
	assert.Equal(t, first.GateID, second.GateID, "the reset run's gate has the first run's gate id")
	opened := hook.of(id)[overseer.GateOpened]
	assert.NotEqual(t, opened[0].IdempotencyKey, opened[1].IdempotencyKey)
	runs := []string{opened[0].RunID, opened[1].RunID}
	assert.ElementsMatch(t, []string{run.GetRunID(), newRun}, runs, "one announcement by each run")
}
