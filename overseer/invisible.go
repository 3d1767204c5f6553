package overseer

import (
	"maps"
	"slices"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// How a run of runStructureV3 keeps out of the workflow's way.
//
// Observe mode promises that the workflow does what it would do without
// the plugin. The SDK settles an activity's future while it applies a
// workflow task's events, in the order they happened, and a Selector picks
// the first case settled; a future the overseer settled from its own
// coroutine was settled only after every event of the task had been
// applied, so a timer, a signal or another activity that landed in the same
// task won the race. Observe mode therefore hands the workflow the SDK's
// own future and reads the phase's outcome beside it (phaseOutcome),
// without decoding it with the workflow's data converter, which may know
// nothing of converter.RawValue.
//
// Manage mode would have to read the verdict before the workflow sees a
// result it may hold, and the SDK has no hook that runs workflow code while
// it applies events. So manage mode holds a result only where a redo may
// replace it (a phase named in Options.RedoSafe, with MaxRedos above 0):
// such a result reaches the workflow once the verdict is read, in the same
// workflow task, after that task's other events. Every other phase's result
// reaches the workflow as in observe mode; when its verdict flags it, the
// gate holds the workflow's next phase (its ExecuteActivity waits) and the
// run's end, until a person resumes or aborts the job.

// invisible says the run is of runStructureV3.
func (r *run) invisible() bool { return r.structure >= runStructureV3 }

// sdkInternalActivity says the SDK schedules activityType itself (the
// session's creation and completion, workflow.CreateSession): never a
// phase, never judged, never held.
func sdkInternalActivity(activityType string) bool {
	switch activityType {
	case "internalSessionCreationActivity", "internalSessionCompletionActivity":
		return true
	}
	return false
}

// valueAndError is what the SDK's futures hold before decoding: an
// activity's result as its worker encoded it.
type valueAndError interface {
	GetValueAndError() (any, error)
}

// phaseOutcome is a settled phase's result as the activity's worker
// encoded it (nil when it returned nothing, failed, or the future is not
// the SDK's), and its error. Nothing is decoded, so any data converter
// works.
func phaseOutcome(ctx workflow.Context, f workflow.Future) (*commonpb.Payloads, error) {
	err := f.Get(ctx, nil) // waits, decodes nothing
	if v, ok := f.(valueAndError); ok {
		if ps, ok := firstValue(v); ok {
			return ps, err
		}
	}
	return nil, err
}

func firstValue(v valueAndError) (*commonpb.Payloads, bool) {
	val, _ := v.GetValueAndError()
	ps, ok := val.(*commonpb.Payloads)
	return ps, ok && len(ps.GetPayloads()) > 0
}

// handBack settles out, the future the workflow holds for a held phase,
// with the phase's outcome as the activity returned it. A workflow future
// decodes in the workflow's serialization context and the SDK decodes an
// activity's result in the activity's: with a converter that tells the two
// apart (converter.DataConverterWithSerializationContext, a codec), the
// result is written again in the workflow's context (letThrough), which
// needs a converter that reads a converter.RawValue, as the SDK's own
// do; with any other, or when that fails, the payloads are handed back
// untouched and the workflow's converter reads them as it would have.
func handBack(ctx workflow.Context, out workflow.Settable, f workflow.Future) {
	ps, err := phaseOutcome(ctx, f)
	if ps == nil || err != nil {
		out.Set(ps, err)
		return
	}
	w, _ := ctx.Value(converterKey{}).(*workerConverter)
	if _, bound := w.get().(converter.DataConverterWithSerializationContext); bound || w.get() == nil {
		var raw converter.RawValue
		if f.Get(ctx, &raw) == nil && raw.Payload() != nil {
			if p, err := toWorkflowPayload(ctx, raw); err == nil {
				out.Set(&commonpb.Payloads{Payloads: []*commonpb.Payload{p}}, nil)
				return
			}
		}
	}
	out.Set(ps, nil)
}

// infoWithoutOverseer is info as the workflow's own code would see it
// without the plugin: the overseer's summary is not in its memo.
func infoWithoutOverseer(info *workflow.Info) *workflow.Info {
	if info == nil || info.Memo == nil {
		return info
	}
	if _, ok := info.Memo.Fields[SummaryMemoKey]; !ok {
		return info
	}
	c := *info
	fields := maps.Clone(info.Memo.Fields)
	delete(fields, SummaryMemoKey)
	c.Memo = &commonpb.Memo{Fields: fields}
	return &c
}

// GetInfo hides the overseer's memo from the workflow (runStructureV3).
func (o *workflowOutbound) GetInfo(ctx workflow.Context) *workflow.Info {
	info := o.Next.GetInfo(ctx)
	if r := o.root.run; r != nil && r.invisible() {
		return infoWithoutOverseer(info)
	}
	return info
}

// summaryRefresh is how often, in workflow time, a run of runStructureV3
// writes its summary when only its volatile fields changed (the phase,
// the count of phases, P(on objective)): a memo upsert is a history event
// and most of what observe mode costs at a boundary. Anything a view acts
// on (the band, a gate, the approval, the mode, the basis) is written at
// once, and the summary is written when the run ends.
const summaryRefresh = time.Minute

// volatileOnly says s differs from was only in the fields a list shows
// but no view acts on.
func volatileOnly(s, was Summary) bool {
	s.Phase, s.Phases, s.OnObjective, s.Spent = was.Phase, was.Phases, was.OnObjective, was.Spent
	return summariesEqual(s, was)
}

// awaitGatesBeforePhase holds a phase the workflow schedules while the
// job is held (holding).
func (r *run) awaitGatesBeforePhase(ctx workflow.Context) {
	if r.holding() {
		_ = workflow.Await(ctx, func() bool { return !r.holding() || r.aborted != nil })
	}
	if r.aborted != nil && r.invisible() {
		// Aborted at the gate: the run ends (its own coroutine returns the
		// abort) and no further phase is scheduled.
		never, _ := workflow.NewDisconnectedContext(ctx)
		_ = workflow.Await(never, func() bool { return false })
	}
}

// holding says the workflow's next phase and the run's end must wait
// (runStructureV3, manage mode): a phase has completed whose verdict is not
// in (a judge in an activity answers after the workflow has the result),
// or a gate that holds no result is open or opening.
func (r *run) holding() bool {
	if !r.invisible() || r.cfg.Mode != ModeManage {
		return false
	}
	if r.opening > 0 || slices.ContainsFunc(r.open, func(g *Gate) bool { return g.holdsNext }) {
		return true
	}
	for _, t := range r.tasks {
		if !t.done && (t.call != nil || t.f.IsReady()) {
			return true
		}
	}
	return false
}
