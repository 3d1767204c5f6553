package eval_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
)

// A pause on P by a recalibrated model says where the job stands among the
// type's recent jobs, from the reference the model carries.
func TestEvidenceOfAPauseOnPRanksAgainstTheReference(t *testing.T) {
	rec, err := eval.Recalibrate(agentRuns(60, 6, 0.3), overseer.DefaultLearnedModel(), eval.RecalibrateOptions{For: "CoroJob", MinSlopeRuns: 1000})
	require.NoError(t, err)
	scored, err := eval.Score(context.Background(), agentRuns(1, 7, 0.3), eval.ScoreOptions{Judge: &overseer.LearnedJudge{Model: rec}})
	require.NoError(t, err)
	a := scored[0].Points[0].Answers
	p := overseer.DefaultPolicy()
	p.PauseAtOrBelow = 0.99 // so that this P pauses
	evidence := overseer.Evidence(overseer.Trajectory{}, a, p)
	require.NotEmpty(t, evidence)
	assert.Regexp(t, `^P\(on objective\) 0\.\d\d, (lower|higher) than \d+% of the last 60 CoroJob jobs at this point, (all \d+ of which (succeeded|failed)|\d+ of which succeeded)$`, evidence[0])

	// The shipped model carries no reference: against the threshold.
	scored, err = eval.Score(context.Background(), agentRuns(1, 7, 0.3), eval.ScoreOptions{Judge: &overseer.LearnedJudge{}})
	require.NoError(t, err)
	evidence = overseer.Evidence(overseer.Trajectory{}, scored[0].Points[0].Answers, p)
	require.NotEmpty(t, evidence)
	assert.Regexp(t, `^P\(on objective\) 0\.\d\d, at or below the pause threshold 0\.990$`, evidence[0])
}
