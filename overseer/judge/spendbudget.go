package judge

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// SpendBudget is a budget relative to the succeeded jobs of a workflow
// type, learned from them by a learn round (eval.SpendBudgetOf): a job
// whose tokens, turns or time in its phases at its k-th phase run reach
// Factor times what the type's succeeded jobs had typically spent by then
// (the curves) has spent more than jobs like the succeeded ones do. It
// comes with a promise stated as the false-pause promise is: at most
// MaxReached of jobs like the succeeded ones reach it, split-conformal on
// Jobs succeeded jobs the curves were not fitted on. The one Factor
// bounds every measure it has a curve of: it is calibrated on each
// job's highest ratio over them, so the promise holds for all of them
// together, not for each alone.
//
// It rides in the type's policy ([Policy].Spend), which a run pins when it
// starts. Reaching it reads Needs a look with the comparison named, and
// counts as near the budget (BudgetNear: `overseer list --over-budget`);
// it opens a gate only where the team turns that on
// (Options.RelativeBudgetGates).
type SpendBudget struct {
	// Curve[k-1] is the median tokens the type's succeeded jobs had spent
	// by their k-th phase run (a job that had ended counts its total);
	// past its end, its last value. A curve of one value is a budget of
	// totals: what a job spent in all, whatever its phase run (learned so
	// for jobs of phases and from few jobs). TurnsCurve and PhaseTimeCurve are the
	// same of their turns and of their time in phases
	// (Trajectory.PhaseTime). A nil curve is a measure the budget does not
	// cover: the succeeded jobs did not all report it. Budgets learned
	// before turns and time were covered have Curve alone.
	Curve          []int64         `json:"curve,omitempty"`
	TurnsCurve     []int64         `json:"turns_curve,omitempty"`
	PhaseTimeCurve []time.Duration `json:"phase_time_curve_ns,omitempty"`
	// Factor is the multiple of the curves a job reaches it at.
	Factor float64 `json:"factor"`
	// MaxReached is the promise: the share of jobs like the succeeded ones
	// that reach it, at most, in expectation; Jobs the succeeded jobs it
	// was calibrated on.
	MaxReached float64 `json:"max_reached"`
	Jobs       int     `json:"jobs"`
	// Assumes names what the promise assumes of the succeeded jobs'
	// spend, "" when nothing (split conformal). SpendAssumesLogNormal is a
	// budget learned from too few succeeded jobs to calibrate on apart: a
	// prediction bound on their totals (flat, one-value curves), which
	// holds if their spend is log-normal.
	Assumes string `json:"assumes,omitempty"`
}

// SpendAssumesLogNormal is SpendBudget.Assumes of a budget whose promise
// holds if the succeeded jobs' spend is log-normal.
const SpendAssumesLogNormal = "log-normal"

// Spent is what a job had spent by its PhaseRuns-th phase run, in the
// measures a relative budget compares.
type Spent struct {
	Tokens    int64
	Turns     int
	PhaseTime time.Duration
	PhaseRuns int
}

// SpentOf is what trajectory t counts: its model tokens, turns, time in
// phases and phase runs.
func SpentOf(t trajectory.Trajectory) Spent {
	return Spent{Tokens: t.InputTokens + t.OutputTokens, Turns: t.Turns, PhaseTime: t.PhaseTime, PhaseRuns: t.PhaseRuns}
}

// spendMeasure is one measure a relative budget can cover: its curve's
// length and value by phase run k (curveAt), and a job's spend of it.
type spendMeasure struct {
	name string
	len  func(SpendBudget) int
	at   func(b SpendBudget, k int) int64
	of   func(Spent) int64
	say  func(int64) string
}

// spendMeasures are the measures, in the order they are named.
var spendMeasures = []spendMeasure{
	{"tokens", func(b SpendBudget) int { return len(b.Curve) }, func(b SpendBudget, k int) int64 { return curveAt(b.Curve, k) },
		func(s Spent) int64 { return s.Tokens }, func(v int64) string { return fmt.Sprintf("%d tokens", v) }},
	{"turns", func(b SpendBudget) int { return len(b.TurnsCurve) }, func(b SpendBudget, k int) int64 { return curveAt(b.TurnsCurve, k) },
		func(s Spent) int64 { return int64(s.Turns) }, func(v int64) string { return fmt.Sprintf("%d turns", v) }},
	{"time", func(b SpendBudget) int { return len(b.PhaseTimeCurve) }, func(b SpendBudget, k int) int64 { return curveAt(b.PhaseTimeCurve, k) },
		func(s Spent) int64 { return int64(s.PhaseTime) }, func(v int64) string { return time.Duration(v).Round(time.Second).String() + " in phases" }},
}

// ErrInvalidSpendBudget is wrapped by the error of a SpendBudget that
// cannot be used.
var ErrInvalidSpendBudget = errors.New("invalid relative budget")

