package ops_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/api/serviceerror"

	"github.com/corohq/temporal-overseer/ops"
)

// The refusals of a job an operator paused with Workflow Pause are one
// sentence each, naming who paused it and the command that unpauses it, and
// match ErrOperatorPaused however they are wrapped.
func TestOperatorPausedErrorSaysHowToUnpause(t *testing.T) {
	since := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	p := ops.OperatorPause{JobID: "job-7", Identity: "ops-oncall", Reason: "database migration", Since: &since, Unpause: ops.UnpauseCommand("job-7")}
	server := serviceerror.NewFailedPrecondition("Workflow is paused. Cannot update the workflow.")

	resume := &ops.OperatorPausedError{Pause: p, Resume: true, Err: server}
	assert.Equal(t, `resume job "job-7": an operator paused the workflow with Temporal's Workflow Pause by ops-oncall at 2026-12-02T01:00:00Z ("database migration"), `+
		"and it takes no resume until it is unpaused: unpause it with `temporal workflow unpause --workflow-id job-7` "+
		"(Temporal CLI v1.6.0 or later; or the UnpauseWorkflowExecution RPC), then resume it again", resume.Error())

	status := &ops.OperatorPausedError{Pause: p, Err: server}
	assert.Contains(t, status.Error(), `job "job-7" is paused by an operator with Temporal's Workflow Pause by ops-oncall`)
	assert.Contains(t, status.Error(), "`temporal workflow unpause --workflow-id job-7`")

	wrapped := fmt.Errorf("dashboard: %w", resume)
	assert.ErrorIs(t, wrapped, ops.ErrOperatorPaused)
	var fp *serviceerror.FailedPrecondition
	assert.True(t, errors.As(wrapped, &fp), "the server's answer is kept")

	// Describe could not say more: still the command.
	bare := ops.OperatorPause{JobID: "job-8", Unpause: ops.UnpauseCommand("job-8")}
	assert.Equal(t, `job "job-8" is paused by an operator with Temporal's Workflow Pause: unpause it with `+
		"`temporal workflow unpause --workflow-id job-8` (Temporal CLI v1.6.0 or later; or the UnpauseWorkflowExecution RPC), and it goes on where it stopped", bare.Sentence())
	assert.NotErrorIs(t, server, ops.ErrOperatorPaused)
}
