package otel_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	overseerotel "github.com/corohq/temporal-overseer/otel"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/testsuite"
)

// replays counts the times TwoStageJob's code started while replaying:
// the proof that the second worker replayed the job.
var replays atomic.Int32

// goOnSignal lets TwoStageJob run its second stage.
const goOnSignal = "go-on"

// TwoStageJob runs spec and code, waits for goOnSignal, then runs test and
// review.
func TwoStageJob(ctx workflow.Context) error {
	if workflow.IsReplaying(ctx) {
		replays.Add(1)
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	overseer.SetObjective(ctx, "ship the export feature")
	for _, p := range []string{"spec", "code"} {
		if err := workflow.ExecuteActivity(ctx, p, p).Get(ctx, nil); err != nil {
			return err
		}
	}
	workflow.GetSignalChannel(ctx, goOnSignal).Receive(ctx, nil)
	for _, p := range []string{"test", "review"} {
		if err := workflow.ExecuteActivity(ctx, p, p).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// TestE2EOneEvaluationEventPerAssessmentAcrossAReplay runs a job on the
// dev server under a traced worker exporting to an in-process OTLP
// receiver, pauses it at a gate a reviewer resumes, then stops that worker,
// empties the workflow cache and lets a new worker replay the job and run
// it to its end: the receiver holds one evaluation event per assessment,
// with the status' values, and one gate span.
func TestE2EOneEvaluationEventPerAssessmentAcrossAReplay(t *testing.T) {
	srv := testsuite.StartDevServerForTest(t, testsuite.DevServerOptions{})
	c := srv.Client()
	r := startReceiver(t)
	tp := r.tracerProvider(t)
	tel, err := overseerotel.New(overseerotel.Options{TracerProvider: tp})
	require.NoError(t, err)
	// One judge for both workers: its script goes on where it was.
	judge := jev.NewScripted(onTrack(), flagged(), onTrack(), onTrack())
	const tq = "otel-e2e"
	newWorker := func() worker.Worker {
		plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeManage, Judge: judge, Telemetry: tel})
		require.NoError(t, err)
		ti, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{Tracer: tp.Tracer("temporal-sdk-go")})
		require.NoError(t, err)
		w := worker.New(c, tq, worker.Options{Plugins: []worker.Plugin{plugin}, Interceptors: []interceptor.WorkerInterceptor{ti}})
		w.RegisterWorkflow(TwoStageJob)
		for _, p := range []string{"spec", "code", "test", "review"} {
			w.RegisterActivityWithOptions(phase, activity.RegisterOptions{Name: p})
		}
		require.NoError(t, w.Start())
		return w
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	w1 := newWorker()
	id := fmt.Sprintf("otel-e2e-%d", time.Now().UnixNano())
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: tq}, TwoStageJob)
	require.NoError(t, err)

	status := func() overseer.Status {
		v, err := c.QueryWorkflow(ctx, id, "", overseer.StatusQueryName)
		if err != nil {
			return overseer.Status{}
		}
		var st overseer.Status
		require.NoError(t, v.Get(&st))
		return st
	}
	flushed := func(n int) bool {
		require.NoError(t, tp.ForceFlush(ctx))
		return len(events(r.named(overseerotel.SpanAssessment), overseerotel.EvaluationResultEvent)) >= n
	}
	require.Eventually(t, func() bool { return status().Paused }, time.Minute, 50*time.Millisecond, "the code phase pauses the job")
	h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: overseer.ResumeName,
		Args: []any{overseer.ResumeRequest{By: "alice", Note: "looks fine"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, h.Get(ctx, nil))
	require.Eventually(t, func() bool { return flushed(2) && len(r.named(overseerotel.SpanGate)) == 1 }, time.Minute, 50*time.Millisecond)
	before := len(events(r.named(overseerotel.SpanAssessment), overseerotel.EvaluationResultEvent))
	assert.Equal(t, 2, before)

	// A worker restart: the job's history replays on a new worker with an
	// empty cache.
	w1.Stop()
	worker.PurgeStickyWorkflowCache()
	w2 := newWorker()
	defer w2.Stop()
	require.NoError(t, c.SignalWorkflow(ctx, id, "", goOnSignal, nil))
	require.NoError(t, run.Get(ctx, nil))
	assert.Positive(t, replays.Load(), "the second worker replayed the job")

	st := status()
	require.Len(t, st.Assessments, 4)
	require.Eventually(t, func() bool { return flushed(4) }, time.Minute, 50*time.Millisecond)
	require.NoError(t, tp.ForceFlush(ctx))
	spans := r.named(overseerotel.SpanAssessment)
	evs := events(spans, overseerotel.EvaluationResultEvent)
	require.Equal(t, 4, len(evs), "one event per assessment: the replay added none")
	for i, a := range st.Assessments {
		got := attrs(evs[i].GetAttributes())
		assert.Equal(t, overseer.EvaluationOnObjective, got["gen_ai.evaluation.name"])
		assert.InDelta(t, a.Verdict.OnObjective, got["gen_ai.evaluation.score.value"], 1e-12, "assessment %d", a.Seq)
		assert.Equal(t, string(a.Verdict.Band), got["gen_ai.evaluation.score.label"], "assessment %d", a.Seq)
		assert.Equal(t, a.Phase, got["overseer.phase"])
		assert.Equal(t, int64(a.Seq), got["overseer.assessment.seq"])
		assert.Equal(t, "TwoStageJob", got["temporalWorkflowType"])
		assert.Equal(t, id, got["temporalWorkflowID"])
		assert.Equal(t, run.GetRunID(), got["temporalRunID"])
	}
	gates := r.named(overseerotel.SpanGate)
	require.Len(t, gates, 1, "the gate once, though its update replayed")
	g := attrs(gates[0].GetAttributes())
	assert.Equal(t, "alice", g["overseer.gate.reviewer"])
	assert.Equal(t, "continue", g["overseer.gate.action"])
	require.Len(t, st.Gates, 1)
	assert.Equal(t, st.Gates[0].ID, g["overseer.gate.id"])
	assert.Equal(t, uint64(st.Gates[0].PausedAt.UnixNano()), gates[0].GetStartTimeUnixNano())
}
