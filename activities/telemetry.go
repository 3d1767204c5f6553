package activities

import (
	"context"
	"hash/fnv"
	"slices"
	"strconv"

	"go.temporal.io/sdk/activity"

	"github.com/corohq/temporal-overseer/overseer"
)

// The simulated telemetry.
//
// A real agent reports how many model turns a phase took, the tokens they
// used and what they cost (overseer.PhaseReport's Turns, InputTokens,
// OutputTokens and CostUSD). The simulated agents report the same, from a
// small model of an agent loop. It is a simulation: nothing in it is
// fitted to make a judge answer one way or another. Its token constants
// are measured on the turns of the recorded mini-swe-agent runs shared
// with the project (261 runs, 10,134 turns; the importer's phase kinds),
// quartiles over all runs whatever their outcome; the turn counts and
// hand-off sizes are round numbers of the right order for a coding agent,
// which the recorded runs do not show.
//
//   - Turns: a phase takes a number of turns drawn from a range that
//     depends on its kind (a code phase edits files for 8–12 turns, an
//     evaluation takes 2–4), plus [FailedCheckTurns] when its check fails
//     (tests fail, the review asks for changes), [ReworkTurns] per unit of
//     rework and [NoteTurns] when it received a process note.
//   - Output tokens per turn: drawn from the interquartile range of the
//     recorded turns of the matching kind: a spec, a plan and a review
//     read and search (49–207 tokens), code edits (80–409), a test phase
//     runs tests (34–67), an evaluation submits (38–94).
//   - Observation tokens per turn: what the turn's tool calls return,
//     which joins the context: the growth of the recorded input from one
//     turn to the next beyond the turn's own output, interquartile range
//     by kind: reading 51–474, editing 17–19 (an edit returns little), a
//     test run 129–540 (as the evaluation, which reads test results).
//   - Input tokens per turn: [SystemPromptTokens] + the job's context
//     carried into the phase + the phase's history so far (every earlier
//     turn's output and observation): a real agent re-sends its whole
//     history every turn, so each turn costs more input than the last.
//     A turn never sends more than [ContextWindowTokens]; the harness drops
//     the oldest history beyond it.
//   - The job's context carried into a phase: an activity sees its input,
//     not the job's history, so the simulation carries the history the
//     input implies. Every phase before this one in [DefaultPhases] left a
//     hand-off (the spec, the plan, the diff, the test log, the review; a
//     size by kind), and each earlier run of this phase means one more pass
//     round the loop back to code, whose hand-offs (code's diff through
//     this phase's, at least through the test log) join the context again.
//     A looping agent thus re-reads a context that grows with every run. It cannot see how many loops came
//     before the first run of a phase after the loop, and undercounts them.
//   - Cost: InputTokens × [InputUSDPerMillionTokens] + OutputTokens ×
//     [OutputUSDPerMillionTokens], per million tokens. The prices are
//     illustrative, of the order of hosted models' list prices, not any
//     one model's; prompt caching is not modelled.
//
// Every draw comes from a generator seeded with a hash of the job (the
// workflow ID), the phase, its run in the job and the activity's attempt:
// never the clock or a global source, so a test or a replay of the same
// job gets the same telemetry, and the same job id always gets the same
// numbers. Called outside an activity (as in the package's example), the
// job is "" and the attempt 1.
const (
	// SystemPromptTokens is the fixed preamble every turn sends: system
	// prompt, tool definitions and the objective: the median input of the
	// recorded runs' first turn (1,653 tokens).
	SystemPromptTokens = 1650
	// ContextWindowTokens bounds one turn's input: a model's context window.
	ContextWindowTokens = 200_000
	// InputUSDPerMillionTokens is the illustrative price of input tokens.
	InputUSDPerMillionTokens = 3.0
	// OutputUSDPerMillionTokens is the illustrative price of output tokens
	// (output costs several times input at hosted models).
	OutputUSDPerMillionTokens = 15.0
	// FailedCheckTurns are the extra turns of a phase whose check fails:
	// read the failure, look for its cause, write it up.
	FailedCheckTurns = 3
	// ReworkTurns are the extra turns per unit of rework: redo it.
	ReworkTurns = 2
	// NoteTurns are the extra turns of a phase that received a process
	// note: read it and change course.
	NoteTurns = 1
)

// span is an inclusive range to draw from.
type span struct{ lo, hi int64 }

// phaseKind is how one kind of phase uses the model.
type phaseKind struct {
	turns       span  // turns before failures, rework and notes
	output      span  // output tokens per turn
	observation span  // tool-result tokens per turn
	handoff     int64 // tokens the phase leaves in the job's context
}

