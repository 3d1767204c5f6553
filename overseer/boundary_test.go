package overseer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// declaredWorkflow is an agent that declares its phases: two turns of
// planning (a model call and a read each), then three turns of coding
// whose test tool fails every time, each phase ended with Boundary.
func declaredWorkflow(ctx workflow.Context) (string, error) {
	overseer.SetShape(ctx, overseer.ShapeDeclared)
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	call := func(name string) { _ = workflow.ExecuteActivity(ctx, name).Get(ctx, nil) }
	for range 2 {
		call("agent.model")
		call("agent.read")
	}
	if err := overseer.Boundary(ctx, "plan"); err != nil {
		return "", err
	}
	for range 3 {
		call("agent.model")
		call("agent.test")
	}
	if err := overseer.Boundary(ctx, "code"); err != nil {
		return "", err
	}
	call("agent.model")
	return "shipped", overseer.Boundary(ctx, "ship")
}

func declaredEnv(t *testing.T, opts overseer.Options, steps ...jev.Step) (*testsuite.TestWorkflowEnvironment, *jev.Scripted) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	judge := jev.NewScripted(steps...)
	opts.Judge, opts.Placement = judge, overseer.PlacementLocalActivity
	plugin, err := overseer.NewPlugin(opts)
	require.NoError(t, err)
	env.SetWorkerOptions(worker.Options{Plugins: []worker.Plugin{plugin}})
	env.RegisterWorkflow(declaredWorkflow)
	ok := func(context.Context) error { return nil }
	env.RegisterActivityWithOptions(ok, activity.RegisterOptions{Name: "agent.model"})
	env.RegisterActivityWithOptions(ok, activity.RegisterOptions{Name: "agent.read"})
	env.RegisterActivityWithOptions(func(context.Context) error { return errors.New("exit status 1") }, activity.RegisterOptions{Name: "agent.test"})
	return env, judge
}

// Declared phases are what is judged: three boundaries, three phases, each
// with its calls' failures as failed tool calls; no activity is a phase.
func TestBoundaryDeclaresThePhases(t *testing.T) {
	env, judge := declaredEnv(t, overseer.Options{Mode: overseer.ModeObserve}, onTrack(), onTrack(), onTrack())
	env.ExecuteWorkflow(declaredWorkflow)
	require.NoError(t, env.GetWorkflowError())
	st := envStatus(t, env)
	assert.Equal(t, 3, st.Counters.Phases)
	assert.Equal(t, 3, st.Counters.Assessments)
	// In observe mode the judge answers in the background: the answers
	// may come in any order; their numbers say which boundary they are of.
	phases := map[int]string{}
	for _, a := range st.Assessments {
		phases[a.Seq] = a.Phase
	}
	assert.Equal(t, map[int]string{1: "plan", 2: "code", 3: "ship"}, phases)
	calls := judge.Requests()
	require.Len(t, calls, 3)
	var code overseer.State
	for _, c := range calls {
		var st overseer.State
		require.NoError(t, jev.DecodeState(context.Background(), "test", c, &st))
		if st.Trajectory.Phase == "code" {
			code = st
		}
	}
	require.NotEmpty(t, code.Trajectory.RecentPhases, "the judge was asked about code")
	last := code.Trajectory.RecentPhases[len(code.Trajectory.RecentPhases)-1]
	assert.Equal(t, "code", last.Phase)
	assert.False(t, last.Failed, "its model calls succeeded")
	assert.Equal(t, 3, last.FailedTools)
	assert.Equal(t, []string{"test"}, last.FailedToolCategories)
}

// In manage mode a flagged declared phase pauses the workflow at its
// Boundary until a person resumes it; the note goes to the next call.
func TestBoundaryPausesAtAFlaggedPhase(t *testing.T) {
	env, _ := declaredEnv(t, overseer.Options{Mode: overseer.ModeManage}, onTrack(), answer(0.1, overseer.BreachNone, 0.9, 3), onTrack())
	var paused overseer.Status
	env.RegisterDelayedCallback(func() {
		paused = envStatus(t, env)
		env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "reviewer", Note: "fix the fixture first"})
	}, time.Hour)
	env.ExecuteWorkflow(declaredWorkflow)
	require.NoError(t, env.GetWorkflowError())
	assert.True(t, paused.Paused)
	assert.Equal(t, "code", paused.Phase)
	assert.Equal(t, 2, paused.Counters.Phases, "paused at the code boundary, before ship")
	var out string
	require.NoError(t, env.GetWorkflowResult(&out))
	assert.Equal(t, "shipped", out)
}

