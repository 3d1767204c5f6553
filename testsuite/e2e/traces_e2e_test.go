package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/sdk/client"

	"github.com/corohq/temporal-overseer/activities"
	overseerotel "github.com/corohq/temporal-overseer/otel"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// A worker given a tracer provider (what OTEL_TRACES_EXPORTER=otlp makes
// for `overseer worker`) traces its workflows with the SDK's interceptor
// and puts the overseer's evaluation events in the same traces: every
// assessment of a job is a gen_ai.evaluation.result event in the trace of
// the job's workflow span.
func TestE2EAWorkerWithTracesPutsVerdictsInTheJobsTrace(t *testing.T) {
	srv := e2eServer(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tq := startWorker(t, srv, worker.Config{TracerProvider: tp, AgentWork: 10 * time.Millisecond})
	id := fmt.Sprint("e2e-traced-", time.Now().UnixNano())
	run, err := srv.Client().ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: tq},
		workflows.JobWorkflowName, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.OnTrack})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, run.Get(ctx, nil))
	st := status(t, srv.Client(), id)
	require.Positive(t, st.Counters.Assessments)

	// The overseer's spans end in workflow code, the SDK's workflow span
	// when the run does: poll until both are recorded.
	var workflowTraces map[string]bool
	var events int
	eventually(t, "the job's spans", 30*time.Second, func() bool {
		workflowTraces, events = map[string]bool{}, 0
		for _, s := range rec.Ended() {
			if strings.HasPrefix(s.Name(), "RunWorkflow:"+workflows.JobWorkflowName) {
				workflowTraces[s.SpanContext().TraceID().String()] = true
			}
		}
		for _, s := range rec.Ended() {
			for _, e := range s.Events() {
				if e.Name == overseerotel.EvaluationResultEvent && workflowTraces[s.SpanContext().TraceID().String()] {
					events++
				}
			}
		}
		return len(workflowTraces) > 0 && events >= st.Counters.Assessments
	})
	assert.Equal(t, st.Counters.Assessments, events, "one evaluation event per assessment, in the job's trace")
}
