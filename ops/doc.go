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
// A job an operator paused with Temporal's Workflow Pause (servers from
// v1.30.0) answers no query and takes no update until it is unpaused:
// Status and Resume then return an [*OperatorPausedError], one sentence
// that says who paused it and names the unpause command, with the pause as
// describe reports it ([OperatorPaused]). A resume sent as the
// overseer.resume signal meanwhile is queued and applied after the unpause.
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
// [ErrInvalidFilter], [ErrOperatorPaused] — or keeps the workflow's refusal of a resume, an
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
//
// # Audit
//
// [Audit] reads every gate event of the jobs a query matches (opened,
// escalated, expired, resumed, redone, aborted, and resume signals) from
// their histories into [AuditRecord]s, with who, the note, the reason and
// its evidence, whether the pause was needed, and the policy, model and
// calibration stage in force; [AuditOfHistory] reads one run's history.
// [WriteAudit] writes them as JSON Lines, one chain through the file: each
// record carries its place in the file and the SHA-256 of the line before
// it, and [VerifyAudit] finds an edited, dropped, inserted or reordered
// record, a job dropped whole or a file cut short (ErrAuditTampered);
// [VerifyAuditHead] also compares the head kept apart from the file.
// `overseer audit` and `overseer audit verify` are built on them;
// docs/audit.md says what a history can and cannot tell.
package ops
