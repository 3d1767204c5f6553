package eval_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/corohq/temporal-overseer/eval"
)

// What each stage needs is said at the type's own success rate: an agent
// that succeeds one time in ten needs ten times the succeeded runs.
func TestStageNeeds(t *testing.T) {
	assert.Equal(t, "at this type's success rate (6 of 60 closed runs, 10%), stage 1 (recalibration) needs about 100 closed runs (30 of both outcomes; an agent loop 10 succeeded to read it against), "+
		"stage 2 (a certified 5% false-pause promise) about 190 (19 succeeded, in expectation; 59 at 95% confidence: about 590), and a relative budget about 50 (5 succeeded; its 5% promise assumes their spend is log-normal until about 290, 29 succeeded)",
		eval.StageNeeds(6, 60))
	assert.Contains(t, eval.StageNeeds(40, 50), "stage 1 (recalibration) needs about 30 closed runs", "at 80% the run count binds, not the succeeded")
	assert.Contains(t, eval.StageNeeds(0, 12), "none of the 12 closed runs succeeded")
}
