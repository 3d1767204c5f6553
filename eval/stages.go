package eval

import (
	"fmt"
	"math"

	"github.com/corohq/temporal-overseer/overseer/judge"
)

// closedRunsFor is about how many closed runs give need succeeded ones at
// the rate succeeded of runs; need itself when no run succeeded (no rate
// to plan with: at least that many).
func closedRunsFor(need, succeeded, runs int) int {
	if succeeded == 0 || runs == 0 {
		return need
	}
	return int(math.Ceil(float64(need)*float64(runs)/float64(succeeded) - 1e-9))
}

// StageNeeds says, for a type whose closed runs succeeded succeeded times
// in runs, how many closed runs each stage needs at that success rate:
// what a team can plan for, rather than a refusal until a count is met.
// Stage 1 (recalibration) needs DefaultMinRecalibrationRuns runs of both
// outcomes and, for an agent loop, judge.MinLoopReferenceRuns succeeded
// runs to read it against; stage 2 (a certified 5 % false-pause promise)
// needs ConformalRunsNeeded(0.05) succeeded runs in expectation,
// RunsNeeded(0.05) at 95 % confidence; a relative budget minLogNormalSpend
// succeeded runs (its 5 % promise assuming their spend is log-normal),
// minSpendFit + minSpendCalibration for a 5 % promise that assumes
// nothing. It says nothing before any run has succeeded (no rate to plan
// with).
func StageNeeds(succeeded, runs int) string {
	if runs == 0 || succeeded == 0 {
		return fmt.Sprintf("none of the %d closed runs succeeded: the stages need succeeded runs (stage 1 at least %d, a 5%% promise %d, a relative budget %d, %d for a promise that assumes nothing)",
			runs, judge.MinLoopReferenceRuns, ConformalRunsNeeded(0.05), minLogNormalSpend, minSpendFit+minSpendCalibration)
	}
	rate := float64(succeeded) / float64(runs)
	at := func(need int) int { return int(math.Ceil(float64(need)/rate - 1e-9)) }
	stage1 := max(DefaultMinRecalibrationRuns, at(judge.MinLoopReferenceRuns))
	return fmt.Sprintf("at this type's success rate (%d of %d closed runs, %.0f%%), stage 1 (recalibration) needs about %d closed runs (%d of both outcomes; an agent loop %d succeeded to read it against), "+
		"stage 2 (a certified 5%% false-pause promise) about %d (%d succeeded, in expectation; %d at 95%% confidence: about %d), and a relative budget about %d (%d succeeded; its 5%% promise assumes their spend is log-normal until about %d, %d succeeded)",
		succeeded, runs, 100*rate, stage1, DefaultMinRecalibrationRuns, judge.MinLoopReferenceRuns,
		at(ConformalRunsNeeded(0.05)), ConformalRunsNeeded(0.05), RunsNeeded(0.05, PromiseConfidence), at(RunsNeeded(0.05, PromiseConfidence)),
		at(minLogNormalSpend), minLogNormalSpend, at(minSpendFit+minSpendCalibration), minSpendFit+minSpendCalibration)
}
