package eval

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/corohq/temporal-overseer/overseer"
)

// ErrRecalibrate is wrapped by every refusal of [Recalibrate].
var ErrRecalibrate = errors.New("recalibrate")

// Defaults of [RecalibrateOptions], chosen by cross-validation grouped by
// task family on the shared sample runs (`overseer recalibrate --curve`,
// docs/decision-quality.md): 30 runs is the fewest at which the held-out
// Brier score of stage 1 came within 0.005 of the constant guess of the
// held-out runs' own success rate on both samples (0.240 against 0.243 on
// OpenHands runs, where the model as shipped scored 0.363; 0.188 against
// 0.185 on the shipped model's own agent); at 20 it was 0.009 and 0.024
// above. A slope refitted from 15 runs of each outcome changed the Brier
// score by at most 0.002 against the intercept alone, and from 5 it made
// it worse by up to 0.004.
const (
	// DefaultMinRecalibrationRuns is the fewest closed runs, of both
	// outcomes, stage 1 refits intercepts on.
	DefaultMinRecalibrationRuns = 30
	// DefaultMinSlopeRuns is the fewest runs of each outcome a sub-model
	// needs before its slope is refitted too.
	DefaultMinSlopeRuns = 15
)

// slopePenalty shrinks a refitted slope towards 0 (the base rate): with a
// few dozen runs, a confident slope is more often noise than signal. It is
// an L2 penalty in units of runs.
const slopePenalty = 2.0

// RecalibrateOptions configure [Recalibrate]. Only For is required.
type RecalibrateOptions struct {
	// For names the workflow type or agent whose runs these are; verdicts
	// say it ("recalibrated on 34 CoroJob jobs").
	For string
	// Version names the recalibrated model; default the model's version,
	// "-cal-" and a hash of the new maps.
	Version string
	// MinRuns and MinSlopeRuns: see the defaults.
	MinRuns      int
	MinSlopeRuns int
}

// Recalibrate does stage 1 on closed runs of one workflow type or agent
// (labels applied): without refitting any weight, it refits each
// sub-model's map from its linear score to P so that P fits these runs,
// and stores the reference their verdicts are ranked against.
//
//   - The intercept: the map's offset is moved so that the mean P the
//     sub-model gives over these runs (each run weighing one, however many
//     boundaries it had) equals their success rate, smoothed towards one
//     half by half a run of each outcome (Jeffreys).
//   - The slope, once the runs the sub-model answered hold MinSlopeRuns of
//     each outcome: the map is refitted by logistic regression of the
//     outcome on the score, its slope shrunk towards none; a slope that
//     comes out zero or negative (it would invert or erase the ranking) is
//     not used, and the intercept alone is.
//
// The ranking within each sub-model is the model's own. It refuses, with
// an error wrapping ErrRecalibrate, runs of one outcome and fewer than
// MinRuns runs.
func Recalibrate(records []Record, model *overseer.LearnedModel, opts RecalibrateOptions) (*overseer.LearnedModel, error) {
	if opts.MinRuns <= 0 {
		opts.MinRuns = DefaultMinRecalibrationRuns
	}
	if opts.MinSlopeRuns <= 0 {
		opts.MinSlopeRuns = DefaultMinSlopeRuns
	}
	if opts.For == "" {
		return nil, fmt.Errorf("%w: say whose runs these are (the workflow type or agent)", ErrRecalibrate)
	}
	succeeded, failed := Outcomes(records)
	switch {
	case succeeded == 0 || failed == 0:
		return nil, fmt.Errorf("%w: the %d runs all %s: recalibration needs runs of both outcomes", ErrRecalibrate, len(records), map[bool]string{true: "succeeded", false: "failed"}[failed == 0])
	case len(records) < opts.MinRuns:
		return nil, fmt.Errorf("%w: %d runs are too few: recalibration takes at least %d closed runs of both outcomes", ErrRecalibrate, len(records), opts.MinRuns)
	}
	out := cloneModel(model)
	samples := linearScores(records, model)
	rc := &overseer.Recalibration{For: opts.For, From: model.Version, Runs: len(records), Succeeded: succeeded, Failed: failed}
	answered := 0
	for i := range out.SubModels {
		sm := &out.SubModels[i]
		s := samples[i]
		smr := overseer.SubModelRecalibration{Name: sm.Name, Fitted: "none", Runs: s.runs, Succeeded: s.succeeded, Failed: s.runs - s.succeeded}
		if s.runs == 0 {
			rc.SubModels = append(rc.SubModels, smr)
			continue
		}
		answered += s.runs
		cal := sm.Calibration
		smr.Fitted = "intercept"
		if s.succeeded >= opts.MinSlopeRuns && s.runs-s.succeeded >= opts.MinSlopeRuns {
			if a, b, ok := fitSlope(s); ok {
				cal.A, cal.B = a, b
				smr.Fitted = "intercept and slope"
			}
		}
		if smr.Fitted == "intercept" {
			target := (float64(s.succeeded) + 0.5) / (float64(s.runs) + 1)
			cal.B = interceptFor(s, cal, target)
		}
		sm.Calibration = overseer.Calibration{Method: cal.Method, A: round6(cal.A), B: round6(cal.B)}
		rc.SubModels = append(rc.SubModels, smr)
	}
	if answered == 0 {
		return nil, fmt.Errorf("%w: no boundary of the %d runs carries the inputs of any sub-model of %s", ErrRecalibrate, len(records), model.Version)
	}
	out.Recalibration = rc
	out.Reference = ReferenceOf(records, out)
	out.Version = opts.Version
	if out.Version == "" {
		out.Version = model.Version + "-cal-" + mapsHash(out)
	}
	if err := out.Validate(); err != nil {
		return nil, err
	}
	return out, nil
}

