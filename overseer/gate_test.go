package overseer_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// raw sends exactly this JSON as a signal or update argument.
func raw(s string) json.RawMessage { return json.RawMessage(s) }

func flagged() jev.Step { return answer(0.1, overseer.BreachNone, 0.9, 3) }

func TestUndecodableResumeSignalNeverLeaksIntoTheNextOne(t *testing.T) {
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage}, onTrack(), flagged(), onTrack())
	h.env.RegisterDelayedCallback(func() {
		// "by" is not a string: dropped. Its "action" must not survive.
		h.env.SignalWorkflow(overseer.ResumeName, raw(`{"action":"abort","by":{"x":1}}`))
	}, time.Hour)
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(overseer.ResumeName, raw(`{"by":"bob","note":"carry on"}`))
	}, 2*time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)

	require.NoError(t, h.env.GetWorkflowError(), "the good resume continues the job")
	s := h.status(t)
	assert.Equal(t, 1, s.Counters.IgnoredResumes)
	require.Len(t, s.Gates, 1)
	assert.Equal(t, overseer.ActionContinue, s.Gates[0].Action)
	assert.Equal(t, "bob", s.Gates[0].By)
	assert.Equal(t, "carry on", s.Gates[0].Note)
	assert.Len(t, h.rec.Calls(), 3)
}

func TestEveryBadResumeSignalIsCounted(t *testing.T) {
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage}, onTrack(), flagged(), onTrack())
	bad := []any{
		raw(`{"action":"abort","by":{"x":1}}`), // undecodable
		raw(`{"by":"alice","actoin":"abort"}`), // unknown field
		raw(`"just a string"`),                 // not an object
		raw(`{}`),                              // no by
		raw(`null`),                            // no by
		raw(`{"by":"alice","action":"skip"}`),  // unknown action
		raw(`{"by":"alice","gate":"spec-7"}`),  // no such gate
		overseer.ResumeRequest{By: "alice", Note: strings.Repeat("n", overseer.MaxResumeNoteBytes+1)}, // note too long
	}
	h.env.RegisterDelayedCallback(func() {
		for _, b := range bad {
			h.env.SignalWorkflow(overseer.ResumeName, b)
		}
	}, time.Hour)
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "carol", Gate: "code-1"})
	}, 2*time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)

	require.NoError(t, h.env.GetWorkflowError())
	s := h.status(t)
	assert.Equal(t, len(bad), s.Counters.IgnoredResumes, "every dropped signal is counted")
	require.Len(t, s.Gates, 1)
	assert.Equal(t, "carol", s.Gates[0].By)
	assert.Equal(t, overseer.ActionContinue, s.Gates[0].Action, "the misspelled action was not taken")
}

