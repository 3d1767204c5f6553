package judge

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// LoopReference is what a workflow type's succeeded agent loops looked
// like, turn by turn: how many turns they took, and how many input tokens
// they had used by each turn. The loop model's relative features read a
// run against it (its turns against theirs; its tokens against theirs at
// the same turn), so that the
// same model reads an agent whose runs are long, or whose calls carry a
// large context, by its own measure rather than by the runs it was fitted
// on. Both are log ratios to the succeeded runs' median at the same turn,
// within a factor of e² either way.
//
// A model carries the reference of the runs it was fitted or recalibrated
// on: `overseer train` stores its training runs', a learn round's stage-1
// recalibration and stage-3 refit the type's own. The shipped loop model
// carries none, since its runs' lengths say nothing of another agent's: a
// new workflow type's loops are judged without the relative features (by a
// sub-model that does not read them, else by the agent-loop rules alone)
// until its first recalibration.
type LoopReference struct {
	// Runs is how many succeeded runs it summarises.
	Runs int `json:"runs"`
	// Turns are the quantiles of their turns (model calls) at 0, 5, …,
	// 100 %, ascending.
	Turns []float64 `json:"turns"`
	// InputTokens[k-1] and OutputTokens[k-1] are the medians of the input
	// and output tokens they had used by their k-th turn (a run that had
	// ended counts its total); past their end, their last value. Empty
	// when the runs reported none.
	InputTokens  []int64 `json:"input_tokens,omitempty"`
	OutputTokens []int64 `json:"output_tokens,omitempty"`
}

// TurnTokens are the tokens a run had used by one of its turns.
type TurnTokens struct{ Input, Output int64 }

// MinLoopReferenceRuns is the fewest succeeded runs a LoopReference is
// taken from: with fewer, its quantiles are one run's turns apart.
const MinLoopReferenceRuns = 10

// loopReferenceQuantiles is the number of quantiles of Turns: 0, 5, …, 100 %.
const loopReferenceQuantiles = 21

// maxLoopReferenceTurns bounds InputTokens, so that a model file stays
// small whatever the runs' length.
const maxLoopReferenceTurns = 1000

// ErrLoopReference is wrapped by the error of a LoopReference that cannot
// be taken or used.
var ErrLoopReference = errors.New("loop reference")

// NewLoopReference summarises succeeded runs, each given as the tokens it
// had used by each of its turns (running totals, one per turn; zero when
// the agent reports none). It refuses fewer than MinLoopReferenceRuns
// runs.
func NewLoopReference(runs [][]TurnTokens) (*LoopReference, error) {
	if len(runs) < MinLoopReferenceRuns {
		return nil, fmt.Errorf("%w: %d succeeded runs are too few: it takes at least %d", ErrLoopReference, len(runs), MinLoopReferenceRuns)
	}
	turns := make([]float64, len(runs))
	for i, r := range runs {
		turns[i] = float64(len(r))
	}
	slices.Sort(turns)
	ref := &LoopReference{Runs: len(runs), Turns: make([]float64, loopReferenceQuantiles)}
	for q := range ref.Turns {
		ref.Turns[q] = quantileOfSorted(turns, float64(q)/float64(loopReferenceQuantiles-1))
	}
	ref.InputTokens = medianCurve(runs, func(t TurnTokens) int64 { return t.Input })
	ref.OutputTokens = medianCurve(runs, func(t TurnTokens) int64 { return t.Output })
	return ref, nil
}

// medianCurve is, turn by turn, the median of the runs' running totals
// of one kind of token (a run that had ended counts its total), never
// decreasing; nil when no run reported any.
func medianCurve(runs [][]TurnTokens, of func(TurnTokens) int64) []int64 {
	longest, reported := 0, false
	for _, r := range runs {
		longest = max(longest, len(r))
		reported = reported || (len(r) > 0 && of(r[len(r)-1]) > 0)
	}
	if !reported {
		return nil
	}
	var curve []int64
	at := make([]float64, len(runs))
	for k := range min(longest, maxLoopReferenceTurns) {
		for i, r := range runs {
			switch {
			case len(r) == 0:
				at[i] = 0
			case k < len(r):
				at[i] = float64(of(r[k]))
			default:
				at[i] = float64(of(r[len(r)-1]))
			}
		}
		slices.Sort(at)
		v := int64(math.Round(quantileOfSorted(at, 0.5)))
		if n := len(curve); n > 0 {
			v = max(v, curve[n-1]) // a median of running totals can dip as runs end
		}
		curve = append(curve, v)
	}
	return curve
}

