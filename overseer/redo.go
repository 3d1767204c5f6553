package overseer

import (
	"fmt"
	"reflect"
	"slices"

	commonpb "go.temporal.io/api/common/v1"

	"go.temporal.io/sdk/workflow"
)

// Redo: a reviewer who rejects a held phase's result resumes its gate with
// action redo and a note. The phase's activity is scheduled again, with the
// same activity options and the same input, and the note as its process
// note; the workflow receives the rerun's result, never the rejected one,
// and the rerun is assessed like any phase (it may pause the job again, at
// a new gate of the same lineage). A lineage is bounded by the run's
// MaxRedos. Only runs of runStructureV2 redo: a run of the first structure
// holds its phase's result on a coroutine that cannot schedule it again.

// RedoRefusedErrorType: the resume asks for a redo the gate cannot take:
// its phase was redone as often as the job allows (Options.MaxRedos), the
// job allows none, or its run started on an overseer that could not redo.
// The error's message says which, in one sentence.
const RedoRefusedErrorType = "OverseerRedoRefused"

// redoChangeID versions the redo: a run that records it (version 1) runs a
// gate's phase again on a resume with action redo. Older histories, where a
// redo signal was refused as an unknown action (counted and dropped),
// replay that way. It is recorded at the run's first redo.
const redoChangeID = "temporal-overseer/redo"

// redoUnpinnedChangeID versions the bound of a run pinned before MaxRedos
// existed (pinned 0): v0.0.9 read it as DefaultMaxRedos and redid such
// runs; v0.1.0 read it as no redo, so the redos v0.0.9 had recorded failed
// replay. A run that records it (version 1, at its first redo request)
// gets no redo, as it started on an overseer that could not redo. A
// history without it was recorded by one of those two, and says which:
// v0.0.9 recorded redoChangeID in the same workflow task as the redo it
// took (the SDK reads a task's version markers before its events), v0.1.0
// refused it and recorded nothing.
const redoUnpinnedChangeID = "temporal-overseer/redo-unpinned"

// maxRedos is the run's bound on the redos of one held phase; negative
// means none. A run pinned before MaxRedos existed has the bound
// settleUnpinnedRedos decided; none until it is decided.
func (r *run) maxRedos() int {
	if r.cfg.MaxRedos == 0 {
		return r.unpinnedRedos
	}
	return r.cfg.MaxRedos
}

// settleUnpinnedRedos decides, where a resume with action redo may send
// commands (a signal, the update's handler), the bound of a run pinned
// before MaxRedos existed (redoUnpinnedChangeID). An update's validator
// sends none: it reads the bound decided so far.
func (r *run) settleUnpinnedRedos(ctx workflow.Context, req ResumeRequest) {
	if req.Action != ActionRedo || r.cfg.MaxRedos != 0 || r.unpinnedSettled || !r.loop {
		return
	}
	r.unpinnedSettled = true
	if workflow.GetVersion(ctx, redoUnpinnedChangeID, workflow.DefaultVersion, 1) == workflow.DefaultVersion && redoVersioned(ctx) {
		r.unpinnedRedos = DefaultMaxRedos
	}
}

// pinnedWithRedoSafe says the run was pinned by v0.1.0 or later, which pin
// RedoSafe, or MaxRedos -1 without it; v0.0.9 and earlier pinned MaxRedos
// at least 1 (0 before it existed) unless the worker set it negative.
func (c runConfig) pinnedWithRedoSafe() bool {
	return len(c.RedoSafe) > 0 || c.MaxRedos == -1
}

// redoSafe says a redo may run phase (a phase name) of a run of wfType
// again: RedoSafe names the type, or the phase's activity type. A run
// pinned before RedoSafe existed names none and may redo any phase.
func (c runConfig) redoSafe(wfType, phase string) bool {
	if len(c.RedoSafe) == 0 {
		return true
	}
	for _, e := range c.RedoSafe {
		if e == wfType || phaseName(e) == phase {
			return true
		}
	}
	return false
}

