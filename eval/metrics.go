package eval

import (
	"math"
	"math/rand/v2"
	"sort"

	"github.com/corohq/temporal-overseer/supervision"
)

// AUROC is the area under the ROC curve of scores for predicting positive:
// the probability that a random positive scores higher than a random
// negative, ties counting one half (the Mann–Whitney statistic). It is NaN
// without at least one positive and one negative.
func AUROC(scores []float64, positive []bool) float64 {
	if len(scores) != len(positive) {
		return math.NaN()
	}
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] < scores[idx[b]] })
	var rankSum float64
	var pos, neg int
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && scores[idx[j]] == scores[idx[i]] {
			j++
		}
		mid := float64(i+j+1) / 2 // mean of ranks i+1 … j
		for k := i; k < j; k++ {
			if positive[idx[k]] {
				rankSum += mid
			}
		}
		i = j
	}
	for _, p := range positive {
		if p {
			pos++
		} else {
			neg++
		}
	}
	if pos == 0 || neg == 0 {
		return math.NaN()
	}
	return (rankSum - float64(pos)*float64(pos+1)/2) / (float64(pos) * float64(neg))
}

// AUROCInterval is a percentile bootstrap interval of [AUROC] at the given
// level (0.95 for 95 %): positives and negatives are resampled separately,
// with replacement, resamples times, from a fixed seed so that the same
// data always give the same interval. It is NaN without both classes.
func AUROCInterval(scores []float64, positive []bool, level float64, resamples int, seed uint64) (lo, hi float64) {
	var pos, neg []float64
	for i, s := range scores {
		if positive[i] {
			pos = append(pos, s)
		} else {
			neg = append(neg, s)
		}
	}
	if len(pos) == 0 || len(neg) == 0 || resamples < 1 {
		return math.NaN(), math.NaN()
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	labels := make([]bool, 0, len(scores))
	for range pos {
		labels = append(labels, true)
	}
	for range neg {
		labels = append(labels, false)
	}
	sample := make([]float64, len(labels))
	aucs := make([]float64, resamples)
	for r := range aucs {
		for i := range pos {
			sample[i] = pos[rng.IntN(len(pos))]
		}
		for i := range neg {
			sample[len(pos)+i] = neg[rng.IntN(len(neg))]
		}
		aucs[r] = AUROC(sample, labels)
	}
	sort.Float64s(aucs)
	tail := (1 - level) / 2
	at := func(q float64) float64 {
		i := int(math.Round(q * float64(resamples-1)))
		return aucs[min(max(i, 0), resamples-1)]
	}
	return at(tail), at(1 - tail)
}

// Median returns the median of xs, NaN when empty.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// OutcomeCount counts runs with one property by outcome.
type OutcomeCount struct {
	Name             string
	Resolved, Failed int
}

// Total is Resolved + Failed.
func (c OutcomeCount) Total() int { return c.Resolved + c.Failed }

// tally counts names by outcome, most frequent first, then by name.
type tally map[string]*OutcomeCount

func (t tally) add(name string, resolved bool) {
	if t[name] == nil {
		t[name] = &OutcomeCount{Name: name}
	}
	if resolved {
		t[name].Resolved++
	} else {
		t[name].Failed++
	}
}

func (t tally) sorted() []OutcomeCount {
	out := make([]OutcomeCount, 0, len(t))
	for _, c := range t {
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Total() != out[j].Total() {
			return out[i].Total() > out[j].Total()
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Summary is the evaluation's table. Rates and AUROCs are NaN when
// undefined (no run in the denominator).
type Summary struct {
	Runs, Resolved, Failed int
	Actions, Boundaries    int

	// Phase-boundary signal. A failed run is the positive class.
	AUROC                          float64 // of 1 − min P(on objective)
	AUROCLow, AUROCHigh            float64 // its 95 % bootstrap interval
	FlaggedFailed, FlaggedResolved int     // runs with at least one flag
	FlagRateFailed                 float64 // FlaggedFailed / Failed
	FlagRateResolved               float64 // FlaggedResolved / Resolved
	Precision, Recall              float64 // of "flagged ⇒ failed"
	MedianFirstFlag                float64 // fraction of actions done at the first flag, flagged runs
	// FlaggedBeforeSubmit counts flagged runs whose first flag came before
	// the submit phase's boundary.
	FlaggedBeforeSubmit int
	// FirstFlagCauses counts the rule behind each run's first flag (see
	// [Result.FirstFlagCause]).
	FirstFlagCauses []OutcomeCount

	// Baselines on the same runs, for scale.
	ActionsAUROC     float64 // of the number of actions
	FailedToolsAUROC float64 // of the number of failed tool calls

	// Completion signal.
	Advice []OutcomeCount
	// ReviewCompletionWithoutReceipt must be 0.
	ReviewCompletionWithoutReceipt int
	Receipts                       int
}

// Summarize computes the table over results.
func Summarize(results []Result) Summary {
	s := Summary{Runs: len(results)}
	scores := make([]float64, len(results))
	actions := make([]float64, len(results))
	failedTools := make([]float64, len(results))
	failed := make([]bool, len(results))
	var firstFlags []float64
	advice, causes := tally{}, tally{}
	for i, r := range results {
		failed[i] = !r.Resolved
		scores[i] = 1 - r.MinOnObjective
		actions[i] = float64(r.Actions)
		failedTools[i] = float64(r.FailedTools)
		s.Boundaries += len(r.Boundaries)
		s.Actions += r.Actions
		if r.Resolved {
			s.Resolved++
		} else {
			s.Failed++
		}
		if r.Flagged() {
			firstFlags = append(firstFlags, r.FirstFlagFraction)
			if r.Resolved {
				s.FlaggedResolved++
			} else {
				s.FlaggedFailed++
			}
			if r.Phases[r.FirstFlag].Class != Submit {
				s.FlaggedBeforeSubmit++
			}
			causes.add(r.FirstFlagCause, r.Resolved)
		}
		a := r.Advice()
		advice.add(a, r.Resolved)
		if r.Receipt {
			s.Receipts++
		} else if a == string(supervision.ReviewCompletion) {
			s.ReviewCompletionWithoutReceipt++
		}
	}
	s.AUROC = AUROC(scores, failed)
	s.AUROCLow, s.AUROCHigh = AUROCInterval(scores, failed, 0.95, 2000, 1)
	s.ActionsAUROC = AUROC(actions, failed)
	s.FailedToolsAUROC = AUROC(failedTools, failed)
	s.FlagRateFailed = ratio(s.FlaggedFailed, s.Failed)
	s.FlagRateResolved = ratio(s.FlaggedResolved, s.Resolved)
	s.Precision = ratio(s.FlaggedFailed, s.FlaggedFailed+s.FlaggedResolved)
	s.Recall = s.FlagRateFailed
	s.MedianFirstFlag = Median(firstFlags)
	s.Advice = advice.sorted()
	s.FirstFlagCauses = causes.sorted()
	return s
}

func ratio(n, d int) float64 {
	if d == 0 {
		return math.NaN()
	}
	return float64(n) / float64(d)
}
