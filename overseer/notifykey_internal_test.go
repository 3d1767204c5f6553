package overseer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/sdk/workflow"
)

// A run that built notifications before the key named the gate's opening
// (no notifyKeyChangeID marker) keeps the four-part key, so that a notice
// in retry across the upgrade is not sent again under a second key; new
// runs name the opening too.
func TestIdempotencyKeyFormatIsVersioned(t *testing.T) {
	info := &workflow.Info{WorkflowExecution: workflow.Execution{ID: "job-1", RunID: "run-2"}, OriginalRunID: "run-1"}
	g := Gate{ID: "code-1", PausedAt: time.UnixMilli(1_765_000_000_123)}
	assert.Equal(t, "job-1/run-1/code-1/opened", idempotencyKey(info, g, GateOpened, workflow.DefaultVersion))
	assert.Equal(t, "job-1/run-1/code-1/1765000000123/opened", idempotencyKey(info, g, GateOpened, 1))
}