func TestResumeUpdateRefusalsAreTyped(t *testing.T) {
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage}, onTrack(), flagged(), onTrack())
	var notPaused, unknownField, noBy, tooLong, wrongGate, ok, again *updateResult
	var during overseer.Status
	h.env.RegisterDelayedCallback(func() {
		notPaused = h.update(overseer.ResumeRequest{By: "bob"})
	}, 0)
	h.env.RegisterDelayedCallback(func() {
		during = h.status(t)
		unknownField = h.updateRaw(raw(`{"by":"alice","actoin":"abort"}`))
		noBy = h.update(overseer.ResumeRequest{})
		tooLong = h.update(overseer.ResumeRequest{By: "bob", Note: strings.Repeat("é", overseer.MaxResumeNoteBytes)})
		wrongGate = h.update(overseer.ResumeRequest{By: "bob", Gate: "spec-0"})
		ok = h.update(overseer.ResumeRequest{By: "bob", Gate: during.GateID})
		again = h.update(overseer.ResumeRequest{By: "bob", Gate: during.GateID})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())

	assert.Equal(t, "code-1", during.GateID, "the status names the open gate")
	assert.Equal(t, overseer.NotPausedErrorType, overseer.ErrorType(notPaused.rejected), "%v", notPaused.rejected)
	assert.Equal(t, overseer.InvalidResumeErrorType, overseer.ErrorType(unknownField.rejected), "%v", unknownField.rejected)
	assert.ErrorContains(t, unknownField.rejected, `unknown field "actoin"`)
	assert.Equal(t, overseer.InvalidResumeErrorType, overseer.ErrorType(noBy.rejected), "%v", noBy.rejected)
	assert.Equal(t, overseer.InvalidResumeErrorType, overseer.ErrorType(tooLong.rejected), "%v", tooLong.rejected)
	assert.ErrorContains(t, tooLong.rejected, "keep it to 4096 bytes")
	assert.Equal(t, overseer.WrongGateErrorType, overseer.ErrorType(wrongGate.rejected), "%v", wrongGate.rejected)
	assert.ErrorContains(t, wrongGate.rejected, `the job is paused at gate "code-1"`)
	require.NoError(t, ok.rejected)
	assert.Equal(t, "code-1", ok.gate.ID)
	assert.Equal(t, overseer.NotPausedErrorType, overseer.ErrorType(again.rejected), "a second resume of the same gate is refused: %v", again.rejected)
	for _, r := range []*updateResult{notPaused, unknownField, noBy, tooLong, wrongGate} {
		assert.NotEqual(t, overseer.AbortedErrorType, overseer.ErrorType(r.rejected))
	}
	s := h.status(t)
	require.Len(t, s.Gates, 1)
	assert.Equal(t, overseer.ActionContinue, s.Gates[0].Action)
}

func TestResumeForAnEarlierGateIsRefusedAtTheNextOne(t *testing.T) {
	// A form loaded at the code gate, posted after the job paused again at
	// test: it must not resume the test gate.
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage}, flagged(), flagged(), onTrack())
	var first, stale *updateResult
	var atSecond overseer.Status
	h.env.RegisterDelayedCallback(func() {
		first = h.update(overseer.ResumeRequest{By: "alice", Gate: "spec-1"})
	}, time.Hour)
	h.env.RegisterDelayedCallback(func() {
		atSecond = h.status(t)
		stale = h.update(overseer.ResumeRequest{By: "alice", Gate: "spec-1", Note: "about spec"})
	}, 2*time.Hour)
	h.env.RegisterDelayedCallback(func() {
		h.update(overseer.ResumeRequest{By: "bob", Gate: "code-2"})
	}, 3*time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())
	require.NoError(t, first.rejected)
	assert.Equal(t, "code-2", atSecond.GateID)
	assert.Equal(t, overseer.WrongGateErrorType, overseer.ErrorType(stale.rejected), "%v", stale.rejected)
	s := h.status(t)
	require.Len(t, s.Gates, 2)
	assert.Equal(t, "bob", s.Gates[1].By)
	assert.Empty(t, s.Gates[1].Note, "the stale note never reached the second gate")
}

// parallelWorkflow runs code and test at the same time, then spec.
func parallelWorkflow(ctx workflow.Context) ([]string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	a := workflow.ExecuteActivity(ctx, "code", &phaseInput{Phase: "code"})
	b := workflow.ExecuteActivity(ctx, "test", &phaseInput{Phase: "test"})
	var done []string
	for _, f := range []workflow.Future{a, b} {
		var res phaseResult
		if err := f.Get(ctx, &res); err != nil {
			return done, err
		}
		done = append(done, res.Phase)
	}
	var res phaseResult
	err := workflow.ExecuteActivity(ctx, "spec", &phaseInput{Phase: "spec"}).Get(ctx, &res)
	return append(done, res.Phase), err
}

