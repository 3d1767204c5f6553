package otel

import (
	"context"
	"errors"
	"reflect"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
)

// EvaluationResultEvent is the name of the GenAI semantic conventions'
// evaluation result event (semantic conventions v1.41.0, development
// stability), one per assessment.
const EvaluationResultEvent = "gen_ai.evaluation.result"

// BudgetStopEvent is the name of the event of a job stopped at its budget.
const BudgetStopEvent = "overseer.budget.stop"

// Span names: an assessment's span (holding its evaluation result event), a
// gate's span from its opening to its close, and a budget stop's span.
const (
	SpanAssessment = "overseer.assessment"
	SpanGate       = "overseer.gate"
	SpanBudgetStop = "overseer.budget_stop"
)

// The job's attributes, on every span and event. The workflow id and run
// id use the names the SDK's tracing interceptor gives its own spans
// (contrib/opentelemetry: temporalWorkflowID, temporalRunID), so one query
// finds both; it names no workflow type attribute (the type is in its span
// names), so the overseer adds temporalWorkflowType in the same style.
const (
	AttrWorkflowType = attribute.Key("temporalWorkflowType")
	AttrWorkflowID   = attribute.Key("temporalWorkflowID")
	AttrRunID        = attribute.Key("temporalRunID")
)

// The overseer's own attributes.
const (
	AttrPhase            = attribute.Key("overseer.phase")
	AttrSeq              = attribute.Key("overseer.assessment.seq")
	AttrMode             = attribute.Key("overseer.mode")
	AttrFlagged          = attribute.Key("overseer.flagged")
	AttrReason           = attribute.Key("overseer.reason")
	AttrOnObjective      = attribute.Key("overseer.on_objective")
	AttrBreach           = attribute.Key("overseer.breach")
	AttrBreachText       = attribute.Key("overseer.breach.text")
	AttrBreachConfidence = attribute.Key("overseer.breach.confidence")
	AttrModel            = attribute.Key("overseer.judge.model")
	AttrBasis            = attribute.Key("overseer.judge.basis")
	AttrErrorType        = attribute.Key("error.type")

	AttrGateID       = attribute.Key("overseer.gate.id")
	AttrGateKind     = attribute.Key("overseer.gate.kind")
	AttrGateOutcome  = attribute.Key("overseer.gate.outcome")
	AttrGateAction   = attribute.Key("overseer.gate.action")
	AttrGateReviewer = attribute.Key("overseer.gate.reviewer")
	AttrGateWait     = attribute.Key("overseer.gate.wait_s")
	AttrGateNeeded   = attribute.Key("overseer.gate.needed")
	AttrGateNeededBy = attribute.Key("overseer.gate.needed_by")
	AttrBudgetReason = attribute.Key("overseer.budget.reason")

	// Content, sent only with Options.IncludeContent.
	AttrGateReason   = attribute.Key("overseer.gate.reason")
	AttrGateEvidence = attribute.Key("overseer.gate.evidence")
	AttrGateNote     = attribute.Key("overseer.gate.note")
)

// Options configure the exporter. The zero value works: spans go to the
// global tracer provider, with no content.
type Options struct {
	// TracerProvider makes the overseer's spans. Give it a batching span
	// processor (sdktrace.WithBatcher): the overseer calls the exporter
	// from workflow code, which must not wait for the network. If not
	// set, the global provider (otel.GetTracerProvider()).
	TracerProvider trace.TracerProvider
	// IncludeContent adds what the job's phases and its reviewers wrote:
	// the evidence sentence as gen_ai.evaluation.explanation, and a gate's
	// reason, evidence and note. Evidence may quote tool output. If not
	// set, spans carry names, numbers, bands and ids only.
	IncludeContent bool
	// WorkflowSpan finds the span of the workflow in a workflow context,
	// the parent of the overseer's spans. If not set, the span of the
	// SDK's tracing interceptor (contrib/opentelemetry's
	// SpanFromWorkflowContext, with its default SpanContextKey); a run
	// without one gets spans of its own, each the root of a trace.
	WorkflowSpan func(workflow.Context) trace.SpanContext
}

// ErrNilTracerProvider is returned by New for a TracerProvider that is a
// typed nil.
var ErrNilTracerProvider = errors.New("otel: Options.TracerProvider is a nil pointer; leave it unset for the global provider")

// Telemetry exports the overseer's assessments, gates and budget stops as
// OpenTelemetry spans and span events: give it to overseer.Options.Telemetry.
type Telemetry struct {
	tracer         trace.Tracer
	includeContent bool
	workflowSpan   func(workflow.Context) trace.SpanContext
}

var _ overseer.Telemetry = (*Telemetry)(nil)

// instrumentationName names the overseer's tracer.
const instrumentationName = "github.com/corohq/temporal-overseer/otel"

// New returns the exporter.
func New(opts Options) (*Telemetry, error) {
	tp := opts.TracerProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	} else if isNilPointer(tp) {
		return nil, ErrNilTracerProvider
	}
	ws := opts.WorkflowSpan
	if ws == nil {
		ws = contribWorkflowSpan
	}
	// The schema URL says which conventions the attributes follow.
	tracer := tp.Tracer(instrumentationName, trace.WithSchemaURL(semconv.SchemaURL))
	return &Telemetry{tracer: tracer, includeContent: opts.IncludeContent, workflowSpan: ws}, nil
}

