package eval

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/corohq/temporal-overseer/overseer"
)

// Spend is what stopping runs would have saved and held, in model tokens
// (input and output, as the runs reported them): for a pause policy,
// stopping each run at its first pause; for a token budget, stopping it at
// the budget. Saved is the failed runs' tokens after the stop, out of all
// they spent; Held the succeeded runs a stop would have held up.
type Spend struct {
	Runs            int   `json:"runs"`
	FailedTokens    int64 `json:"failed_tokens"`
	SucceededTokens int64 `json:"succeeded_tokens"`
	// FailedShare is the failed runs' share of all tokens spent.
	FailedShare float64    `json:"failed_share"`
	Policy      SpendSaved `json:"policy"`
	// Budget is a token budget at the 95th percentile of the succeeded
	// runs' tokens, each run's from the runs of the other task families
	// (so that no run sets its own budget); BudgetTokens is their mean.
	Budget       SpendSaved `json:"budget"`
	BudgetTokens int64      `json:"budget_tokens"`
}

// SpendSaved is what one way of stopping runs would have saved and held.
type SpendSaved struct {
	SavedTokens int64   `json:"saved_tokens"`
	SavedShare  float64 `json:"saved_share"`
	Held        int     `json:"held"`
	Succeeded   int     `json:"succeeded"`
}

// spendBudgetPercentile is where in the succeeded runs' tokens the budget
// SpendOf measures sits.
const spendBudgetPercentile = 0.95

// SpendOf measures what stopping the runs would have saved: records and
// the runs Score made of them, in the same order, with policy deciding
// the pauses. Runs without tokens count for nothing; ok is false when no
// run reported tokens.
func SpendOf(records []Record, scored []ScoredRun, policy overseer.Policy) (s Spend, ok bool) {
	type run struct {
		tokens   []int64 // tokens through each step, by step count
		total    int64
		failed   bool
		family   string
		pausedAt int // the step of the first pause; -1 when none
	}
	var runs []run
	for i, rec := range records {
		r := run{tokens: tokensByStep(rec), failed: rec.Outcome.Failed(), family: rec.FamilyName(), pausedAt: -1}
		if n := len(r.tokens); n > 0 {
			r.total = r.tokens[n-1]
		}
		if r.total == 0 {
			continue
		}
		if i < len(scored) {
			for _, p := range scored[i].Points {
				if p.Err == "" && policy.Evaluate(p.Answers).Flagged {
					r.pausedAt = p.Steps
					break
				}
			}
		}
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		return Spend{}, false
	}
	through := func(r run, step int) int64 {
		if step <= 0 {
			return 0
		}
		return r.tokens[min(step, len(r.tokens))-1]
	}
	var budgets []int64
	for _, r := range runs {
		s.Runs++
		if r.failed {
			s.FailedTokens += r.total
		} else {
			s.SucceededTokens += r.total
			s.Policy.Succeeded++
			s.Budget.Succeeded++
		}
		if r.pausedAt >= 0 {
			if r.failed {
				s.Policy.SavedTokens += r.total - through(r, r.pausedAt)
			} else {
				s.Policy.Held++
			}
		}
		var others []int64
		for _, o := range runs {
			if !o.failed && o.family != r.family {
				others = append(others, o.total)
			}
		}
		if len(others) == 0 {
			continue
		}
		budget := percentile(others, spendBudgetPercentile)
		budgets = append(budgets, budget)
		if r.total > budget {
			if r.failed {
				s.Budget.SavedTokens += r.total - budget
			} else {
				s.Budget.Held++
			}
		}
	}
	if all := s.FailedTokens + s.SucceededTokens; all > 0 {
		s.FailedShare = float64(s.FailedTokens) / float64(all)
	}
	if s.FailedTokens > 0 {
		s.Policy.SavedShare = float64(s.Policy.SavedTokens) / float64(s.FailedTokens)
		s.Budget.SavedShare = float64(s.Budget.SavedTokens) / float64(s.FailedTokens)
	}
	var sum int64
	for _, b := range budgets {
		sum += b
	}
	if len(budgets) > 0 {
		s.BudgetTokens = sum / int64(len(budgets))
	}
	return s, true
}

// tokensByStep is rec's tokens spent through each agent step, in order:
// element k-1 is the tokens of its first k steps (a phase run's tokens
// count at its last turn).
func tokensByStep(rec Record) []int64 {
	var out []int64
	var total int64
	for _, st := range rec.Steps {
		turns := 1
		if rec.unit() == UnitPhase {
			turns = max(1, st.Turns)
		}
		for range turns - 1 {
			out = append(out, total)
		}
		total += st.InputTokens + st.OutputTokens
		out = append(out, total)
	}
	return out
}

// percentile is the q-quantile of values (nearest rank).
func percentile(values []int64, q float64) int64 {
	v := slices.Clone(values)
	slices.Sort(v)
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return v[max(0, min(i, len(v)-1))]
}