func TestParallelFlaggedPhasesQueueTheirGates(t *testing.T) {
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage}, flagged(), flagged(), onTrack())
	h.env.RegisterWorkflow(parallelWorkflow)
	var both, one overseer.Status
	var first, second *updateResult
	h.env.RegisterDelayedCallback(func() {
		both = h.status(t)
		// Resume the newer gate first: each gate is resumed on its own.
		first = h.update(overseer.ResumeRequest{By: "alice", Note: "first note", Gate: both.Gates[1].ID})
		one = h.status(t)
	}, time.Hour)
	h.env.RegisterDelayedCallback(func() {
		second = h.update(overseer.ResumeRequest{By: "bob", Note: "second note"})
	}, 2*time.Hour)
	h.env.ExecuteWorkflow(parallelWorkflow)
	require.NoError(t, h.env.GetWorkflowError())

	require.Len(t, both.Gates, 2, "two gates, one per flagged phase")
	assert.True(t, both.Paused)
	assert.Equal(t, both.Gates[0].ID, both.GateID, "the oldest open gate is the status's gate")
	require.NoError(t, first.rejected)
	assert.True(t, one.Paused, "the other gate is still open")
	assert.Equal(t, both.Gates[0].ID, one.GateID)
	require.NoError(t, second.rejected)
	assert.Equal(t, both.Gates[0].ID, second.gate.ID, "a resume without a gate id closes the oldest open gate")

	s := h.status(t)
	assert.False(t, s.Paused)
	assert.Equal(t, 2, s.Counters.Pauses)
	assert.Equal(t, 2, s.Counters.Resumes)
	require.Len(t, s.Gates, 2)
	notes := map[string]string{}
	for _, g := range s.Gates {
		require.NotNil(t, g.ResumedAt, "gate %s has its resume time", g.ID)
		notes[g.By] = g.Note
	}
	assert.Equal(t, map[string]string{"alice": "first note", "bob": "second note"}, notes)
	assert.Len(t, h.rec.Calls(), 3)
}

func TestCancelledAtAGateClearsThePause(t *testing.T) {
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage, SearchAttributes: true}, onTrack(), flagged())
	var upserts []map[string]any
	h.env.OnUpsertTypedSearchAttributes(mockAny).Run(func(args mock.Arguments) {
		upserts = append(upserts, describeSA(args.Get(0)))
	}).Return(nil)
	var during overseer.Status
	h.env.RegisterDelayedCallback(func() {
		during = h.status(t)
		h.env.CancelWorkflow()
	}, time.Hour)
	// The code phase is the last, so no activity is left running when the
	// cancelled run ends (the test environment would race on it).
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases[:2])
	require.True(t, h.env.IsWorkflowCompleted())

	assert.True(t, during.Paused)
	s := h.status(t)
	assert.False(t, s.Paused, "a cancelled run is not paused")
	assert.Empty(t, s.GateID)
	require.Len(t, s.Gates, 1)
	assert.True(t, s.Gates[0].Cancelled)
	require.NotEmpty(t, upserts)
	assert.Equal(t, false, upserts[len(upserts)-1]["OverseerPaused"], "the last upsert clears OverseerPaused: %v", upserts)
}

// slowFailingJudge fails every call after delay.
type slowFailingJudge struct {
	delay time.Duration
	calls atomic.Int32
}

