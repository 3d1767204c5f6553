// Package judge holds the overseer's judges and what they decide with: the
// learned model and its features ([LearnedJudge], [LearnedModel]), the
// rules ([HeuristicJudge], the agent-loop rules inside the learned judge's
// answer on a loop), the [Policy] that turns answers into bands, pauses and
// a false-pause promise, recalibration per workflow type and the relative
// spend budget ([SpendBudget]).
//
// It reads a job's trajectory and the judge's request from package
// trajectory, below it, and never the workflow: the plugin (package
// overseer), above it, records trajectories inside workflows and asks a
// judge at each boundary. Programs written against the plugin use the
// plugin's names for these types.
package judge
