package learn_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/learn"
)

// Rounds recorded by the learn workflow before it left a memo and emitted
// metrics, and a second round of a series in the record store (its export
// and refit, refused; recorded by overseer worker --learn-records), replay
// clean with this version: a round still running across an upgrade, or
// one replayed for a query, is not broken.
func TestEarlierRoundsReplay(t *testing.T) {
	for _, file := range []string{"testdata/round-not-ready.v0.json", "testdata/round-refused.v0.json", "testdata/round-store-refused.v1.json"} {
		t.Run(file, func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflowWithOptions(learn.Workflow, workflow.RegisterOptions{Name: learn.WorkflowName})
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, file))
		})
	}
}
