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
	"github.com/corohq/temporal-overseer/overseer/judge"
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
	// "-cal-" and a hash of the type and the recalibrated sub-models.
	Version string
	// MinRuns and MinSlopeRuns: see the defaults.
	MinRuns      int
	MinSlopeRuns int

	// keepStandardization skips the check of re-standardisation and
	// keeps the model's (OutOfFoldScores: the model given was recalibrated
	// on all the runs, and chose then).
	keepStandardization bool
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
//   - Feature re-standardisation, label-free, only when it cross-validates
//     better: each sub-model's feature means and spreads are recomputed
//     over these runs' boundaries before the maps are refitted, when the
//     Brier score at 50 % of held-out runs (five folds, by task family
//     when there are three or more, else run by run) comes out lower by at
//     least 0.001 than without, and their AUROC, measured in at least
//     one fold, no lower (Recalibration.Restandardization says which and why). It can
//     change the ranking of a sub-model with several features, by how it
//     weighs them against each other.
//
// Without re-standardisation the ranking within each sub-model is the
// model's own. It refuses, with
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
		return nil, fmt.Errorf("%w: %d runs are too few: recalibration takes at least %d closed runs of both outcomes; %s", ErrRecalibrate, len(records), opts.MinRuns, StageNeeds(succeeded, len(records)))
	}
	model, err := withOwnLoopReference(model, records)
	if err != nil {
		return nil, err
	}
	var check *overseer.Restandardization
	base := model
	if !opts.keepStandardization {
		if check = restandardizationCheck(records, model, opts); check.Chosen {
			base = restandardized(model, records)
		}
	}
	out, err := recalibrated(records, base, opts)
	if err != nil {
		return nil, err
	}
	out.Recalibration.Restandardization = check
	out.Reference = ReferenceOf(records, out)
	out.Version = opts.Version
	if out.Version == "" {
		out.Version = model.Version + "-cal-" + recalibrationHash(out)
	}
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRecalibrate, err)
	}
	return out, nil
}

// withOwnLoopReference is model with the LoopReference of the succeeded
// runs among records, when it reads a loop against one: a type is read by
// its own succeeded runs, never by another's. It refuses runs with fewer
// than [judge.MinLoopReferenceRuns] succeeded loops.
func withOwnLoopReference(model *overseer.LearnedModel, records []Record) (*overseer.LearnedModel, error) {
	if !model.NeedsLoopReference() {
		return model, nil
	}
	out := *model // only the reference changes: the rest is shared, and the recalibration clones it
	replays := make([][]Replayed, len(records))
	runs := make([]int, len(records))
	for i, rec := range records {
		replays[i], runs[i] = Replay(rec), i
	}
	if out.LoopReference = loopReferenceOf(records, replays, runs); out.LoopReference == nil {
		succeeded, _ := Outcomes(records)
		return nil, fmt.Errorf("%w: %s reads an agent loop against the type's own succeeded runs, and %d succeeded runs are too few to take them from: it takes at least %d; %s",
			ErrRecalibrate, model.Version, succeeded, judge.MinLoopReferenceRuns, StageNeeds(succeeded, len(records)))
	}
	return &out, nil
}

// recalibrated refits each sub-model's map of model to records (see
// [Recalibrate]; the checks on the records are the caller's).
func recalibrated(records []Record, model *overseer.LearnedModel, opts RecalibrateOptions) (*overseer.LearnedModel, error) {
	succeeded, failed := Outcomes(records)
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
	return out, nil
}

// restandardized is model with each sub-model's feature means and
// standard deviations recomputed over the boundaries of records it
// answers: label-free, so the weights read the type's own spread. A
// feature constant on these runs keeps the model's figures.
func restandardized(model *overseer.LearnedModel, records []Record) *overseer.LearnedModel {
	out := cloneModel(model)
	values := make([][][]float64, len(out.SubModels)) // sub-model, feature, values
	for _, rec := range records {
		for _, b := range Replay(rec) {
			i := subModelIndex(out, b.Trajectory)
			if i < 0 {
				continue
			}
			x, err := judge.FeaturesAgainst(b.Trajectory, out.LoopReference, out.SubModels[i].FeatureNames())
			if err != nil {
				continue
			}
			if values[i] == nil {
				values[i] = make([][]float64, len(x))
			}
			for j, v := range x {
				values[i][j] = append(values[i][j], v)
			}
		}
	}
	for i := range out.SubModels {
		for j := range out.SubModels[i].Features {
			if values[i] == nil {
				continue
			}
			f := &out.SubModels[i].Features[j]
			m, sd := meanStd(values[i][j])
			if sd > 1e-12 {
				f.Mean, f.Std = round6(m), round6(sd)
			}
		}
	}
	return out
}

// subModelIndex is the index of the sub-model of m that answers at t, or -1.
func subModelIndex(m *overseer.LearnedModel, t overseer.Trajectory) int {
	i, _, ok := m.LinearScore(t)
	if !ok {
		return -1
	}
	return i
}

