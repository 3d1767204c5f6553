package overseer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
)

func TestStatusShowsObjectiveAndAnAbortedJobHasNoPendingNote(t *testing.T) {
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage}, onTrack(), answer(0.2, overseer.BreachNone, 0.9, 0.5))
	var whilePaused overseer.Status
	h.env.RegisterDelayedCallback(func() {
		whilePaused = h.status(t)
		h.env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "alice", Action: overseer.ActionAbort, Note: "wrong direction"})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.True(t, h.env.IsWorkflowCompleted())
	require.Error(t, h.env.GetWorkflowError(), "the job was aborted")

	require.True(t, whilePaused.Paused)
	assert.NotEmpty(t, whilePaused.PendingNote, "a paused job shows the note the next phase would receive")
	assert.Contains(t, whilePaused.PendingNote, "the previous phase (")
	assert.Empty(t, whilePaused.Shape, "a job of phases writes no shape, as before")
	assert.Equal(t, "phase", whilePaused.Step())
	assert.Nil(t, whilePaused.Aborted())

	s := h.status(t)
	assert.Equal(t, "ship the export feature", s.Objective)
	assert.Empty(t, s.PendingNote, "no next phase after an abort")
	g := s.Aborted()
	require.NotNil(t, g)
	assert.Equal(t, "alice", g.By)
	assert.Equal(t, "wrong direction", g.Note)
}

func TestACompletedJobHasNoPendingNote(t *testing.T) {
	// The last phase is flagged: its note has no phase to go to.
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage}, onTrack(), onTrack(), flagged())
	var whilePaused overseer.Status
	h.env.RegisterDelayedCallback(func() {
		whilePaused = h.status(t)
		h.update(overseer.ResumeRequest{By: "alice"})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	require.True(t, whilePaused.Paused)
	assert.NotEmpty(t, whilePaused.PendingNote, "a paused job shows the note the next phase would receive")
	assert.Empty(t, h.status(t).PendingNote, "a completed job has no next phase")
}