// Sentences says s in words, a line each.
func (s Spend) Sentences() []string {
	return []string{
		fmt.Sprintf("failed runs spent %d of the runs' %d tokens (%.0f%%)", s.FailedTokens, s.FailedTokens+s.SucceededTokens, 100*s.FailedShare),
		fmt.Sprintf("stopped at their first pause under this policy, failed runs would have saved %d tokens (%.1f%% of their spend); %d of %d succeeded runs held up by a pause",
			s.Policy.SavedTokens, 100*s.Policy.SavedShare, s.Policy.Held, s.Policy.Succeeded),
		fmt.Sprintf("a token budget at the succeeded runs' 95th percentile (%d tokens on average, each run's set by the other task families' runs) would have saved %d tokens (%.1f%% of the failed runs' spend), holding %d of %d succeeded runs",
			s.BudgetTokens, s.Budget.SavedTokens, 100*s.Budget.SavedShare, s.Budget.Held, s.Budget.Succeeded),
	}
}

// Saved is what oversight did and could have done on closed jobs, from
// their records and the reviewers' decisions at their gates (what a learn
// round reads): the failed jobs' share of the tokens, what they spent after
// their first pause (what stopping there would have saved), the jobs a
// reviewer aborted at a gate and what they had spent by then, and how long
// jobs waited at gates. Jobs that reported no tokens count for the gates
// and waits only (TokenJobs says how many reported any).
type Saved struct {
	Jobs      int `json:"jobs"`
	TokenJobs int `json:"token_jobs"`
	Failed    int `json:"failed"`
	// FailedTokens of AllTokens were the failed jobs'.
	FailedTokens int64 `json:"failed_tokens"`
	AllTokens    int64 `json:"all_tokens"`
	// PausedFailed failed jobs paused at a gate, and spent AfterFirstPause
	// tokens after their first one.
	PausedFailed    int   `json:"paused_failed"`
	AfterFirstPause int64 `json:"after_first_pause"`
	// Aborted jobs were stopped at a gate by a reviewer, having spent
	// AbortedTokens.
	Aborted       int   `json:"aborted"`
	AbortedTokens int64 `json:"aborted_tokens"`
	// Gates were decided by a reviewer, after waiting Waited in all and
	// MedianWait each in the middle.
	Gates      int           `json:"gates"`
	Waited     time.Duration `json:"waited_ns"`
	MedianWait time.Duration `json:"median_wait_ns"`
}

// SavedOf measures Saved on records.
func SavedOf(records []Record) Saved {
	var s Saved
	var waits []int64
	for _, rec := range records {
		s.Jobs++
		tokens := tokensByStep(rec)
		var total int64
		if n := len(tokens); n > 0 {
			total = tokens[n-1]
		}
		if total > 0 {
			s.TokenJobs++
		}
		s.AllTokens += total
		failed := rec.Outcome.Failed()
		if failed {
			s.Failed++
			s.FailedTokens += total
		}
		for _, g := range rec.Gates {
			s.Gates++
			waits = append(waits, g.WaitMS)
			s.Waited += time.Duration(g.WaitMS) * time.Millisecond
			if g.Action == GateAbort {
				s.Aborted++
				s.AbortedTokens += total
			}
		}
		if failed && len(rec.Gates) > 0 {
			s.PausedFailed++
			first := rec.Gates[0].After
			before := int64(0)
			if first > 0 && len(tokens) > 0 {
				before = tokens[min(first, len(tokens))-1]
			}
			s.AfterFirstPause += total - before
		}
	}
	if len(waits) > 0 {
		s.MedianWait = time.Duration(percentile(waits, 0.5)) * time.Millisecond
	}
	return s
}

// Sentence says s in one sentence.
func (s Saved) Sentence() string {
	if s.Jobs == 0 {
		return "no closed jobs to add up"
	}
	var parts []string
	switch {
	case s.TokenJobs == 0:
		parts = append(parts, fmt.Sprintf("none of the %d closed jobs reported tokens, so their spend cannot be added up", s.Jobs))
	case s.AllTokens > 0:
		parts = append(parts, fmt.Sprintf("failed jobs spent %d of the %d closed jobs' %d tokens (%.0f%%)", s.FailedTokens, s.Jobs, s.AllTokens, 100*float64(s.FailedTokens)/float64(s.AllTokens)))
		if s.PausedFailed > 0 {
			jobs := "jobs"
			if s.PausedFailed == 1 {
				jobs = "job"
			}
			parts = append(parts, fmt.Sprintf("the %d failed %s that paused spent %d tokens after the first pause (what stopping there would have saved)", s.PausedFailed, jobs, s.AfterFirstPause))
		}
	}
	if s.Aborted > 0 {
		parts = append(parts, fmt.Sprintf("reviewers aborted %d at a gate, after %d tokens", s.Aborted, s.AbortedTokens))
	}
	if s.Gates > 0 {
		parts = append(parts, fmt.Sprintf("jobs waited %s at %d gates (median %s)", s.Waited.Round(time.Second), s.Gates, s.MedianWait.Round(time.Second)))
	} else {
		parts = append(parts, "no job waited at a gate")
	}
	return strings.Join(parts, "; ")
}
