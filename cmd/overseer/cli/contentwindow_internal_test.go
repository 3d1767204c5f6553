package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer/trajectory"
	"github.com/corohq/temporal-overseer/worker"
)

// --content-window reads TYPE=CALLS[:BYTES] pairs into the worker's
// windows, and refuses a bad pair in one sentence.
func TestContentWindowFlag(t *testing.T) {
	w := workerFlags{contentWindows: "CoroAgentLoop=8; CoroJob=4:1024"}
	var cfg worker.Config
	require.NoError(t, w.applyGates(&cfg, func(string) string { return "" }))
	assert.Equal(t, map[string]trajectory.ContentWindow{"CoroAgentLoop": {Calls: 8}, "CoroJob": {Calls: 4, CallBytes: 1024}}, cfg.ContentWindows)

	for pair, want := range map[string]string{
		"CoroAgentLoop":        "write TYPE=CALLS[:BYTES_PER_CALL] pairs",
		"CoroAgentLoop=many":   `"many" is not a number of calls`,
		"CoroAgentLoop=8:lots": `"lots" is not a number of bytes per call`,
		"CoroAgentLoop=500":    "calls 500 is outside 0–64",
	} {
		w := workerFlags{contentWindows: pair}
		err := w.applyGates(&worker.Config{}, func(string) string { return "" })
		assert.ErrorContains(t, err, want, pair)
		assert.ErrorIs(t, err, ErrUsage)
	}
}
