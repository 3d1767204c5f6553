package eval

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/corohq/temporal-overseer/overseer"
)

// FixedFalsePauseRates are the shares of succeeded runs paused at which
// [CatchesAt] measures the catches: the operating points published
// monitors report beside AUROC.
var FixedFalsePauseRates = []float64{0.01, 0.05}

// CatchAtRate is the share of failed runs caught when the pause threshold
// on P(on objective) is set so that at most Rate of the succeeded runs are
// paused. A run is paused when its lowest P over the whole run (what a
// threshold pause rule sees) is at or below the threshold.
//
// Ties and discreteness: the threshold is the largest P among the runs'
// whose succeeded-paused share is at most Rate, so at most ⌊Rate × n⌋ of
// n succeeded runs are paused, fewer when succeeded runs tie at the
// limit (a threshold never splits a tie). With fewer than 1/Rate
// succeeded runs no succeeded run may be paused: the threshold then sits
// below the lowest succeeded run's P.
type CatchAtRate struct {
	Rate      float64 `json:"rate"`
	Threshold Num     `json:"threshold"`
	Succeeded int     `json:"succeeded"`
	Paused    int     `json:"paused"`
	Failed    int     `json:"failed"`
	Caught    int     `json:"caught"`
	// Catch is Caught / Failed; NaN without failed or succeeded runs.
	Catch Num `json:"catch"`
}

// String says the catch in a few words: "4.7% (3 of 64; 1 of 197 paused)".
func (c CatchAtRate) String() string {
	if math.IsNaN(float64(c.Catch)) {
		return "–"
	}
	return fmt.Sprintf("%.1f%% (%d of %d; %d of %d paused)", 100*float64(c.Catch), c.Caught, c.Failed, c.Paused, c.Succeeded)
}

// RateText is the rate as a percentage: "1%".
func (c CatchAtRate) RateText() string {
	return fmt.Sprintf("%g%% of succeeded jobs paused", 100*c.Rate)
}

// CatchesAt measures the catches of runs at each rate (see [CatchAtRate]).
func CatchesAt(runs []ScoredRun, rates []float64) []CatchAtRate {
	p, failed := answersOf(runs, minAnswer)
	out := make([]CatchAtRate, 0, len(rates))
	for _, rate := range rates {
		out = append(out, catchAt(p, failed, rate))
	}
	return out
}

// catchAt is the catch at rate of runs with scores p (a run is paused at
// or below the threshold), failed saying which failed.
func catchAt(p []float64, failed []bool, rate float64) CatchAtRate {
	c := CatchAtRate{Rate: rate, Threshold: Num(math.NaN()), Catch: Num(math.NaN())}
	for _, f := range failed {
		if f {
			c.Failed++
		} else {
			c.Succeeded++
		}
	}
	t := thresholdAtBudget(p, failed, rate)
	if math.IsNaN(t) {
		return c
	}
	c.Threshold = Num(t)
	for i, v := range p {
		switch {
		case v > t:
		case failed[i]:
			c.Caught++
		default:
			c.Paused++
		}
	}
	if c.Failed > 0 {
		c.Catch = Num(ratio(c.Caught, c.Failed))
	}
	return c
}

// SumCatches adds the counts of catches measured on separate sets of runs
// at the same rates (the held-out runs of each fold, each with its own
// model and threshold): the catches of models on runs they never saw.
func SumCatches(sets ...[]CatchAtRate) []CatchAtRate {
	var out []CatchAtRate
	for _, set := range sets {
		for i, c := range set {
			if i >= len(out) {
				out = append(out, CatchAtRate{Rate: c.Rate, Threshold: Num(math.NaN())})
			}
			o := &out[i]
			o.Succeeded += c.Succeeded
			o.Paused += c.Paused
			o.Failed += c.Failed
			o.Caught += c.Caught
		}
	}
	for i := range out {
		out[i].Catch = Num(math.NaN())
		if out[i].Failed > 0 && out[i].Succeeded > 0 {
			out[i].Catch = Num(ratio(out[i].Caught, out[i].Failed))
		}
	}
	return out
}

// GroupCatches are the catches at fixed false-pause rates of the runs of
// one workflow type (a record's Agent: the workflow type for jobs
// exported from Temporal, the agent for imported runs) and shape.
type GroupCatches struct {
	Type   string         `json:"type"`
	Shape  overseer.Shape `json:"shape"`
	Runs   int            `json:"runs"`
	Failed int            `json:"failed"`
	// AUROC is over whole runs (their lowest P), as the catches are.
	AUROC   Num           `json:"auroc"`
	Catches []CatchAtRate `json:"catches"`
}

// TypeOfRecord is the workflow type a record's figures are grouped under:
// its Agent (exported jobs carry their workflow type there), or
// "unnamed" when it has none.
func TypeOfRecord(r Record) string {
	if r.Agent == "" {
		return "unnamed"
	}
	return r.Agent
}

// CatchesByGroup measures the catches at rates per workflow type and
// shape: records and the runs Score made of them, in the same order.
func CatchesByGroup(records []Record, scored []ScoredRun, rates []float64) []GroupCatches {
	type key struct {
		typ   string
		shape overseer.Shape
	}
	groups := map[key][]ScoredRun{}
	var keys []key
	for i, rec := range records {
		if i >= len(scored) {
			break
		}
		k := key{TypeOfRecord(rec), ShapeOfRecord(rec)}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], scored[i])
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := strings.Compare(a.typ, b.typ); c != 0 {
			return c
		}
		return strings.Compare(string(a.shape), string(b.shape))
	})
	out := make([]GroupCatches, 0, len(keys))
	for _, k := range keys {
		runs := groups[k]
		whole := checkpoint("any boundary", runs, minAnswer)
		out = append(out, GroupCatches{Type: k.typ, Shape: k.shape, Runs: whole.Runs, Failed: whole.Failed, AUROC: whole.AUROC, Catches: CatchesAt(runs, rates)})
	}
	return out
}

// RecordedCatches are the catches at rates of the assessments the jobs'
// records carry (exported from Temporal): each job judged live, by the
// model in force when it ran, before any refit learned from it — held-out
// scores. Jobs without a recorded P count for nothing.
func RecordedCatches(records []Record, rates []float64) []CatchAtRate {
	runs := make([]ScoredRun, 0, len(records))
	for _, rec := range records {
		run := ScoredRun{ID: rec.ID, Outcome: rec.Outcome, Steps: len(rec.Steps)}
		for i, s := range rec.Steps {
			if a := s.Assessment; a != nil && a.Error == "" && !a.NotAssessed {
				run.Points = append(run.Points, Point{Steps: i + 1, Answers: overseer.Answers{OnObjective: a.OnObjective}})
			}
		}
		if len(run.Points) > 0 {
			runs = append(runs, run)
		}
	}
	return CatchesAt(runs, rates)
}
