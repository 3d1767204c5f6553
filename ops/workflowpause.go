package ops

import (
	"context"
	"errors"
	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// Temporal's Workflow Pause (the PauseWorkflowExecution and
// UnpauseWorkflowExecution RPCs, servers from v1.30.0 with
// frontend.WorkflowPauseEnabled) lets an operator hold any workflow: while it
// is paused the server dispatches no workflow task, rejects every query and
// every update, and queues signals; timers keep running, and what they and
// the signals brought is applied when it is unpaused. A job paused that way
// therefore cannot answer the overseer.status query or take the
// overseer.resume update: Status and Resume say so in one sentence
// (OperatorPausedError) that names the command that unpauses it.

// ErrOperatorPaused: an operator paused the job's workflow with Temporal's
// Workflow Pause; it answers no query and takes no update until unpaused.
var ErrOperatorPaused = errors.New("paused by an operator with Temporal's Workflow Pause")

// OperatorPause is an operator's Workflow Pause of a job, as describe
// reports it (WorkflowExecutionExtendedInfo.PauseInfo).
type OperatorPause struct {
	JobID string `json:"job_id"`
	// Identity is who paused it (the client's identity), Reason what they
	// gave, Since when; each may be empty when describe could not be read.
	Identity string     `json:"identity,omitempty"`
	Reason   string     `json:"reason,omitempty"`
	Since    *time.Time `json:"since,omitempty"`
	// Unpause is the Temporal CLI command that unpauses it.
	Unpause string `json:"unpause"`
}

// UnpauseCommand is the Temporal CLI command (v1.6.0 or later) that unpauses
// job id.
func UnpauseCommand(id string) string { return "temporal workflow unpause --workflow-id " + id }

// how says how to unpause, for the sentences.
func (p OperatorPause) how() string {
	return fmt.Sprintf("unpause it with `%s` (Temporal CLI v1.6.0 or later; or the UnpauseWorkflowExecution RPC)", p.Unpause)
}

// who says by whom, when and why it was paused, "" when describe said
// nothing of it.
func (p OperatorPause) who() string {
	var s string
	if p.Identity != "" {
		s = " by " + p.Identity
	}
	if p.Since != nil {
		s += " at " + p.Since.UTC().Format(time.RFC3339)
	}
	if p.Reason != "" {
		s += fmt.Sprintf(" (%q)", p.Reason)
	}
	return s
}

// Sentence says that an operator paused the job and how to unpause it.
func (p OperatorPause) Sentence() string {
	return fmt.Sprintf("job %q is paused by an operator with Temporal's Workflow Pause%s: %s, and it goes on where it stopped",
		p.JobID, p.who(), p.how())
}

// OperatorPausedError is Status's or Resume's refusal of a job an operator
// paused with Workflow Pause. It matches ErrOperatorPaused with errors.Is.
type OperatorPausedError struct {
	Pause OperatorPause
	// Resume is true when a resume was refused, false for the status.
	Resume bool
	// Err is the server's answer (a rejected query, a refused update).
	Err error
}

// Error implements error: one sentence with the unpause command.
func (e *OperatorPausedError) Error() string {
	if !e.Resume {
		return e.Pause.Sentence()
	}
	return fmt.Sprintf("resume job %q: an operator paused the workflow with Temporal's Workflow Pause%s, and it takes no resume until it is unpaused: %s, then resume it again",
		e.Pause.JobID, e.Pause.who(), e.Pause.how())
}

// Is makes errors.Is(err, ErrOperatorPaused) hold.
func (e *OperatorPausedError) Is(target error) bool { return target == ErrOperatorPaused }

// Unwrap returns the server's answer.
func (e *OperatorPausedError) Unwrap() error { return e.Err }

// OperatorPaused describes job id's run runID ("" for the latest) and
// returns its Workflow Pause, or nil when no operator paused it.
func OperatorPaused(ctx context.Context, c client.Client, id, runID string) (*OperatorPause, error) {
	d, err := c.DescribeWorkflow(ctx, id, runID)
	if err != nil {
		return nil, JobError(id, err)
	}
	if d.RawResponse.GetWorkflowExecutionInfo().GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_PAUSED {
		return nil, nil
	}
	p := &OperatorPause{JobID: id, Unpause: UnpauseCommand(id)}
	if info := d.RawResponse.GetWorkflowExtendedInfo().GetPauseInfo(); info != nil {
		p.Identity, p.Reason = info.GetIdentity(), info.GetReason()
		if t := info.GetPausedTime(); t != nil {
			at := t.AsTime()
			p.Since = &at
		}
	}
	return p, nil
}

// queryRejectedPaused reports whether err is the server's rejection of a
// query because the workflow is paused.
func queryRejectedPaused(err error) bool {
	var qr *temporal.QueryRejectedError
	return errors.As(err, &qr) && qr.QueryRejected().GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_PAUSED
}

// pausedError is the OperatorPausedError for err when job id is paused by an
// operator, nil when it is not (or describe cannot tell). known says the
// server's answer already said it is paused (a rejected query): then the
// error stands even when describe fails.
func pausedError(ctx context.Context, c client.Client, id, runID string, resume, known bool, err error) error {
	p, derr := OperatorPaused(ctx, c, id, runID)
	switch {
	case p != nil:
		return &OperatorPausedError{Pause: *p, Resume: resume, Err: err}
	case known && derr != nil:
		return &OperatorPausedError{Pause: OperatorPause{JobID: id, Unpause: UnpauseCommand(id)}, Resume: resume, Err: err}
	}
	return nil
}

// updateRefusedPaused reports whether err may be the server's refusal of an
// update because the workflow is paused ("Workflow is paused. Cannot update
// the workflow.", a failed precondition): Resume then asks describe.
func updateRefusedPaused(err error) bool {
	var fp *serviceerror.FailedPrecondition
	return errors.As(err, &fp)
}
