package eval

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"

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
	// Kind is the kind of the promise calibrated for.
	Kind   overseer.PromiseKind `json:"kind"`
	Budget float64              `json:"max_false_pause"`
	// Confidence of the promise's upper bound (0 for an expected promise),
	// UpperBound the 95 % bound of the chosen policy's false-pause rate on
	// these runs, whatever the kind.
	Confidence float64         `json:"confidence"`
	UpperBound float64         `json:"upper_bound"`
	Policy     overseer.Policy `json:"-"`
	// Rates are the chosen policy's rates on the runs it was chosen on.
	Rates PolicyRates `json:"rates"`
	Table []TradeOff  `json:"table"`
	// NoPauseOnP says in one sentence why the policy pauses on no P at all
	// (ties at the lowest P), when it does not; "" otherwise.
	NoPauseOnP string `json:"no_pause_on_p,omitempty"`
}

// calibrationBreachConfidences are the breach-confidence floors tried, the
// default first: raising it silences breach pauses that cost too many
// false pauses.
var calibrationBreachConfidences = []float64{0.5, 0.7, 0.9, 1}

// PromiseConfidence is the confidence of every false-pause promise: the
// one-sided upper bound of the false-pause rate at 95 %.
const PromiseConfidence = 0.95

// needsALookShare is the share of succeeded runs' boundaries a calibrated
// policy shows below On track: enough that "Needs a look" is a real band,
// few enough that On track stays the usual state of a good run.
const needsALookShare = 0.20

// ErrUncertifiable is wrapped when recorded runs cannot support a
// false-pause promise.
var ErrUncertifiable = errors.New("false-pause promise cannot be certified")

// UpperBound is the one-sided Clopper–Pearson upper confidence bound of a
// rate observed as k events in n trials: the largest rate under which
// seeing k or fewer has probability at least 1 − confidence.
func UpperBound(k, n int, confidence float64) float64 {
	if n <= 0 {
		return 1
	}
	if k >= n {
		return 1
	}
	return distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k)}.Quantile(confidence)
}

// LowerBound is the one-sided Clopper–Pearson lower confidence bound of a
// rate observed as k events in n trials.
func LowerBound(k, n int, confidence float64) float64 {
	if n <= 0 || k <= 0 {
		return 0
	}
	return distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(1 - confidence)
}

// RunsNeeded is the smallest number of succeeded runs on which a policy
// that pauses none of them certifies budget at confidence: 59 for 5 % at
// 95 %.
func RunsNeeded(budget, confidence float64) int {
	return int(math.Ceil(math.Log(1-confidence)/math.Log(1-budget) - 1e-9))
}

// allowedFalsePauses is the largest number of false pauses among n
// succeeded runs whose upper bound stays within budget, or -1 when even
// none is too many.
func allowedFalsePauses(n int, budget, confidence float64) int {
	k := -1
	for k+1 < n && UpperBound(k+1, n, confidence) <= budget {
		k++
	}
	return k
}

// conformalFalsePauses is the most succeeded runs out of n a threshold may
// pause so that a new exchangeable run is paused with probability at most
// budget: a threshold below the j-th lowest of n scores pauses a new
// run with probability j/(n+1), so j = ⌊(n+1)·budget⌋ and the threshold
// pauses at most j−1 of the n; -1 when j is 0.
func conformalFalsePauses(n int, budget float64) int {
	return int(math.Floor(float64(n+1)*budget+1e-9)) - 1
}

// ConformalRunsNeeded is the fewest succeeded runs on which an expected
// promise of budget can pause any run on P: 19 for 5 %.
func ConformalRunsNeeded(budget float64) int {
	return int(math.Ceil(1/budget-1e-9)) - 1
}

// allowedPauses is the false pauses among n succeeded runs a promise of kind
// allows, -1 when none.
func allowedPauses(kind overseer.PromiseKind, n int, budget float64) int {
	if kind == overseer.PromiseExpected {
		return conformalFalsePauses(n, budget)
	}
	return allowedFalsePauses(n, budget, PromiseConfidence)
}

