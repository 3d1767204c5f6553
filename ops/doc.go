// Package ops holds the operator's side of overseen jobs, through a
// Temporal client: read a job's overseer status, resume or abort a paused
// job through the validated overseer.resume update, describe a job and list
// jobs by their overseer search attributes.
//
// The overseer CLI (status, list, resume) and the dashboard both use it, so
// they word errors the same way: each error names the job and says what to
// do, and wraps a sentinel ([ErrNoJob], [ErrFinished], [ErrNotOverseen],
// [ErrInvalidFilter], or the overseer's own [overseer.ErrNotPaused],
// [overseer.ErrMissingBy] and [overseer.ErrUnknownAction]) that callers
// test with errors.Is.
package ops
