package conformance_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/testsuite/conformance"
)

// countingTelemetry counts the calls it gets.
type countingTelemetry struct{ calls atomic.Int32 }

func (c *countingTelemetry) Assessed(workflow.Context, overseer.AssessedEvent)     { c.calls.Add(1) }
func (c *countingTelemetry) GateClosed(workflow.Context, overseer.GateClosedEvent) { c.calls.Add(1) }
func (c *countingTelemetry) BudgetStopped(workflow.Context, overseer.BudgetStopEvent) {
	c.calls.Add(1)
}

// Every history of the corpus replays with Options.Telemetry set, and the
// telemetry hears nothing: the overseer reports only what a run does for
// the first time, never what it replays, and reporting adds no command.
func TestCorpusReplaysWithTelemetryReportNothing(t *testing.T) {
	releases, err := filepath.Glob(filepath.Join("testdata", "corpus", "*"))
	require.NoError(t, err)
	require.NotEmpty(t, releases)
	patterns := map[string]conformance.Pattern{}
	for _, p := range conformance.Patterns() {
		patterns[p.Name] = p
	}
	modes := map[string]conformance.Mode{}
	for _, m := range conformance.Modes() {
		modes[m.Name] = m
	}
	tel := &countingTelemetry{}
	replayed := 0
	for _, dir := range releases {
		b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
		require.NoError(t, err)
		var manifest []corpusEntry
		require.NoError(t, json.Unmarshal(b, &manifest))
		for _, e := range manifest {
			p, ok := patterns[e.Pattern]
			require.True(t, ok, "pattern %s", e.Pattern)
			m, ok := modes[e.Mode]
			require.True(t, ok, "mode %s", e.Mode)
			opts := m.Options
			opts.Telemetry = tel
			require.NoError(t, replayCorpus(t, filepath.Join(dir, e.File), p, opts, workflow.Execution{ID: e.WorkflowID, RunID: e.RunID}),
				"%s replays with telemetry", e.File)
			replayed++
		}
	}
	assert.Positive(t, replayed)
	assert.Zero(t, tel.calls.Load(), "telemetry calls while replaying")
}
