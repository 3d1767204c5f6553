package judge

import (
	"errors"
	"fmt"
	"math"
)

// SpendBudget is a budget relative to the succeeded jobs of a workflow
// type, learned from them by a learn round (eval.SpendBudgetOf): a job
// whose tokens at its k-th phase run reach Factor times what the type's
// succeeded jobs had typically spent by then (Curve) has spent more than
// jobs like the succeeded ones do. It comes with a promise stated as the
// false-pause promise is: at most MaxReached of jobs like the succeeded
// ones reach it, split-conformal on Jobs succeeded jobs the curve was not
// fitted on.
//
// It rides in the type's policy ([Policy].Spend), which a run pins when it
// starts. Reaching it reads Needs a look with the comparison named, and
// counts as near the budget (BudgetNear: `overseer list --over-budget`);
// it never opens a gate on its own: a bound that stops a job is one a
// team sets ([Budget]).
type SpendBudget struct {
	// Curve[k-1] is the median tokens the type's succeeded jobs had spent
	// by their k-th phase run (a job that had ended counts its total);
	// past its end, its last value.
	Curve []int64 `json:"curve"`
	// Factor is the multiple of Curve a job reaches it at.
	Factor float64 `json:"factor"`
	// MaxReached is the promise: the share of jobs like the succeeded ones
	// that reach it, at most, in expectation; Jobs the succeeded jobs it
	// was calibrated on.
	MaxReached float64 `json:"max_reached"`
	Jobs       int     `json:"jobs"`
}

// ErrInvalidSpendBudget is wrapped by the error of a SpendBudget that
// cannot be used.
var ErrInvalidSpendBudget = errors.New("invalid relative budget")

// Validate refuses a relative budget that cannot be held to.
func (b SpendBudget) Validate() error {
	switch {
	case len(b.Curve) == 0:
		return fmt.Errorf("%w: it has no curve of the succeeded jobs' tokens", ErrInvalidSpendBudget)
	case !(b.Factor > 0) || math.IsInf(b.Factor, 0):
		return fmt.Errorf("%w: factor %v is not a positive number", ErrInvalidSpendBudget, b.Factor)
	case !(b.MaxReached > 0 && b.MaxReached < 1):
		return fmt.Errorf("%w: max_reached %v is not a share in (0,1)", ErrInvalidSpendBudget, b.MaxReached)
	}
	for i, v := range b.Curve {
		if v < 0 || i > 0 && v < b.Curve[i-1] {
			return fmt.Errorf("%w: the curve must not decrease or be negative (at phase run %d)", ErrInvalidSpendBudget, i+1)
		}
	}
	return nil
}

// At is the typical tokens of the type's succeeded jobs by phase run k.
func (b SpendBudget) At(k int) int64 {
	if len(b.Curve) == 0 || k <= 0 {
		return 0
	}
	return b.Curve[min(k, len(b.Curve))-1]
}

// Reached says, in words, that a job that spent tokens by phase run
// phaseRuns has reached the relative budget; "" when it has not, or
// nothing can be compared.
func (b SpendBudget) Reached(tokens int64, phaseRuns int) string {
	typical := b.At(phaseRuns)
	if typical <= 0 || tokens <= 0 {
		return ""
	}
	if ratio := float64(tokens) / float64(typical); ratio >= b.Factor {
		return fmt.Sprintf("spent %d tokens by phase run %d, %.1f× what the type's succeeded jobs typically had (%d); "+
			"at most %.0f%% of jobs like them reach %.1f×", tokens, phaseRuns, ratio, typical, 100*b.MaxReached, b.Factor)
	}
	return ""
}

// String says the relative budget in a few words.
func (b SpendBudget) String() string {
	return fmt.Sprintf("%.1f× the succeeded jobs' tokens at the same phase run (at most %.0f%% of jobs like them reach it; calibrated on %d)",
		b.Factor, 100*b.MaxReached, b.Jobs)
}
