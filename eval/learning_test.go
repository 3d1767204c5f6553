package eval_test

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
)

func TestMidRunTakesTheLatestAnswerAtHalfOfEachRun(t *testing.T) {
	runs := []eval.ScoredRun{
		{ID: "ok", Outcome: eval.OutcomeSucceeded, Steps: 10, Points: []eval.Point{{Steps: 2}, {Steps: 5}, {Steps: 9}}},
		{ID: "bad", Outcome: eval.OutcomeFailed, Steps: 10, Points: []eval.Point{{Steps: 4}, {Steps: 6}}},
	}
	runs[0].Points[0].Answers.OnObjective, runs[0].Points[1].Answers.OnObjective, runs[0].Points[2].Answers.OnObjective = 0.1, 0.8, 0.0
	runs[1].Points[0].Answers.OnObjective, runs[1].Points[1].Answers.OnObjective = 0.4, 0.9
	c := eval.MidRun(runs)
	assert.Equal(t, "50%", c.At)
	assert.Equal(t, 2, c.Runs)
	// 0.8 for the run that succeeded, 0.4 for the one that failed.
	assert.InDelta(t, ((1-0.8)*(1-0.8)+0.4*0.4)/2, float64(c.Brier), 1e-9)
	assert.InDelta(t, 0.25, float64(c.BaseBrier), 1e-9)
	assert.Equal(t, eval.Num(1), c.AUROC)
}

func TestLearningCurveCSVAndSVG(t *testing.T) {
	ws := []eval.LearningWindow{
		{Window: 1, FirstJob: 1, LastJob: 4, Jobs: 4, Succeeded: 3, Failed: 1, Stage: 0, Model: "m0", Bound: 0.05,
			Online: eval.Checkpoint{Runs: 3, AUROC: 0.75},
			MidRun: eval.Checkpoint{Runs: 4, Brier: 0.2, BaseBrier: 0.1875, AUROC: 0.5}, SucceededPaused: 1, FailedCaught: 1, Gates: 3, ReviewerTime: 3 * time.Second},
		{Window: 2, FirstJob: 5, LastJob: 6, Jobs: 2, Succeeded: 2, Stage: 1, Model: "m1",
			Online: eval.Checkpoint{Runs: 1, AUROC: eval.Num(math.NaN())},
			MidRun: eval.Checkpoint{Runs: 2, Brier: 0.1, BaseBrier: 0, AUROC: eval.Num(math.NaN())}},
	}
	var b bytes.Buffer
	require.NoError(t, eval.WriteLearningCurveCSV(&b, ws))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 3)
	assert.Equal(t, "window,first_job,last_job,jobs,succeeded,failed,stage,model,bound,assessed_at_mid_run,brier_50,base_brier_50,auroc_50,succeeded_paused,succeeded_paused_share,failed_caught,failed_caught_share,gates,reviewer_seconds,assessed_after_10_steps,auroc_10_steps", lines[0])
	assert.Equal(t, "1,1,4,4,3,1,0,m0,0.0500,4,0.2000,0.1875,0.5000,1,0.3333,1,1.0000,3,3.0000,3,0.7500", lines[1])
	assert.Equal(t, "2,5,6,2,2,0,1,m1,0.0000,2,0.1000,0.0000,,0,0.0000,0,,0,0.0000,1,", lines[2], "a measure without a value is empty")

	b.Reset()
	require.NoError(t, eval.WriteLearningCurveSVG(&b, "a stream", ws))
	svg := b.String()
	assert.True(t, strings.HasPrefix(strings.TrimSpace(svg), "<?xml") || strings.Contains(svg, "<svg"), svg[:min(len(svg), 200)])
	for _, s := range []string{"a stream", "Brier at mid-run", "base-rate Brier", "AUROC after 10 steps (jobs still running)", "AUROC at mid-run (knows the job&#39;s length)", "succeeded jobs paused", "bound in force", "failed jobs caught"} {
		assert.Contains(t, svg, s)
	}
}
