// Package workflows holds a reference job workflow to run under the
// overseer: [Job] runs a coding agent's job as a sequence of phase
// activities — spec, plan, code, test, review, evaluate — with lanes (the
// kind of work the job is doing: feature, refactor, docs), work items,
// failed checks looping back to code and an evaluator last. `overseer
// demo` and the end-to-end tests run it, with the simulated agents of
// package activities; it also shows how to write a workflow for the
// overseer.
//
// # Running it
//
// Register the workflow and the agents on a worker that has the overseer
// plugin, then start a job by its name, [JobWorkflowName]:
//
//	workflows.Register(w)
//	(&activities.Agents{Work: 2 * time.Second}).Register(w)
//
//	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "jobs"},
//		workflows.JobWorkflowName, workflows.JobInput{
//			Objective: "Add CSV export to the reports page",
//			Scenario:  activities.Looping,
//		})
//
// The scenario chooses how the simulated agents behave (see package
// activities).
//
// # What it shows
//
// The workflow knows nothing of the overseer but three optional calls:
// it tells it the objective, the lane and the work items
// (overseer.SetObjective, SetLane, SetWorkItem), which do nothing when the
// run is not overseen. Each phase is one activity, named coro.<phase>,
// whose result carries an overseer.PhaseReport and whose input receives
// the overseer's process note after a flagged phase. The workflow decides
// what a failed phase means: phases run once per attempt (no blind
// retries), a failed phase runs again after [JobInput].RetryDelay, and the
// job fails after [JobInput].MaxPhaseFailures failures in a row. A long
// job continues as new ([JobInput].ContinueAsNewAfter, or when the server
// suggests it) and the overseer carries its state across.
package workflows