// quantileOfSorted is the q-quantile of ascending xs, interpolated.
func quantileOfSorted(xs []float64, q float64) float64 {
	pos := q * float64(len(xs)-1)
	lo := int(math.Floor(pos))
	if lo >= len(xs)-1 {
		return xs[len(xs)-1]
	}
	return xs[lo] + (pos-float64(lo))*(xs[lo+1]-xs[lo])
}

// MedianTurns is the median turns of the succeeded runs.
func (r *LoopReference) MedianTurns() float64 { return r.Turns[len(r.Turns)/2] }

// tokensAt is curve's value at turn (1-based); false when it is empty.
func tokensAt(curve []int64, turn int) (int64, bool) {
	if len(curve) == 0 || turn < 1 {
		return 0, false
	}
	return curve[min(turn, len(curve))-1], true
}

// maxLogRatio bounds the relative features: a factor of e² (about 7.4)
// either way, so that a job that runs far longer than the succeeded runs,
// as a job may for days, moves P by a bounded amount, not to nothing.
const maxLogRatio = 2

// referenceFeatures read a run against its model's LoopReference; a model
// without one cannot supply them.
var referenceFeatures = map[string]func(t trajectory.Trajectory, r *LoopReference) (float64, bool){
	// The run's turns against the succeeded runs' median.
	"loop_log_turns_vs_succeeded": func(t trajectory.Trajectory, r *LoopReference) (float64, bool) {
		return logRatio(float64(1+t.Loop.ModelCalls), 1+r.MedianTurns()), t.Loop.ModelCalls > 0
	},
	// The run's tokens against the succeeded runs' at the same turn.
	"loop_log_input_tokens_vs_succeeded": func(t trajectory.Trajectory, r *LoopReference) (float64, bool) {
		return tokensVsSucceeded(t.InputTokens, r.InputTokens, t.Loop.ModelCalls)
	},
	"loop_log_output_tokens_vs_succeeded": func(t trajectory.Trajectory, r *LoopReference) (float64, bool) {
		return tokensVsSucceeded(t.OutputTokens, r.OutputTokens, t.Loop.ModelCalls)
	},
}

// tokensVsSucceeded is the log ratio of a run's tokens by turn to curve's
// there; false when either has none.
func tokensVsSucceeded(tokens int64, curve []int64, turn int) (float64, bool) {
	typical, ok := tokensAt(curve, turn)
	if !ok || tokens <= 0 {
		return 0, false
	}
	return logRatio(float64(1+tokens), float64(1+typical)), true
}

// logRatio is log(a/b), within ±maxLogRatio.
func logRatio(a, b float64) float64 {
	return math.Max(-maxLogRatio, math.Min(maxLogRatio, math.Log(a/b)))
}

// NeedsLoopReference reports whether a feature reads a run against its
// model's LoopReference.
func NeedsLoopReference(name string) bool {
	_, ok := referenceFeatures[name]
	return ok
}

// NeedsLoopReference reports whether any sub-model of m reads a feature
// against a LoopReference.
func (m *LearnedModel) NeedsLoopReference() bool {
	for _, sm := range m.SubModels {
		if slices.ContainsFunc(sm.FeatureNames(), NeedsLoopReference) {
			return true
		}
	}
	return false
}

// validate refuses a reference the features cannot read.
func (r *LoopReference) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %w: %s", ErrModel, ErrLoopReference, fmt.Sprintf(format, args...))
	}
	if r.Runs < 1 {
		return bad("it summarises no runs")
	}
	if len(r.Turns) != loopReferenceQuantiles {
		return bad("it has %d quantiles of turns, not %d", len(r.Turns), loopReferenceQuantiles)
	}
	for i, v := range r.Turns {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || i > 0 && v < r.Turns[i-1] {
			return bad("its quantiles of turns must be finite, not negative and ascending (at %d)", i)
		}
	}
	for _, c := range []struct {
		name  string
		curve []int64
	}{{"input", r.InputTokens}, {"output", r.OutputTokens}} {
		for i, v := range c.curve {
			if v < 0 || i > 0 && v < c.curve[i-1] {
				return bad("its %s tokens must not decrease or be negative (at turn %d)", c.name, i+1)
			}
		}
	}
	return nil
}
