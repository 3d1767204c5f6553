package jev

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// ErrRejected is wrapped by the error of a judge whose backend refused the
// request for good (an HTTP 4xx other than 408 and 429: a bad key, a bad
// request, an unknown model). Retrying the same request cannot succeed, so
// it is not retried; the Overseer activity reports it with its own error
// type.
var ErrRejected = errors.New("jev: request rejected by the judge")

// Per-assessment budget of the judges that call a remote backend.
const (
	// DefaultBudget bounds one judge call when no budget is configured.
	DefaultBudget = 3 * time.Second
	// MaxBudget is the largest budget a configuration may set.
	MaxBudget = 30 * time.Second
)

// ErrBudget is wrapped by a budget that is negative or above MaxBudget.
var ErrBudget = errors.New("jev: invalid budget")

// CheckBudget returns the budget to use for d: DefaultBudget when d is zero,
// d itself when it is in (0, MaxBudget], and an error wrapping ErrBudget
// otherwise.
func CheckBudget(d time.Duration) (time.Duration, error) {
	switch {
	case d == 0:
		return DefaultBudget, nil
	case d < 0:
		return 0, fmt.Errorf("%w: %v is negative", ErrBudget, d)
	case d > MaxBudget:
		return 0, fmt.Errorf("%w: %v is more than the maximum of %v", ErrBudget, d, MaxBudget)
	}
	return d, nil
}

// ErrInvalidRequest is wrapped by ValidateRequest's errors.
var ErrInvalidRequest = errors.New("jev: invalid request")

// ValidateRequest checks that req can be answered: it has at least one
// question, every question has a known type, a Choice has uniquely named
// options and a Score has at least two uniquely named levels.
func ValidateRequest(req Request) error {
	if len(req.Questions) == 0 {
		return fmt.Errorf("%w: no questions", ErrInvalidRequest)
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(req.Questions)) {
		if err := validateQuestion(req.Questions[name]); err != nil {
			errs = append(errs, fmt.Errorf("question %q: %w", name, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidRequest, errors.Join(errs...))
	}
	return nil
}

func validateQuestion(q Question) error {
	switch q.Type {
	case Noul:
		return nil
	case Choice:
		if len(q.Options) == 0 {
			return errors.New("choice without options")
		}
		seen := map[string]bool{}
		for _, o := range q.Options {
			if o.Name == "" || seen[o.Name] {
				return fmt.Errorf("empty or duplicate option %q", o.Name)
			}
			seen[o.Name] = true
		}
		return nil
	case Score:
		if len(q.Levels) < 2 {
			return errors.New("score with fewer than two levels")
		}
		seen := map[string]bool{}
		for _, l := range q.Levels {
			if l == "" || seen[l] {
				return fmt.Errorf("empty or duplicate level %q", l)
			}
			seen[l] = true
		}
		return nil
	default:
		return fmt.Errorf("unknown question type %q", q.Type)
	}
}