// mayRedo says a gate of phase could be redone at all in this run: its
// structure, its bound and the phase's safety; the gate's own redos
// aside.
func (r *run) mayRedo(phase string) bool {
	return r.loop && !r.redoDropped && r.maxRedos() > 0 && r.cfg.redoSafe(r.wfType, phase)
}

// heldArg is one argument of a phase as first scheduled: its payload, and
// the type to read it back into, so that a redo sends what the phase was
// first sent, whatever the workflow did since with a value it passed by
// pointer.
type heldArg struct {
	p   *commonpb.Payload
	typ reflect.Type
}

// holdArgs encodes args with the workflow's converter; nil when one of
// them cannot be (the SDK refuses such an input when it schedules it).
func holdArgs(ctx workflow.Context, args []any) []heldArg {
	held := make([]heldArg, len(args))
	for i, a := range args {
		if a == nil {
			continue
		}
		p, err := toWorkflowPayload(ctx, a)
		if err != nil {
			return nil
		}
		held[i] = heldArg{p: p, typ: reflect.TypeOf(a)}
	}
	return held
}

// redoArgs are fresh values of the phase's arguments, read back from the
// payloads they were first scheduled with; the live values when the run
// held none.
func (t *boundaryTask) redoArgs(ctx workflow.Context) []any {
	if t.held == nil {
		return t.args
	}
	args := make([]any, len(t.held))
	for i, h := range t.held {
		if h.typ == nil {
			continue
		}
		ptr := reflect.New(h.typ)
		if err := fromWorkflowPayload(ctx, h.p, ptr.Interface()); err != nil {
			return t.args
		}
		args[i] = ptr.Elem().Interface()
	}
	return args
}

// redoing is the rerun a redo is scheduling: the overseer's outbound
// interceptor (ExecuteActivity) takes it when the activity comes through.
type redoing struct {
	activityType string
	note         Note
	// out is the held phase's future, settled with the rerun's result.
	out     workflow.Settable
	attempt int
}

// attempts is which run of its phase g holds (gates recorded before redo
// existed have no Attempt: their phase's first).
func (g *Gate) attempts() int { return max(g.Attempt, 1) }

// checkRedo refuses a redo the gate req names (the oldest open one if it
// names none) cannot take. It reads the run's state only: the update's
// validator calls it.
func (r *run) checkRedo(req ResumeRequest) error {
	if req.Action != ActionRedo {
		return nil
	}
	g := r.open[0]
	if req.Gate != "" {
		g = r.open[r.openGate(req.Gate)]
	}
	max := r.maxRedos()
	switch {
	case r.redoDropped:
		return refusal(RedoRefusedErrorType, fmt.Sprintf("overseer: gate %s cannot be redone: this run's history dropped a redo before its overseer could redo, "+
			"so it never redoes; continue with a note or abort", g.ID))
	case !r.loop:
		return refusal(RedoRefusedErrorType, fmt.Sprintf("overseer: gate %s cannot be redone: this run started on an overseer from before redo "+
			"(its first structure), which cannot run a phase again; continue with a note or abort", g.ID))
	case max < 0:
		return refusal(RedoRefusedErrorType, fmt.Sprintf("overseer: gate %s cannot be redone: this job allows no redo (Options.MaxRedos is negative); "+
			"continue with a note or abort", g.ID))
	case g.AtBoundary:
		return refusal(RedoRefusedErrorType, fmt.Sprintf("overseer: gate %s cannot be redone: it was opened at overseer.Boundary after phase %s, "+
			"whose calls the workflow made itself and the overseer cannot run again; continue with a note or abort", g.ID, g.Phase))
	case !r.cfg.redoSafe(r.wfType, g.Phase):
		return refusal(RedoRefusedErrorType, fmt.Sprintf("overseer: gate %s cannot be redone: phase %s is not declared safe to run again "+
			"(a redo runs its side effects a second time; overseer.Options.RedoSafe names the workflow types and phases that are); continue with a note or abort", g.ID, g.Phase))
	case g.attempts()-1 >= max:
		return refusal(RedoRefusedErrorType, fmt.Sprintf("overseer: gate %s cannot be redone: phase %s was redone %d time(s) already, the most this job allows "+
			"(Options.MaxRedos %d); continue with a note or abort", g.ID, g.Phase, g.attempts()-1, max))
	}
	return nil
}