// Calibrate chooses, from runs scored by any judge, the policy with the
// best catch rate of failed runs whose false-pause promise of kind (""
// for overseer.DefaultPromiseKind) holds: for overseer.PromiseConfident, the one-sided 95 % upper
// confidence bound (Clopper–Pearson) of the share of succeeded runs it
// pauses is within budget; for overseer.PromiseExpected, a new succeeded
// run like these is paused with probability at most budget
// (split-conformal; see conformalFalsePauses). A run is paused when any
// boundary is flagged. Score the runs out of fold (by a model that never
// saw them): `overseer train --policy-out` does. It tries the breach
// confidence floors 0.5, 0.7, 0.9 and 1 and, for each, the highest
// P(on objective) pause threshold that keeps the promise; the best catch
// rate wins, ties going to the lower floor. When the runs cannot support
// the budget it refuses, with an error wrapping ErrUncertifiable that
// names the number of succeeded runs needed.
//
// The bands come from operating points of the same runs: Off track is at
// and below the pause threshold (a paused job always shows Off track), On
// track starts where about 20 % of the succeeded runs fall below it at
// mid-run, so Needs a look holds what lies between.
func Calibrate(runs []ScoredRun, budget float64, kind overseer.PromiseKind) (Calibration, error) {
	if kind == "" {
		kind = overseer.DefaultPromiseKind
	}
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
	allowed := allowedPauses(kind, succeeded, budget)
	switch {
	case allowed < 0 && kind == overseer.PromiseExpected:
		return Calibration{}, fmt.Errorf("calibrate: %w: %d succeeded runs cannot place a threshold that pauses a new run with probability at most %.1f%%; it takes at least %d succeeded runs",
			ErrUncertifiable, succeeded, 100*budget, ConformalRunsNeeded(budget))
	case allowed < 0:
		return Calibration{}, fmt.Errorf("calibrate: %w: %d succeeded runs cannot show a false-pause rate within %.1f%% at %.0f%% confidence (with none paused the bound is %.1f%%); it takes at least %d succeeded runs",
			ErrUncertifiable, succeeded, 100*budget, 100*PromiseConfidence, 100*UpperBound(0, succeeded, PromiseConfidence), RunsNeeded(budget, PromiseConfidence))
	}
	base := overseer.DefaultPolicy()
	best := Calibration{Kind: kind, Budget: budget, Confidence: PromiseConfidence}
	if kind == overseer.PromiseExpected {
		best.Confidence = 0
	}
	found := false
	for _, bc := range calibrationBreachConfidences {
		p := base
		p.BreachConfidence = bc
		t, ok := pauseThreshold(runs, p, allowed)
		if !ok {
			continue
		}
		p.PauseAtOrBelow = t
		rates := PolicyRatesOf(runs, p)
		if !found || rates.Catches > best.Rates.Catches {
			best.Policy, best.Rates, found = p, rates, true
			best.NoPauseOnP = tiedAtTheLowest(runs, p, allowed, "succeeded runs")
		}
	}
	if !found {
		return Calibration{}, fmt.Errorf("calibrate: %w: the judge's breach answers alone pause more than the %d of %d succeeded runs a %.1f%% promise allows at %.0f%% confidence; use a larger budget or more runs",
			ErrUncertifiable, allowed, succeeded, 100*budget, 100*PromiseConfidence)
	}
	if best.Rates.Catches == 0 {
		// A threshold that keeps the promise by pausing nothing is no
		// policy to certify: keep the one in force.
		why := ""
		if best.NoPauseOnP != "" {
			why = " (" + best.NoPauseOnP + ")"
		}
		return Calibration{}, fmt.Errorf("calibrate: %w: on these %d succeeded and %d failed runs, the thresholds that keep a %.1f%% promise (the best pauses at P ≤ %.3f) catch no failed run%s; keep the policy in force, and calibrate again with more runs (the promise may pause %d of %d succeeded runs here; more succeeded runs let it pause more)",
			ErrUncertifiable, succeeded, failed, 100*budget, best.Policy.PauseAtOrBelow, why, max(allowed, 0), succeeded)
	}
	p := best.Policy
	p.NeedsALookAt = clampProb(p.PauseAtOrBelow + 0.001)
	p.OnTrackAt = clampProb(math.Max(succeededQuantile(runs, needsALookShare), p.NeedsALookAt))
	best.UpperBound = UpperBound(best.Rates.FalsePauses, succeeded, PromiseConfidence)
	p.Promise = overseer.Promise{Kind: kind, MaxFalsePause: budget, Confidence: best.Confidence, SucceededRuns: succeeded,
		FalsePauses: best.Rates.FalsePauses, UpperBound: round4(best.UpperBound), FailedRuns: failed, Catches: best.Rates.Catches}
	p.Name = fmt.Sprintf("calibrated: at most %.1f%% false pauses (%.0f%% bound) on %d runs", 100*budget, 100*PromiseConfidence, len(runs))
	if kind == overseer.PromiseExpected {
		p.Name = fmt.Sprintf("calibrated: at most %.1f%% false pauses in expectation (split-conformal) on %d runs", 100*budget, len(runs))
	}
	best.Policy = p
	for _, b := range []float64{0.01, 0.02, 0.05, 0.10, 0.20} {
		q := p
		row := TradeOff{Budget: b, Threshold: Num(math.NaN())}
		if k := allowedPauses(kind, succeeded, b); k >= 0 {
			if t, ok := pauseThreshold(runs, q, k); ok {
				q.PauseAtOrBelow = t
				row.Threshold = Num(t)
				row.Rates = PolicyRatesOf(runs, q)
			}
		}
		best.Table = append(best.Table, row)
	}
	return best, nil
}

