package eval

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/corohq/temporal-overseer/overseer"
)

// RecordedPauses is what a pause policy would do to recorded runs of one
// workflow type and shape, as far as runs nobody paused can tell: a pause
// at the policy's first flag on a run that failed is a potential rescue,
// on a run that succeeded a potential disruption. Whether a pause would
// have rescued the first (r) or disrupted the second (d) the runs cannot
// show; what they do show is p, the failure rate of the runs the policy
// flags, and so the rescue rate a pause would need for the rule p >
// d/(r+d) to say "pause": r > d·(1−p)/p.
type RecordedPauses struct {
	Type  string         `json:"type"`
	Shape overseer.Shape `json:"shape"`
	Runs  int            `json:"runs"`
	// Flagged runs the policy flags at some boundary; FlaggedFailed and
	// FlaggedSucceeded split them by outcome (potential rescues and
	// potential disruptions).
	Flagged          int `json:"flagged"`
	FlaggedFailed    int `json:"flagged_failed"`
	FlaggedSucceeded int `json:"flagged_succeeded"`
	// Succeeded and Failed are all the runs of each outcome.
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	// P is FlaggedFailed / Flagged, with its 95 % bootstrap interval (the
	// flagged runs resampled; the same runs always give the same interval).
	P     Num `json:"p"`
	PLow  Num `json:"p_low"`
	PHigh Num `json:"p_high"`
	// RescueNeededPerD is (1−P)/P: a pause helps only when it rescues more
	// than this many times d of the failing runs it pauses (at d = 1, every
	// pause of a succeeding run a disruption, more than this share).
	RescueNeededPerD Num    `json:"rescue_needed_per_d"`
	Sentence         string `json:"sentence"`
}

// RecordedPausesByGroup measures [RecordedPauses] per workflow type and
// shape: records and the runs Score made of them, in the same order, with
// policy deciding the pauses.
func RecordedPausesByGroup(records []Record, scored []ScoredRun, policy overseer.Policy) []RecordedPauses {
	type key struct {
		typ   string
		shape overseer.Shape
	}
	byKey := map[key]*RecordedPauses{}
	flags := map[key][]bool{} // the flagged runs' outcomes, failed true
	var keys []key
	for i, rec := range records {
		if i >= len(scored) {
			break
		}
		k := key{TypeOfRecord(rec), ShapeOfRecord(rec)}
		g := byKey[k]
		if g == nil {
			g = &RecordedPauses{Type: k.typ, Shape: k.shape}
			byKey[k] = g
			keys = append(keys, k)
		}
		run := scored[i]
		g.Runs++
		if run.Failed() {
			g.Failed++
		} else {
			g.Succeeded++
		}
		if firstPause(run, policy) < 0 {
			continue
		}
		g.Flagged++
		flags[k] = append(flags[k], run.Failed())
		if run.Failed() {
			g.FlaggedFailed++
		} else {
			g.FlaggedSucceeded++
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := strings.Compare(a.typ, b.typ); c != 0 {
			return c
		}
		return strings.Compare(string(a.shape), string(b.shape))
	})
	out := make([]RecordedPauses, 0, len(keys))
	for _, k := range keys {
		g := byKey[k]
		g.P, g.PLow, g.PHigh, g.RescueNeededPerD = Num(math.NaN()), Num(math.NaN()), Num(math.NaN()), Num(math.NaN())
		if g.Flagged > 0 {
			p := float64(g.FlaggedFailed) / float64(g.Flagged)
			g.P = Num(p)
			if p > 0 {
				g.RescueNeededPerD = Num((1 - p) / p)
			}
			g.PLow, g.PHigh = shareInterval(flags[k])
		}
		g.Sentence = g.say()
		out = append(out, *g)
	}
	return out
}

// shareInterval is the 95 % percentile bootstrap interval of the share of
// true values (reproducible: the same values always give the same interval).
func shareInterval(vs []bool) (lo, hi Num) {
	rng := rand.New(rand.NewPCG(rescueSeed, rescueSeed^0x9e3779b97f4a7c15))
	shares := make([]float64, rescueResamples)
	for r := range shares {
		k := 0
		for range vs {
			if vs[rng.IntN(len(vs))] {
				k++
			}
		}
		shares[r] = float64(k) / float64(len(vs))
	}
	return percentileInterval(shares, 0)
}

func (g RecordedPauses) say() string {
	s := fmt.Sprintf("the policy flags %d of %d runs: %d of %d failed runs (potential rescues) and %d of %d succeeded runs (each a disruption if the pause derails it)",
		g.Flagged, g.Runs, g.FlaggedFailed, g.Failed, g.FlaggedSucceeded, g.Succeeded)
	switch {
	case g.Flagged == 0:
		return s + "; with no flag, pausing changes nothing here"
	case g.FlaggedFailed == 0:
		return s + "; p 0: every flagged run succeeded, so a pause here can only disrupt"
	case g.FlaggedSucceeded == 0:
		s += "; p 1: every flagged run failed, so a pause here can only rescue (r cannot be observed on recorded runs: nobody paused them)"
		if g.Flagged < MinRescueJobs {
			s += fmt.Sprintf("; %d flagged %s too few to trust p (need %d)", g.Flagged, plural(g.Flagged, "run is", "runs are"), MinRescueJobs)
		}
		return s
	}
	s += fmt.Sprintf("; p %s (%s–%s) among the flagged runs; r cannot be observed on recorded runs (nobody paused them): pausing helps only if a pause rescues more than %.2f·d of the failing runs it pauses (at d = 1, every such pause a disruption: more than %s)",
		g.P, g.PLow, g.PHigh, float64(g.RescueNeededPerD), rescueNeeded(float64(g.RescueNeededPerD)))
	if g.Flagged < MinRescueJobs {
		s += fmt.Sprintf("; %d flagged %s too few to trust p (need %d)", g.Flagged, plural(g.Flagged, "run is", "runs are"), MinRescueJobs)
	}
	return s
}

// rescueNeeded says the rescue rate needed at d = 1: a share above 1
// cannot be reached.
func rescueNeeded(v float64) string {
	if v >= 1 {
		return fmt.Sprintf("%.2f, out of reach", v)
	}
	return fmt.Sprintf("%.2f", v)
}