func meanStd(xs []float64) (float64, float64) {
	var n, sum, sq float64
	for _, v := range xs {
		if !math.IsNaN(v) {
			n, sum, sq = n+1, sum+v, sq+v*v
		}
	}
	if n < 2 {
		return 0, 0
	}
	m := sum / n
	return m, math.Sqrt(math.Max(0, sq/n-m*m))
}

// restandardizationFolds is how many folds the check deals the runs into.
const restandardizationFolds = 5

// restandardizationCheck cross-validates label-free feature
// re-standardisation: the runs are dealt into folds (by task family when
// there are enough families, else run by run); for each fold, stage 1 is
// done on the other folds' runs with the model's own standardisation and
// with theirs, and both are scored on the fold's runs. Re-standardisation
// is chosen only when, at 50 % of the held-out runs, its Brier score
// (pooled over the folds) is lower by at least minRestandardizationGain
// and its AUROC (the mean over the folds that measure one) no lower: it
// must fit better without ranking worse, and an AUROC no fold measures
// shows neither.
func restandardizationCheck(records []Record, model *overseer.LearnedModel, opts RecalibrateOptions) *overseer.Restandardization {
	folds := familyFolds(records, restandardizationFolds)
	if len(folds) < 3 {
		folds = map[string]int{}
	}
	foldOf := func(i int) int {
		if len(folds) == 0 {
			return i % restandardizationFolds
		}
		return folds[records[i].FamilyName()]
	}
	check := &overseer.Restandardization{}
	var asIs, re heldOut
	var aurocAsIs, aurocRe []float64
	for k := range restandardizationFolds {
		var train, held []Record
		for i, r := range records {
			if foldOf(i) == k {
				held = append(held, r)
			} else {
				train = append(train, r)
			}
		}
		if s, f := Outcomes(train); len(held) == 0 || s == 0 || f == 0 {
			continue
		}
		a, errA := recalibrated(train, model, opts)
		b, errB := recalibrated(train, restandardized(model, train), opts)
		if errA != nil || errB != nil {
			continue
		}
		var foldAsIs, foldRe heldOut
		foldAsIs.add(held, a)
		foldRe.add(held, b)
		asIs.merge(foldAsIs)
		re.merge(foldRe)
		// AUROC per fold: pooled, the folds' different maps would rank
		// runs of one fold against another's.
		if x, y := foldAsIs.auroc(), foldRe.auroc(); !math.IsNaN(x) && !math.IsNaN(y) {
			aurocAsIs, aurocRe = append(aurocAsIs, x), append(aurocRe, y)
		}
		check.Folds++
	}
	if check.Folds == 0 {
		return check
	}
	// A figure no fold could measure (no held-out run answered, or none
	// of both outcomes) is left out, as JSON has no NaN; and an AUROC not
	// measured cannot show that re-standardisation ranks no worse.
	check.BrierAsIs, check.BrierRestandardized = measured(asIs.brier()), measured(re.brier())
	check.AUROCAsIs, check.AUROCRestandardized = measured(mean(aurocAsIs)), measured(mean(aurocRe))
	check.Chosen = re.brier() <= asIs.brier()-minRestandardizationGain && len(aurocRe) > 0 && !(mean(aurocRe) < mean(aurocAsIs))
	return check
}

// measured is v rounded to four decimals, or 0 (left out of the file)
// when it could not be measured.
func measured(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return round4(v)
}

// minRestandardizationGain is the least fall of the Brier score that
// counts as better: a smaller one does not show in the three decimals the
// figures are reported with, and is noise on a few dozen runs.
const minRestandardizationGain = 0.001

// heldOut collects the held-out answers at 50 % of runs' steps.
type heldOut struct {
	p      []float64
	failed []bool
}

func (h *heldOut) add(records []Record, m *overseer.LearnedModel) {
	for _, rec := range records {
		half := 0.5 * float64(rec.NumSteps())
		p, ok := 0.0, false
		for _, bd := range Replay(rec) {
			if float64(bd.Steps) > half+1e-9 {
				break
			}
			if i, s, answered := m.LinearScore(bd.Trajectory); answered {
				p, ok = math.Min(0.99, math.Max(0.01, m.SubModels[i].Calibration.Apply(s))), true
			}
		}
		if ok {
			h.p, h.failed = append(h.p, p), append(h.failed, rec.Outcome.Failed())
		}
	}
}

func (h *heldOut) merge(o heldOut) {
	h.p, h.failed = append(h.p, o.p...), append(h.failed, o.failed...)
}

func (h heldOut) brier() float64 {
	if len(h.p) == 0 {
		return math.NaN()
	}
	sum := 0.0
	for i, p := range h.p {
		y := 1.0
		if h.failed[i] {
			y = 0
		}
		sum += (p - y) * (p - y)
	}
	return sum / float64(len(h.p))
}