func clampProb(v float64) float64 { return math.Max(0, math.Min(1, v)) }

// succeededQuantile is the q-quantile, rounded down to 0.001, of the
// succeeded runs' P(on objective) at mid-run (their latest answer at or
// before half their steps): the operating point a person reading a running
// job's band meets.
func succeededQuantile(runs []ScoredRun, q float64) float64 {
	var ps []float64
	for _, r := range runs {
		if r.Failed() {
			continue
		}
		if v, ok := answerAt(r, 0.5*float64(r.Steps)); ok {
			ps = append(ps, v)
		}
	}
	if len(ps) == 0 {
		return 0
	}
	slices.Sort(ps)
	i := min(len(ps)-1, int(math.Ceil(q*float64(len(ps))))-1)
	return math.Floor(ps[max(0, i)]*1000+1e-9) / 1000
}

// pauseThreshold is the highest P(on objective) threshold, rounded down to
// 0.001, with which policy p (its breach rule included) pauses at most
// allowed of the succeeded runs; 0 when only the breach rule may pause.
// False when the breach rule alone pauses more.
func pauseThreshold(runs []ScoredRun, p overseer.Policy, allowed int) (float64, bool) {
	noP := p
	noP.PauseAtOrBelow = -1 // the breach rule alone
	var lows []float64      // min P of the succeeded runs the breach rule spares
	breachPaused := 0
	var candidates []float64
	for _, r := range runs {
		low, ok := minAnswer(r)
		if ok {
			candidates = append(candidates, low)
		}
		if r.Failed() {
			continue
		}
		if firstPause(r, noP) >= 0 {
			breachPaused++
		} else if ok {
			lows = append(lows, low)
		}
	}
	allowed -= breachPaused
	if allowed < 0 {
		return 0, false
	}
	t := thresholdUnder(candidates, lows, allowed, 0)
	if math.IsInf(t, 1) {
		return 1, true
	}
	return math.Floor(t*1000+1e-9) / 1000, true
}

// tiedAtTheLowest says in one sentence why a threshold on P pauses none
// of runs though allowed of their succeeded runs may be paused: the
// lowest P is shared by more of them than that (a sub-model that scores
// many runs alike), so any threshold that pauses one pauses them all, and
// there is no fair way to pause some of equal P. It is "" when a threshold
// pauses some run, or the budget allows none.
func tiedAtTheLowest(runs []ScoredRun, p overseer.Policy, allowed int, noun string) string {
	noP := p
	noP.PauseAtOrBelow = -1
	var lows, all []float64
	for _, r := range runs {
		low, ok := minAnswer(r)
		if !ok {
			continue
		}
		all = append(all, low)
		if !r.Failed() && firstPause(r, noP) < 0 {
			lows = append(lows, low)
		} else if !r.Failed() {
			allowed-- // paused by the breach rule: spent already
		}
	}
	if allowed <= 0 || len(lows) <= allowed {
		return ""
	}
	slices.Sort(lows)
	lowest := lows[0]
	if lows[allowed] != lowest || slices.Min(all) < lowest {
		return ""
	}
	tied := 0
	for _, v := range lows {
		if v == lowest {
			tied++
		}
	}
	return fmt.Sprintf("%d of the %d %s share the lowest P(on objective), %.3f, so a threshold on P that pauses one pauses all %d, more than the %d the budget allows: P pauses no job (the breach rules still do)",
		tied, len(lows), noun, lowest, tied, allowed)
}