// redoVersioned says the run redoes a phase on a resume with action redo
// (redoChangeID): false only when replaying a history from before redo.
func redoVersioned(ctx workflow.Context) bool {
	return workflow.GetVersion(ctx, redoChangeID, workflow.DefaultVersion, 1) != workflow.DefaultVersion
}

// redo runs the phase t held at gate g again: the same activity type with
// the same context (activity options, cancellation) and input, through the
// whole interceptor chain, with the reviewer's note as its process note.
// The rerun is a new boundary task whose result settles t's future; t's own
// result is dropped.
func (r *run) redo(t *boundaryTask, g *Gate) {
	r.redoing = &redoing{activityType: t.activityType, note: r.redoNote(t, g), out: t.out, attempt: t.attempt + 1}
	workflow.ExecuteActivity(t.ctx, t.activityType, t.redoArgs(t.ctx)...)
	if r.redoing != nil {
		// An interceptor outside the overseer's did not pass the activity
		// on: the workflow gets the held result rather than none.
		r.redoing = nil
		r.logger.Error("overseer: the redo of a phase did not reach the overseer's interceptor; the held result goes through",
			"phase", t.phase, "gate", g.ID)
		t.settle()
		return
	}
	r.logger.Info("overseer: phase redone", "phase", t.phase, "gate", g.ID, "attempt", t.attempt+1, "by", g.By)
}

// redoNote is the process note of the rerun of the phase t held at gate g:
// the phase is redone because a reviewer rejected its result, with their
// note. The note the rejected result left for the next phase is dropped
// with it.
func (r *run) redoNote(t *boundaryTask, g *Gate) Note {
	n := Note{FlaggedPhase: g.Phase, ReviewerNote: g.Note, ReviewedBy: g.By}
	if r.note != nil && r.note.FlaggedPhase == g.Phase {
		n.OnObjective = r.note.OnObjective
		r.note = nil
	}
	n.Text = fmt.Sprintf("Process note from the overseer: a reviewer rejected the result of this phase (%s) after it was flagged "+
		"and asked for it to be redone (redo %d of at most %d). This is a process-confidence signal, not a code-quality score.",
		g.Phase, t.attempt, r.maxRedos())
	return n
}

// redoable says a redo of gate g would be accepted (by the bound and the
// run's structure; the approval rule aside).
func (r *run) redoable(g *Gate) bool {
	return r.mayRedo(g.Phase) && g.attempts()-1 < r.maxRedos()
}

// CanRedo says a resume of the open gate g with action redo would not be
// refused for the bound (RedoRefusedErrorType): the job can redo a phase
// and g's phase was redone fewer than MaxRedos times. A gate a budget
// opened, or one at a declared Boundary, is never redone.
func (s Status) CanRedo(g Gate) bool {
	return s.RedoSafe(g.Phase) && !g.AtBoundary && g.Kind != GateKindBudget && g.Outcome() == "open" && g.attempts()-1 < s.MaxRedos
}

// RedoSafe says the job may redo phase at all: it can redo (MaxRedos > 0)
// and the phase is declared safe to run again (Options.RedoSafe).
func (s Status) RedoSafe(phase string) bool {
	return s.MaxRedos > 0 && (s.RedoPhases == nil || slices.Contains(s.RedoPhases, phase))
}
