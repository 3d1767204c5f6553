package e2e_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/codec"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/worker"
)

func scriptedStep(onObjective float64, severity float64) jev.Step {
	return jev.Step{Response: &jev.Response{
		ModelVersion: "scripted-1",
		Answers: map[string]jev.Answer{
			overseer.QuestionBreach:   {Type: jev.Choice, Choice: overseer.BreachNone, Confidence: jev.Prob(0.9)},
			overseer.QuestionOffTrack: {Type: jev.Noul, Probability: jev.Prob(onObjective)},
			overseer.QuestionSeverity: {Type: jev.Score, Score: jev.Prob(severity), Confidence: jev.Prob(0.7)},
			overseer.QuestionBlocked:  {Type: jev.Noul, Probability: jev.Prob(0.1)},
		},
	}}
}

type notesSeen struct {
	mu    sync.Mutex
	notes map[string]*overseer.Note
}

func (n *notesSeen) phase(ctx context.Context, name string) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if note, ok := overseer.ProcessNote(ctx); ok {
		n.notes[name] = &note
	} else {
		n.notes[name] = nil
	}
	return name, nil
}

func twoPhases(ctx workflow.Context) error {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	for _, p := range []string{"first", "second"} {
		if err := workflow.ExecuteActivity(ctx, p, p).Get(ctx, nil); err != nil {
			return err
		}
	}
	return nil
}

// TestE2EPluginOnTheClientLearnsItsCodec: given to client.Options.Plugins
// without Options.DataConverter, the plugin's activities read the
// encrypted note header with the client's converter (ProcessNote works).
func TestE2EPluginOnTheClientLearnsItsCodec(t *testing.T) {
	srv := e2eServer(t)
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	aes, err := codec.NewAESGCM(key)
	require.NoError(t, err)
	judge := jev.NewScripted(scriptedStep(0.1, 3), scriptedStep(0.9, 0.2))
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeManage, Judge: judge, Placement: overseer.PlacementLocalActivity})
	require.NoError(t, err)
	c, err := client.NewClientFromExisting(srv.Client(), client.Options{DataConverter: codec.DataConverter(aes),
		Plugins: []client.Plugin{plugin}, Logger: worker.SDKLogger(zap.NewNop())})
	require.NoError(t, err)
	defer c.Close()
	tq := "e2e-" + t.Name()
	w := sdkworker.New(c, tq, sdkworker.Options{})
	seen := &notesSeen{notes: map[string]*overseer.Note{}}
	w.RegisterWorkflow(twoPhases)
	for _, p := range []string{"first", "second"} {
		w.RegisterActivityWithOptions(seen.phase, activity.RegisterOptions{Name: p})
	}
	require.NoError(t, w.Start())
	defer w.Stop()

	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: fmt.Sprintf("e2e-codec-plugin-%d", time.Now().UnixNano()), TaskQueue: tq}, twoPhases)
	require.NoError(t, err)
	eventually(t, "the job to pause after its first phase", 30*time.Second, func() bool { return status(t, c, run.GetID()).Paused })
	h, err := c.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: overseer.ResumeName,
		Args: []any{overseer.ResumeRequest{By: "bob", Note: "smaller steps"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, h.Get(context.Background(), nil))
	require.NoError(t, run.Get(context.Background(), nil))

	seen.mu.Lock()
	defer seen.mu.Unlock()
	require.Contains(t, seen.notes, "second")
	require.NotNil(t, seen.notes["second"], "ProcessNote read the encrypted header with the client's converter")
	assert.Equal(t, "smaller steps", seen.notes["second"].ReviewerNote)
}
