package overseer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
)

func yes() *bool { v := true; return &v }
func no() *bool  { v := false; return &v }

// Each rule of Gate.Needed, as the update returns the closed gate and the
// status records it.
func TestAClosedGateSaysWhetherThePauseWasNeededAndWhichRuleSaidSo(t *testing.T) {
	for _, tc := range []struct {
		name   string
		req    overseer.ResumeRequest
		needed bool
		by     overseer.NeededBy
	}{
		{"continue with a note", overseer.ResumeRequest{By: "bob", Note: "find the root cause first"}, true, overseer.NeededByNote},
		{"continue without a note", overseer.ResumeRequest{By: "bob"}, false, overseer.NeededByNoNote},
		{"a blank note is no note", overseer.ResumeRequest{By: "bob", Note: "  "}, false, overseer.NeededByNoNote},
		{"reviewer: needed, no note", overseer.ResumeRequest{By: "bob", Needed: yes()}, true, overseer.NeededByReviewer},
		{"reviewer: false alarm, with a note", overseer.ResumeRequest{By: "bob", Note: "fine as it was", Needed: no()}, false, overseer.NeededByReviewer},
		{"abort", overseer.ResumeRequest{By: "bob", Action: overseer.ActionAbort}, true, overseer.NeededByAction},
		{"abort the reviewer calls needed", overseer.ResumeRequest{By: "bob", Action: overseer.ActionAbort, Needed: yes()}, true, overseer.NeededByReviewer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, overseer.Options{Mode: overseer.ModeManage}, onTrack(), flagged(), onTrack())
			var res *updateResult
			var open overseer.Status
			h.env.RegisterDelayedCallback(func() {
				open = h.status(t)
				res = h.update(tc.req)
			}, time.Hour)
			h.env.ExecuteWorkflow(phasesWorkflow, testPhases)

			require.Len(t, open.Gates, 1)
			assert.Nil(t, open.Gates[0].Needed, "an open gate is not judged yet")
			assert.Empty(t, open.Gates[0].NeededBy)
			require.NoError(t, res.rejected)
			require.True(t, res.done)
			require.NotNil(t, res.gate.Needed, "the update returns the judgement")
			assert.Equal(t, tc.needed, *res.gate.Needed)
			assert.Equal(t, tc.by, res.gate.NeededBy)

			s := h.status(t)
			require.Len(t, s.Gates, 1)
			require.NotNil(t, s.Gates[0].Needed, "the status records it")
			assert.Equal(t, tc.needed, *s.Gates[0].Needed)
			assert.Equal(t, tc.by, s.Gates[0].NeededBy)
		})
	}
}

func TestAnAbortJudgedNotNeededIsRefused(t *testing.T) {
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage}, onTrack(), flagged(), onTrack())
	var refused, ok *updateResult
	h.env.RegisterDelayedCallback(func() {
		refused = h.update(overseer.ResumeRequest{By: "bob", Action: overseer.ActionAbort, Needed: no()})
		// The signal cannot be refused: it is counted and dropped.
		h.env.SignalWorkflow(overseer.ResumeName, raw(`{"by":"bob","action":"abort","needed":false}`))
	}, time.Hour)
	h.env.RegisterDelayedCallback(func() {
		ok = h.update(overseer.ResumeRequest{By: "bob", Note: "carry on", Needed: no()})
	}, 2*time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)

	require.NoError(t, h.env.GetWorkflowError(), "neither refused abort ended the job")
	assert.Equal(t, overseer.InvalidResumeErrorType, overseer.ErrorType(refused.rejected), "%v", refused.rejected)
	assert.ErrorContains(t, refused.rejected, `resume action "abort" is always a needed pause: drop "needed": false`)
	require.NoError(t, ok.rejected)
	s := h.status(t)
	assert.Equal(t, 1, s.Counters.IgnoredResumes)
	require.Len(t, s.Gates, 1)
	assert.Equal(t, overseer.ActionContinue, s.Gates[0].Action)
	require.NotNil(t, s.Gates[0].Needed)
	assert.False(t, *s.Gates[0].Needed)
}

func TestAGateItsDeadlineClosedIsJudgedByTheDeadlineRule(t *testing.T) {
	for _, tc := range []struct {
		action overseer.DeadlineAction
		needed bool
	}{
		{overseer.DeadlineContinue, false},
		{overseer.DeadlineAbort, true},
	} {
		t.Run(string(tc.action), func(t *testing.T) {
			h := newHarness(t, overseer.Options{
				Mode:         overseer.ModeManage,
				GateDeadline: overseer.GateDeadline{After: 4 * time.Hour, Action: tc.action},
			}, onTrack(), flagged(), onTrack())
			h.env.ExecuteWorkflow(phasesWorkflow, testPhases)

			s := h.status(t)
			require.Len(t, s.Gates, 1)
			g := s.Gates[0]
			require.True(t, g.Expired)
			require.NotNil(t, g.Needed)
			assert.Equal(t, tc.needed, *g.Needed)
			assert.Equal(t, overseer.NeededByDeadline, g.NeededBy)
		})
	}
}

func TestGateJudgementSaysWhichRuleApplied(t *testing.T) {
	for _, tc := range []struct {
		g    overseer.Gate
		want string
	}{
		{overseer.Gate{}, ""},
		{overseer.Gate{Needed: yes(), NeededBy: overseer.NeededByReviewer}, "pause needed, the reviewer said"},
		{overseer.Gate{Needed: no(), NeededBy: overseer.NeededByReviewer}, "pause not needed (a false alarm), the reviewer said"},
		{overseer.Gate{Needed: yes(), NeededBy: overseer.NeededByNote}, "pause needed: a continue with a note counts as needed"},
		{overseer.Gate{Needed: no(), NeededBy: overseer.NeededByNoNote}, "pause not needed (a false alarm): a continue without a note counts as not needed"},
		{overseer.Gate{Needed: yes(), NeededBy: overseer.NeededByAction}, "pause needed: a redo or an abort always is"},
		{overseer.Gate{Needed: no(), NeededBy: overseer.NeededByDeadline}, "pause not needed (a false alarm): nobody judged it; the deadline continued the job"},
		{overseer.Gate{Needed: yes(), NeededBy: overseer.NeededByDeadline}, "pause needed: nobody judged it; the deadline aborted the job"},
	} {
		assert.Equal(t, tc.want, tc.g.Judgement())
	}
}

// A redo is always a needed pause; one the reviewer calls a false alarm
// is refused and the gate stays open for the next decision.
func TestARedoIsANeededPause(t *testing.T) {
	h, _ := newRedoHarness(t, overseer.Options{}, onTrack(), flagged(), onTrack(), onTrack())
	var refused, redo *updateResult
	h.env.RegisterDelayedCallback(func() {
		refused = h.update(overseer.ResumeRequest{By: "alice", Action: overseer.ActionRedo, Gate: "code-1", Note: "tests first", Needed: no()})
		redo = h.update(overseer.ResumeRequest{By: "alice", Action: overseer.ActionRedo, Gate: "code-1", Note: "tests first"})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())

	assert.Equal(t, overseer.InvalidResumeErrorType, overseer.ErrorType(refused.rejected), "%v", refused.rejected)
	assert.ErrorContains(t, refused.rejected, `resume action "redo" is always a needed pause`)
	require.NoError(t, redo.rejected)
	require.NotNil(t, redo.gate.Needed)
	assert.True(t, *redo.gate.Needed)
	assert.Equal(t, overseer.NeededByAction, redo.gate.NeededBy)
}
