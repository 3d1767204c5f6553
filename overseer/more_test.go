package overseer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// continuingWorkflow runs one phase per run and continues as new until it
// has run `runs` of them.
func continuingWorkflow(ctx workflow.Context, runs int) (int, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	if runs == 3 {
		overseer.SetObjective(ctx, "long job")
	}
	var res phaseResult
	if err := workflow.ExecuteActivity(ctx, "code", &phaseInput{Phase: "code"}).Get(ctx, &res); err != nil {
		return 0, err
	}
	if runs > 1 {
		return 0, workflow.NewContinueAsNewError(ctx, continuingWorkflow, runs-1)
	}
	s, _ := overseer.GetStatus(ctx)
	return s.Counters.Phases, nil
}

func TestContinueAsNewCarriesOverseerState(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	judge := jev.NewScripted(answer(0.5, overseer.BreachNone, 0.9, 1))
	judge.Repeat = true
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeObserve, Judge: judge})
	require.NoError(t, err)
	rec := &recorder{}

	runs := 3
	var header *workflowHeader
	for {
		env := s.NewTestWorkflowEnvironment()
		env.SetWorkerOptions(withoutLateActivityRace(worker.Options{Plugins: []worker.Plugin{plugin}}))
		env.RegisterWorkflow(continuingWorkflow)
		env.RegisterActivityWithOptions(rec.phase, activity.RegisterOptions{Name: "code"})
		if header != nil {
			env.SetHeader(header)
		}
		env.ExecuteWorkflow(continuingWorkflow, runs)
		err := env.GetWorkflowError()
		var can *workflow.ContinueAsNewError
		if errors.As(err, &can) {
			require.NotNil(t, can.Header, "overseer state rides on the continue-as-new header")
			header = can.Header
			runs--
			continue
		}
		require.NoError(t, err)
		var phases int
		require.NoError(t, env.GetWorkflowResult(&phases))
		assert.Equal(t, 3, phases, "counters survive continue-as-new")
		v, err := env.QueryWorkflow(overseer.StatusQueryName)
		require.NoError(t, err)
		var st overseer.Status
		require.NoError(t, v.Get(&st))
		assert.Equal(t, 3, st.Counters.Assessments)
		assert.Len(t, st.Assessments, 3)
		assert.Equal(t, overseer.BandNeedsALook, st.Band)
		assert.Contains(t, st.Digest, "3 phase runs, 2 repeats")
		reqs := judge.Requests()
		require.Len(t, reqs, 3)
		assert.Contains(t, string(reqs[2].State), `"objective":"long job"`, "the objective set in the first run is still known")
		return
	}
}

func TestSearchAttributesAreUpserted(t *testing.T) {
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage, SearchAttributes: true},
		onTrack(), answer(0.3, overseer.BreachNone, 0.9, 1), answer(0.2, overseer.BreachNone, 0.9, 1))
	var upserts []map[string]any
	h.env.OnUpsertTypedSearchAttributes(mockAny).Run(func(args mock.Arguments) {
		upserts = append(upserts, describeSA(args.Get(0)))
	}).Return(nil)
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "erin"})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())
	// spec on track; code off track (no pause); test paused, then resumed.
	require.Len(t, upserts, 4)
	assert.Equal(t, map[string]any{"OverseerStatus": "on_track", "OverseerOnObjective": 0.9, "OverseerPaused": false}, upserts[0])
	assert.Equal(t, map[string]any{"OverseerStatus": "off_track", "OverseerOnObjective": 0.3, "OverseerPaused": false}, upserts[1])
	assert.Equal(t, map[string]any{"OverseerStatus": "off_track", "OverseerOnObjective": 0.2, "OverseerPaused": true}, upserts[2])
	assert.Equal(t, map[string]any{"OverseerStatus": "off_track", "OverseerOnObjective": 0.2, "OverseerPaused": false}, upserts[3])
}

func TestIgnoredResumeSignalIsCountedNotApplied(t *testing.T) {
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage}, onTrack(), answer(0.1, overseer.BreachNone, 0.9, 3), onTrack())
	// A resume that arrives before any pause must not open a later gate.
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "early"})
	}, 0)
	resumedAt := 5 * time.Hour
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "frank"})
	}, resumedAt)
	start := h.env.Now()
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())
	assert.GreaterOrEqual(t, h.env.Now().Sub(start), resumedAt)
	s := h.status(t)
	assert.Equal(t, 1, s.Counters.IgnoredResumes)
	require.Len(t, s.Gates, 1)
	assert.Equal(t, "frank", s.Gates[0].By)
}

func TestAssessAsRegularActivity(t *testing.T) {
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage, Placement: overseer.PlacementActivity}, onTrack(), answer(0.1, overseer.BreachNone, 0.9, 3), onTrack())
	var assessQueue []string
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == overseer.AssessActivityName {
			assessQueue = append(assessQueue, info.TaskQueue)
		}
	})
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "ivan"})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())
	assert.Len(t, assessQueue, 3, "overseer.assess ran as a regular activity at every boundary")
	s := h.status(t)
	assert.Equal(t, 1, s.Counters.Pauses)
	assert.Equal(t, 3, s.Counters.Assessments)
}
