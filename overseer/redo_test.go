package overseer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// runCounter is a phase activity whose result says which run of its phase
// it is ("code#2"), and that keeps the process note each run received.
type runCounter struct {
	mu    sync.Mutex
	runs  map[string]int
	calls []phaseCall
}

func (c *runCounter) phase(ctx context.Context, in *phaseInput) (phaseResult, error) {
	call := phaseCall{Phase: in.Phase, InputNote: in.Note}
	if n, ok := overseer.ProcessNote(ctx); ok {
		call.ContextNte = &n
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[string]int{}
	}
	c.runs[in.Phase]++
	c.calls = append(c.calls, call)
	return phaseResult{Phase: fmt.Sprintf("%s#%d", in.Phase, c.runs[in.Phase]),
		ReportCarrier: overseer.ReportCarrier{OverseerReport: &overseer.PhaseReport{Turns: 3}}}, nil
}

func (c *runCounter) count(phase string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[phase]
}

func (c *runCounter) call(i int) phaseCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[i]
}

// newRedoHarness is newHarness with phases that count their runs: a
// scripted judge in a local activity answers the boundaries in order.
func newRedoHarness(t *testing.T, opts overseer.Options, steps ...jev.Step) (*harness, *runCounter) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	judge := jev.NewScripted(steps...)
	opts.Judge, opts.Placement = judge, overseer.PlacementLocalActivity
	if opts.Mode == "" {
		opts.Mode = overseer.ModeManage
	}
	if opts.RedoSafe == nil {
		opts.RedoSafe = []string{"phasesWorkflow"} // its phases are safe to run again
	}
	plugin, err := overseer.NewPlugin(opts)
	require.NoError(t, err)
	env.SetWorkerOptions(withoutLateActivityRace(worker.Options{Plugins: []worker.Plugin{plugin}}))
	c := &runCounter{}
	env.RegisterWorkflow(phasesWorkflow)
	for _, p := range testPhases {
		env.RegisterActivityWithOptions(c.phase, activity.RegisterOptions{Name: p})
	}
	return &harness{env: env, judge: judge}, c
}

