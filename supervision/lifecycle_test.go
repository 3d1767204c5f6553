package supervision

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// dispatcherGoroutines counts the observer goroutines alive now.
func dispatcherGoroutines() int {
	buf := make([]byte, 1<<22)
	n := runtime.Stack(buf, true)
	return strings.Count(string(buf[:n]), "supervision.(*dispatcher).run(")
}

func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for dispatcherGoroutines() != want {
		if time.Now().After(deadline) {
			t.Fatalf("%d observer goroutines, want %d", dispatcherGoroutines(), want)
		}
		runtime.Gosched()
	}
}

func testSupervisor(t *testing.T) *Supervisor {
	t.Helper()
	s, err := New(Options{Mode: ModeShadow, Judge: HeuristicJudge{}, Thresholds: Thresholds{No: 0.2, Yes: 0.8}})
	require.NoError(t, err)
	return s
}

func TestPluginStopsTheObserverGoroutineWhenTheWorkerStops(t *testing.T) {
	base := dispatcherGoroutines()
	seen := make(chan Observation, 10)
	p, err := NewPlugin(InterceptorOptions{Supervisor: testSupervisor(t), Activities: []string{"agent.run"},
		Observers: []func(Observation){func(o Observation) { seen <- o }}})
	require.NoError(t, err)
	wo := &worker.Options{}
	require.NoError(t, p.ConfigureWorker(t.Context(), worker.PluginConfigureWorkerOptions{WorkerInstanceKey: "w1", WorkerOptions: wo}))
	require.Len(t, wo.Interceptors, 1, "the plugin adds its interceptor")
	icpt := wo.Interceptors[0].(*Interceptor)

	icpt.q.submit(func() { seen <- Observation{Assessment: 7} })
	assert.Equal(t, 7, (<-seen).Assessment)
	waitGoroutines(t, base+1)

	stopped := false
	p.StopWorker(t.Context(), worker.PluginStopWorkerOptions{WorkerInstanceKey: "w1"},
		func(context.Context, worker.PluginStopWorkerOptions) { stopped = true })
	assert.True(t, stopped, "the worker itself is stopped first")
	waitGoroutines(t, base)
	icpt.q.submit(func() { seen <- Observation{} }) // dropped, no new goroutine
	assert.Equal(t, base, dispatcherGoroutines())
	assert.Empty(t, seen)
}

func TestCloseRunsQueuedCallbacksFirst(t *testing.T) {
	icpt, err := NewInterceptor(InterceptorOptions{Supervisor: testSupervisor(t), Activities: []string{"a"}})
	require.NoError(t, err)
	base := dispatcherGoroutines()
	release := make(chan struct{})
	ran := make(chan int, 3)
	icpt.q.submit(func() { <-release; ran <- 1 })
	icpt.q.submit(func() { ran <- 2 })
	closed := make(chan struct{})
	go func() { icpt.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned before the queued callbacks ran")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	<-closed
	assert.Equal(t, []int{1, 2}, []int{<-ran, <-ran})
	waitGoroutines(t, base)
	icpt.Close() // idempotent
}

// signalCapture records the advice signals.
type signalCapture struct {
	names []string
	sigs  []overseer.InPhaseAdvice
}

func (s *signalCapture) SignalWorkflow(_ context.Context, _, _, name string, arg any) error {
	s.names = append(s.names, name)
	s.sigs = append(s.sigs, arg.(overseer.InPhaseAdvice))
	return nil
}

func TestAdviceTimestampFollowsTheInjectedClock(t *testing.T) {
	clock := newFakeClock()
	clock.Advance(90 * time.Minute)
	icpt, err := NewInterceptor(InterceptorOptions{Supervisor: testSupervisor(t), Activities: []string{"a"}, clock: clock})
	require.NoError(t, err)
	defer icpt.Close()
	sc := &signalCapture{}
	n := &notifier{w: icpt, client: sc, scope: Scope{UserID: "u", SessionID: "s", RunID: "r"}}
	n.publish(Observation{Assessment: 1, Advice: AdviceRequestVerification, Final: true})
	require.Len(t, sc.sigs, 1)
	assert.Equal(t, clock.now(), sc.sigs[0].At)
	assert.Equal(t, []string{overseer.InPhaseSignalName}, sc.names, "the overseer's in-phase advice signal")
	assert.Equal(t, string(AdviceRequestVerification), sc.sigs[0].Advice)

	// The wire format running workflows decode.
	raw, err := json.Marshal(sc.sigs[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"activity_type":"","activity_id":"","run_id":"r","assessment":1,"advice":"REQUEST_VERIFICATION",
		"status":"","reason":"","superseded":false,"consecutive_failures":0,"verified_revision":false,"final":true,
		"at":"2026-11-30T01:30:00Z"}`, string(raw))
}

func TestActivityScopeFallsBackToUnscoped(t *testing.T) {
	long := strings.Repeat("j", maxScopeChars+1)
	exact := strings.Repeat("é", maxScopeChars) // characters, not bytes
	for _, tc := range []struct {
		name, namespace, workflowID string
		want                        Scope
	}{
		{"workflow ids as they are", "default", "job-1", Scope{UserID: "default", SessionID: "job-1", RunID: "r1"}},
		{"512 characters are allowed", "default", exact, Scope{UserID: "default", SessionID: exact, RunID: "r1"}},
		{"a longer workflow id", "default", long, Scope{UserID: "default", SessionID: "unscoped-r1", RunID: "r1"}},
		{"outside a workflow", "default", "", Scope{UserID: "default", SessionID: "unscoped-r1", RunID: "r1"}},
		{"blank namespace", " ", "job-1", Scope{UserID: "unscoped-r1", SessionID: "job-1", RunID: "r1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := activityScope(tc.namespace, tc.workflowID, "r1")
			assert.Equal(t, tc.want, got)
			assert.NoError(t, got.Validate())
		})
	}
}

var _ interceptor.WorkerInterceptor = (*Interceptor)(nil)

// advancing is a judge that takes d of the fake clock's time.
type advancing struct {
	clock *fakeClock
	d     time.Duration
}

func (a advancing) Decide(ctx context.Context, req jev.Request) (*jev.Response, error) {
	a.clock.Advance(a.d)
	return HeuristicJudge{}.Decide(ctx, req)
}

func TestJudgmentElapsedFollowsTheInjectedClock(t *testing.T) {
	clock := newFakeClock()
	var recs []Record
	s, err := New(Options{Mode: ModeShadow, Judge: advancing{clock, 3 * time.Second}, Thresholds: Thresholds{No: 0.2, Yes: 0.8},
		clock: clock, OnRecord: func(r Record) { recs = append(recs, r) }})
	require.NoError(t, err)
	d := s.ObserveSnapshot(t.Context(), Snapshot{Scope: Scope{UserID: "u", SessionID: "s", RunID: "r"}, Sequence: 1, Task: "Fix the export", WorkerActive: true})
	require.NotEqual(t, StatusError, d.Status, d.Reason)
	require.Len(t, recs, 1)
	assert.Equal(t, 3*time.Second, recs[0].Elapsed)
}
