package eval

import (
	"math"
	"math/rand/v2"
	"sort"
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
// with replacement, resamples times, by a random generator seeded with
// the last argument, so that the same data always give the same interval.
// It is NaN without both classes.
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

func ratio(n, d int) float64 {
	if d == 0 {
		return math.NaN()
	}
	return float64(n) / float64(d)
}