func TestRedoRunsTheHeldPhaseAgainWithTheNote(t *testing.T) {
	n := &inbox{}
	h, c := newRedoHarness(t, overseer.Options{Notifier: n}, onTrack(), flagged(), onTrack(), onTrack())
	var during overseer.Status
	var redo *updateResult
	h.env.RegisterDelayedCallback(func() {
		during = h.status(t)
		redo = h.update(overseer.ResumeRequest{By: "alice", Action: overseer.ActionRedo, Gate: "code-1",
			Note: "Write the CSV writer before its tests."})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())

	var done []string
	require.NoError(t, h.env.GetWorkflowResult(&done))
	assert.Equal(t, []string{"spec#1", "code#2", "test#1"}, done, "the workflow gets the rerun's result, never the rejected one")
	assert.Equal(t, 2, c.count("code"), "one redo, one more run")
	assert.Equal(t, 1, c.count("spec"))
	assert.Equal(t, 1, c.count("test"))

	assert.True(t, during.Paused)
	assert.Equal(t, 2, during.MaxRedos, "the default bound")
	require.Len(t, during.Gates, 1)
	assert.True(t, during.CanRedo(during.Gates[0]))
	require.NoError(t, redo.rejected)
	assert.Equal(t, overseer.ActionRedo, redo.gate.Action)

	// The rerun (the third phase run) received the redo note, in its
	// input and on its context; the phase after it received none.
	rerun := c.call(2)
	require.Equal(t, "code", rerun.Phase)
	require.NotNil(t, rerun.InputNote, "NoteReceiver")
	require.NotNil(t, rerun.ContextNte, "ProcessNote")
	assert.Equal(t, *rerun.InputNote, *rerun.ContextNte)
	assert.Equal(t, "Write the CSV writer before its tests.", rerun.InputNote.ReviewerNote)
	assert.Equal(t, "alice", rerun.InputNote.ReviewedBy)
	assert.Contains(t, rerun.InputNote.String(), "asked for it to be redone (redo 1 of at most 2)")
	assert.Nil(t, c.call(3).InputNote, "the rejected result's note went with it")
	assert.Nil(t, c.call(3).ContextNte)

	s := h.status(t)
	require.Len(t, s.Gates, 1)
	g := s.Gates[0]
	assert.Equal(t, overseer.ActionRedo, g.Action)
	assert.Equal(t, "redone", g.Outcome())
	assert.Equal(t, 1, g.Attempt)
	assert.Equal(t, "Write the CSV writer before its tests.", g.Note)
	assert.Equal(t, 1, s.Counters.Redos)
	assert.Equal(t, 1, s.Counters.Resumes)
	assert.Equal(t, 4, s.Counters.Phases, "the rerun is a boundary of its own")
	assert.Equal(t, 4, s.Counters.Assessments, "the rerun is assessed in turn")
	assert.False(t, s.Paused)
	assert.Equal(t, []overseer.GateEventKind{overseer.GateOpened, overseer.GateRedone}, n.kinds())
	assert.Equal(t, overseer.ActionRedo, n.event(overseer.GateRedone).Action)
}

func TestRedoThatIsFlaggedAgainOpensANewGateUpToTheBound(t *testing.T) {
	h, c := newRedoHarness(t, overseer.Options{}, onTrack(), flagged(), flagged(), flagged(), onTrack())
	var first, second, third, refusedAgain, cont *updateResult
	var atThird overseer.Status
	h.env.RegisterDelayedCallback(func() {
		first = h.update(overseer.ResumeRequest{By: "alice", Action: overseer.ActionRedo, Note: "try again"})
	}, time.Hour)
	h.env.RegisterDelayedCallback(func() {
		second = h.update(overseer.ResumeRequest{By: "alice", Action: overseer.ActionRedo, Gate: "code-2", Note: "once more"})
	}, 2*time.Hour)
	h.env.RegisterDelayedCallback(func() {
		atThird = h.status(t)
		third = h.update(overseer.ResumeRequest{By: "alice", Action: overseer.ActionRedo, Gate: "code-3", Note: "and again"})
		refusedAgain = h.update(overseer.ResumeRequest{By: "bob", Action: overseer.ActionRedo})
		cont = h.update(overseer.ResumeRequest{By: "alice", Gate: "code-3", Note: "keep it"})
	}, 3*time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())

	require.NoError(t, first.rejected)
	require.NoError(t, second.rejected)
	assert.Equal(t, overseer.RedoRefusedErrorType, overseer.ErrorType(third.rejected), "%v", third.rejected)
	assert.ErrorContains(t, third.rejected, "gate code-3 cannot be redone: phase code was redone 2 time(s) already, the most this job allows (Options.MaxRedos 2)")
	assert.NotContains(t, third.rejected.Error(), ". ", "one sentence")
	assert.Equal(t, overseer.RedoRefusedErrorType, overseer.ErrorType(refusedAgain.rejected), "the oldest open gate too")
	require.NoError(t, cont.rejected)

	assert.Equal(t, "code-3", atThird.GateID)
	require.Len(t, atThird.Gates, 3)
	assert.False(t, atThird.CanRedo(atThird.Gates[2]))

	var done []string
	require.NoError(t, h.env.GetWorkflowResult(&done))
	assert.Equal(t, []string{"spec#1", "code#3", "test#1"}, done)
	assert.Equal(t, 3, c.count("code"), "two redos, three runs")
	s := h.status(t)
	require.Len(t, s.Gates, 3)
	for i, want := range []struct {
		id      string
		attempt int
		action  overseer.Action
	}{{"code-1", 1, overseer.ActionRedo}, {"code-2", 2, overseer.ActionRedo}, {"code-3", 3, overseer.ActionContinue}} {
		assert.Equal(t, want.id, s.Gates[i].ID)
		assert.Equal(t, want.attempt, s.Gates[i].Attempt, want.id)
		assert.Equal(t, want.action, s.Gates[i].Action, want.id)
	}
	assert.Equal(t, 2, s.Counters.Redos)
	assert.Equal(t, 3, s.Counters.Resumes)
	assert.Equal(t, 3, s.Counters.Pauses)
	assert.Contains(t, c.call(3).InputNote.String(), "redo 2 of at most 2")
	assert.Equal(t, "keep it", c.call(4).InputNote.ReviewerNote, "the continue's note reaches the next phase")
}

func TestRedoBySignalAndItsBound(t *testing.T) {
	h, c := newRedoHarness(t, overseer.Options{MaxRedos: 1}, onTrack(), flagged(), flagged(), onTrack())
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "alice", Action: overseer.ActionRedo, Note: "again"})
	}, time.Hour)
	h.env.RegisterDelayedCallback(func() {
		// Past the bound: a signal cannot be refused, so it is dropped.
		h.env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "alice", Action: overseer.ActionRedo, Note: "again"})
	}, 2*time.Hour)
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "alice", Note: "fine"})
	}, 3*time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())

	var done []string
	require.NoError(t, h.env.GetWorkflowResult(&done))
	assert.Equal(t, []string{"spec#1", "code#2", "test#1"}, done)
	assert.Equal(t, 2, c.count("code"))
	s := h.status(t)
	assert.Equal(t, 1, s.Counters.Redos)
	assert.Equal(t, 1, s.Counters.IgnoredResumes, "the redo past the bound")
	require.Len(t, s.Gates, 2)
	assert.Equal(t, overseer.ActionRedo, s.Gates[0].Action)
	assert.Equal(t, overseer.ActionContinue, s.Gates[1].Action)
	assert.Equal(t, 2, s.Gates[1].Attempt)
}