// ErrPromiseBroken is wrapped when runs show a policy breaking its
// false-pause promise beyond sampling error.
var ErrPromiseBroken = errors.New("false-pause promise broken")

// The verdicts of a [PromiseCheck].
const (
	PromiseUncertified = "uncertified" // the policy makes no promise
	PromiseHolds       = "holds"       // even the upper bound is within it
	PromiseConsistent  = "consistent"  // the rate is within it; too few runs to confirm
	PromiseAbove       = "above"       // above it, but within sampling error
	PromiseBroken      = "broken"      // even the lower bound is above it
)

// PromiseCheck is what runs say of a policy's false-pause promise.
type PromiseCheck struct {
	Verdict       string  `json:"verdict"`
	MaxFalsePause float64 `json:"max_false_pause,omitempty"`
	Succeeded     int     `json:"succeeded"`
	FalsePauses   int     `json:"false_pauses"`
	// LowerBound is the one-sided 95 % lower confidence bound of the
	// observed false-pause rate: above the promise, the promise is broken.
	LowerBound float64 `json:"lower_bound"`
}

// CheckPromise checks a false-pause promise of at most budget (0: none)
// against what a policy did to runs it was not calibrated on.
func CheckPromise(r PolicyRates, budget float64) PromiseCheck {
	c := PromiseCheck{Verdict: PromiseUncertified, MaxFalsePause: budget, Succeeded: r.Succeeded, FalsePauses: r.FalsePauses,
		LowerBound: LowerBound(r.FalsePauses, r.Succeeded, PromiseConfidence)}
	rate := float64(r.FalsePauses) / float64(max(1, r.Succeeded))
	switch {
	case budget <= 0:
	case c.LowerBound > budget:
		c.Verdict = PromiseBroken
	case rate > budget:
		c.Verdict = PromiseAbove
	case UpperBound(r.FalsePauses, r.Succeeded, PromiseConfidence) > budget:
		c.Verdict = PromiseConsistent
	default:
		c.Verdict = PromiseHolds
	}
	return c
}

// String says the check in one sentence.
func (c PromiseCheck) String() string {
	rate := 100 * float64(c.FalsePauses) / float64(max(1, c.Succeeded))
	seen := fmt.Sprintf("%d of %d succeeded runs paused (%.1f%%; 95%% lower bound %.1f%%)", c.FalsePauses, c.Succeeded, rate, 100*c.LowerBound)
	switch c.Verdict {
	case PromiseBroken:
		return fmt.Sprintf("the promise of at most %.1f%% false pauses is BROKEN on these runs: %s; recalibrate on this deployment's runs (overseer calibrate)", 100*c.MaxFalsePause, seen)
	case PromiseAbove:
		return fmt.Sprintf("above the promise of at most %.1f%% false pauses but within sampling error: %s", 100*c.MaxFalsePause, seen)
	case PromiseHolds:
		return fmt.Sprintf("the promise of at most %.1f%% false pauses holds on these runs: %s", 100*c.MaxFalsePause, seen)
	case PromiseConsistent:
		return fmt.Sprintf("consistent with the promise of at most %.1f%% false pauses, but %d succeeded runs are too few to confirm it (it takes %d): %s",
			100*c.MaxFalsePause, c.Succeeded, RunsNeeded(c.MaxFalsePause, PromiseConfidence), seen)
	default:
		return "the policy makes no false-pause promise: " + seen
	}
}

