package overseer_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

func TestManagePausesAndDelayedSignalResumesWithNote(t *testing.T) {
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage},
		onTrack(),
		answer(0.85, "obligation[2]", 0.8, 2.0), // "On track, 85%" and still pauses
		onTrack())
	var during overseer.Status
	h.env.RegisterDelayedCallback(func() {
		during = h.status(t)
		h.env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "alice", Note: "looks fine, go on"})
	}, 48*time.Hour)
	start := h.env.Now()
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)

	require.True(t, h.env.IsWorkflowCompleted())
	require.NoError(t, h.env.GetWorkflowError())
	var done []string
	require.NoError(t, h.env.GetWorkflowResult(&done))
	assert.Equal(t, testPhases, done)
	assert.GreaterOrEqual(t, h.env.Now().Sub(start), 48*time.Hour, "the gate must hold the job until the signal")

	assert.True(t, during.Paused)
	assert.Equal(t, "Paused", during.Label())
	assert.Contains(t, during.PauseReason, "obligation[2]")
	assert.Equal(t, overseer.BandOnTrack, during.Band)
	assert.InDelta(t, 0.85, during.OnObjective, 1e-9)

	calls := h.rec.Calls()
	require.Len(t, calls, 3, "a finished phase is never re-run on resume")
	assert.Nil(t, calls[0].InputNote)
	assert.Nil(t, calls[1].InputNote)
	require.NotNil(t, calls[2].InputNote, "the phase after the flagged one gets the note on its input")
	require.NotNil(t, calls[2].ContextNte, "and through ProcessNote on its context")
	note := *calls[2].InputNote
	assert.Equal(t, "code", note.FlaggedPhase)
	assert.Contains(t, note.Text, "may have repeated earlier work")
	assert.Contains(t, note.Text, "not a code-quality score")
	assert.Equal(t, "alice", note.ReviewedBy)
	assert.Equal(t, "looks fine, go on", note.ReviewerNote)
	assert.Equal(t, note, *calls[2].ContextNte)

	s := h.status(t)
	assert.False(t, s.Paused)
	assert.Equal(t, 1, s.Counters.Pauses)
	assert.Equal(t, 1, s.Counters.Resumes)
	assert.Equal(t, 3, s.Counters.Assessments)
	require.Len(t, s.Gates, 1)
	g := s.Gates[0]
	assert.Equal(t, "alice", g.By)
	assert.Equal(t, overseer.ActionContinue, g.Action)
	require.NotNil(t, g.ResumedAt)
	assert.Equal(t, 48*time.Hour, g.ResumedAt.Sub(g.PausedAt).Round(time.Hour))
	require.Len(t, s.Assessments, 3)
	assert.Equal(t, "scripted-1", s.Assessments[1].Model)
	assert.Contains(t, s.Assessments[1].Digest, "phase code")
}

func TestResumeUpdateValidates(t *testing.T) {
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage},
		onTrack(), answer(0.2, overseer.BreachNone, 0.9, 1), onTrack())
	var notPaused, missingBy, badAction, ok *updateResult
	h.env.RegisterDelayedCallback(func() {
		notPaused = h.update(overseer.ResumeRequest{By: "bob"})
	}, 0)
	h.env.RegisterDelayedCallback(func() {
		missingBy = h.update(overseer.ResumeRequest{})
		badAction = h.update(overseer.ResumeRequest{By: "bob", Action: "skip"})
		ok = h.update(overseer.ResumeRequest{By: "bob", Note: "go"})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())

	require.NotNil(t, notPaused)
	assert.ErrorContains(t, notPaused.rejected, "not paused")
	assert.ErrorContains(t, missingBy.rejected, `"by"`)
	assert.ErrorContains(t, badAction.rejected, `"continue", "redo" or "abort"`)
	require.NoError(t, ok.rejected)
	require.True(t, ok.done)
	require.NoError(t, ok.failed)
	assert.Equal(t, "bob", ok.gate.By)
	assert.Equal(t, overseer.ActionContinue, ok.gate.Action)
	assert.Contains(t, ok.gate.Reason, "P(on objective) 0.20")
	assert.Len(t, h.rec.Calls(), 3)
}

func TestAbortEndsTheJobWithATypedError(t *testing.T) {
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage}, answer(0.1, overseer.BreachNone, 0.9, 3))
	h.env.RegisterDelayedCallback(func() {
		res := h.update(overseer.ResumeRequest{By: "carol", Action: overseer.ActionAbort, Note: "wrong approach"})
		assert.NoError(t, res.rejected)
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)

	err := h.env.GetWorkflowError()
	require.Error(t, err)
	assert.Equal(t, overseer.AbortedErrorType, overseer.ErrorType(err), "got %v", err)
	assert.Contains(t, err.Error(), "aborted by carol")
	assert.Contains(t, err.Error(), "wrong approach")
	assert.Len(t, h.rec.Calls(), 1, "no phase runs after an abort")
}

