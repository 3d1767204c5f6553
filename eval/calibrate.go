package eval

import (
	"errors"
	"fmt"
	"math"

	"github.com/corohq/temporal-overseer/overseer"
)

// ErrBudget is returned for a false-pause budget outside (0, 1).
var ErrBudget = errors.New("false-pause budget")

// TradeOff is one row of the calibration table: the pause threshold that
// meets a false-pause budget, and what it does to the runs.
type TradeOff struct {
	Budget    float64     `json:"budget"`
	Threshold Num         `json:"pause_at_or_below"`
	Rates     PolicyRates `json:"rates"`
}

// Calibration is the outcome of [Calibrate].
type Calibration struct {
	Budget float64         `json:"max_false_pause"`
	Policy overseer.Policy `json:"-"`
	// Rates are the chosen policy's rates on the runs it was chosen on.
	Rates PolicyRates `json:"rates"`
	Table []TradeOff  `json:"table"`
}

// calibrationBreachConfidences are the breach-confidence floors tried, the
// default first: raising it silences breach pauses that cost too many
// false pauses.
var calibrationBreachConfidences = []float64{0.5, 0.7, 0.9, 1}

// Calibrate chooses, from runs scored by any judge, the policy that pauses
// at most budget of the succeeded runs with the best catch rate of failed
// ones. A run is paused when any boundary is flagged. It tries the breach
// confidence floors 0.5, 0.7, 0.9 and 1 and, for each, the highest
// P(on objective) pause threshold within the budget; the best catch rate
// wins, ties going to the lower floor. The band edges come from the same
// runs: Off track below the threshold that would meet twice the budget, On
// track from the one that would meet four times it; both stay above the
// pause threshold, so a paused job is always shown Off track.
func Calibrate(runs []ScoredRun, budget float64) (Calibration, error) {
	if !(budget > 0 && budget < 1) {
		return Calibration{}, fmt.Errorf("%w %v: give a share in (0,1), e.g. 0.05", ErrBudget, budget)
	}
	var succeeded, failed int
	for _, r := range runs {
		if r.Failed() {
			failed++
		} else {
			succeeded++
		}
	}
	if succeeded == 0 || failed == 0 {
		return Calibration{}, fmt.Errorf("calibrate: %w: need succeeded and failed runs (have %d and %d)", ErrNoRuns, succeeded, failed)
	}
	base := overseer.DefaultPolicy()
	best := Calibration{Budget: budget}
	found := false
	for _, bc := range calibrationBreachConfidences {
		p := base
		p.BreachConfidence = bc
		t, ok := pauseThreshold(runs, p, budget)
		if !ok {
			continue
		}
		p.PauseAtOrBelow = t
		rates := PolicyRatesOf(runs, p)
		if !found || rates.Catches > best.Rates.Catches {
			best.Policy, best.Rates, found = p, rates, true
		}
	}
	if !found {
		return Calibration{}, fmt.Errorf("calibrate: no policy pauses at most %.1f%% of the succeeded runs: the judge's breach answers alone flag more; use a larger budget", 100*budget)
	}
	p := best.Policy
	look, _ := pauseThreshold(runs, p, math.Min(0.99, 2*budget))
	onTrack, _ := pauseThreshold(runs, p, math.Min(0.99, 4*budget))
	p.NeedsALookAt = clampProb(math.Max(look, p.PauseAtOrBelow+0.001))
	p.OnTrackAt = clampProb(math.Max(onTrack, p.NeedsALookAt))
	p.Name = fmt.Sprintf("calibrated: at most %.1f%% false pauses on %d runs", 100*budget, len(runs))
	best.Policy = p
	for _, b := range []float64{0.01, 0.02, 0.05, 0.10, 0.20} {
		q := p
		row := TradeOff{Budget: b, Threshold: Num(math.NaN())}
		if t, ok := pauseThreshold(runs, q, b); ok {
			q.PauseAtOrBelow = t
			row.Threshold = Num(t)
			row.Rates = PolicyRatesOf(runs, q)
		}
		best.Table = append(best.Table, row)
	}
	return best, nil
}

func clampProb(v float64) float64 { return math.Max(0, math.Min(1, v)) }

// pauseThreshold is the highest P(on objective) threshold, rounded down to
// 0.001, with which policy p (its breach rule included) pauses at most
// budget of the succeeded runs; 0 when only the breach rule may pause.
// False when the breach rule alone exceeds the budget.
func pauseThreshold(runs []ScoredRun, p overseer.Policy, budget float64) (float64, bool) {
	noP := p
	noP.PauseAtOrBelow = -1 // the breach rule alone
	var lows []float64      // min P of the succeeded runs the breach rule spares
	breachPaused, succeeded := 0, 0
	var candidates []float64
	for _, r := range runs {
		low, ok := minAnswer(r)
		if ok {
			candidates = append(candidates, low)
		}
		if r.Failed() {
			continue
		}
		succeeded++
		if firstPause(r, noP) >= 0 {
			breachPaused++
		} else if ok {
			lows = append(lows, low)
		}
	}
	allowed := int(math.Floor(budget*float64(succeeded)+1e-9)) - breachPaused
	if allowed < 0 {
		return 0, false
	}
	t := thresholdUnder(candidates, lows, allowed, 0)
	if math.IsInf(t, 1) {
		return 1, true
	}
	return math.Floor(t*1000+1e-9) / 1000, true
}
