package learn

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/corohq/temporal-overseer/eval"
)

// A round whose reviewers only redid phases still says what they decided:
// a redo is a reviewer's label, counted in the round's labels.
func TestRoundSaysItsRedos(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	labels := eval.UseGateLabels([]eval.Record{{ID: "r-1", Outcome: eval.OutcomeSucceeded, Steps: []eval.Step{{Phase: "code"}, {Phase: "code"}},
		Gates: []eval.GateDecision{{Gate: "code-1", Phase: "code", After: 1, By: "ana", Action: eval.GateRedo}}}})
	env.RegisterActivityWithOptions(func(ctx context.Context, in ExportInput) (ExportOutput, error) {
		return ExportOutput{NewRuns: 1, Readiness: Readiness{Sentence: "1 labelled run: needs about 70 more succeeded runs"}, Labels: labels}, nil
	}, activity.RegisterOptions{Name: ExportActivityName})
	env.ExecuteWorkflow(Workflow, Input{Type: "Job"})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var res Result
	require.NoError(t, env.GetWorkflowResult(&res))
	require.NotNil(t, res.Labels, "redos are reviewers' decisions")
	assert.Equal(t, 1, res.Labels.Redos)
	assert.Contains(t, res.Labels.String(), "1 redos (a phase's result the reviewer rejected")
}
