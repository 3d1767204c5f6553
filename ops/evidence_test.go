package ops_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
)

// The queue carries each open gate's evidence, and its JSON keeps the rule
// that fired beside it.
func TestWaitingGatesCarryTheirEvidence(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	evidence := []string{"code failed 3 times in a row, each time with the same error: cannot push: missing credentials"}
	s := overseer.Status{Gates: []overseer.Gate{{ID: "code-1", Phase: "code", Reason: "P(on objective) 0.200 is at or below the pause threshold 0.250",
		Evidence: evidence, PausedAt: t0}}}
	gates := ops.JobWaitingGates(ops.Job{ID: "job-1", RunID: "run-1", Type: "CoroJob"}, s, t0.Add(time.Hour))
	require.Len(t, gates, 1)
	assert.Equal(t, evidence, gates[0].Evidence)
	raw, err := json.Marshal(gates[0])
	require.NoError(t, err)
	var back map[string]any
	require.NoError(t, json.Unmarshal(raw, &back))
	assert.Equal(t, []any{evidence[0]}, back["evidence"])
	assert.Equal(t, s.Gates[0].Reason, back["reason"])
}
