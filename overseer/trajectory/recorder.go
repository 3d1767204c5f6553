package trajectory

// TrajectoryRecorder builds a [Trajectory] outside a workflow with the same
// rules the plugin applies inside one: the same bounds, windows, repeat and
// failure-streak counting, and the same handling of a [PhaseReport]. Use it
// to replay recorded agent runs through a judge offline, or in tests. The
// zero value is ready to use; it is not safe for concurrent use.
//
// The plugin's interceptor keeps its own trajectory on the workflow's state
// and does not use a recorder; both go through the same unexported code.
type TrajectoryRecorder struct {
	t      Trajectory
	calls  CallTracker
	window ContentWindow
	redact Redactor
}

// SetContentWindow keeps a content window of the calls RecordCall records,
// as the plugin does for a workflow type with Options.ContentWindows:
// redact rewrites each excerpt (RedactSecrets when nil).
func (r *TrajectoryRecorder) SetContentWindow(w ContentWindow, redact Redactor) {
	r.window, r.redact = w, redact
}

// SetObjective records the job's original objective, bounded like
// [SetObjective].
func (r *TrajectoryRecorder) SetObjective(objective string) {
	r.t.Objective = Clip(objective, MaxObjectiveChars)
}

// SetShape declares what a phase is in the job, like [SetShape].
func (r *TrajectoryRecorder) SetShape(shape Shape) { r.t.Shape = shape }

// SetLane records the lane the job is in; a change counts as a lane switch,
// like [SetLane].
func (r *TrajectoryRecorder) SetLane(lane string) { r.t.SetLane(lane) }

// SetWorkItem records a work item's status, like [SetWorkItem].
func (r *TrajectoryRecorder) SetWorkItem(id, status string) { r.t.SetWorkItem(id, status) }

// SetPullRequests replaces the job's open pull requests, like
// [SetPullRequests].
func (r *TrajectoryRecorder) SetPullRequests(prs []string) { r.t.SetPullRequests(prs) }

// RecordPhase adds one finished phase run, as the interceptor does at a
// phase boundary: run carries what the interceptor observes (phase name,
// failure, error, duration); report is what the phase said about itself
// (nil when it said nothing). Lane and Repeat are set by the recorder.
func (r *TrajectoryRecorder) RecordPhase(run PhaseRun, report *PhaseReport) {
	r.t.RecordPhase(run, report)
}

// Trajectory returns a deep copy of the trajectory so far: what the judge
// would see at this boundary.
func (r *TrajectoryRecorder) Trajectory() Trajectory { return r.t.Clone() }
