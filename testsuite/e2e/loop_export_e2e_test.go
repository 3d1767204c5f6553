package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// Real agent runs replayed on the server as the loop a team writes on
// Temporal (a model-call activity, then the tool activity it asked for),
// with the shipped worker's default judge, then exported as a learn round
// reads them: the export replays as the loop the plugin judged, and eval
// gives the verdicts the live plugin recorded in history, call by call —
// the same as eval gives the recording itself.
func TestE2ELoopExportReplaysAsTheLivePluginJudgedIt(t *testing.T) {
	srv := e2eServer(t)
	ctx := context.Background()
	c := srv.Client()
	recs, err := eval.LoadRuns(testsuite.SharedTraces(t, "mini-swe-agent-gemini-3-pro"), "")
	require.NoError(t, err)
	// A failed and a succeeded run, each with failed commands.
	var picked []eval.Record
	for _, failed := range []bool{true, false} {
		for _, r := range recs {
			fails := 0
			for _, s := range r.Steps {
				if s.Failed {
					fails++
				}
			}
			if r.Outcome.Failed() == failed && len(r.Steps) >= 15 && len(r.Steps) <= 40 && fails >= 3 {
				picked = append(picked, r)
				break
			}
		}
	}
	require.Len(t, picked, 2)

	acts := &workflows.RecordedLoopActivities{}
	suffix := fmt.Sprintf("%d", time.Now().UnixNano())
	tq, _ := startWorkersWith(t, srv, worker.Config{TaskQueue: "e2e-loop-export-" + suffix, Mode: overseer.ModeObserve,
		JudgeConfig: worker.JudgeConfig{Kind: worker.JudgeLearned}}, func(r sdkworker.Registry) {
		workflows.RegisterRecordedLoop(r)
		acts.Register(r)
	})
	policy := overseer.DefaultLearnedPolicy().ForShape(overseer.ShapeAgentLoop)
	for _, toolFailures := range []string{workflows.ToolFailuresAsErrors, workflows.ToolFailuresAsResults} {
		for _, rec := range picked {
			t.Run(toolFailures+"/"+rec.ID, func(t *testing.T) {
				id := fmt.Sprintf("e2e-loop-%s-%s-%s", toolFailures, rec.ID, suffix)
				in := eval.LoopInput(rec)
				in.ToolFailures = toolFailures
				acts.Add(id, in)
				run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: tq}, workflows.RecordedLoopWorkflowName, in)
				require.NoError(t, err)
				runErr := run.Get(ctx, nil)
				assert.Equal(t, rec.Outcome.Failed(), runErr != nil, "the job closes as the run did: %v", runErr)

				exported, err := ops.RecordOfJobWith(ctx, c, srv.Namespace(), id, run.GetRunID(), converter.GetDefaultDataConverter())
				require.NoError(t, err)
				exported.Outcome = rec.Outcome
				require.NoError(t, exported.Validate())
				assert.Equal(t, eval.UnitCall, exported.Unit)
				assert.Equal(t, overseer.ShapeAgentLoop, exported.Shape, "the judge's answers name the shape it judged")
				assert.Equal(t, overseer.ShapeAgentLoop, eval.ShapeOfRecord(exported))
				calls, _ := in.Calls()
				require.Len(t, exported.Steps, len(calls), "one step per model and tool call")

				fromHistory, err := eval.Score(ctx, []eval.Record{exported}, eval.ScoreOptions{Judge: &overseer.LearnedJudge{}})
				require.NoError(t, err)
				require.Len(t, fromHistory[0].Points, len(calls))
				// What `overseer eval` gives the recording itself (failed
				// commands failing the tool's activity, as eval replays them).
				var fromRecording []eval.Point
				if toolFailures == workflows.ToolFailuresAsErrors {
					scored, err := eval.Score(ctx, []eval.Record{rec}, eval.ScoreOptions{Judge: &overseer.LearnedJudge{}})
					require.NoError(t, err)
					fromRecording = scored[0].Points
					require.Len(t, fromRecording, len(calls))
				}
				flagged := 0
				for i, s := range exported.Steps {
					require.NotNil(t, s.Assessment, "call %d (%s) was assessed live", i, s.Phase)
					require.Empty(t, s.Assessment.Error, "call %d", i)
					got := fromHistory[0].Points[i].Answers
					assert.InDelta(t, s.Assessment.OnObjective, got.OnObjective, 1e-9, "call %d: eval's P is the live one", i)
					assert.Equal(t, s.Assessment.Band, string(policy.Evaluate(got).Band), "call %d: eval's band is the live one", i)
					if fromRecording != nil {
						assert.InDelta(t, fromRecording[i].Answers.OnObjective, got.OnObjective, 1e-9, "call %d: the export replays as the recording", i)
					}
					if s.Assessment.Flagged {
						flagged++
					}
				}
				t.Logf("%d calls, %d flagged live", len(calls), flagged)
			})
		}
	}
}

