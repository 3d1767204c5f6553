package overseer

import (
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// The functions below let a workflow tell the overseer what it cannot
// observe itself. Each does nothing when the run is not overseen (no plugin,
// mode off, or a run started before the plugin), so workflows can call them
// unconditionally.

func runOf(ctx workflow.Context) *run {
	r, _ := ctx.Value(runKey{}).(*run)
	return r
}

// SetObjective records the job's original objective.
func SetObjective(ctx workflow.Context, objective string) {
	if r := runOf(ctx); r != nil {
		r.traj.Objective = trajectory.Clip(objective, trajectory.MaxObjectiveChars)
	}
}

// SetShape declares what a phase is in this workflow: [ShapeAgentLoop]
// when each activity is one model or tool call of an agent loop, so that
// the shipped judges judge the loop by rules that fit it (repeated
// failures of a tool, identical calls repeated) instead of a model fit on
// phases of work; [ShapePhases] when each activity is a phase of work
// although its name looks like a model call. Call it before the first
// activity.
func SetShape(ctx workflow.Context, shape Shape) {
	if r := runOf(ctx); r != nil {
		r.traj.Shape = shape
	}
}

// Boundary ends a phase the workflow declares itself, in a run whose
// shape is [ShapeDeclared] (SetShape, before the first activity): the
// activities completed since the previous boundary (or the run's start)
// are one phase named phase — a turn of an agent is not a phase of work,
// its plan or its edits are. The phase failed when every one of them
// failed; each failed one counts as a failed tool call of its activity's
// name. The phase is assessed as any other; in manage mode a flagged one
// pauses here, and Boundary returns when a person resumes the job (with
// the error that ends the run if they abort it). Outside a declared run it
// does nothing.
func Boundary(ctx workflow.Context, phase string) error {
	r := runOf(ctx)
	if r == nil || r.traj.Shape != ShapeDeclared {
		return nil
	}
	r.declaredBoundary(ctx, phase)
	if r.aborted != nil {
		return abortError(*r.aborted)
	}
	return nil
}

// SetLane records the workflow lane the job is in; a change counts as a
// lane switch.
func SetLane(ctx workflow.Context, lane string) {
	if r := runOf(ctx); r != nil {
		r.traj.SetLane(lane)
	}
}

// SetWorkItem records a work item's status. Moving back to an earlier
// status (done → in_progress) counts as a loop.
func SetWorkItem(ctx workflow.Context, id, status string) {
	if r := runOf(ctx); r != nil {
		r.traj.SetWorkItem(id, status)
	}
}

// SetPullRequests replaces the job's open pull requests.
func SetPullRequests(ctx workflow.Context, prs []string) {
	if r := runOf(ctx); r != nil {
		r.traj.SetPullRequests(prs)
	}
}

// GetStatus returns the overseer status from inside the workflow; ok is
// false when the run is not overseen.
func GetStatus(ctx workflow.Context) (s Status, ok bool) {
	if r := runOf(ctx); r != nil {
		return r.status(), true
	}
	return Status{}, false
}
