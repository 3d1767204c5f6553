package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/corohq/temporal-overseer/eval"
)

// TestTheLearningCurveSaysWhenAWindowIsTooSmall: a window with fewer than
// eval.MinRunsPerOutcome runs of one outcome marks its AUROC as eval does,
// and every window shows its success rate beside its base-rate Brier.
func TestTheLearningCurveSaysWhenAWindowIsTooSmall(t *testing.T) {
	res := &replayResult{Windows: []eval.LearningWindow{
		{Window: 1, FirstJob: 1, LastJob: 60, Jobs: 60, Succeeded: 3, Failed: 57, Model: "m",
			MidRun: eval.Checkpoint{Brier: 0.2, BaseBrier: 0.047, AUROC: 0.71, Unreliable: true}},
		{Window: 2, FirstJob: 61, LastJob: 120, Jobs: 60, Succeeded: 30, Failed: 30, Model: "m",
			MidRun: eval.Checkpoint{Brier: 0.2, BaseBrier: 0.25, AUROC: 0.66}},
	}}
	var out bytes.Buffer
	res.print(&out, replayOptions{})
	assert.Contains(t, out.String(), "SUCCESS RATE")
	assert.Contains(t, out.String(), "5.0% (3/60)")
	assert.Contains(t, out.String(), "0.710*")
	assert.Contains(t, out.String(), "50.0% (30/60)")
	assert.NotContains(t, out.String(), "0.660*")
	assert.Contains(t, out.String(), "* unreliable: fewer than 10 runs of one outcome stand behind this AUROC")
}