func (j *slowFailingJudge) Decide(ctx context.Context, _ jev.Request) (*jev.Response, error) {
	j.calls.Add(1)
	select {
	case <-time.After(j.delay):
		return nil, errors.New("judge overloaded")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func TestSlowlyFailingJudgeGetsAllItsAttempts(t *testing.T) {
	for _, asActivity := range []bool{false, true} {
		t.Run(map[bool]string{false: "local activity", true: "activity"}[asActivity], func(t *testing.T) {
			judge := &slowFailingJudge{delay: 150 * time.Millisecond}
			h := newHarness(t, overseer.Options{Mode: overseer.ModeObserve, Judge: judge, Placement: map[bool]overseer.Placement{false: overseer.PlacementLocalActivity, true: overseer.PlacementActivity}[asActivity],
				AssessTimeout: 300 * time.Millisecond})
			h.env.ExecuteWorkflow(phasesWorkflow, []string{"spec"})
			require.NoError(t, h.env.GetWorkflowError())
			assert.EqualValues(t, 3, judge.calls.Load(), "AssessTimeout bounds one attempt, not all three")
			s := h.status(t)
			require.Len(t, s.Assessments, 1)
			assert.NotEmpty(t, s.Assessments[0].Error, "recorded as a failed assessment")
		})
	}
}

func TestPausedJobShowsTheResumeCommandInItsCurrentDetails(t *testing.T) {
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage}, onTrack(), flagged(), onTrack())
	var during, after string
	h.env.RegisterDelayedCallback(func() {
		during = currentDetails(t, h)
		h.update(overseer.ResumeRequest{By: "dave"})
	}, time.Hour)
	h.env.RegisterDelayedCallback(func() { after = currentDetails(t, h) }, 2*time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())

	assert.Contains(t, during, "Gate code-1, after phase code")
	assert.Contains(t, during, "Reason: P(on objective) 0.10")
	assert.Contains(t, during, "The next phase will receive: Process note from the overseer")
	assert.Contains(t, during, `temporal workflow update execute --workflow-id default-test-workflow-id --namespace default-test-namespace --name overseer.resume --input '{"by":"YOUR_NAME","gate":"code-1","note":"optional note"}'`)
	assert.Contains(t, during, `'{"by":"YOUR_NAME","gate":"code-1","action":"abort"}'`)
	assert.Empty(t, after, "cleared once resumed")
}

func currentDetails(t *testing.T, h *harness) string {
	t.Helper()
	v, err := h.env.QueryWorkflow("__temporal_workflow_metadata")
	require.NoError(t, err)
	var md sdkpb.WorkflowMetadata
	require.NoError(t, v.Get(&md))
	return md.GetCurrentDetails()
}

func TestHandlersHaveDescriptions(t *testing.T) {
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage}, onTrack())
	h.env.ExecuteWorkflow(phasesWorkflow, []string{"spec"})
	require.NoError(t, h.env.GetWorkflowError())
	v, err := h.env.QueryWorkflow("__temporal_workflow_metadata")
	require.NoError(t, err)
	var md sdkpb.WorkflowMetadata
	require.NoError(t, v.Get(&md))
	descriptions := map[string]string{}
	for _, q := range md.GetDefinition().GetQueryDefinitions() {
		descriptions["query "+q.GetName()] = q.GetDescription()
	}
	for _, s := range md.GetDefinition().GetSignalDefinitions() {
		descriptions["signal "+s.GetName()] = s.GetDescription()
	}
	for _, u := range md.GetDefinition().GetUpdateDefinitions() {
		descriptions["update "+u.GetName()] = u.GetDescription()
	}
	for _, k := range []string{"query " + overseer.StatusQueryName, "signal " + overseer.ResumeName, "update " + overseer.ResumeName} {
		assert.NotEmpty(t, descriptions[k], "%s has a description (all: %v)", k, descriptions)
	}
}

func TestValidateRefusalsAreOneTypedSentence(t *testing.T) {
	err := overseer.ResumeRequest{By: "x", Note: strings.Repeat("a", overseer.MaxResumeNoteBytes+1)}.Validate()
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, overseer.InvalidResumeErrorType, app.Type())
	assert.Equal(t, "overseer: resume note is 4097 bytes; keep it to 4096 bytes (4 KiB)", app.Message())
	assert.NoError(t, overseer.ResumeRequest{By: "x", Note: strings.Repeat("a", overseer.MaxResumeNoteBytes)}.Validate())
	assert.NotEqual(t, overseer.WrongGateErrorType, overseer.ErrorType(err))
	assert.NotEqual(t, overseer.NotPausedErrorType, overseer.ErrorType(errors.New("overseer: the job is not paused")), "a plain error with the same text is not the typed refusal")
}

