package overseer_test

import (
	"context"
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

func TestRunBand(t *testing.T) {
	on, look, off := overseer.BandOnTrack, overseer.BandNeedsALook, overseer.BandOffTrack
	many := make([]overseer.Band, overseer.RunBandWindow)
	for i := range many {
		many[i] = on
	}
	for _, tc := range []struct {
		name  string
		bands []overseer.Band
		want  overseer.Band
	}{
		{"none", nil, overseer.BandUnknown},
		{"all on track", []overseer.Band{on, on, on}, on},
		{"a last call that worked clears nothing", []overseer.Band{on, off, look, on}, off},
		{"unknown bands are skipped", []overseer.Band{overseer.BandUnknown, look, overseer.BandUnknown}, look},
		{"only the last window counts", append([]overseer.Band{off}, many...), on},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, overseer.RunBand(tc.bands)) })
	}
}

// loopingWorkflow calls a model and the tool it asked for, turns times,
// then the model once more (its submission).
func loopingWorkflow(ctx workflow.Context, turns int) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	for range turns {
		if err := workflow.ExecuteActivity(ctx, "model").Get(ctx, nil); err != nil {
			return err
		}
		if err := workflow.ExecuteActivity(ctx, "bash").Get(ctx, nil); err != nil {
			return err
		}
	}
	return workflow.ExecuteActivity(ctx, "model").Get(ctx, nil)
}

// A finished agent loop reads the worst band of its last assessments: its
// submission, judged On track, does not clear the Off track before it.
// Only agent loops: a job of phases ends on its last verdict.
func TestAFinishedAgentLoopReadsHowTheRunWent(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	off := answer(0.2, overseer.BreachNone, 0.9, 0.5)
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeObserve, Placement: overseer.PlacementLocalActivity,
		Judge: jev.NewScripted(onTrack(), onTrack(), off, onTrack(), onTrack())})
	require.NoError(t, err)
	env.SetWorkerOptions(worker.Options{Plugins: []worker.Plugin{plugin}})
	env.RegisterWorkflow(loopingWorkflow)
	for _, name := range []string{"model", "bash"} {
		env.RegisterActivityWithOptions(func(context.Context) (string, error) { return "ok", nil }, activity.RegisterOptions{Name: name})
	}
	env.ExecuteWorkflow(loopingWorkflow, 2)
	require.NoError(t, env.GetWorkflowError())
	st := envStatus(t, env)
	require.Len(t, st.Assessments, 5)
	last := st.Assessments[len(st.Assessments)-1]
	require.NotNil(t, last.Verdict)
	assert.Equal(t, overseer.BandOnTrack, last.Verdict.Band, "the submission itself was on track")
	assert.Equal(t, overseer.BandOffTrack, st.Band, "the run reads how it went")
	assert.True(t, st.RunBand)
}
