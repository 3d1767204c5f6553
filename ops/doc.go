// Package ops is the operator's side of overseen jobs, through a Temporal
// client: read a job's overseer status, resume or abort a paused job, list
// jobs by the overseer's search attributes, and export finished jobs as
// run records for evaluation. The overseer CLI (status, list, resume,
// export) and the dashboard are built on it. It is a Go module of its own.
//
// # Status and resume
//
// [Status] runs the job's overseer.status query; [Resume] sends the
// validated overseer.resume update and returns the gate it closed:
//
//	st, err := ops.Status(ctx, c, "job-42")
//	if err != nil {
//		return err
//	}
//	if st.Paused {
//		gate, err := ops.Resume(ctx, c, "job-42", overseer.ResumeRequest{
//			By: "alice", Gate: st.GateID, Note: "credentials added",
//		})
//		…
//	}
//
// Send the gate id you read, so that a decision taken at one gate never
// closes the next one.
//
// # Listing jobs
//
// [ListQuery] builds the visibility query for a band and for paused jobs
// (only running ones: a job terminated at a gate keeps OverseerPaused set);
// [List] runs it and [Describe] reads one job:
//
//	q, err := ops.ListQuery("off_track", true)
//	if err != nil {
//		return err
//	}
//	jobs, err := ops.List(ctx, c, ops.ListOptions{Query: q, Limit: 20})
//
// # Errors
//
// Every error names the job and says what to do, so that the CLI and the
// dashboard word them the same way. It wraps a sentinel for callers to
// test with errors.Is — [ErrNoJob], [ErrFinished], [ErrNotOverseen],
// [ErrInvalidFilter] — or keeps the workflow's refusal of a resume, an
// application error whose type overseer.ErrorType returns
// (overseer.NotPausedErrorType, WrongGateErrorType, InvalidResumeErrorType).
//
// # Export
//
// [Export] reads the histories of closed jobs into run records (package
// eval's format), each phase with the report it returned and the
// assessment the overseer recorded, and an outcome from the close status
// or from labels; `overseer export` writes them, and `overseer train`,
// `overseer eval` and `overseer calibrate` read them.
package ops
