package judge

import (
	"math"
	"slices"

	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// LoopEvidence is what the agent-loop rules read from the recent window:
// the longest run of failures of one phase (a tool) with no progress
// between them, and the longest run of calls of one phase with the same
// input that got the same result (PhaseRun.SameResult: a call repeated
// with a new result is not looping) with no progress between them. Progress is a successful call of
// another tool (a model call is not: it is what asks for the next call),
// or, for a failing tool, a success of it; so is a person resuming the job
// (PhaseRun.Reviewed). Turn count is not evidence.
type LoopEvidence struct {
	Failures     int
	RepeatPhase  string
	RepeatedCall int
}

func LoopEvidenceOf(t trajectory.Trajectory) LoopEvidence {
	var e LoopEvidence
	failures, same := map[string]int{}, map[string]int{}
	var seen []string
	for _, r := range t.RecentPhases {
		failed := r.CallFailed()
		if !failed && !trajectory.IsModelCall(r.Phase) {
			for _, p := range seen { // progress: every other tool's count starts again
				if p != r.Phase {
					failures[p], same[p] = 0, 0
				}
			}
		}
		if !slices.Contains(seen, r.Phase) {
			seen = append(seen, r.Phase)
		}
		if failed {
			failures[r.Phase]++
		} else {
			failures[r.Phase] = 0
		}
		if r.SameResult && same[r.Phase] > 0 {
			same[r.Phase]++
		} else {
			same[r.Phase] = 1
		}
		if r.Reviewed {
			// A person resumed the job after this call: it takes as many
			// new failures or repeats to pause it again.
			clear(failures)
			clear(same)
		}
	}
	// What still stands at the latest run; ties go to the phase that ran
	// first in the window, so the answer does not depend on map order.
	for _, r := range t.RecentPhases {
		e.Failures = max(e.Failures, failures[r.Phase])
		if n := same[r.Phase]; n > 1 && n > e.RepeatedCall {
			e.RepeatPhase, e.RepeatedCall = r.Phase, n
		}
	}
	return e
}

// agentLoopOnTrack is P(on objective) of an agent loop with nothing going
// wrong in its recent window.
const agentLoopOnTrack = 0.9

// agentLoopP is the agent-loop rules' P(on objective): 0.90 with nothing
// wrong; 0.69 at the second and third failure of one tool (or identical
// call), which reads Needs a look under the shipped loop policy and pauses
// nothing; from the fourth, when the breach the rules report reaches the
// loop policy's breach floor (failureConfidence: 0.75 against 0.7), 0.90's
// odds quartered for each after the first: 0.12 at the fourth, 0.03 at the
// fifth. Below the fourth the rules say what they see and leave P to the
// loop model: failed commands in a row are common in runs that succeed (a
// grep with no match, a reproduction script failing before the fix), and
// a P that fell at the third would put the pause threshold a calibration
// sets below every value the model gives. Not a calibrated probability:
// the loop model is, and P is the lower of the two.
func agentLoopP(e LoopEvidence) float64 {
	n := max(e.Failures, e.RepeatedCall)
	switch {
	case n < 2:
		return agentLoopOnTrack
	case n < 4:
		return agentLoopNeedsALook
	}
	odds := agentLoopOnTrack / (1 - agentLoopOnTrack) * math.Pow(0.25, float64(n-1))
	return odds / (1 + odds)
}

// agentLoopNeedsALook is the rules' P at the second and third failure of
// one tool: 0.90's odds quartered.
const agentLoopNeedsALook = 0.69

// agentLoopBasis is the basis of an agent loop's assessment.
const agentLoopBasis = "agent-loop rules: each model or tool call is a phase, and no model was fit on this shape; " +
	"they read a tool failing again and again and the same call repeated, never the turn count (docs/agent-loops.md)"

// agentLoopAwaitingReference is the basis of an agent loop's assessment
// when the loop model reads runs against the type's own succeeded runs and
// has none yet (a new workflow type, until its first recalibration), before
// the model's stage sentence.
const agentLoopAwaitingReference = "agent-loop rules: they read a tool failing again and again and the same call repeated, never the turn count; " +
	"the loop model reads a run against the workflow type's own succeeded runs (their turns and tokens), which it has none of yet (docs/agent-loops.md)"

// agentLoopResponse is a shipped judge's response on an agent loop
// (agentLoopAnswers), its model version model + "/agent-loop".
func agentLoopResponse(req jev.Request, model string, st trajectory.State) *jev.Response {
	breach, confidence, onObjective, blocked := agentLoopAnswers(st.Trajectory, len(st.PhaseObligations))
	severity := 1.5 * (1 - onObjective)
	if breach != trajectory.BreachNone {
		severity = 3 * confidence
	}
	resp := answersResponse(req, model+"/agent-loop", breach, confidence, onObjective, severity, blocked)
	resp.Basis = agentLoopBasis
	return resp
}

// agentLoopAnswers are the shipped judges' answers on an agent loop:
// P from agentLoopP; the output breach (obligation[0]) when one tool keeps
// failing, the progress breach (obligation[2]) when the same call
// repeats, with the confidence failureConfidence gives the count (the
// third pauses); blocked from the failures.
func agentLoopAnswers(t trajectory.Trajectory, obligations int) (breach string, confidence, onObjective, blocked float64) {
	e := LoopEvidenceOf(t)
	onObjective = agentLoopP(e)
	breach, confidence = trajectory.BreachNone, 0.0
	if e.Failures > 0 && obligations > 0 {
		breach, confidence = trajectory.ObligationKey(0), failureConfidence(e.Failures)
	}
	if e.RepeatedCall > 1 && obligations > 2 && failureConfidence(e.RepeatedCall) > confidence {
		breach, confidence = trajectory.ObligationKey(2), failureConfidence(e.RepeatedCall)
	}
	if breach == trajectory.BreachNone {
		confidence = 0.9 // that none applies
	}
	return breach, confidence, onObjective, blockedAfter(e.Failures)
}