// Outcomes counts the succeeded and the failed (or blocked) records.
func Outcomes(records []Record) (succeeded, failed int) {
	for _, r := range records {
		if r.Outcome.Failed() {
			failed++
		} else {
			succeeded++
		}
	}
	return succeeded, failed
}

// scoreSamples are one sub-model's linear scores at the boundaries of the
// runs it answered, each boundary weighing 1 / the run's boundaries there.
type scoreSamples struct {
	score     []float64
	success   []bool
	weight    []float64
	runs      int
	succeeded int
}

// linearScores collects, per sub-model, the linear scores of the model at
// every boundary of the records.
func linearScores(records []Record, m *overseer.LearnedModel) []scoreSamples {
	out := make([]scoreSamples, len(m.SubModels))
	for _, rec := range records {
		per := make([][]float64, len(m.SubModels))
		for _, b := range Replay(rec) {
			if i, s, ok := m.LinearScore(b.Trajectory); ok {
				per[i] = append(per[i], s)
			}
		}
		for i, ss := range per {
			if len(ss) == 0 {
				continue
			}
			o := &out[i]
			o.runs++
			if !rec.Outcome.Failed() {
				o.succeeded++
			}
			for _, s := range ss {
				o.score = append(o.score, s)
				o.success = append(o.success, !rec.Outcome.Failed())
				o.weight = append(o.weight, 1/float64(len(ss)))
			}
		}
	}
	return out
}

