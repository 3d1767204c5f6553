package supervision_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/supervision"
)

func TestHeuristicJudgeEndToEndAdvice(t *testing.T) {
	th, _ := supervision.NewThresholds(0.2, 0.8)
	s, err := supervision.New(supervision.Options{Mode: supervision.ModeShadow, Judge: supervision.HeuristicJudge{}, Thresholds: th})
	require.NoError(t, err)
	ctx := context.Background()

	running := idle(nil)
	running.WorkerActive, running.Output = true, "editing export.go"
	running.RecentEvents = []string{"TEXT_DELTA", "TOOL_CALL"}
	d := s.ObserveSnapshot(ctx, running)
	assert.Equal(t, supervision.AdviceContinue, d.Report.Selected.Advice)

	stuck := running
	stuck.RecentEvents = []string{"TOOL_CALL", "TOOL_CALL", "TOOL_CALL", "TOOL_CALL", "TOOL_CALL", "TOOL_CALL", "TOOL_CALL", "TOOL_CALL"}
	assert.Equal(t, supervision.ReasonWorkerStuck, s.ObserveSnapshot(ctx, stuck).Reason)

	claimed := idle(nil)
	claimed.Output = "Done: implemented the export."
	assert.Equal(t, supervision.AdviceRequestVerification, s.ObserveSnapshot(ctx, claimed).Report.Selected.Advice, "a claim is not evidence")

	verified := idle(verifiedEvidence())
	verified.Output = "Done: implemented the export."
	assert.Equal(t, supervision.AdviceReviewCompletion, s.ObserveSnapshot(ctx, verified).Report.Selected.Advice)

	human := running
	human.Output = "I need credentials for the registry"
	assert.Equal(t, supervision.ReasonNeedsHuman, s.ObserveSnapshot(ctx, human).Reason)
}