// UncertifiedPolicy is the policy of runs that cannot certify a promise
// yet: bands from their operating points (On track where about 20 % of
// the succeeded runs fall below it at mid-run, Off track below 95 % of
// them) and the breach rule of the policy in force (rules: its breach
// confidence and severity floors and failure limit; the default rule when
// it has none), but no pause on P: a pause threshold nothing certified
// would pause at an unknown rate. Keeping the rule in force matters for an
// agent loop, whose shipped policy pauses on its rule later than the
// default does: a recalibration must not make a loop type pause more.
func UncertifiedPolicy(runs []ScoredRun, name string, rules overseer.Policy) overseer.Policy {
	p := overseer.DefaultPolicy()
	if rules.BreachConfidence > 0 {
		p.BreachConfidence, p.BreachSeverity = rules.BreachConfidence, rules.BreachSeverity
	}
	if rules.MaxConsecutiveFailures != 0 {
		p.MaxConsecutiveFailures = rules.MaxConsecutiveFailures
	}
	p.Name = name
	p.PauseAtOrBelow = 0 // P is clamped to at least 0.01: never at or below 0
	p.NeedsALookAt = succeededQuantile(runs, 0.05)
	p.OnTrackAt = math.Max(succeededQuantile(runs, needsALookShare), p.NeedsALookAt)
	return p
}

// ErrPauseBudget is wrapped when runs cannot support a pause budget.
var ErrPauseBudget = errors.New("pause budget")

// BudgetPolicy is base with the pause threshold set for a pause budget of
// share: the highest P(on objective) at which base (its breach rule
// included) would have paused at most share of the runs, whatever their
// outcome — a reviewer-load control, never a false-pause promise, so the
// policy keeps none. It refuses fewer than overseer.MinPauseBudgetJobs
// runs, and runs the breach rule alone pauses more of.
func BudgetPolicy(runs []ScoredRun, share float64, base overseer.Policy) (overseer.Policy, error) {
	if !(share > 0 && share < 1) {
		return overseer.Policy{}, fmt.Errorf("%w %v: give a share of jobs in (0,1), e.g. 0.1", ErrPauseBudget, share)
	}
	if len(runs) < overseer.MinPauseBudgetJobs {
		return overseer.Policy{}, fmt.Errorf("%w: %d recent jobs are too few to set a pause budget on; it takes at least %d", ErrPauseBudget, len(runs), overseer.MinPauseBudgetJobs)
	}
	// Every run counts as one the budget spends on, whatever its outcome.
	all := make([]ScoredRun, len(runs))
	for i, r := range runs {
		r.Outcome = OutcomeSucceeded
		all[i] = r
	}
	allowed := int(math.Floor(share*float64(len(runs)) + 1e-9))
	// The budget holds the breach rule too: its confidence floor is raised
	// (as Calibrate tries them) until the rule alone fits in the budget.
	p := base
	var t float64
	ok := false
	for _, bc := range calibrationBreachConfidences {
		p.BreachConfidence = math.Max(base.BreachConfidence, bc)
		if t, ok = pauseThreshold(all, p, allowed); ok {
			break
		}
	}
	if !ok {
		breachOnly := p
		breachOnly.PauseAtOrBelow = -1
		paused := PolicyRatesOf(all, breachOnly).FalsePauses
		return overseer.Policy{}, fmt.Errorf("%w: even at breach confidence 1, the judge's breach answers alone pause %d of the %d jobs (%.1f%%), more than %.1f%%; give a budget of at least %.1f%%, or a policy whose breach severity floor is 3 (--policy)",
			ErrPauseBudget, paused, len(runs), 100*float64(paused)/float64(len(runs)), 100*share, 100*float64(paused)/float64(len(runs)))
	}
	if why := tiedAtTheLowest(all, p, allowed, "jobs"); why != "" {
		return overseer.Policy{}, fmt.Errorf("%w: %s", ErrPauseBudget, why)
	}
	p.PauseAtOrBelow = t
	p.Promise = overseer.Promise{}
	p.NeedsALookAt = clampProb(math.Max(p.NeedsALookAt, t+0.001))
	p.OnTrackAt = math.Max(p.OnTrackAt, p.NeedsALookAt)
	p.PauseBudget = overseer.PauseBudget{MaxShare: share, Jobs: len(runs), Paused: PolicyRatesOf(all, p).FalsePauses}
	p.Name = fmt.Sprintf("pause budget: at most %.1f%% of jobs, set on %d recent jobs", 100*share, len(runs))
	return p, nil
}
