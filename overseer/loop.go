package overseer

import (
	"errors"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// How a run of runStructureV2 oversees its phases.
//
// The SDK resumes every coroutine a workflow has at every step of every
// workflow task, to let it look again at what it waits for; each resume
// costs two goroutine switches and a stack walk. A hand-written workflow has
// one coroutine. A run of the first structure added three (the workflow's
// code, a signal listener, one per phase in flight), and that, not the
// judge, was most of what the overseer cost at each boundary. Runs of
// runStructureV2 add one: the workflow's code runs on its own coroutine (so
// that an abort at a gate ends the run wherever that code is blocked), and
// the run's coroutine is a loop that, whenever something it waits for is
// ready, receives the run's signals and takes each boundary task a step
// further (record the phase, ask the judge, record the answer, settle the
// phase's result). Only a gate, which waits for a person, gets a coroutine
// of its own.

// boundaryTask is a phase in flight, then its assessment.
type boundaryTask struct {
	// ctx is the workflow context the phase was scheduled with: its
	// cancellation is the phase's.
	ctx     workflow.Context
	phase   string
	started time.Time
	f       workflow.Future
	// out is the future the workflow holds: settle lets f's result
	// through to it.
	out workflow.Settable
	// activityType, args and attempt let a redo run the phase again
	// (redo.go): attempt is 1 for the phase's first run, 2 for the run the
	// first redo asked for, ….
	activityType string
	args         []any
	// input is args as the worker's converter encodes them, the codec
	// undone, for the run's content window (nil when it is off).
	input []*commonpb.Payload
	// held is args as first scheduled (holdArgs), for a phase a redo may
	// run again.
	held    []heldArg
	attempt int
	// asIs: the held result is handed back as the activity returned it
	// (handBack, runStructureV3).
	asIs bool
	// call is the judge's activity, once asked.
	call *judgeCall
	done bool
}

// settle hands the phase's own result to the workflow (letThrough); a
// phase whose future the workflow holds itself (observe mode,
// runStructureV3) has nothing to settle.
func (t *boundaryTask) settle() {
	switch {
	case t.out == nil:
	case t.asIs:
		handBack(t.ctx, t.out, t.f)
	default:
		letThrough(t.ctx, t.out, t.f)
	}
}

// ready says the task can take a step without waiting.
func (t *boundaryTask) ready() bool {
	if t.call != nil {
		return t.call.f.IsReady()
	}
	return t.f.IsReady()
}

// hasReadyTask says a boundary task can take a step.
func (r *run) hasReadyTask() bool {
	for _, t := range r.tasks {
		if t.ready() {
			return true
		}
	}
	return false
}

// advance takes every ready boundary task a step, in the order their phases
// were scheduled, and forgets the tasks that are done.
func (r *run) advance() {
	n := len(r.tasks)
	for _, t := range r.tasks[:n] {
		if t.ready() {
			r.step(t)
		}
	}
	kept := r.tasks[:0]
	for _, t := range r.tasks {
		if !t.done {
			kept = append(kept, t)
		}
	}
	clear(r.tasks[len(kept):])
	r.tasks = kept
}

// step is the boundary of the first structure (run.boundary), one ready
// step at a time: it never blocks.
func (r *run) step(t *boundaryTask) {
	ctx := r.verdictCtx(t.ctx)
	if t.call != nil {
		why := r.endAssess(ctx, t.call)
		t.call = nil
		if r.cfg.Mode == ModeObserve {
			t.done = true // settled when the phase ended
			return
		}
		r.afterVerdict(t, why)
		return
	}
	r.recordBoundary(ctx, t.phase, t.started, t.f, t.args, t.input)
	if r.cancelledPhase(t, ctx) {
		t.settle() // cancelled: no assessment, no gate
		t.done = true
		return
	}
	if r.cfg.Mode == ModeObserve {
		t.settle()
		t.call, _ = r.startAssess(ctx, t.phase)
		t.done = t.call == nil
		return
	}
	call, why := r.startAssess(ctx, t.phase)
	if call != nil {
		t.call = call
		return
	}
	r.afterVerdict(t, why)
}

// cancelledPhase says t's phase is not assessed because it was cancelled.
// Runs before runStructureV4 read that from the phase's context, so a
// phase whose context the workflow cancelled after it completed went
// unjudged; from runStructureV4 it is the phase's own outcome (the
// activity ended cancelled) or the run's cancellation (verdictCtx).
func (r *run) cancelledPhase(t *boundaryTask, verdictCtx workflow.Context) bool {
	if r.structure < runStructureV4 {
		return verdictCtx.Err() != nil
	}
	if verdictCtx.Err() != nil {
		return true
	}
	var canceled *temporal.CanceledError
	return errors.As(t.f.Get(verdictCtx, nil), &canceled)
}

// afterVerdict lets a manage-mode phase's result through, or opens the gate
// that holds it until a person resumes the job.
func (r *run) afterVerdict(t *boundaryTask, why pauseCause) {
	t.done = true
	if !why.flagged() {
		if r.aborted == nil {
			t.settle()
		}
		return
	}
	hold := holdsResult
	if t.out == nil { // the workflow has the result: the gate holds what comes next
		hold = holdsNext
		r.opening++
	}
	workflow.Go(r.verdictCtx(t.ctx), func(ctx workflow.Context) {
		g := r.pause(ctx, t.phase, why, t.attempt, hold)
		switch {
		case r.aborted != nil:
		case g.Action == ActionRedo && !g.Cancelled && !r.ended:
			r.redo(t, g) // the rerun's result settles the workflow's future
		default:
			t.settle()
		}
	})
}

// await blocks until cond holds. In a run of runStructureV2 the run's
// coroutine keeps its boundary tasks going meanwhile.
func (r *run) await(ctx workflow.Context, cond func() bool) {
	if !r.loop {
		_ = workflow.Await(ctx, cond)
		return
	}
	for !cond() {
		_ = workflow.Await(ctx, func() bool { return cond() || r.hasReadyTask() })
		r.advance()
	}
}
