package trajectory

import (
	"hash/fnv"
	"strings"

	"go.temporal.io/sdk/converter"
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
		if c.Count > 0 && IsModelCall(c.Name) {
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

// IsModelCall says the phase's name marks it as a model call
// (modelCallWords).
func IsModelCall(phase string) bool {
	name := strings.ToLower(phase)
	for _, w := range modelCallWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}