// The recorded runs' interquartile ranges per kind of turn (see above).
var (
	readOutput, readObservation = span{49, 207}, span{51, 474}
	editOutput, editObservation = span{80, 409}, span{17, 19}
	testOutput, testObservation = span{34, 67}, span{129, 540}
	submitOutput                = span{38, 94}
)

// phaseKinds: a spec, a plan and a review read; code edits; a test phase
// and an evaluation run and read tests.
var phaseKinds = map[string]phaseKind{
	PhaseSpec:     {turns: span{3, 5}, output: readOutput, observation: readObservation, handoff: 1500},
	PhasePlan:     {turns: span{3, 5}, output: readOutput, observation: readObservation, handoff: 1200},
	PhaseCode:     {turns: span{8, 12}, output: editOutput, observation: editObservation, handoff: 4000},
	PhaseTest:     {turns: span{3, 5}, output: testOutput, observation: testObservation, handoff: 1500},
	PhaseReview:   {turns: span{4, 6}, output: readOutput, observation: readObservation, handoff: 1200},
	PhaseEvaluate: {turns: span{2, 4}, output: submitOutput, observation: testObservation, handoff: 600},
}

// usage is one simulated phase run, turn by turn.
type usage struct {
	input, output []int64
}

// simulateTelemetry fills the report's telemetry for a phase run whose
// outcome the scenario has set (report's Rework, whether it passed, a note
// on the input).
func simulateTelemetry(ctx context.Context, in *PhaseInput, passed bool, report *overseer.PhaseReport) {
	job, attempt := "", int32(1)
	if activity.IsActivity(ctx) {
		info := activity.GetInfo(ctx)
		job, attempt = info.WorkflowExecution.ID, info.Attempt
	}
	u := simulate(job, attempt, in.Phase, in.Run, passed, report.Rework, in.Note != nil)
	report.Turns = len(u.input)
	report.InputTokens, report.OutputTokens = sum(u.input), sum(u.output)
	report.CostUSD = float64(report.InputTokens)*InputUSDPerMillionTokens/1e6 +
		float64(report.OutputTokens)*OutputUSDPerMillionTokens/1e6
}

// simulate plays the turns of one phase run.
func simulate(job string, attempt int32, phase string, run int, passed bool, rework int, noted bool) usage {
	kind, ok := phaseKinds[phase]
	if !ok {
		return usage{}
	}
	rng := seeded(job, phase, run, attempt)
	turns := int(rng.draw(kind.turns)) + ReworkTurns*max(rework, 0)
	if !passed {
		turns += FailedCheckTurns
	}
	if noted {
		turns += NoteTurns
	}
	u := usage{input: make([]int64, turns), output: make([]int64, turns)}
	history := SystemPromptTokens + carriedContext(phase, run)
	for t := range turns {
		u.input[t] = min(history, ContextWindowTokens)
		u.output[t] = rng.draw(kind.output)
		history += u.output[t] + rng.draw(kind.observation)
	}
	return u
}

// carriedContext is the job's context a phase run starts with: the
// hand-offs of the phases before it, and one more pass round the loop back
// to code for each earlier run of the phase.
func carriedContext(phase string, run int) int64 {
	i := slices.Index(DefaultPhases, phase)
	if i < 0 {
		return 0
	}
	// A pass round the loop runs code through this phase, and at least
	// through the test that sent it back.
	loop := DefaultPhases[i : i+1]
	if c := slices.Index(DefaultPhases, PhaseCode); i >= c {
		loop = DefaultPhases[c : max(i, c+1)+1]
	}
	var before, pass int64
	for _, q := range DefaultPhases[:i] {
		before += phaseKinds[q].handoff
	}
	for _, q := range loop {
		pass += phaseKinds[q].handoff
	}
	return before + int64(max(run-1, 0))*pass
}

func sum(xs []int64) int64 {
	var s int64
	for _, x := range xs {
		s += x
	}
	return s
}

// splitmix is the SplitMix64 generator: small, and its output is fixed
// by its definition, whatever the Go release.
type splitmix uint64

func seeded(job, phase string, run int, attempt int32) *splitmix {
	h := fnv.New64a()
	for _, part := range []string{job, phase, strconv.Itoa(run), strconv.Itoa(int(attempt))} {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	s := splitmix(h.Sum64())
	return &s
}

func (s *splitmix) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// draw draws uniformly from the span (the modulo bias is negligible for
// spans this small).
func (s *splitmix) draw(r span) int64 {
	return r.lo + int64(s.next()%uint64(r.hi-r.lo+1))
}