func isNilPointer(tp trace.TracerProvider) bool {
	v := reflect.ValueOf(tp)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// contribWorkflowSpan is the span contrib/opentelemetry's interceptor put
// in the workflow's context, if any.
func contribWorkflowSpan(ctx workflow.Context) trace.SpanContext {
	if s, ok := temporalotel.SpanFromWorkflowContext(ctx); ok {
		return s.SpanContext()
	}
	return trace.SpanContext{}
}

// parent is the context the overseer's spans start in: the workflow's
// span when it has one, else none (each span the root of its trace).
func (t *Telemetry) parent(ctx workflow.Context) context.Context {
	if sc := t.workflowSpan(ctx); sc.IsValid() {
		return trace.ContextWithSpanContext(context.Background(), sc)
	}
	return context.Background()
}

func jobAttrs(j overseer.Job) []attribute.KeyValue {
	return []attribute.KeyValue{AttrWorkflowType.String(j.WorkflowType), AttrWorkflowID.String(j.WorkflowID), AttrRunID.String(j.RunID)}
}

// Assessed emits the assessment's evaluation result event on a span of
// its own, a child of the workflow's span: one that starts and ends at the
// assessment (workflow time), exported at once rather than when the
// workflow's span ends.
func (t *Telemetry) Assessed(ctx workflow.Context, ev overseer.AssessedEvent) {
	attrs := append(jobAttrs(ev.Job), semconv.GenAIEvaluationName(ev.Name))
	if ev.Score != nil {
		attrs = append(attrs, semconv.GenAIEvaluationScoreValue(*ev.Score))
	}
	if ev.Label != "" {
		attrs = append(attrs, semconv.GenAIEvaluationScoreLabel(ev.Label))
	}
	if ev.Error != "" {
		attrs = append(attrs, AttrErrorType.String(ev.Error))
	}
	if t.includeContent && len(ev.Evidence) > 0 {
		attrs = append(attrs, semconv.GenAIEvaluationExplanation(ev.Evidence[0]))
	}
	attrs = append(attrs, AttrPhase.String(ev.Phase), AttrSeq.Int(ev.Seq), AttrFlagged.Bool(ev.Flagged))
	if ev.OnObjective != nil {
		attrs = append(attrs, AttrOnObjective.Float64(*ev.OnObjective))
	}
	if ev.Breach != "" {
		attrs = append(attrs, AttrBreach.String(ev.Breach), AttrBreachText.String(ev.BreachText), AttrBreachConfidence.Float64(ev.BreachConfidence))
	}

	spanAttrs := append(jobAttrs(ev.Job), AttrPhase.String(ev.Phase), AttrSeq.Int(ev.Seq), AttrMode.String(string(ev.Mode)), AttrFlagged.Bool(ev.Flagged))
	if ev.Reason != "" {
		spanAttrs = append(spanAttrs, AttrReason.String(ev.Reason))
	}
	if ev.Model != "" {
		spanAttrs = append(spanAttrs, AttrModel.String(ev.Model))
	}
	if ev.Basis != "" {
		spanAttrs = append(spanAttrs, AttrBasis.String(ev.Basis))
	}
	_, span := t.tracer.Start(t.parent(ctx), SpanAssessment, trace.WithTimestamp(ev.At), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(spanAttrs...))
	span.AddEvent(EvaluationResultEvent, trace.WithTimestamp(ev.At), trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(ev.At))
}

// GateClosed emits the gate's span, from its opening to its close.
func (t *Telemetry) GateClosed(ctx workflow.Context, ev overseer.GateClosedEvent) {
	attrs := append(jobAttrs(ev.Job), AttrPhase.String(ev.Phase), AttrGateID.String(ev.Gate), AttrGateKind.String(ev.Kind),
		AttrGateOutcome.String(ev.Outcome), AttrGateWait.Float64(ev.Wait.Seconds()))
	if ev.Action != "" {
		attrs = append(attrs, AttrGateAction.String(string(ev.Action)))
	}
	if ev.Reviewer != "" {
		attrs = append(attrs, AttrGateReviewer.String(ev.Reviewer))
	}
	if ev.Needed != nil {
		attrs = append(attrs, AttrGateNeeded.Bool(*ev.Needed), AttrGateNeededBy.String(string(ev.NeededBy)))
	}
	if t.includeContent {
		attrs = append(attrs, AttrGateReason.String(ev.Reason), AttrGateEvidence.StringSlice(ev.Evidence))
		if ev.Note != "" {
			attrs = append(attrs, AttrGateNote.String(ev.Note))
		}
	}
	_, span := t.tracer.Start(t.parent(ctx), SpanGate, trace.WithTimestamp(ev.OpenedAt), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(ev.ClosedAt))
}

// BudgetStopped emits the stop's event on a span of its own, at the stop.
func (t *Telemetry) BudgetStopped(ctx workflow.Context, ev overseer.BudgetStopEvent) {
	attrs := append(jobAttrs(ev.Job), AttrPhase.String(ev.Phase), AttrGateID.String(ev.Gate), AttrBudgetReason.String(ev.Reason))
	_, span := t.tracer.Start(t.parent(ctx), SpanBudgetStop, trace.WithTimestamp(ev.At), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	span.AddEvent(BudgetStopEvent, trace.WithTimestamp(ev.At), trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(ev.At))
}
