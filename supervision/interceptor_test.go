package supervision_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/supervision"
)

type agentInput struct {
	Task  string
	Steps int
}

func (a agentInput) SupervisionTask() string { return a.Task }

// agent emits events and heartbeats and returns a result built from them.
func agent(ctx context.Context, in agentInput) (string, error) {
	out := ""
	for i := range in.Steps {
		piece := fmt.Sprintf("step %d;", i)
		supervision.RecordEvent(ctx, supervision.Event{Type: supervision.EventTextDelta, Text: piece})
		activity.RecordHeartbeat(ctx, i)
		out += piece
	}
	if in.Steps < 0 {
		return "", fmt.Errorf("agent failed at step %d", -in.Steps)
	}
	return out, nil
}

func runAgent(t *testing.T, icpt interceptor.WorkerInterceptor, in agentInput) (string, []int, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	if icpt != nil {
		env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{icpt}})
	}
	var mu sync.Mutex
	var beats []int
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, details converter.EncodedValues) {
		var i int
		if details.Get(&i) == nil {
			mu.Lock()
			beats = append(beats, i)
			mu.Unlock()
		}
	})
	env.RegisterActivityWithOptions(agent, activity.RegisterOptions{Name: "agent.run"})
	v, err := env.ExecuteActivity("agent.run", in)
	if err != nil {
		return "", beats, err
	}
	var out string
	require.NoError(t, v.Get(&out))
	return out, beats, nil
}

func shadow(t *testing.T, j *judgeFor, onRecord func(supervision.Record)) *supervision.Supervisor {
	t.Helper()
	th, _ := supervision.NewThresholds(0.2, 0.8)
	s, err := supervision.New(supervision.Options{Mode: supervision.ModeShadow, Judge: j, Thresholds: th, OnRecord: onRecord})
	require.NoError(t, err)
	return s
}

func TestSupervisedActivityBehavesExactlyAsUnsupervised(t *testing.T) {
	in := agentInput{Task: "Fix the export", Steps: 5}
	plainOut, plainBeats, plainErr := runAgent(t, nil, in)

	obs := make(chan supervision.Observation, 10)
	icpt, err := supervision.NewInterceptor(supervision.InterceptorOptions{
		Supervisor: shadow(t, &judgeFor{p: probs(nil)}, nil), Activities: []string{"agent.run"}, DisableWorkflowAdvice: true,
		Observers: []func(supervision.Observation){
			func(supervision.Observation) { panic("a broken observer") },
			func(o supervision.Observation) { obs <- o },
		},
	})
	require.NoError(t, err)
	out, beats, err := runAgent(t, icpt, in)
	require.NoError(t, err)
	require.NoError(t, plainErr)
	assert.Equal(t, plainOut, out, "the result flows exactly as without the supervisor")
	assert.Equal(t, plainBeats, beats, "heartbeats flow unchanged")

	// The final observation comes after completion, with the worker idle.
	select {
	case o := <-obs:
		assert.True(t, o.Final)
		require.NotNil(t, o.Decision.Report)
		assert.Equal(t, int64(11), o.Decision.Report.Sequence, "5 text events + 5 heartbeats + completion")
	case <-time.After(10 * time.Second):
		t.Fatal("no final observation")
	}

	// Errors propagate unchanged.
	_, _, plainErr = runAgent(t, nil, agentInput{Task: "x", Steps: -2})
	_, _, err = runAgent(t, icpt, agentInput{Task: "x", Steps: -2})
	require.Error(t, err)
	assert.Equal(t, plainErr.Error(), err.Error())
}

func TestOffModeAndUndesignatedActivitiesPassThrough(t *testing.T) {
	off, err := supervision.New(supervision.Options{Mode: supervision.ModeOff})
	require.NoError(t, err)
	icpt, err := supervision.NewInterceptor(supervision.InterceptorOptions{Supervisor: off})
	require.NoError(t, err)
	out, _, err := runAgent(t, icpt, agentInput{Task: "x", Steps: 2})
	require.NoError(t, err)
	assert.Equal(t, "step 0;step 1;", out)

	j := &judgeFor{p: probs(nil)}
	icpt, err = supervision.NewInterceptor(supervision.InterceptorOptions{Supervisor: shadow(t, j, nil), Activities: []string{"other"}, DisableWorkflowAdvice: true})
	require.NoError(t, err)
	_, _, err = runAgent(t, icpt, agentInput{Task: "x", Steps: 2})
	require.NoError(t, err)
	assert.Zero(t, j.calls)

	_, err = supervision.NewInterceptor(supervision.InterceptorOptions{Supervisor: shadow(t, j, nil)})
	assert.ErrorContains(t, err, "Activities")
}

