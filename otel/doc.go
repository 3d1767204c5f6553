// Package otel exports the overseer's verdicts to OpenTelemetry, next to a
// team's traces: give [New]'s exporter to overseer.Options.Telemetry.
//
// Each assessment becomes the GenAI semantic conventions' evaluation result
// event, gen_ai.evaluation.result (semantic conventions v1.41.0, whose
// gen_ai.evaluation.* attributes are in development), on a span of its own,
// overseer.assessment. The event carries gen_ai.evaluation.name
// (on_objective, or the obligation a flag found unmet, "obligation[2]"),
// gen_ai.evaluation.score.value (P(on objective), or that obligation's
// breach confidence), gen_ai.evaluation.score.label (the band: on_track,
// needs_a_look, off_track, not_assessed) and the job's workflow type, id
// and run id. Each gate becomes an overseer.gate span from its opening to
// its close, with the reviewer, their action and the wait; each stop at a
// job's budget an overseer.budget.stop event with its reason.
//
// When the team traces its workflows with the SDK's tracing interceptor
// (go.temporal.io/sdk/contrib/opentelemetry), these spans are children of
// the workflow's span; otherwise each is the root of a trace of its own.
//
// The overseer reports from workflow code, never while a workflow
// replays, so a worker restart or a cache eviction adds nothing. What the
// job's phases or reviewers wrote (the evidence sentence as
// gen_ai.evaluation.explanation, a gate's reason, evidence and note) is
// sent only with [Options].IncludeContent. docs/opentelemetry.md lists
// every attribute and has a recipe for Jaeger.
package otel
