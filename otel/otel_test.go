package otel_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.temporal.io/sdk/activity"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	overseerotel "github.com/corohq/temporal-overseer/otel"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// answer builds a valid judge response.
func answer(onObjective float64, breach string, confidence, severity float64) jev.Step {
	return jev.Step{Response: &jev.Response{
		ModelVersion: "scripted-1",
		Usage:        jev.Usage{InputTokens: 100, OutputTokens: 10},
		Answers: map[string]jev.Answer{
			overseer.QuestionBreach:   {Type: jev.Choice, Choice: breach, Confidence: jev.Prob(confidence)},
			overseer.QuestionOffTrack: {Type: jev.Noul, Probability: jev.Prob(onObjective)},
			overseer.QuestionSeverity: {Type: jev.Score, Score: jev.Prob(severity), Confidence: jev.Prob(0.7)},
			overseer.QuestionBlocked:  {Type: jev.Noul, Probability: jev.Prob(0.1)},
		},
	}}
}

func onTrack() jev.Step { return answer(0.9, overseer.BreachNone, 0.9, 0.2) }
func flagged() jev.Step { return answer(0.1, overseer.BreachNone, 0.9, 3) }

// phaseResult is what a phase returns, with its report to the overseer.
type phaseResult struct {
	overseer.ReportCarrier
	Phase string
}

func phase(ctx context.Context, name string) (phaseResult, error) {
	return phaseResult{Phase: name, ReportCarrier: overseer.ReportCarrier{OverseerReport: &overseer.PhaseReport{Turns: 3, InputTokens: 1000}}}, nil
}

// JobWorkflow runs its phases in order.
func JobWorkflow(ctx workflow.Context, phases []string) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	overseer.SetObjective(ctx, "ship the export feature")
	for _, p := range phases {
		if err := workflow.ExecuteActivity(ctx, p, p).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

var testPhases = []string{"spec", "code", "test"}

// runJob runs JobWorkflow in the SDK's test environment under the plugin,
// with the exporter tel, the contrib's tracing interceptor when traced,
// and a scripted judge; a reviewer resumes the gate after an hour.
func runJob(t *testing.T, tp *sdktrace.TracerProvider, tel *overseerotel.Telemetry, traced bool, steps ...jev.Step) overseer.Status {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.DiscardHandler)))
	env := s.NewTestWorkflowEnvironment()
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeManage, Judge: jev.NewScripted(steps...),
		Placement: overseer.PlacementLocalActivity, Telemetry: tel})
	require.NoError(t, err)
	opts := worker.Options{Plugins: []worker.Plugin{plugin}}
	if traced {
		ti, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{Tracer: tp.Tracer("temporal-sdk-go")})
		require.NoError(t, err)
		opts.Interceptors = []interceptor.WorkerInterceptor{ti}
	}
	env.SetWorkerOptions(opts)
	env.RegisterWorkflow(JobWorkflow)
	for _, p := range testPhases {
		env.RegisterActivityWithOptions(phase, activity.RegisterOptions{Name: p})
	}
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "bob", Note: "find the root cause first"})
	}, time.Hour)
	env.ExecuteWorkflow(JobWorkflow, testPhases)
	require.NoError(t, env.GetWorkflowError())
	v, err := env.QueryWorkflow(overseer.StatusQueryName)
	require.NoError(t, err)
	var st overseer.Status
	require.NoError(t, v.Get(&st))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, tp.ForceFlush(ctx)) // exports everything ended, synchronously
	return st
}

