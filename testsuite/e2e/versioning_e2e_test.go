package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// The phases of versionedJob: the first is flagged, so the job waits at a
// gate before the second.
const (
	versionedPlan = "e2e.versioned-plan"
	versionedShip = "e2e.versioned-ship"
)

// versionedJob runs two phases and returns the build id of the worker that
// ran each.
func versionedJob(ctx workflow.Context) ([]string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 30 * time.Second})
	var builds []string
	for _, phase := range []string{versionedPlan, versionedShip} {
		var b string
		if err := workflow.ExecuteActivity(ctx, phase).Get(ctx, &b); err != nil {
			return nil, err
		}
		builds = append(builds, b)
	}
	return builds, nil
}

// planFlagged answers Off track until the ship phase has run.
func planFlagged() jev.Judge {
	return jev.JudgeFunc(func(_ context.Context, req jev.Request) (*jev.Response, error) {
		p := 0.1
		if bytes.Contains(req.State, []byte(strings.TrimPrefix(versionedShip, "e2e."))) {
			p = 0.9
		}
		return &jev.Response{ModelVersion: "e2e-versioning", Answers: map[string]jev.Answer{
			overseer.QuestionBreach:   {Type: jev.Choice, Choice: overseer.BreachNone, Confidence: jev.Prob(0.9)},
			overseer.QuestionOffTrack: {Type: jev.Noul, Probability: jev.Prob(p)},
			overseer.QuestionSeverity: {Type: jev.Score, Score: jev.Prob(1), Confidence: jev.Prob(0.7)},
			overseer.QuestionBlocked:  {Type: jev.Noul, Probability: jev.Prob(0.1)},
		}}, nil
	})
}

// TestWorkerVersioningJobsAtGates runs the plugin under Worker Deployment
// Versioning on the dev server: workers that name each workflow's
// versioning behavior and set no default (the SDK refuses a workflow
// registered without one: the plugin's notifier names its own). Two jobs
// wait at gates on build v1 when v2 becomes the deployment's current
// version: the pinned one is resumed and finishes on v1, whose workers it
// keeps needing; the auto-upgrade one moves to v2, which replays the
// overseer's history of v1 and runs its next phase. No workflow task fails.
func TestWorkerVersioningJobsAtGates(t *testing.T) {
	skipOnCluster(t) // Worker Deployments are tried on the dev server only
	srv := e2eServer(t)
	c := srv.Client()
	suffix := fmt.Sprint(time.Now().UnixNano())
	tq, deployment := "e2e-versioning-"+suffix, "e2e-overseer-"+suffix
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeManage, Judge: planFlagged()})
	require.NoError(t, err)

	startBuild := func(build string) {
		w := sdkworker.New(c, tq, sdkworker.Options{Plugins: []sdkworker.Plugin{plugin},
			DeploymentOptions: sdkworker.DeploymentOptions{UseVersioning: true,
				Version: sdkworker.WorkerDeploymentVersion{DeploymentName: deployment, BuildID: build}}})
		w.RegisterWorkflowWithOptions(versionedJob, workflow.RegisterOptions{Name: "e2e.PinnedJob", VersioningBehavior: workflow.VersioningBehaviorPinned})
		w.RegisterWorkflowWithOptions(versionedJob, workflow.RegisterOptions{Name: "e2e.AutoUpgradeJob", VersioningBehavior: workflow.VersioningBehaviorAutoUpgrade})
		phase := func(context.Context) (string, error) { return build, nil }
		w.RegisterActivityWithOptions(phase, activity.RegisterOptions{Name: versionedPlan})
		w.RegisterActivityWithOptions(phase, activity.RegisterOptions{Name: versionedShip})
		require.NotPanics(t, func() { require.NoError(t, w.Start()) }, "a versioned worker with no default behavior starts with the plugin")
		t.Cleanup(w.Stop)
	}
	makeCurrent := func(build string) {
		h := c.WorkerDeploymentClient().GetHandle(deployment)
		var last error
		eventually(t, build+" to become the deployment's current version", 30*time.Second, func() bool {
			_, last = h.SetCurrentVersion(context.Background(), client.WorkerDeploymentSetCurrentVersionOptions{BuildID: build})
			return last == nil
		})
	}

	startBuild("v1")
	makeCurrent("v1")
	pinned, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "e2e-pinned-" + suffix, TaskQueue: tq}, "e2e.PinnedJob")
	require.NoError(t, err)
	auto, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "e2e-auto-" + suffix, TaskQueue: tq}, "e2e.AutoUpgradeJob")
	require.NoError(t, err)
	eventually(t, "both jobs to wait at a gate on v1", 30*time.Second, func() bool {
		return pausedNow(t, c, pinned.GetID()) && pausedNow(t, c, auto.GetID())
	})

	startBuild("v2")
	makeCurrent("v2")
	for _, run := range []client.WorkflowRun{pinned, auto} {
		resumeUntilClosedWithin(t, c, run, "after-v2", time.Minute)
	}
	var pinnedBuilds, autoBuilds []string
	require.NoError(t, pinned.Get(context.Background(), &pinnedBuilds))
	require.NoError(t, auto.Get(context.Background(), &autoBuilds))
	assert.Equal(t, []string{"v1", "v1"}, pinnedBuilds, "the pinned job finished on the version it started on")
	assert.Equal(t, []string{"v1", "v2"}, autoBuilds, "the auto-upgrade job moved to the current version at its gate")

	for _, run := range []client.WorkflowRun{pinned, auto} {
		for _, events := range runChain(t, c, run.GetID(), run.GetRunID()) {
			for _, e := range events {
				assert.NotEqual(t, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED, e.GetEventType(), "%s: %s", run.GetID(),
					e.GetWorkflowTaskFailedEventAttributes().GetFailure().GetMessage())
			}
		}
		s := status(t, c, run.GetID())
		require.Len(t, s.Gates, 1, run.GetID())
		assert.Equal(t, "after-v2", s.Gates[0].By, run.GetID())
	}
}
