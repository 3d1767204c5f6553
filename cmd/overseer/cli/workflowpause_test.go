package cli

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/ops"
)

// overseer status of a job an operator paused with Workflow Pause: what
// describe says of the pause, whether the job waits at a gate, and the
// unpause command; as JSON, the job and the pause.
func TestStatusOfAJobPausedByAnOperator(t *testing.T) {
	since := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	p := ops.OperatorPause{JobID: "job-7", Identity: "ops-oncall", Reason: "incident 42", Since: &since, Unpause: ops.UnpauseCommand("job-7")}
	j := ops.Job{ID: "job-7", State: "paused", Band: "needs_a_look", Paused: true}

	var out bytes.Buffer
	require.NoError(t, writeOperatorPaused(&out, p, j, false))
	text := out.String()
	assert.Regexp(t, `(?m)^Status\s+paused by an operator \(Temporal's Workflow Pause\)`, text)
	assert.Regexp(t, `(?m)^Paused by\s+ops-oncall$`, text)
	assert.Regexp(t, `(?m)^Paused since\s+2026-12-02T01:00:00Z$`, text)
	assert.Regexp(t, `(?m)^Reason\s+incident 42$`, text)
	assert.Regexp(t, `(?m)^At a gate\s+yes: waiting for a reviewer too`, text)
	assert.Regexp(t, `(?m)^Last band\s+Needs a look$`, text)
	assert.Regexp(t, `(?m)^Unpause\s+temporal workflow unpause --workflow-id job-7$`, text)
	assert.Contains(t, text, "\nJob \"job-7\" is paused by an operator with Temporal's Workflow Pause by ops-oncall")

	out.Reset()
	j.Paused = false
	require.NoError(t, writeOperatorPaused(&out, p, j, false))
	assert.Regexp(t, `(?m)^At a gate\s+no `, out.String())

	out.Reset()
	require.NoError(t, writeOperatorPaused(&out, p, j, true))
	var got struct {
		Job           ops.Job           `json:"job"`
		OperatorPause ops.OperatorPause `json:"operator_pause"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &got), out.String())
	assert.Equal(t, "paused", got.Job.State)
	assert.Equal(t, "ops-oncall", got.OperatorPause.Identity)
	assert.Equal(t, "temporal workflow unpause --workflow-id job-7", got.OperatorPause.Unpause)
}