func TestObserveNeverDelaysTheNextPhase(t *testing.T) {
	// The judge answers the first boundary only once the second phase has
	// started: if observe mode waited for the verdict, this would deadlock.
	started := make(chan struct{})
	var mu sync.Mutex
	calls := 0
	judge := jev.JudgeFunc(func(ctx context.Context, req jev.Request) (*jev.Response, error) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			select {
			case <-started:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return answer(0.1, "obligation[1]", 0.9, 3).Response, nil
		}
		return onTrack().Response, nil
	})
	h := newHarness(t, overseer.Options{Mode: overseer.ModeObserve, Judge: judge})
	h.rec.startedPhase, h.rec.started = "code", started
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)

	require.NoError(t, h.env.GetWorkflowError())
	s := h.status(t)
	assert.False(t, s.Paused)
	assert.Equal(t, 0, s.Counters.Pauses, "observe mode never pauses")
	assert.Equal(t, 1, s.Counters.Flags, "but it records the flag")
	assert.Equal(t, 3, s.Counters.Assessments, "every boundary is assessed before the run ends")
	assert.Equal(t, overseer.BandOnTrack, s.Band, "the latest boundary sets the band")
	for _, c := range h.rec.Calls() {
		assert.Nil(t, c.InputNote, "observe mode injects nothing")
		assert.Nil(t, c.ContextNte)
	}
}

func TestJudgeFailures(t *testing.T) {
	boom := jev.Step{Err: errors.New("judge unavailable")}
	invalid := answer(1.1, overseer.BreachNone, 0.9, 0)

	t.Run("observe records failures and changes nothing", func(t *testing.T) {
		h := newHarness(t, overseer.Options{Mode: overseer.ModeObserve}, invalid)
		h.judge.Repeat = true
		h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
		require.NoError(t, h.env.GetWorkflowError())
		s := h.status(t)
		assert.Equal(t, 3, s.Counters.Failures)
		assert.Equal(t, 0, s.Counters.Pauses)
		assert.False(t, s.Assessed)
		require.Len(t, s.Assessments, 3)
		assert.Contains(t, s.Assessments[0].Error, "outside [0,1]")
		assert.Nil(t, s.Assessments[0].Verdict, "an invalid answer is never a verdict")
		assert.Len(t, h.judge.Requests(), 3, "an invalid answer is not retried")
	})

	t.Run("manage fails open, then pauses after N in a row", func(t *testing.T) {
		opts := overseer.Options{Mode: overseer.ModeManage, Policy: overseer.DefaultPolicy()}
		opts.Policy.MaxConsecutiveFailures = 2
		h := newHarness(t, opts, boom, boom, boom, boom, boom, boom, onTrack())
		var during overseer.Status
		h.env.RegisterDelayedCallback(func() {
			during = h.status(t)
			res := h.update(overseer.ResumeRequest{By: "dave"})
			assert.NoError(t, res.rejected)
		}, time.Hour)
		h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
		require.NoError(t, h.env.GetWorkflowError())

		assert.True(t, during.Paused)
		assert.Contains(t, during.PauseReason, "could not assess 2 boundaries in a row")
		assert.Contains(t, during.PauseReason, "judge unavailable")
		assert.Len(t, h.judge.Requests(), 7, "3 attempts per boundary for transport errors, then one good answer")
		s := h.status(t)
		assert.Equal(t, 2, s.Counters.Failures)
		assert.Equal(t, 0, s.Counters.ConsecutiveFailures)
		assert.True(t, s.Assessed)
		calls := h.rec.Calls()
		require.Len(t, calls, 3)
		assert.Nil(t, calls[1].InputNote, "the first failure fails open")
		require.NotNil(t, calls[2].InputNote)
		assert.Contains(t, calls[2].InputNote.Text, "could not assess")
	})
}

func TestOffModeCallsNothing(t *testing.T) {
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage, Modes: map[string]overseer.Mode{"phasesWorkflow": overseer.ModeOff}})
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())
	assert.Empty(t, h.judge.Requests())
	s := h.status(t)
	assert.Equal(t, overseer.ModeOff, s.Mode)
	assert.Equal(t, 0, s.Counters.Assessments)
}