func TestRedoCanBeTurnedOff(t *testing.T) {
	h, c := newRedoHarness(t, overseer.Options{MaxRedos: -1}, onTrack(), flagged(), onTrack())
	var redo, cont *updateResult
	var during overseer.Status
	h.env.RegisterDelayedCallback(func() {
		during = h.status(t)
		redo = h.update(overseer.ResumeRequest{By: "alice", Action: overseer.ActionRedo})
		cont = h.update(overseer.ResumeRequest{By: "alice"})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())

	assert.Equal(t, overseer.RedoRefusedErrorType, overseer.ErrorType(redo.rejected), "%v", redo.rejected)
	assert.ErrorContains(t, redo.rejected, "this job allows no redo")
	require.NoError(t, cont.rejected)
	assert.Equal(t, -1, during.MaxRedos)
	assert.False(t, during.CanRedo(during.Gates[0]))
	assert.Equal(t, 1, c.count("code"))
	assert.Zero(t, h.status(t).Counters.Redos)
}

// The current details of a paused job print the Redo: command while the
// gate may be redone, and none once its bound is reached.
func TestCurrentDetailsPrintTheRedoCommandWithinTheBound(t *testing.T) {
	h, _ := newRedoHarness(t, overseer.Options{MaxRedos: 1}, onTrack(), flagged(), flagged(), onTrack())
	var first, second string
	h.env.RegisterDelayedCallback(func() {
		first = currentDetails(t, h)
		h.update(overseer.ResumeRequest{By: "alice", Action: overseer.ActionRedo, Note: "again"})
	}, time.Hour)
	h.env.RegisterDelayedCallback(func() {
		second = currentDetails(t, h)
		h.update(overseer.ResumeRequest{By: "alice"})
	}, 2*time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())
	assert.Contains(t, first, `Redo:   temporal workflow update execute --workflow-id default-test-workflow-id --namespace default-test-namespace --name overseer.resume --input '{"by":"YOUR_NAME","gate":"code-1","action":"redo","note":"what to do differently"}'`)
	assert.Contains(t, second, "Gate code-2, after phase code")
	assert.NotContains(t, second, "Redo:", "the bound is reached")
}

// Of two phases flagged in parallel, one is redone and the other continued:
// only the redone one runs again, and each future gets its own result.
func TestRedoOfOneOfTwoParallelGates(t *testing.T) {
	h, c := newRedoHarness(t, overseer.Options{RedoSafe: []string{"parallelWorkflow"}}, flagged(), flagged(), onTrack(), onTrack())
	h.env.RegisterWorkflow(parallelWorkflow)
	var both overseer.Status
	var redo, cont *updateResult
	h.env.RegisterDelayedCallback(func() {
		both = h.status(t)
		redo = h.update(overseer.ResumeRequest{By: "alice", Action: overseer.ActionRedo, Gate: both.Gates[1].ID, Note: "again"})
		cont = h.update(overseer.ResumeRequest{By: "alice", Gate: both.Gates[0].ID})
	}, time.Hour)
	h.env.ExecuteWorkflow(parallelWorkflow)
	require.NoError(t, h.env.GetWorkflowError())
	require.Len(t, both.Gates, 2)
	require.NoError(t, redo.rejected)
	require.NoError(t, cont.rejected)

	redone := both.Gates[1].Phase
	var done []string
	require.NoError(t, h.env.GetWorkflowResult(&done))
	want := map[string]string{"code": "code#1", "test": "test#1"}
	want[redone] = redone + "#2"
	assert.Equal(t, []string{want["code"], want["test"], "spec#1"}, done)
	assert.Equal(t, 2, c.count(redone))
	assert.Equal(t, 1, c.count("spec"))
	s := h.status(t)
	assert.Equal(t, 1, s.Counters.Redos)
	assert.Equal(t, 2, s.Counters.Resumes)
	assert.False(t, s.Paused)
}

// A run replayed from before redo (its history has no redo marker) drops a
// redo signal as it did then, an unknown action, and its phase runs once.
func TestRedoSignalInARunFromBeforeRedoIsDropped(t *testing.T) {
	h, c := newRedoHarness(t, overseer.Options{}, onTrack(), flagged(), onTrack())
	h.env.OnGetVersion("temporal-overseer/redo", workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "alice", Action: overseer.ActionRedo, Note: "again"})
	}, time.Hour)
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "alice", Note: "fine"})
	}, 2*time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())
	s := h.status(t)
	assert.Equal(t, 1, s.Counters.IgnoredResumes)
	assert.Zero(t, s.Counters.Redos)
	assert.Equal(t, 1, c.count("code"))
	require.Len(t, s.Gates, 1)
	assert.Equal(t, overseer.ActionContinue, s.Gates[0].Action)
}

