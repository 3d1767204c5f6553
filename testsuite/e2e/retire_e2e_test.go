package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/testsuite/conformance"
)

// retireEntity is an entity workflow: run 0 does a phase, waits for "go"
// and continues as new; its successors do nothing until "stop".
func retireEntity(ctx workflow.Context, n int) error {
	if n == 0 {
		ctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
		if err := workflow.ExecuteActivity(ctx, conformance.ActivityStep, "work").Get(ctx, nil); err != nil {
			return err
		}
		workflow.GetSignalChannel(ctx, "go").Receive(ctx, nil)
		return workflow.NewContinueAsNewError(ctx, "RetireEntity", n+1)
	}
	workflow.GetSignalChannel(ctx, "stop").Receive(ctx, nil)
	return nil
}

// Retiring the plugin ends for an entity workflow that continues as new:
// a successor started after its type was switched to mode off carries the
// plugin's version in visibility (continue-as-new copies the search
// attributes and the memo), but its history holds no overseer marker, so
// retire does not count it, and the views do not show the predecessor's
// summary as its own. A run still overseen is counted.
func TestE2ERetireEndsForAContinuedAsNewSuccessorInModeOff(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	suffix := fmt.Sprint(time.Now().UnixNano())
	startWith := func(tq string, mode overseer.Mode) sdkworker.Worker {
		plugin, err := overseer.NewPlugin(overseer.Options{Mode: mode})
		require.NoError(t, err)
		w := sdkworker.New(c, tq, sdkworker.Options{Plugins: []sdkworker.Plugin{plugin}})
		w.RegisterWorkflowWithOptions(retireEntity, workflow.RegisterOptions{Name: "RetireEntity"})
		conformance.NewActivities().Register(w)
		require.NoError(t, w.Start())
		return w
	}

	// The entity starts under the plugin in observe mode and is assessed.
	tq := "retire-entity-" + suffix
	observing := startWith(tq, overseer.ModeObserve)
	entity, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: tq, TaskQueue: tq}, "RetireEntity", 0)
	require.NoError(t, err)
	eventually(t, "the entity's phase to be assessed", time.Minute, func() bool {
		return status(t, c, entity.GetID()).Counters.Assessments == 1
	})
	// Its type is switched to mode off; then it continues as new.
	observing.Stop()
	off := startWith(tq, overseer.ModeOff)
	defer off.Stop()
	require.NoError(t, c.SignalWorkflow(ctx, entity.GetID(), entity.GetRunID(), "go", nil))
	var successor string
	eventually(t, "the entity to continue as new", time.Minute, func() bool {
		d, err := c.DescribeWorkflow(ctx, entity.GetID(), "")
		require.NoError(t, err)
		successor = d.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId()
		return successor != entity.GetRunID()
	})

	// Another entity stays overseen.
	otherTQ := "retire-overseen-" + suffix
	overseen := startWith(otherTQ, overseer.ModeObserve)
	defer overseen.Stop()
	other, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: otherTQ, TaskQueue: otherTQ}, "RetireEntity", 1)
	require.NoError(t, err)

	lo := ops.ListOptions{Namespace: srv.Namespace(), Limit: 100}
	var n ops.NeedingPlugin
	eventually(t, "visibility to list both runs as candidates", time.Minute, func() bool {
		n, err = ops.NeedsPlugin(ctx, c, "RetireEntity", lo)
		require.NoError(t, err)
		return n.Candidates >= 2 && slices.ContainsFunc(n.Carried, func(j ops.Job) bool { return j.RunID == successor })
	})
	ids := func(jobs []ops.Job) []string {
		var out []string
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return out
	}
	assert.Contains(t, ids(n.Carried), entity.GetID(), "the mode-off successor carries the version only")
	assert.NotContains(t, ids(n.Jobs), entity.GetID())
	assert.Contains(t, ids(n.Jobs), other.GetID(), "the overseen run needs the plugin")
	assert.Equal(t, n.Candidates-int64(len(n.Carried))+n.Notifiers, n.Count)

	// The successor's copied summary is its predecessor's, not its own.
	var listed []ops.Job
	eventually(t, "visibility to list the successor", time.Minute, func() bool {
		listed, err = ops.List(ctx, c, ops.ListOptions{Namespace: srv.Namespace(), Query: "WorkflowId = '" + entity.GetID() + "' AND " + overseer.OpenJobsQuery})
		require.NoError(t, err)
		return len(listed) == 1 && listed[0].RunID == successor
	})
	assert.Nil(t, listed[0].Summary, "a mode-off successor shows no overseer summary (its memo holds its predecessor's)")

	// Once both end, nothing needs the plugin.
	for _, id := range []string{entity.GetID(), other.GetID()} {
		require.NoError(t, c.SignalWorkflow(ctx, id, "", "stop", nil))
		require.NoError(t, c.GetWorkflow(ctx, id, "").Get(ctx, nil))
	}
	eventually(t, "retire to find no run of the type", time.Minute, func() bool {
		n, err = ops.NeedsPlugin(ctx, c, "RetireEntity", lo)
		require.NoError(t, err)
		return n.Candidates == 0
	})
	assert.Equal(t, n.Notifiers, n.Count)
}