// declaredJobInput says, per declared phase, which of its two calls fail.
type declaredJobInput struct {
	Phases []declaredPhaseInput `json:"phases"`
}

type declaredPhaseInput struct {
	Name     string `json:"name"`
	FailRead bool   `json:"fail_read"`
	FailEdit bool   `json:"fail_edit"`
}

// declaredJob declares its phases: each is a read and an edit call, then
// overseer.Boundary.
func declaredJob(ctx workflow.Context, in declaredJobInput) error {
	overseer.SetShape(ctx, overseer.ShapeDeclared)
	overseer.SetObjective(ctx, "fix the export")
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute, RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	for _, p := range in.Phases {
		_ = workflow.ExecuteActivity(ctx, "e2edeclared.read", p.FailRead).Get(ctx, nil)
		_ = workflow.ExecuteActivity(ctx, "e2edeclared.edit", p.FailEdit).Get(ctx, nil)
		if err := overseer.Boundary(ctx, p.Name); err != nil {
			return err
		}
	}
	return nil
}

// A job that declares its phases (overseer.Boundary) exports as the phases
// the plugin recorded at its boundaries — not as one phase per activity —
// and eval gives, at each, the verdict the live plugin recorded.
func TestE2EDeclaredPhasesExportAsThePluginRecordedThem(t *testing.T) {
	srv := e2eServer(t)
	ctx := context.Background()
	c := srv.Client()
	call := func(_ context.Context, fail bool) (string, error) {
		if fail {
			return "", temporal.NewNonRetryableApplicationError("exit status 1", "ToolFailed", nil)
		}
		return "ok", nil
	}
	suffix := fmt.Sprintf("%d", time.Now().UnixNano())
	tq, _ := startWorkersWith(t, srv, worker.Config{TaskQueue: "e2e-declared-" + suffix, Mode: overseer.ModeObserve,
		JudgeConfig: worker.JudgeConfig{Kind: worker.JudgeLearned}}, func(r sdkworker.Registry) {
		r.RegisterWorkflowWithOptions(declaredJob, workflow.RegisterOptions{Name: "E2EDeclaredJob"})
		r.RegisterActivityWithOptions(call, activity.RegisterOptions{Name: "e2edeclared.read"})
		r.RegisterActivityWithOptions(call, activity.RegisterOptions{Name: "e2edeclared.edit"})
	})
	in := declaredJobInput{Phases: []declaredPhaseInput{{Name: "plan"}, {Name: "code", FailEdit: true}, {Name: "code", FailRead: true, FailEdit: true}, {Name: "code"}, {Name: "test"}}}
	id := "e2e-declared-" + suffix
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: tq}, "E2EDeclaredJob", in)
	require.NoError(t, err)
	require.NoError(t, run.Get(ctx, nil))

	exported, err := ops.RecordOfJobWith(ctx, c, srv.Namespace(), id, run.GetRunID(), converter.GetDefaultDataConverter())
	require.NoError(t, err)
	exported.Outcome = eval.OutcomeSucceeded
	require.NoError(t, exported.Validate())
	assert.Equal(t, overseer.ShapeDeclared, exported.Shape)
	var phases []string
	for _, s := range exported.Steps {
		phases = append(phases, s.Phase)
	}
	assert.Equal(t, []string{"plan", "code", "code", "code", "test"}, phases, "one step per Boundary, named by it")
	assert.Equal(t, []string{"edit"}, exported.Steps[1].FailedTools)
	assert.False(t, exported.Steps[1].Failed, "one of its two calls succeeded")
	assert.True(t, exported.Steps[2].Failed, "both its calls failed")

	scored, err := eval.Score(ctx, []eval.Record{exported}, eval.ScoreOptions{Judge: &overseer.LearnedJudge{}})
	require.NoError(t, err)
	require.Len(t, scored[0].Points, len(in.Phases))
	policy := overseer.DefaultLearnedPolicy()
	for i, s := range exported.Steps {
		require.NotNil(t, s.Assessment, "phase %d (%s) was assessed live", i, s.Phase)
		got := scored[0].Points[i].Answers
		assert.InDelta(t, s.Assessment.OnObjective, got.OnObjective, 1e-9, "phase %d: eval's P is the live one", i)
		assert.Equal(t, s.Assessment.Band, string(policy.Evaluate(got).Band), "phase %d: eval's band is the live one", i)
	}
}