func TestEachAssessmentIsOneEvaluationEventUnderTheWorkflowSpan(t *testing.T) {
	r := startReceiver(t)
	tp := r.tracerProvider(t)
	tel, err := overseerotel.New(overseerotel.Options{TracerProvider: tp})
	require.NoError(t, err)
	st := runJob(t, tp, tel, true, onTrack(), flagged(), onTrack())

	workflowSpans := r.prefixed("RunWorkflow:JobWorkflow")
	require.NotEmpty(t, workflowSpans)
	parent := workflowSpans[0]

	spans := r.named(overseerotel.SpanAssessment)
	require.Len(t, st.Assessments, 3)
	require.Len(t, spans, 3, "one span per assessment")
	assert.Equal(t, "https://opentelemetry.io/schemas/1.41.0", r.schemaOf(spans[0]), "the conventions' version")
	evs := events(spans, overseerotel.EvaluationResultEvent)
	require.Len(t, evs, 3, "one evaluation result event per assessment")
	for i, a := range st.Assessments {
		assert.Equal(t, spanID(parent.GetSpanId()), spanID(spans[i].GetParentSpanId()), "parented to the workflow's span")
		assert.Equal(t, parent.GetTraceId(), spans[i].GetTraceId())
		got := attrs(evs[i].GetAttributes())
		assert.Equal(t, "on_objective", got["gen_ai.evaluation.name"])
		assert.InDelta(t, a.Verdict.OnObjective, got["gen_ai.evaluation.score.value"], 1e-12)
		assert.Equal(t, string(a.Verdict.Band), got["gen_ai.evaluation.score.label"])
		assert.Equal(t, "JobWorkflow", got["temporalWorkflowType"])
		assert.Equal(t, a.Phase, got["overseer.phase"])
		assert.NotEmpty(t, got["temporalWorkflowID"])
		assert.NotEmpty(t, got["temporalRunID"])
		assert.NotContains(t, got, "gen_ai.evaluation.explanation", "no content unless asked")
	}
	assert.Equal(t, true, attrs(evs[1].GetAttributes())["overseer.flagged"])

	gates := r.named(overseerotel.SpanGate)
	require.Len(t, gates, 1)
	g := attrs(gates[0].GetAttributes())
	assert.Equal(t, "bob", g["overseer.gate.reviewer"])
	assert.Equal(t, "continue", g["overseer.gate.action"])
	assert.Equal(t, "flag", g["overseer.gate.kind"])
	assert.Equal(t, st.Gates[0].ID, g["overseer.gate.id"])
	assert.NotContains(t, g, "overseer.gate.note", "no content unless asked")
	assert.NotContains(t, g, "overseer.gate.evidence")
	assert.Equal(t, uint64(st.Gates[0].PausedAt.UnixNano()), gates[0].GetStartTimeUnixNano(), "from its opening")
	assert.Equal(t, uint64(st.Gates[0].ResumedAt.UnixNano()), gates[0].GetEndTimeUnixNano(), "to its close")
	assert.InDelta(t, st.Gates[0].ResumedAt.Sub(st.Gates[0].PausedAt).Seconds(), g["overseer.gate.wait_s"], 1e-9)
	assert.Equal(t, spanID(parent.GetSpanId()), spanID(gates[0].GetParentSpanId()))
}

func TestContentOnlyWhenAskedAndSpansStandAloneWithoutTracing(t *testing.T) {
	r := startReceiver(t)
	tp := r.tracerProvider(t)
	tel, err := overseerotel.New(overseerotel.Options{TracerProvider: tp, IncludeContent: true})
	require.NoError(t, err)
	st := runJob(t, tp, tel, false, onTrack(), flagged(), onTrack())

	spans := r.named(overseerotel.SpanAssessment)
	require.Len(t, spans, 3)
	for _, s := range spans {
		assert.Empty(t, s.GetParentSpanId(), "no workflow span: each stands alone")
	}
	evs := events(spans, overseerotel.EvaluationResultEvent)
	require.Len(t, evs, 3)
	require.NotEmpty(t, st.Assessments[1].Evidence)
	assert.Equal(t, st.Assessments[1].Evidence[0], attrs(evs[1].GetAttributes())["gen_ai.evaluation.explanation"])
	assert.NotContains(t, attrs(evs[0].GetAttributes()), "gen_ai.evaluation.explanation", "an unflagged assessment has no evidence")

	gates := r.named(overseerotel.SpanGate)
	require.Len(t, gates, 1)
	g := attrs(gates[0].GetAttributes())
	assert.Equal(t, "find the root cause first", g["overseer.gate.note"])
	assert.Equal(t, st.Gates[0].Evidence, g["overseer.gate.evidence"])
	assert.Equal(t, st.Gates[0].Reason, g["overseer.gate.reason"])
}

func TestNewRefusesANilTracerProviderPointer(t *testing.T) {
	var tp *sdktrace.TracerProvider
	_, err := overseerotel.New(overseerotel.Options{TracerProvider: tp})
	assert.True(t, errors.Is(err, overseerotel.ErrNilTracerProvider))
	_, err = overseerotel.New(overseerotel.Options{})
	assert.NoError(t, err, "the zero Options use the global provider")
}
