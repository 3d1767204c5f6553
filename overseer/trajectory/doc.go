// Package trajectory holds what the overseer knows of a job and asks its
// judge about: the bounded [Trajectory] of a run (its phase runs, their
// reports, an agent loop's calls and whole-run counts), the [Shape] of a
// job, the [ActivityCall] the plugin's interceptor observes and the
// [TrajectoryRecorder] that records one offline through the same code, and
// the judge's request ([State], [NewRequest]) and typed [Answers].
//
// It sits below the judges (package judge) and the plugin (package
// overseer), which both read it; it imports neither. Programs written
// against the plugin use the plugin's names for these types.
package trajectory
