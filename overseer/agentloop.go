package overseer

import (
	"hash/fnv"
	"math"
	"slices"
	"strings"

	"go.temporal.io/sdk/converter"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

// Shape says what one phase is in a workflow.
type Shape string

// The shapes.
const (
	// ShapePhases: each phase is a phase of work (spec, code, test…), as
	// the shipped model was fit on.
	ShapePhases Shape = "phases"
	// ShapeAgentLoop: each phase is one call of an agent loop, a model call
	// or a tool call it asked for, repeated for as many turns as the agent
	// takes.
	ShapeAgentLoop Shape = "agent_loop"
	// ShapeDeclared: the workflow declares its phases with [Boundary]; an
	// activity is one call within a phase, not a phase. Judged as phases
	// of work.
	ShapeDeclared Shape = "declared"
)

// modelCallWords mark an activity type as a model call: an LLM, chat or
// completion call, as agent frameworks on Temporal name them.
var modelCallWords = []string{"llm", "model", "chat", "completion"}

// ShapeOf is the shape of the job the trajectory is of: the one the
// workflow declared (SetShape), else ShapeAgentLoop once a phase whose
// name says it is a model call (llm, model, chat, completion) has run,
// else ShapePhases. A phase of work named so ("train-model") needs
// SetShape(ctx, ShapePhases).
func ShapeOf(t Trajectory) Shape {
	if t.Shape != "" {
		return t.Shape
	}
	for _, c := range t.RunsByPhase {
		if c.Count > 0 && isModelCall(c.Name) {
			return ShapeAgentLoop
		}
	}
	return ShapePhases
}

// callKeyOf identifies a phase's input for PhaseRun.SameCall: a hash of
// its arguments as the default data converter encodes them (never the
// worker's, whose codec may encrypt with a fresh nonce); 0 when it cannot.
func callKeyOf(args []any) uint64 {
	ps, err := converter.GetDefaultDataConverter().ToPayloads(args...)
	if err != nil {
		return 0
	}
	h := fnv.New64a()
	for _, p := range ps.GetPayloads() {
		_, _ = h.Write(p.GetData())
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64() | 1 // never 0
}

// loopEvidence is what the agent-loop rules read from the recent window:
// the longest run of failures of one phase (a tool) with no progress
// between them, and the longest run of calls of one phase with the same
// input that got the same result (PhaseRun.SameResult: a call repeated
// with a new result is not looping) with no progress between them. Progress is a successful call of
// another tool (a model call is not: it is what asks for the next call),
// or, for a failing tool, a success of it; so is a person resuming the job
// (PhaseRun.Reviewed). Turn count is not evidence.
type loopEvidence struct {
	failures     int
	repeatPhase  string
	repeatedCall int
}

func loopEvidenceOf(t Trajectory) loopEvidence {
	var e loopEvidence
	failures, same := map[string]int{}, map[string]int{}
	var seen []string
	for _, r := range t.RecentPhases {
		failed := r.callFailed()
		if !failed && !isModelCall(r.Phase) {
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
		e.failures = max(e.failures, failures[r.Phase])
		if n := same[r.Phase]; n > 1 && n > e.repeatedCall {
			e.repeatPhase, e.repeatedCall = r.Phase, n
		}
	}
	return e
}

// isModelCall says the phase's name marks it as a model call
// (modelCallWords).
func isModelCall(phase string) bool {
	name := strings.ToLower(phase)
	for _, w := range modelCallWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// agentLoopOnTrack is P(on objective) of an agent loop with nothing going
// wrong in its recent window.
const agentLoopOnTrack = 0.9

// agentLoopP is the agent-loop rules' P(on objective): 0.90, its odds
// quartered for each failure of one tool after the first (or each
// identical call after the first), whichever is more: 0.69 at the second
// (Needs a look under the shipped policy), 0.36 at the third (Off track;
// it pauses), 0.12 at the fourth. Not a calibrated probability: no model
// was fit on agent loops, and the basis says so.
func agentLoopP(e loopEvidence) float64 {
	n := max(e.failures, e.repeatedCall)
	if n < 2 {
		return agentLoopOnTrack
	}
	odds := agentLoopOnTrack / (1 - agentLoopOnTrack) * math.Pow(0.25, float64(n-1))
	return odds / (1 + odds)
}

// agentLoopBasis is the basis of an agent loop's assessment.
const agentLoopBasis = "agent-loop rules: each model or tool call is a phase, and no model was fit on this shape; " +
	"they read a tool failing again and again and the same call repeated, never the turn count (docs/agent-loops.md)"

// agentLoopResponse is a shipped judge's response on an agent loop
// (agentLoopAnswers), its model version model + "/agent-loop".
func agentLoopResponse(req jev.Request, model string, st State) *jev.Response {
	breach, confidence, onObjective, blocked := agentLoopAnswers(st.Trajectory, len(st.PhaseObligations))
	severity := 1.5 * (1 - onObjective)
	if breach != BreachNone {
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
func agentLoopAnswers(t Trajectory, obligations int) (breach string, confidence, onObjective, blocked float64) {
	e := loopEvidenceOf(t)
	onObjective = agentLoopP(e)
	breach, confidence = BreachNone, 0.0
	if e.failures > 0 && obligations > 0 {
		breach, confidence = obligationKey(0), failureConfidence(e.failures)
	}
	if e.repeatedCall > 1 && obligations > 2 && failureConfidence(e.repeatedCall) > confidence {
		breach, confidence = obligationKey(2), failureConfidence(e.repeatedCall)
	}
	if breach == BreachNone {
		confidence = 0.9 // that none applies
	}
	return breach, confidence, onObjective, blockedAfter(e.failures)
}