// auroc ranks the failed runs by 1 − P.
func (h heldOut) auroc() float64 {
	s := make([]float64, len(h.p))
	for i, p := range h.p {
		s[i] = 1 - p
	}
	return AUROC(s, h.failed)
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
// the samples equals target.
func interceptFor(s scoreSamples, cal overseer.Calibration, target float64) float64 {
	scaled := make([]float64, len(s.score))
	for i, v := range s.score {
		scaled[i] = cal.A * v
	}
	return offsetForMean(scaled, s.weight, target)
}

// offsetForMean is the offset b with which the weighted mean of
// σ(score + b) over the scores equals target, within ±30 (bisection: the
// mean rises with b).
func offsetForMean(scores, weights []float64, target float64) float64 {
	mean := func(b float64) float64 {
		var sum, w float64
		for i, v := range scores {
			sum += weights[i] * sigmoid(v+b)
			w += weights[i]
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

// ReferenceOf is the reference of model m's verdicts among records (a
// type's recent closed jobs): where each run's P(on objective) stood at
// each point of it. Nil when no point has enough runs.
func ReferenceOf(records []Record, m *overseer.LearnedModel) *overseer.Reference {
	return overseer.NewReference(answersPerRun(records, m))
}

// answersPerRun is each record's P(on objective) from m at each boundary,
// with its phase runs so far, for the reference.
func answersPerRun(records []Record, m *overseer.LearnedModel) [][]overseer.PointP {
	out := make([][]overseer.PointP, 0, len(records))
	for _, rec := range records {
		var pts []overseer.PointP
		for _, b := range Replay(rec) {
			if i, s, ok := m.LinearScore(b.Trajectory); ok {
				p := math.Round(math.Min(0.99, math.Max(0.01, m.SubModels[i].Calibration.Apply(s)))*1000) / 1000
				pts = append(pts, overseer.PointP{PhaseRuns: b.Trajectory.PhaseRuns, P: p, Failed: rec.Outcome.Failed()})
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

// recalibrationHash names a recalibration by what it was done for and
// what it changed: two types recalibrated on alike runs get versions of
// their own, as the model registry requires.
func recalibrationHash(m *overseer.LearnedModel) string {
	data, _ := json.Marshal(struct {
		From, For string
		SubModels []overseer.SubModel
	}{m.Recalibration.From, m.Recalibration.For, m.SubModels})
	sum := sha256.Sum256(data)
	return fmt.Sprintf("%x", sum[:4])
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
	// Online is the ranking after CheckpointSteps steps among the held-out
	// runs still running then, as a live judge sees them: the AUROC of all
	// held-out scores pooled over the folds that recalibrated, of the
	// recalibrated model and of the model as it was, the mean over folds
	// beside.
	Online []CurveAUROC `json:"online"`
	// At 50 % of the held-out runs: the Brier score of the recalibrated
	// model, of the model as it was, and of the constant guess of the
	// held-out runs' own success rate; the AUROC of both models, the mean
	// over folds. A figure at 50 % of each run knows the run's length,
	// which no live judge does.
	Brier       Num `json:"brier"`
	BeforeBrier Num `json:"before_brier"`
	BaseBrier   Num `json:"base_brier"`
	AUROC       Num `json:"auroc"`
	BeforeAUROC Num `json:"before_auroc"`
	// SlopeFitted counts the folds where a sub-model got a slope.
	SlopeFitted int `json:"slope_fitted"`
}

// CurveAUROC is the ranking at one checkpoint of a curve point: pooled
// over the folds (AUROC, BeforeAUROC: of the model recalibrated and as it
// was), the mean over the folds that measure it beside (MeanAUROC,
// BeforeMeanAUROC), and the pooled held-out runs behind it.
type CurveAUROC struct {
	At              string `json:"at"`
	Runs            int    `json:"runs"`
	Failed          int    `json:"failed"`
	AUROC           Num    `json:"auroc"`
	BeforeAUROC     Num    `json:"before_auroc"`
	MeanAUROC       Num    `json:"mean_auroc"`
	BeforeMeanAUROC Num    `json:"before_mean_auroc"`
	Unreliable      bool   `json:"unreliable,omitempty"`
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
		steps := make([][2][]float64, len(CheckpointSteps)) // per checkpoint, each fold's AUROC after and before
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
			for i, n := range CheckpointSteps {
				a, b := float64(AfterSteps(scored, n).AUROC), float64(AfterSteps(heldBefore, n).AUROC)
				if !math.IsNaN(a) && !math.IsNaN(b) {
					steps[i][0], steps[i][1] = append(steps[i][0], a), append(steps[i][1], b)
				}
			}
		}
		for i, n := range CheckpointSteps {
			a, b := AfterSteps(after, n), AfterSteps(was, n)
			pt.Online = append(pt.Online, CurveAUROC{At: a.At, Runs: a.Runs, Failed: a.Failed, AUROC: a.AUROC, BeforeAUROC: b.AUROC,
				MeanAUROC: Num(mean(steps[i][0])), BeforeMeanAUROC: Num(mean(steps[i][1])), Unreliable: a.Unreliable})
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