// mutatingWorkflow schedules each phase with a pointer input, then
// changes that input before the phase's result is in, as workflow code
// that reuses a request value does.
func mutatingWorkflow(ctx workflow.Context) ([]string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	var done []string
	for _, p := range testPhases {
		in := &phaseInput{Phase: p}
		f := workflow.ExecuteActivity(ctx, p, in)
		in.Phase = "changed-after-scheduling"
		var res phaseResult
		if err := f.Get(ctx, &res); err != nil {
			return done, err
		}
		done = append(done, res.Phase)
	}
	return done, nil
}

// TestARedoSendsThePhaseTheInputItWasFirstScheduledWith: the workflow
// changed the pointer it passed after the phase was scheduled; the rerun
// gets what the first run got.
func TestARedoSendsThePhaseTheInputItWasFirstScheduledWith(t *testing.T) {
	h, c := newRedoHarness(t, overseer.Options{RedoSafe: []string{"mutatingWorkflow"}}, onTrack(), flagged(), onTrack(), onTrack())
	h.env.RegisterWorkflow(mutatingWorkflow)
	var redo *updateResult
	h.env.RegisterDelayedCallback(func() {
		redo = h.update(overseer.ResumeRequest{By: "alice", Action: overseer.ActionRedo, Gate: "code-1", Note: "again"})
	}, time.Hour)
	h.env.ExecuteWorkflow(mutatingWorkflow)
	require.NoError(t, h.env.GetWorkflowError())
	require.NoError(t, redo.rejected)
	var done []string
	require.NoError(t, h.env.GetWorkflowResult(&done))
	assert.Equal(t, []string{"spec#1", "code#2", "test#1"}, done)
	rerun := c.call(2)
	assert.Equal(t, "code", rerun.Phase, "the input as first scheduled, not as the workflow left it")
	require.NotNil(t, rerun.InputNote, "the redo's note still reaches the rerun's input")
	assert.Equal(t, "again", rerun.InputNote.ReviewerNote)
}

// TestRedoIsOffByDefault: with no phase declared safe to run again, a
// redo is refused in one sentence, the status and the current details
// offer none, and the phase runs once.
func TestRedoIsOffByDefault(t *testing.T) {
	h, c := newRedoHarness(t, overseer.Options{RedoSafe: []string{}}, onTrack(), flagged(), onTrack())
	var during overseer.Status
	var redo *updateResult
	h.env.RegisterDelayedCallback(func() {
		during = h.status(t)
		redo = h.update(overseer.ResumeRequest{By: "alice", Action: overseer.ActionRedo, Gate: "code-1"})
		h.update(overseer.ResumeRequest{By: "alice", Gate: "code-1"})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())
	require.Error(t, redo.rejected)
	assert.Equal(t, overseer.RedoRefusedErrorType, overseer.ErrorType(redo.rejected))
	assert.ErrorContains(t, redo.rejected, "this job allows no redo")
	assert.Equal(t, -1, during.MaxRedos)
	require.Len(t, during.Gates, 1)
	assert.False(t, during.CanRedo(during.Gates[0]))
	assert.Equal(t, 1, c.count("code"))
}