// A job paused for manual review before any assessment succeeded (its
// judge failing) and then resumed says it is no longer paused: the resume
// upserts OverseerPaused false and unsets OverseerGateSince (issue 45: they
// stayed set until an assessment succeeded, and the job stayed in the queue).
func TestAResumeBeforeAnyVerdictClearsThePause(t *testing.T) {
	opts := overseer.Options{Mode: overseer.ModeManage, SearchAttributes: true, GateSearchAttribute: true}
	opts.Policy = overseer.DefaultPolicy()
	opts.Policy.MaxConsecutiveFailures = 1
	down := jev.Step{Err: fmt.Errorf("%w: HTTP 401: wrong key", jev.ErrRejected)}
	h := newHarness(t, opts, down, down, down, down)
	var upserts []map[string]any
	h.env.OnUpsertTypedSearchAttributes(mockAny).Run(func(args mock.Arguments) {
		upserts = append(upserts, describeSA(args.Get(0)))
	}).Return(nil)
	var during overseer.Status
	h.env.RegisterDelayedCallback(func() {
		during = h.status(t)
		h.update(overseer.ResumeRequest{By: "erin"})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases[:1])
	require.NoError(t, h.env.GetWorkflowError())
	require.True(t, during.Paused, "paused for manual review")
	assert.False(t, during.Assessed, "before any verdict")
	require.NotEmpty(t, upserts)
	last := upserts[len(upserts)-1]
	assert.Equal(t, false, last["OverseerPaused"], "the last upsert clears OverseerPaused: %v", upserts)
	assert.Nil(t, last["OverseerGateSince"], "and unsets OverseerGateSince: %v", upserts)
}

// A resume marks as reviewed the phase run its gate was opened after, not
// a phase that completed while the gate was open, which the reviewer never
// saw.
func TestAResumeMarksReviewedTheRunTheGateWasOpenedAfter(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	judge := jev.NewScripted(answer(0.1, overseer.BreachNone, 0.9, 3), onTrack(), onTrack())
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeManage, Judge: judge, Placement: overseer.PlacementLocalActivity})
	require.NoError(t, err)
	env.SetWorkerOptions(worker.Options{Plugins: []worker.Plugin{plugin}})
	wf := func(ctx workflow.Context) error {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
		a := workflow.ExecuteActivity(ctx, "a")
		b := workflow.ExecuteActivity(ctx, "b")
		if err := a.Get(ctx, nil); err != nil {
			return err
		}
		if err := b.Get(ctx, nil); err != nil {
			return err
		}
		return workflow.ExecuteActivity(ctx, "c").Get(ctx, nil)
	}
	env.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: "twoAtOnce"})
	env.RegisterActivityWithOptions(func(context.Context) error { return nil }, activity.RegisterOptions{Name: "a"})
	bDone := make(chan struct{})
	env.RegisterActivityWithOptions(func(ctx context.Context) error {
		<-bDone // completes once the gate after a is open
		return nil
	}, activity.RegisterOptions{Name: "b"})
	env.RegisterActivityWithOptions(func(context.Context) error { return nil }, activity.RegisterOptions{Name: "c"})
	var atGate overseer.Status
	env.SetOnLocalActivityCompletedListener(func(*activity.Info, converter.EncodedValue, error) {
		select {
		case <-bDone:
		default:
			close(bDone) // a's verdict is in: its gate opens in this workflow task
		}
	})
	env.RegisterDelayedCallback(func() {
		atGate = envStatus(t, env)
		env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "reviewer", Note: "go on"})
	}, time.Hour)
	env.ExecuteWorkflow("twoAtOnce")
	require.NoError(t, env.GetWorkflowError())
	require.True(t, atGate.Paused)
	assert.Equal(t, 2, atGate.Counters.Phases, "b completed while the gate was open")

	reqs := judge.Requests()
	require.Len(t, reqs, 3)
	var last overseer.State
	require.NoError(t, jev.DecodeState(context.Background(), "test", reqs[2], &last))
	reviewed := map[string]bool{}
	for _, r := range last.Trajectory.RecentPhases {
		reviewed[r.Phase] = r.Reviewed
	}
	assert.Equal(t, map[string]bool{"a": true, "b": false, "c": false}, reviewed)
}