// Validate refuses a relative budget that cannot be held to.
func (b SpendBudget) Validate() error {
	switch {
	case len(b.Covers()) == 0:
		return fmt.Errorf("%w: it has no curve of the succeeded jobs' tokens, turns or time in phases", ErrInvalidSpendBudget)
	case !(b.Factor > 0) || math.IsInf(b.Factor, 0):
		return fmt.Errorf("%w: factor %v is not a positive number", ErrInvalidSpendBudget, b.Factor)
	case !(b.MaxReached > 0 && b.MaxReached < 1):
		return fmt.Errorf("%w: max_reached %v is not a share in (0,1)", ErrInvalidSpendBudget, b.MaxReached)
	case b.Assumes != "" && b.Assumes != SpendAssumesLogNormal:
		return fmt.Errorf("%w: assumes %q: give %q or leave it out", ErrInvalidSpendBudget, b.Assumes, SpendAssumesLogNormal)
	}
	for _, m := range spendMeasures {
		if b.Assumes == SpendAssumesLogNormal && m.len(b) > 1 {
			return fmt.Errorf("%w: a %s budget compares totals: its %s curve must be one value, not %d", ErrInvalidSpendBudget, b.Assumes, m.name, m.len(b))
		}
		for k := 1; k <= m.len(b); k++ {
			if v := m.at(b, k); v < 0 || k > 1 && v < m.at(b, k-1) {
				return fmt.Errorf("%w: the %s curve must not decrease or be negative (at phase run %d)", ErrInvalidSpendBudget, m.name, k)
			}
		}
	}
	return nil
}

// Covers names the measures the budget has a curve of, in order: some of
// "tokens", "turns" and "time".
func (b SpendBudget) Covers() []string {
	var out []string
	for _, m := range spendMeasures {
		if m.len(b) > 0 {
			out = append(out, m.name)
		}
	}
	return out
}

// At is the typical tokens of the type's succeeded jobs by phase run k.
func (b SpendBudget) At(k int) int64 { return curveAt(b.Curve, k) }

// curveAt is curve's value at phase run k: past its end, its last value.
func curveAt[T ~int64](curve []T, k int) int64 {
	if len(curve) == 0 || k <= 0 {
		return 0
	}
	return int64(curve[min(k, len(curve))-1])
}

// Ratio is s's highest ratio to the curves at its phase run, over the
// measures the budget covers and s reports, and the measure it is of;
// 0 and "" when nothing can be compared. The budget is reached at a ratio
// at or above Factor.
func (b SpendBudget) Ratio(s Spent) (float64, string) {
	best, name := 0.0, ""
	for _, m := range spendMeasures {
		typical, v := m.at(b, s.PhaseRuns), m.of(s)
		if typical <= 0 || v <= 0 {
			continue
		}
		if r := float64(v) / float64(typical); r > best {
			best, name = r, m.name
		}
	}
	return best, name
}

// Unreported names the measures the budget covers that s reports none of
// after a phase ran ("tokens", "turns", "time"): they are unchecked, not
// passed.
func (b SpendBudget) Unreported(s Spent) []string {
	if s.PhaseRuns == 0 {
		return nil
	}
	var out []string
	for _, m := range spendMeasures {
		if m.len(b) > 0 && m.of(s) <= 0 {
			out = append(out, m.name)
		}
	}
	return out
}

// Reached says, in words, that a job that spent s has reached the
// relative budget, naming the measure furthest past its curve; "" when it
// has not, or nothing can be compared.
func (b SpendBudget) Reached(s Spent) string {
	ratio, name := b.Ratio(s)
	if name == "" || ratio < b.Factor {
		return ""
	}
	typically := "typically had"
	if b.InTotal() {
		typically = "typically spent in all"
	}
	for _, m := range spendMeasures {
		if m.name == name {
			return fmt.Sprintf("spent %s by phase run %d, %.1f× what the type's succeeded jobs %s (%s); "+
				"at most %.0f%% of jobs like them reach %.1f×%s", m.say(m.of(s)), s.PhaseRuns, ratio, typically, m.say(m.at(b, s.PhaseRuns)),
				100*b.MaxReached, b.Factor, b.assuming())
		}
	}
	return ""
}

// String says the relative budget in a few words.
func (b SpendBudget) String() string {
	learned := "calibrated on"
	if b.Assumes != "" {
		learned = "learned from"
	}
	if b.InTotal() {
		return fmt.Sprintf("%.1f× the succeeded jobs' typical %s in all (at most %.0f%% of jobs like them reach it%s; %s %d)",
			b.Factor, joinWords(b.Covers()), 100*b.MaxReached, b.assuming(), learned, b.Jobs)
	}
	return fmt.Sprintf("%.1f× the succeeded jobs' %s at the same phase run (at most %.0f%% of jobs like them reach it%s; %s %d)",
		b.Factor, joinWords(b.Covers()), 100*b.MaxReached, b.assuming(), learned, b.Jobs)
}

// InTotal says the budget compares what a job spent in all, whatever its
// phase run: each of its curves is one value (a log-normal budget's, and
// one learned from jobs of phases; eval.SpendBudgetOf).
func (b SpendBudget) InTotal() bool {
	for _, m := range spendMeasures {
		if m.len(b) > 1 {
			return false
		}
	}
	return true
}

// assuming is ", if their spend is log-normal" for a promise that
// assumes it, else "".
func (b SpendBudget) assuming() string {
	if b.Assumes == "" {
		return ""
	}
	return ", if their spend is " + b.Assumes
}

// joinWords is "a", "a or b", "a, b or c".
func joinWords(words []string) string {
	switch n := len(words); n {
	case 0:
		return ""
	case 1:
		return words[0]
	default:
		return strings.Join(words[:n-1], ", ") + " or " + words[n-1]
	}
}
