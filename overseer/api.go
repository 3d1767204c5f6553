package overseer

import "go.temporal.io/sdk/workflow"

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
		r.traj.Objective = clip(objective, maxObjectiveChars)
	}
}

// SetLane records the workflow lane the job is in; a change counts as a
// lane switch.
func SetLane(ctx workflow.Context, lane string) {
	if r := runOf(ctx); r != nil {
		r.traj.setLane(lane)
	}
}

// SetWorkItem records a work item's status. Moving back to an earlier
// status (done → in_progress) counts as a loop.
func SetWorkItem(ctx workflow.Context, id, status string) {
	if r := runOf(ctx); r != nil {
		r.traj.setWorkItem(id, status)
	}
}

// SetPullRequests replaces the job's open pull requests.
func SetPullRequests(ctx workflow.Context, prs []string) {
	if r := runOf(ctx); r != nil {
		r.traj.setPullRequests(prs)
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