func TestConcurrentInvocationsKeepScopesEvidenceAndCountersApart(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]supervision.EvidenceRequest{}
	src := supervision.EvidenceFunc(func(_ context.Context, r supervision.EvidenceRequest) (supervision.Evidence, error) {
		mu.Lock()
		seen[r.Scope.RunID] = r
		mu.Unlock()
		return supervision.Evidence{Revision: "rev-" + r.Scope.RunID}, nil
	})
	obs := make(chan supervision.Observation, 20)
	icpt, err := supervision.NewInterceptor(supervision.InterceptorOptions{
		Supervisor: shadow(t, &judgeFor{p: probs(nil)}, nil), Activities: []string{"agent.run"}, Evidence: src, DisableWorkflowAdvice: true,
		Observers: []func(supervision.Observation){func(o supervision.Observation) { obs <- o }},
	})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, err := runAgent(t, icpt, agentInput{Task: fmt.Sprint("task ", i), Steps: i + 1})
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	bySeq := map[int64]int{}
	runs := map[string]bool{}
	for range 4 {
		select {
		case o := <-obs:
			require.NotNil(t, o.Decision.Report)
			runs[o.Scope.RunID] = true
			bySeq[o.Decision.Report.Sequence]++
			assert.Equal(t, 1, o.Assessment, "each invocation counts its own assessments")
		case <-time.After(10 * time.Second):
			t.Fatal("missing observation")
		}
	}
	assert.Len(t, runs, 4, "a fresh run id per invocation")
	assert.Equal(t, map[int64]int{3: 1, 5: 1, 7: 1, 9: 1}, bySeq, "events of one invocation never leak into another")
	mu.Lock()
	assert.Len(t, seen, 4)
	mu.Unlock()
}

func TestAdviceRecords(t *testing.T) {
	d := newSupervisor(t, &judgeFor{p: probs(nil)}, nil).ObserveSnapshot(context.Background(), idle(verifiedEvidence()))
	recs := supervision.AdviceRecords("v1", supervision.Observation{Scope: scope, Assessment: 2, Decision: d, Advice: supervision.AdviceReviewCompletion})
	require.Len(t, recs, 11)
	assert.Equal(t, "supervision.advice", recs[0].Purpose)
	assert.Equal(t, "REVIEW_COMPLETION", recs[0].Recommendation["advice"])
	assert.Equal(t, "supervision.core.human-escalation__needs_human", recs[1].Purpose)
	assert.Equal(t, "NO", recs[1].Reason)
	assert.Equal(t, "0.05", recs[1].Recommendation["probability"])
	assert.Zero(t, recs[1].Elapsed)
}

func agentWorkflow(ctx workflow.Context, in agentInput) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var out string
	err := workflow.ExecuteActivity(ctx, "agent.run", in).Get(ctx, &out)
	return out, err
}

func TestOverLongWorkflowIDIsUnscopedNotAnError(t *testing.T) {
	obs := make(chan supervision.Observation, 10)
	icpt, err := supervision.NewInterceptor(supervision.InterceptorOptions{
		Supervisor: shadow(t, &judgeFor{p: probs(nil)}, nil), Activities: []string{"agent.run"}, DisableWorkflowAdvice: true,
		Observers: []func(supervision.Observation){func(o supervision.Observation) { obs <- o }},
	})
	require.NoError(t, err)
	defer icpt.Close()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{icpt}})
	env.RegisterWorkflow(agentWorkflow)
	env.RegisterActivityWithOptions(agent, activity.RegisterOptions{Name: "agent.run"})
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: strings.Repeat("w", supervision.MaxScopeChars+88)})
	env.ExecuteWorkflow(agentWorkflow, agentInput{Task: "Fix the export", Steps: 2})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	select {
	case o := <-obs:
		assert.NotEqual(t, supervision.StatusError, o.Decision.Status, o.Decision.Reason)
		require.NotNil(t, o.Decision.Report, "the judge was asked")
		assert.Equal(t, "unscoped-"+o.Scope.RunID, o.Scope.SessionID)
	case <-time.After(10 * time.Second):
		t.Fatal("no observation")
	}
}