// Without the declared shape Boundary does nothing and every activity is
// a phase.
func TestBoundaryOutsideADeclaredRunDoesNothing(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeObserve, Judge: overseer.HeuristicJudge{}})
	require.NoError(t, err)
	env.SetWorkerOptions(worker.Options{Plugins: []worker.Plugin{plugin}})
	wf := func(ctx workflow.Context) error {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
		if err := workflow.ExecuteActivity(ctx, "step").Get(ctx, nil); err != nil {
			return err
		}
		return overseer.Boundary(ctx, "plan")
	}
	env.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: "undeclared"})
	env.RegisterActivityWithOptions(func(context.Context) error { return nil }, activity.RegisterOptions{Name: "step"})
	env.ExecuteWorkflow("undeclared")
	require.NoError(t, env.GetWorkflowError())
	st := envStatus(t, env)
	assert.Equal(t, 1, st.Counters.Phases)
	assert.Equal(t, "step", st.Phase)
}

// A gate opened at a declared Boundary offers no redo, even for a type
// declared safe to redo: Boundary cannot run the calls the workflow made
// itself. The update refuses a redo in one sentence; the reviewer
// continues instead.
func TestBoundaryOffersNoRedo(t *testing.T) {
	env, _ := declaredEnv(t, overseer.Options{Mode: overseer.ModeManage, RedoSafe: []string{"declaredWorkflow"}, MaxRedos: 2},
		onTrack(), answer(0.1, overseer.BreachNone, 0.9, 3), onTrack())
	var paused overseer.Status
	var refused error
	env.RegisterDelayedCallback(func() {
		paused = envStatus(t, env)
		env.UpdateWorkflow(overseer.ResumeName, "", &testsuite.TestUpdateCallback{
			OnAccept:   func() {},
			OnReject:   func(err error) { refused = err },
			OnComplete: func(any, error) {},
		}, overseer.ResumeRequest{By: "reviewer", Action: overseer.ActionRedo})
	}, time.Hour)
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "reviewer", Note: "go on"})
	}, 2*time.Hour)
	env.ExecuteWorkflow(declaredWorkflow)
	require.NoError(t, env.GetWorkflowError())
	require.True(t, paused.Paused)
	require.Len(t, paused.Gates, 1)
	g := paused.Gates[0]
	assert.True(t, g.AtBoundary)
	assert.True(t, paused.RedoSafe("code"), "the type is declared safe to redo")
	assert.False(t, paused.CanRedo(g), "but not at a Boundary")
	require.Error(t, refused, "the redo is refused")
	assert.Equal(t, overseer.RedoRefusedErrorType, overseer.ErrorType(refused))
	assert.Contains(t, refused.Error(), "it was opened at overseer.Boundary after phase code")
	st := envStatus(t, env)
	assert.Equal(t, overseer.ActionContinue, st.Gates[0].Action)
	assert.Zero(t, st.Counters.Redos)
}

// Observe mode never waits for a judge at a Boundary: with the judge in an
// activity that fails its first attempt (retried a second later), the
// workflow is past Boundary at once, and the answer is recorded by the
// run's end.
func TestObserveModeDoesNotWaitForTheJudgeAtBoundary(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	judge := jev.NewScripted(jev.Step{Err: errors.New("judge overloaded")}, onTrack())
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeObserve, Judge: judge, Placement: overseer.PlacementActivity})
	require.NoError(t, err)
	env.SetWorkerOptions(worker.Options{Plugins: []worker.Plugin{plugin}})
	wf := func(ctx workflow.Context) (time.Duration, error) {
		overseer.SetShape(ctx, overseer.ShapeDeclared)
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
		if err := workflow.ExecuteActivity(ctx, "agent.model").Get(ctx, nil); err != nil {
			return 0, err
		}
		before := workflow.Now(ctx)
		if err := overseer.Boundary(ctx, "plan"); err != nil {
			return 0, err
		}
		return workflow.Now(ctx).Sub(before), nil
	}
	env.RegisterWorkflowWithOptions(wf, workflow.RegisterOptions{Name: "observedDeclared"})
	env.RegisterActivityWithOptions(func(context.Context) error { return nil }, activity.RegisterOptions{Name: "agent.model"})
	env.ExecuteWorkflow("observedDeclared")
	require.NoError(t, env.GetWorkflowError())
	var waited time.Duration
	require.NoError(t, env.GetWorkflowResult(&waited))
	assert.Zero(t, waited, "Boundary returned at once")
	st := envStatus(t, env)
	require.Len(t, st.Assessments, 1)
	assert.Empty(t, st.Assessments[0].Error, "the retried answer was recorded")
	assert.Equal(t, overseer.BandOnTrack, st.Band)
	assert.Len(t, judge.Requests(), 2)
}