// interceptFor is the offset B of cal with which the weighted mean P over
// the samples equals target (bisection: the mean is increasing in B).
func interceptFor(s scoreSamples, cal overseer.Calibration, target float64) float64 {
	mean := func(b float64) float64 {
		var sum, w float64
		for i, v := range s.score {
			sum += s.weight[i] * sigmoid(cal.A*v+b)
			w += s.weight[i]
		}
		return sum / w
	}
	lo, hi := -30.0, 30.0
	for range 100 {
		mid := (lo + hi) / 2
		if mean(mid) < target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// fitSlope refits the map σ(a·s + b) to the samples with a shrunk slope;
// false when the slope is not positive.
func fitSlope(s scoreSamples) (float64, float64, bool) {
	x := make([][]float64, len(s.score))
	for i, v := range s.score {
		x[i] = []float64{v}
	}
	m, err := fitLogistic(x, s.success, s.weight, slopePenalty)
	if err != nil || !(m.w[0] > 0) {
		return 0, 0, false
	}
	return m.w[0], m.b, true
}

// answersPerRun is each record's P(on objective) from m at each boundary,
// with its phase runs so far, for the reference.
// ReferenceOf is the reference of model m's verdicts among records (a
// type's recent closed jobs): where each run's P(on objective) stood at
// each point of it. Nil when no point has enough runs.
func ReferenceOf(records []Record, m *overseer.LearnedModel) *overseer.Reference {
	return overseer.NewReference(answersPerRun(records, m))
}

func answersPerRun(records []Record, m *overseer.LearnedModel) [][]overseer.PointP {
	out := make([][]overseer.PointP, 0, len(records))
	for _, rec := range records {
		var pts []overseer.PointP
		for _, b := range Replay(rec) {
			if i, s, ok := m.LinearScore(b.Trajectory); ok {
				p := math.Round(math.Min(0.99, math.Max(0.01, m.SubModels[i].Calibration.Apply(s)))*1000) / 1000
				pts = append(pts, overseer.PointP{PhaseRuns: b.Trajectory.PhaseRuns, P: p})
			}
		}
		out = append(out, pts)
	}
	return out
}

func cloneModel(m *overseer.LearnedModel) *overseer.LearnedModel {
	c := *m
	c.SubModels = append([]overseer.SubModel(nil), m.SubModels...)
	for i := range c.SubModels {
		c.SubModels[i].Features = append([]overseer.ModelFeature(nil), m.SubModels[i].Features...)
	}
	c.Recalibration, c.Reference = nil, nil
	return &c
}

// mapsHash names a recalibration by its maps.
func mapsHash(m *overseer.LearnedModel) string {
	data, _ := json.Marshal(struct {
		From string
		Maps []overseer.Calibration
	}{m.Recalibration.From, calibrations(m)})
	sum := sha256.Sum256(data)
	return fmt.Sprintf("%x", sum[:4])
}

func calibrations(m *overseer.LearnedModel) []overseer.Calibration {
	out := make([]overseer.Calibration, len(m.SubModels))
	for i, sm := range m.SubModels {
		out[i] = sm.Calibration
	}
	return out
}

func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// CurvePoint is what stage 1 on the first Runs closed runs did to runs of
// other task families, pooled over the folds of [RecalibrationCurve].
type CurvePoint struct {
	// Runs is how many runs each fold recalibrated on; Refused how many of
	// the folds refused to (too few runs, one outcome).
	Runs    int `json:"runs"`
	Folds   int `json:"folds"`
	Refused int `json:"refused"`
	// HeldOut are the held-out runs scored, pooled over the folds that
	// recalibrated.
	HeldOut int `json:"held_out"`
	// At 50 % of the held-out runs: the Brier score of the recalibrated
	// model, of the model as it was, and of the constant guess of the
	// held-out runs' own success rate; the AUROC of both models.
	Brier       Num `json:"brier"`
	BeforeBrier Num `json:"before_brier"`
	BaseBrier   Num `json:"base_brier"`
	AUROC       Num `json:"auroc"`
	BeforeAUROC Num `json:"before_auroc"`
	// SlopeFitted counts the folds where a sub-model got a slope.
	SlopeFitted int `json:"slope_fitted"`
}

// RecalibrationCurve measures stage 1 by cross-validation grouped by task
// family: the runs' families are dealt into folds; for each fold and each
// size n, the model is recalibrated on the first n runs (in input order)
// of the other folds and scored on the fold's runs, which it never saw,
// beside the model as it was. It answers "how many closed jobs until the
// verdict fits this agent".
func RecalibrationCurve(ctx context.Context, records []Record, model *overseer.LearnedModel, sizes []int, folds int, opts RecalibrateOptions) ([]CurvePoint, error) {
	if folds < 2 {
		folds = 5
	}
	fams := familyFolds(records, folds)
	before, err := Score(ctx, records, ScoreOptions{Judge: &overseer.LearnedJudge{Model: model}})
	if err != nil {
		return nil, err
	}
	var out []CurvePoint
	for _, n := range sizes {
		pt := CurvePoint{Runs: n, Folds: folds}
		var after, was []ScoredRun
		var aurocs, beforeAUROCs []float64
		for k := range folds {
			var pool, held []Record
			var heldBefore []ScoredRun
			for i, r := range records {
				if fams[r.FamilyName()] == k {
					held = append(held, r)
					heldBefore = append(heldBefore, before[i])
				} else {
					pool = append(pool, r)
				}
			}
			if len(held) == 0 || len(pool) < n {
				pt.Refused++
				continue
			}
			rec, err := Recalibrate(pool[:n], model, opts)
			if err != nil {
				if errors.Is(err, ErrRecalibrate) {
					pt.Refused++
					continue
				}
				return nil, err
			}
			if slices.ContainsFunc(rec.Recalibration.SubModels, func(s overseer.SubModelRecalibration) bool { return s.Fitted == "intercept and slope" }) {
				pt.SlopeFitted++
			}
			scored, err := Score(ctx, held, ScoreOptions{Judge: &overseer.LearnedJudge{Model: rec}})
			if err != nil {
				return nil, err
			}
			after = append(after, scored...)
			was = append(was, heldBefore...)
			// AUROC per fold: pooled, the folds' different maps would
			// rank runs of one fold against another's.
			if a, b := auroc50(scored), auroc50(heldBefore); !math.IsNaN(a) && !math.IsNaN(b) {
				aurocs, beforeAUROCs = append(aurocs, a), append(beforeAUROCs, b)
			}
		}
		pt.HeldOut = len(after)
		a := checkpoint("50%", after, atFraction(0.5))
		b := checkpoint("50%", was, atFraction(0.5))
		pt.Brier, pt.BaseBrier, pt.BeforeBrier = a.Brier, a.BaseBrier, b.Brier
		pt.AUROC, pt.BeforeAUROC = Num(mean(aurocs)), Num(mean(beforeAUROCs))
		out = append(out, pt)
	}
	return out, nil
}

// familyFolds deals the records' task families into folds, in order of
// first appearance.
func familyFolds(records []Record, folds int) map[string]int {
	out := map[string]int{}
	for _, r := range records {
		if _, ok := out[r.FamilyName()]; !ok {
			out[r.FamilyName()] = len(out) % folds
		}
	}
	return out
}

// auroc50 is the AUROC at 50 % of each run's steps, NaN when unmeasurable.
func auroc50(runs []ScoredRun) float64 {
	return float64(checkpoint("50%", runs, atFraction(0.5)).AUROC)
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
