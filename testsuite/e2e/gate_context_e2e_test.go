package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/testsuite/conformance"
)

// On a real server, a gate holds a workflow that cancels each phase's
// context as soon as it has the result (a helper with a deferred cancel):
// with the judge in a local activity, the first phase is judged, the gate
// opens and no later phase is scheduled until a reviewer resumes; then the
// workflow ends as it does without the plugin.
func TestE2EAGateHoldsAWorkflowThatCancelsThePhasesContext(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tq := fmt.Sprint("phase-scoped-", time.Now().UnixNano())
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeManage, Judge: conformance.FlagsFirstPhase{},
		Placement: overseer.PlacementLocalActivity})
	require.NoError(t, err)
	w := sdkworker.New(c, tq, sdkworker.Options{Plugins: []sdkworker.Plugin{plugin}})
	w.RegisterWorkflowWithOptions(conformance.PhaseScoped, workflow.RegisterOptions{Name: "PhaseScoped"})
	acts := conformance.NewActivities()
	acts.Register(w)
	require.NoError(t, w.Start())
	defer w.Stop()

	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: tq, TaskQueue: tq}, "PhaseScoped", 0)
	require.NoError(t, err)
	var st overseer.Status
	eventually(t, "the gate after the first phase", time.Minute, func() bool {
		st = status(t, c, run.GetID())
		return st.Paused
	})
	require.Len(t, st.Gates, 1)
	assert.Equal(t, "Step", st.Gates[0].Phase)
	assert.Equal(t, 1, st.Counters.Phases)
	require.Len(t, st.Assessments, 1)
	assert.Empty(t, st.Assessments[0].Error, "the judge was not cancelled with the phase's context")
	scheduled := 0
	for _, e := range conformance.History(ctx, t, c, run.GetID(), run.GetRunID()) {
		if e.GetActivityTaskScheduledEventAttributes() != nil {
			scheduled++
		}
	}
	assert.Equal(t, 1, scheduled, "the gate holds the next phase")
	assert.Equal(t, []string{"Step spec"}, acts.Calls())

	_, err = c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: overseer.ResumeName,
		Args: []any{overseer.ResumeRequest{By: "reviewer", Note: "go on"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	var result string
	require.NoError(t, run.Get(ctx, &result))
	assert.Equal(t, "done spec, done code, done test", result)
	st = status(t, c, run.GetID())
	require.Len(t, st.Gates, 1)
	assert.False(t, st.Gates[0].Cancelled)
	assert.Equal(t, "reviewer", st.Gates[0].By)
}
