package eval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/judge"
)

// DefaultFeatures are the features `overseer train` may select from unless
// told otherwise: the rates and shares among [overseer.FeatureNames], not
// the cumulative sizes (steps, phase runs, cost, tokens so far) nor an
// agent loop's counts (see [DefaultFeaturesFor]). A job that
// runs for days grows its cumulative sizes far past any training run, and a
// model that learned "long runs fail" on short runs would then pause every
// long job; rates stay in range however long a job runs.
func DefaultFeatures() []string {
	var out []string
	for _, n := range overseer.FeatureNames() {
		if !overseer.IsCumulativeFeature(n) && !isLoopFeature(n) {
			out = append(out, n)
		}
	}
	return out
}

// ErrTrain is wrapped by every refusal of [Train]: runs it cannot fit a
// model on (too few families, a fold without both outcomes, …) or a fit
// that went wrong (weights that are not finite numbers).
var ErrTrain = errors.New("train")

// DefaultLambdas is the grid of L2 penalties cross-validation chooses from.
func DefaultLambdas() []float64 { return []float64{0.3, 1, 3, 10, 30, 100, 300} }

// TrainOptions configure [Train]. The zero value works.
type TrainOptions struct {
	// Features to fit. Default DefaultFeaturesFor(records).
	Features []string
	// Lambdas is the L2 grid. Default DefaultLambdas().
	Lambdas []float64
	// Folds of the grouped cross-validation. Default 5 (fewer when there
	// are fewer task families).
	Folds int
	// Version of the model. Default "learned-" and a hash of its weights.
	Version string
	// Budget is the false-pause budget the cross-validated policy figures
	// are computed at. Default 0.05.
	Budget float64
	// Promise is the kind of promise of the cross-validated policy
	// figures; default overseer.DefaultPromiseKind.
	Promise overseer.PromiseKind
	// NoLoopReference writes the model without the LoopReference of its
	// training runs (the figures are still those of models that had it): a
	// model meant for other workflow types, each of which gets its own
	// reference from its first recalibration, as the shipped loop model.
	NoLoopReference bool
}

// KindRates are the cross-validated rates of policies certified for one
// kind of promise.
type KindRates struct {
	Kind    overseer.PromiseKind `json:"kind"`
	Rates   PolicyRates          `json:"rates"`
	Refused []string             `json:"refused,omitempty"`
	// Spend is what stopping the held-out runs at the policy's first
	// pause would have saved of the failed runs' FailedTokens (runs that
	// reported tokens only).
	Spend        SpendSaved `json:"spend"`
	FailedTokens int64      `json:"failed_tokens"`
	// InForce is what that policy does to the held-out runs while they
	// run, walked boundary by boundary (InForceOf, no budget): each fold's
	// policy on its own held-out runs, summed over the folds that could
	// certify one; its AtHoldRates set a threshold on P at each of
	// FixedFalsePauseRates over the same runs pooled.
	InForce InForce `json:"in_force"`
	gated   []gatedRun
}

func (k *KindRates) addSpend(saved SpendSaved, failedTokens int64) {
	k.Spend.SavedTokens += saved.SavedTokens
	k.Spend.Held += saved.Held
	k.Spend.Succeeded += saved.Succeeded
	k.FailedTokens += failedTokens
	if k.FailedTokens > 0 {
		k.Spend.SavedShare = float64(k.Spend.SavedTokens) / float64(k.FailedTokens)
	}
}

// SubModelSpec is one sub-model [Train] fits: its name and the features
// forward selection may choose from.
type SubModelSpec struct {
	Name     string
	Features []string
}

// The sub-models [SubModelSpecs] defines.
const (
	SubModelTelemetry = "telemetry"
	SubModelStructure = "structure"
)

// SubModelSpecs splits a feature pool into the sub-models Train fits,
// richest first: "telemetry" selects from the whole pool when it holds
// token or cost features ([overseer.IsTelemetryFeature]), "structure"
// from the pool without them, so that a job whose agent reports no
// telemetry is still judged on what its trajectory does carry.
func SubModelSpecs(pool []string) []SubModelSpec {
	var structure []string
	for _, f := range pool {
		if !overseer.IsTelemetryFeature(f) {
			structure = append(structure, f)
		}
	}
	var out []SubModelSpec
	if len(structure) < len(pool) {
		out = append(out, SubModelSpec{Name: SubModelTelemetry, Features: slices.Clone(pool)})
	}
	if len(structure) > 0 {
		out = append(out, SubModelSpec{Name: SubModelStructure, Features: structure})
	}
	return out
}

// TrainResult is a fitted model with its honest, cross-validated figures.
type TrainResult struct {
	Model *overseer.LearnedModel
	// Lambda is the penalty chosen by cross-validation on all runs, per
	// sub-model.
	Lambda map[string]float64
	// CV holds every run scored by a model that never saw its task family
	// (nested grouped cross-validation: features, penalty and calibration
	// chosen inside each training fold), through the whole family of
	// sub-models as the shipped judge would use it. It is what
	// `overseer train --policy-out` calibrates on.
	CV []ScoredRun
	// CalibrationRuns are every run scored by the shipped model's family
	// refitted without the run's task family (its features, penalties and
	// calibration maps kept): out-of-fold answers on the shipped model's
	// own scale. `overseer train --policy-out` calibrates on them.
	CalibrationRuns []ScoredRun
	// CVPolicy is what a policy calibrated in each fold (on that fold's
	// training runs, scored out of fold, for TrainOptions.Promise) does to
	// its held-out runs, summed over the folds whose runs could certify
	// the budget.
	CVPolicy PolicyRates
	// CVPolicyRefused says, per fold that could not certify the budget, why.
	CVPolicyRefused []string
	// CVByKind is CVPolicy for each kind of promise, to compare their
	// catches at the same budget.
	CVByKind []KindRates
	// FoldModels describes each fold's model and its held-out measures.
	FoldModels []FoldModel
	// SpendAmounts are the token spends the checkpoints at fixed spend of
	// the held-out runs stand at (SpendAmounts of CV), in every fold the
	// same; MeanAUROCAtSpend is the mean over folds there, as MeanAUROC.
	SpendAmounts     []int64
	MeanAUROCAtSpend map[string]float64
	// MeanAUROC is, per checkpoint, the mean over folds (weighted by
	// held-out runs) of each fold model's AUROC on its held-out runs: the
	// expected AUROC of one model on task families it never saw. Pooling
	// the held-out scores of different fold models instead (the AUROC of
	// CV) also measures how differently they are scaled, which no single
	// shipped model suffers from. A checkpoint no fold could measure is
	// absent.
	MeanAUROC map[string]float64
	// SubModels are the cross-validated figures of each sub-model alone,
	// on the runs that carry its inputs.
	SubModels []SubModelResult
	Folds     int
	Summary   TrainingSummary
}

// SubModelResult is one sub-model's own cross-validation.
type SubModelResult struct {
	Name string `json:"name"`
	// Runs that carry the sub-model's inputs; only they train and test it.
	Runs       int                `json:"runs"`
	Features   []string           `json:"features,omitempty"`
	Lambda     float64            `json:"lambda,omitempty"`
	MeanAUROC  map[string]float64 `json:"cv_auroc,omitempty"`
	FoldModels []FoldModel        `json:"fold_models,omitempty"`
	// Skipped says why the sub-model was not fitted (too few runs carry
	// its inputs).
	Skipped string `json:"skipped,omitempty"`
}

// FoldModel is one model of the outer cross-validation.
type FoldModel struct {
	Features    []string     `json:"features"`
	HeldOut     int          `json:"held_out_runs"`
	Checkpoints []Checkpoint `json:"checkpoints"`
	// Catches are the failed held-out runs caught at FixedFalsePauseRates,
	// the threshold set on this fold's held-out succeeded runs.
	Catches []CatchAtRate `json:"catches,omitempty"`
	// AtSpend are the checkpoints at the fixed spends of TrainResult's
	// SpendAmounts, among this fold's held-out runs still running there.
	AtSpend []Checkpoint `json:"checkpoints_at_spend,omitempty"`
}

func meanFoldAUROC(folds []FoldModel) map[string]float64 {
	return meanOverFolds(folds, func(f FoldModel) []Checkpoint { return f.Checkpoints })
}

// meanOverFolds is, per checkpoint of of, the mean of the folds' AUROCs
// weighted by their runs there.
func meanOverFolds(folds []FoldModel, of func(FoldModel) []Checkpoint) map[string]float64 {
	sum, weight := map[string]float64{}, map[string]float64{}
	for _, f := range folds {
		for _, c := range of(f) {
			if a := float64(c.AUROC); !math.IsNaN(a) {
				sum[c.At] += a * float64(c.Runs)
				weight[c.At] += float64(c.Runs)
			}
		}
	}
	out := map[string]float64{}
	for at, s := range sum {
		out[at] = s / weight[at]
	}
	return out
}

// TrainingSummary is written into the model file.
type TrainingSummary struct {
	Runs       int      `json:"runs"`
	Succeeded  int      `json:"succeeded"`
	Failed     int      `json:"failed"`
	Families   int      `json:"families"`
	Boundaries int      `json:"boundaries"`
	Agents     []string `json:"agents,omitempty"`
	Folds      int      `json:"folds"`
	// CVAUROC is, per checkpoint, the grouped-CV AUROC (failed runs
	// positive): the mean over folds of each fold model's held-out AUROC.
	CVAUROC map[string]float64 `json:"cv_auroc,omitempty"`
	// DroppedFeatures had no variance in the training runs.
	DroppedFeatures []string `json:"dropped_features,omitempty"`
}

// sample is one boundary of one run as a training example.
type sample struct {
	x      []float64 // raw features, NaN when missing
	y      bool      // the run succeeded
	weight float64
}

type dataset struct {
	records []Record
	samples []sample
	byRun   [][]int // sample indexes per run
	// atSelection[k][run] is the run's latest sample at or before
	// selectionFractions[k] of its steps, or -1.
	atSelection [][]int

	// ref is what the relative features of an agent loop were read
	// against (nil: no view's; they are NaN); relative says the features
	// hold one, so that each training set's view has its own (on).
	ref      *judge.LoopReference
	relative bool
	replays  [][]Replayed
	names    []string
	views    map[string]*dataset
}

// newDataset turns every boundary of records (replays holds each one's
// Replay) into a sample of the named features.
func newDataset(records []Record, replays [][]Replayed, names []string) (*dataset, error) {
	ds := &dataset{records: records, byRun: make([][]int, len(records)), atSelection: make([][]int, len(selectionFractions)),
		relative: slices.ContainsFunc(names, judge.NeedsLoopReference), replays: replays, names: names, views: map[string]*dataset{}}
	for k := range ds.atSelection {
		ds.atSelection[k] = slices.Repeat([]int{-1}, len(records))
	}
	for i, rec := range records {
		reps := replays[i]
		steps := float64(rec.NumSteps())
		for _, r := range reps {
			x, err := judge.FeaturesAgainst(r.Trajectory, nil, names)
			if err != nil {
				return nil, err
			}
			for k, f := range selectionFractions {
				if float64(r.Steps) <= f*steps+1e-9 {
					ds.atSelection[k][i] = len(ds.samples)
				}
			}
			ds.byRun[i] = append(ds.byRun[i], len(ds.samples))
			ds.samples = append(ds.samples, sample{x: x, y: !rec.Outcome.Failed(), weight: 1 / float64(len(reps))})
		}
	}
	return ds, nil
}

// on is the dataset as a model fitted on runs sees it: the relative
// features of an agent loop read against the succeeded runs among them
// (loopReferenceOf), never against a held-out run. The same samples, in
// the same order; ds itself when no feature is relative.
func (ds *dataset) on(runs []int) *dataset {
	if !ds.relative {
		return ds
	}
	key := fmt.Sprint(slices.Sorted(slices.Values(runs)))
	if v, ok := ds.views[key]; ok {
		return v
	}
	v := *ds
	v.ref = loopReferenceOf(ds.records, ds.replays, runs)
	v.samples = make([]sample, 0, len(ds.samples))
	for i := range ds.records {
		for _, r := range ds.replays[i] {
			// The names were checked when ds was made: no error is left.
			x, _ := judge.FeaturesAgainst(r.Trajectory, v.ref, ds.names)
			v.samples = append(v.samples, sample{x: x, y: ds.samples[len(v.samples)].y, weight: ds.samples[len(v.samples)].weight})
		}
	}
	ds.views[key] = &v
	return &v
}

// standardizer holds the mean and std of each used feature over a
// training set.
type standardizer struct{ mean, std []float64 }

func fitStandardizer(ds *dataset, idx []int, cols []int) standardizer {
	st := standardizer{mean: make([]float64, len(cols)), std: make([]float64, len(cols))}
	for j, c := range cols {
		var n, sum, sq float64
		for _, i := range idx {
			if v := ds.samples[i].x[c]; !math.IsNaN(v) {
				n++
				sum += v
				sq += v * v
			}
		}
		if n > 1 {
			st.mean[j] = sum / n
			st.std[j] = math.Sqrt(math.Max(0, sq/n-st.mean[j]*st.mean[j]))
		}
	}
	return st
}

// apply standardises the used columns of x; a missing value or a constant
// feature becomes 0.
func (st standardizer) apply(x []float64, cols []int) []float64 {
	z := make([]float64, len(cols))
	for j, c := range cols {
		if v := x[c]; !math.IsNaN(v) && st.std[j] > 1e-12 {
			z[j] = (v - st.mean[j]) / st.std[j]
		}
	}
	return z
}

type fitted struct {
	cols   []int
	names  []string
	st     standardizer
	lr     logistic
	lambda float64
	a, b   float64 // Platt
	// ref is what its relative features were read against.
	ref *judge.LoopReference
}

func fitOn(ds *dataset, idx []int, pool []string, cols []int, lambda float64) (fitted, error) {
	st := fitStandardizer(ds, idx, cols)
	x := make([][]float64, len(idx))
	y := make([]bool, len(idx))
	w := make([]float64, len(idx))
	for k, i := range idx {
		x[k], y[k], w[k] = st.apply(ds.samples[i].x, cols), ds.samples[i].y, ds.samples[i].weight
	}
	lr, err := fitLogistic(x, y, w, lambda)
	if err != nil {
		return fitted{}, err
	}
	names := make([]string, len(cols))
	for j, c := range cols {
		names[j] = pool[c]
	}
	return fitted{cols: cols, names: names, st: st, lr: lr, lambda: lambda, a: 1, b: 0, ref: ds.ref}, nil
}

func (f fitted) score(x []float64) float64 { return f.lr.score(f.st.apply(x, f.cols)) }

// successRate is the weighted share of succeeded samples among idx.
func successRate(ds *dataset, idx []int) float64 {
	var pos, tot float64
	for _, i := range idx {
		tot += ds.samples[i].weight
		if ds.samples[i].y {
			pos += ds.samples[i].weight
		}
	}
	return pos / tot
}

// atBaseRate moves f's intercept so that its mean predicted success over
// the samples idx (those it was fitted on) is rate instead of their own
// share of succeeded samples.
//
// A cross-validation fold's model is fitted without the held-out task
// families, so its base rate is the pool's with theirs taken out: the more
// the held-out families fail, the higher it is, and the higher it scores
// them. Scores pooled over folds then rank families against their outcomes
// and a Platt map or a pause threshold fitted on them reads the ranking
// within families as noise (on the shared mini-swe-agent runs, a slope of
// 0.009 on a model whose folds rank at 0.62). A model fitted on the whole
// pool has the pool's base rate and never sees a new job's families, so
// each fold model is given the pool's: rate is the share over every fold's
// runs, which the final model's intercept meets by construction.
func (f fitted) atBaseRate(ds *dataset, idx []int, rate float64) fitted {
	if rate <= 0 || rate >= 1 || len(idx) == 0 {
		return f
	}
	scores, weights := make([]float64, len(idx)), make([]float64, len(idx))
	for k, i := range idx {
		scores[k], weights[k] = f.score(ds.samples[i].x), ds.samples[i].weight
	}
	f.lr.b += offsetForMean(scores, weights, rate)
	return f
}

// subModel converts a fit into a sub-model, dropping constant features.
func (f fitted) subModel(name string) (overseer.SubModel, []string) {
	sm := overseer.SubModel{Name: name, Intercept: f.lr.b, Calibration: overseer.Calibration{Method: "platt", A: f.a, B: f.b}}
	var dropped []string
	for j, n := range f.names {
		if f.st.std[j] <= 1e-12 {
			dropped = append(dropped, n)
			continue
		}
		sm.Features = append(sm.Features, overseer.ModelFeature{Name: n, Mean: f.st.mean[j], Std: f.st.std[j], Weight: f.lr.w[j]})
	}
	return sm, dropped
}

// groupFolds assigns the runs of idx to k folds so that no task family is
// split: families largest first, each to the fold with the fewest runs.
func groupFolds(records []Record, idx []int, k int) [][]int {
	fam := map[string][]int{}
	for _, i := range idx {
		f := records[i].FamilyName()
		fam[f] = append(fam[f], i)
	}
	names := make([]string, 0, len(fam))
	for n := range fam {
		names = append(names, n)
	}
	sort.Slice(names, func(a, b int) bool {
		if len(fam[names[a]]) != len(fam[names[b]]) {
			return len(fam[names[a]]) > len(fam[names[b]])
		}
		return names[a] < names[b]
	})
	k = min(k, len(names))
	folds := make([][]int, k)
	for _, n := range names {
		best := 0
		for f := range folds {
			if len(folds[f]) < len(folds[best]) {
				best = f
			}
		}
		folds[best] = append(folds[best], fam[n]...)
	}
	return folds
}

func families(records []Record, idx []int) int {
	seen := map[string]bool{}
	for _, i := range idx {
		seen[records[i].FamilyName()] = true
	}
	return len(seen)
}

// otherFolds is every run of the folds but fold f: its training part.
func otherFolds(folds [][]int, f int) []int {
	var out []int
	for g := range folds {
		if g != f {
			out = append(out, folds[g]...)
		}
	}
	return out
}

func samplesOf(ds *dataset, runs []int) []int {
	var out []int
	for _, r := range runs {
		out = append(out, ds.byRun[r]...)
	}
	return out
}

// selectionFractions are the checkpoints whose AUROC selects features and
// penalty.
var selectionFractions = []float64{0.25, 0.5, 0.75}

// crossValidate fits on all folds but one, in turn, and returns the
// out-of-fold linear scores by sample index (each fold's model at the base
// rate of all folds' runs: [fitted.atBaseRate]) and the selection criterion:
// the mean over folds of the mean AUROC (failed runs positive) at 25, 50
// and 75 % of the runs, with its standard error over folds. Folds are never
// pooled, so the criterion does not depend on how each fold's scores are
// scaled.
func crossValidate(ds *dataset, folds [][]int, pool []string, cols []int, lambda float64) (map[int]float64, cvCriterion, error) {
	scores := map[int]float64{}
	var perFold []float64
	rate := successRate(ds, samplesOf(ds, slices.Concat(folds...)))
	for f := range folds {
		view := ds.on(otherFolds(folds, f))
		train := samplesOf(ds, otherFolds(folds, f))
		ft, err := fitOn(view, train, pool, cols, lambda)
		if err != nil {
			return nil, cvCriterion{}, err
		}
		ft = ft.atBaseRate(view, train, rate)
		for _, i := range samplesOf(ds, folds[f]) {
			scores[i] = ft.score(view.samples[i].x)
		}
		sum, n := 0.0, 0
		for k := range selectionFractions {
			var s []float64
			var failed []bool
			for _, r := range folds[f] {
				if i := ds.atSelection[k][r]; i >= 0 {
					s, failed = append(s, -scores[i]), append(failed, !ds.samples[i].y)
				}
			}
			if a := AUROC(s, failed); !math.IsNaN(a) {
				sum += a
				n++
			}
		}
		if n > 0 {
			perFold = append(perFold, sum/float64(n))
		}
	}
	return scores, criterionOf(perFold), nil
}

// cvCriterion is the selection criterion, a mean over folds, and its
// standard error.
type cvCriterion struct{ mean, se float64 }

func criterionOf(perFold []float64) cvCriterion {
	if len(perFold) == 0 {
		return cvCriterion{mean: 0.5}
	}
	mean := 0.0
	for _, v := range perFold {
		mean += v
	}
	mean /= float64(len(perFold))
	if len(perFold) < 2 {
		return cvCriterion{mean: mean}
	}
	ss := 0.0
	for _, v := range perFold {
		ss += (v - mean) * (v - mean)
	}
	return cvCriterion{mean: mean, se: math.Sqrt(ss/float64(len(perFold)-1)) / math.Sqrt(float64(len(perFold)))}
}

// smallestWithinOneSE is the first of a forward selection's steps (each
// one feature more than the one before) whose criterion is within one
// standard error of the best step's.
func smallestWithinOneSE(steps []cvCriterion) int {
	best := 0
	for i, c := range steps {
		if c.mean > steps[best].mean {
			best = i
		}
	}
	for i, c := range steps {
		if c.mean >= steps[best].mean-steps[best].se {
			return i
		}
	}
	return best
}

// maxSelectedFeatures bounds forward selection; minGain is the smallest
// rise of the criterion that lets forward selection go on.
const (
	maxSelectedFeatures = 6
	minGain             = 0.005
)

// selectModel chooses features by forward selection and then the L2
// penalty, both by grouped cross-validation over runs, and returns them
// with the out-of-fold scores of the chosen model (for calibration).
//
// Of the feature sets forward selection passes through, it keeps the
// smallest whose criterion is within one standard error of the best's
// (the one-standard-error rule): with a few task families per fold, a
// feature that wins the inner folds by less than their spread is more
// often fitted to those families than to the runs, and loses on new ones.
func selectModel(ds *dataset, runs []int, pool []string, lambdas []float64, k int) ([]int, float64, map[int]float64, error) {
	folds := groupFolds(ds.records, runs, k)
	if len(folds) < 2 {
		return nil, 0, nil, errors.New("cross-validation needs runs of at least two task families")
	}
	type step struct {
		cols []int
		crit cvCriterion
	}
	var path []step
	var cols []int
	for len(cols) < maxSelectedFeatures {
		bestCol, bestCrit := -1, cvCriterion{}
		for c := range pool {
			if slices.Contains(cols, c) {
				continue
			}
			_, crit, err := crossValidate(ds, folds, pool, append(slices.Clone(cols), c), 1)
			if err != nil {
				return nil, 0, nil, err
			}
			if bestCol < 0 || crit.mean > bestCrit.mean {
				bestCol, bestCrit = c, crit
			}
		}
		if bestCol < 0 || (len(path) > 0 && bestCrit.mean < path[len(path)-1].crit.mean+minGain) {
			break
		}
		cols = append(cols, bestCol)
		path = append(path, step{slices.Clone(cols), bestCrit})
	}
	if len(path) > 0 {
		crits := make([]cvCriterion, len(path))
		for i, st := range path {
			crits[i] = st.crit
		}
		cols = path[smallestWithinOneSE(crits)].cols
	}
	bestLambda, bestCrit := lambdas[0], math.Inf(-1)
	var bestScores map[int]float64
	for _, lambda := range lambdas {
		scores, crit, err := crossValidate(ds, folds, pool, cols, lambda)
		if err != nil {
			return nil, 0, nil, err
		}
		if crit.mean > bestCrit+1e-12 {
			bestLambda, bestCrit, bestScores = lambda, crit.mean, scores
		}
	}
	return cols, bestLambda, bestScores, nil
}

// fitCalibrated selects features and penalty by grouped CV over runs, fits
// the model on all of them and a Platt map on the out-of-fold scores.
func fitCalibrated(ds *dataset, runs []int, pool []string, lambdas []float64, k int) (fitted, float64, error) {
	cols, lambda, oof, err := selectModel(ds, runs, pool, lambdas, k)
	if err != nil {
		return fitted{}, 0, err
	}
	ft, err := fitOn(ds.on(runs), samplesOf(ds, runs), pool, cols, lambda)
	if err != nil {
		return fitted{}, 0, err
	}
	s := make([]float64, 0, len(oof))
	y := make([]bool, 0, len(oof))
	w := make([]float64, 0, len(oof))
	for _, i := range slices.Sorted(maps.Keys(oof)) {
		s, y, w = append(s, oof[i]), append(y, ds.samples[i].y), append(w, ds.samples[i].weight)
	}
	if ft.a, ft.b, err = fitPlatt(s, y, w); err != nil {
		return fitted{}, 0, err
	}
	if ft.a <= 0 {
		// A map that flattens or inverts the ranking is worse than none:
		// keep the regression's own probabilities.
		ft.a, ft.b = 1, 0
	}
	return ft, lambda, nil
}

// subData is one sub-model's training data: its spec, the dataset over
// its features and which runs carry its inputs.
type subData struct {
	spec     SubModelSpec
	ds       *dataset
	eligible map[int]bool
}

func newSubData(records []Record, replays [][]Replayed, spec SubModelSpec) (*subData, error) {
	ds, err := newDataset(records, replays, spec.Features)
	if err != nil {
		return nil, err
	}
	sd := &subData{spec: spec, ds: ds, eligible: map[int]bool{}}
	// Whether a run carries the telemetry a relative feature reads is
	// known only against a reference: the one of every run.
	every := make([]int, len(records))
	for r := range every {
		every[r] = r
	}
	all := ds.on(every)
	for r, idx := range ds.byRun {
		if len(idx) == 0 {
			continue
		}
		last := all.samples[idx[len(idx)-1]].x
		ok := true
		for c, name := range spec.Features {
			if overseer.IsTelemetryFeature(name) && math.IsNaN(last[c]) {
				ok = false
			}
		}
		sd.eligible[r] = ok
	}
	return sd, nil
}

func (sd *subData) runsOf(runs []int) []int {
	var out []int
	for _, r := range runs {
		if sd.eligible[r] {
			out = append(out, r)
		}
	}
	return out
}

// subFit is one fitted sub-model of a family.
type subFit struct {
	data *subData
	fit  fitted
}

// fitFamily fits every sub-model that enough of runs can train (runs of
// two task families, succeeded and failed), richest first; skipped says
// why the others were not.
func fitFamily(records []Record, subs []*subData, runs []int, lambdas []float64, k int) (fits []subFit, skipped map[string]string, err error) {
	skipped = map[string]string{}
	for _, sd := range subs {
		r := sd.runsOf(runs)
		if why := trainable(records, r); why != "" {
			skipped[sd.spec.Name] = why
			continue
		}
		ft, _, err := fitCalibrated(sd.ds, r, sd.spec.Features, lambdas, k)
		if err != nil {
			return nil, nil, fmt.Errorf("sub-model %s: %w", sd.spec.Name, err)
		}
		fits = append(fits, subFit{data: sd, fit: ft})
	}
	if len(fits) == 0 {
		// Said in the sub-models' order: a map printed with %v is Go's
		// syntax, not a sentence.
		why := make([]string, 0, len(subs))
		for _, sd := range subs {
			why = append(why, sd.spec.Name+": "+skipped[sd.spec.Name])
		}
		return nil, nil, fmt.Errorf("no sub-model can be fitted: %s", strings.Join(why, "; "))
	}
	return fits, skipped, nil
}

// trainable says why runs cannot train a sub-model, or "".
func trainable(records []Record, runs []int) string {
	succeeded, failed := 0, 0
	for _, r := range runs {
		if records[r].Outcome.Failed() {
			failed++
		} else {
			succeeded++
		}
	}
	if fams := families(records, runs); fams < 2 || succeeded == 0 || failed == 0 {
		return fmt.Sprintf("%d runs carry its inputs (%d succeeded, %d failed, %d task families): it needs both outcomes in at least two families",
			len(runs), succeeded, failed, fams)
	}
	return ""
}

// familyModel assembles fitted sub-models into a model file.
func familyModel(version string, fits []subFit) (*overseer.LearnedModel, []string) {
	m := &overseer.LearnedModel{Format: overseer.LearnedModelFormat, Version: version}
	var dropped []string
	for _, f := range fits {
		if slices.ContainsFunc(f.fit.names, judge.NeedsLoopReference) {
			m.LoopReference = f.fit.ref
		}
		if slices.ContainsFunc(f.data.spec.Features, isLoopFeature) {
			// A pool with an agent loop's whole-run counts is a loop
			// model's (they are never there on phases of work).
			m.Shape = overseer.ShapeAgentLoop
		}
		sm, d := f.fit.subModel(f.data.spec.Name)
		if len(sm.Features) == 0 {
			continue
		}
		m.SubModels = append(m.SubModels, sm)
		dropped = append(dropped, d...)
	}
	return m, dropped
}

// refit fits the sub-models of fits again on runs, keeping their features,
// penalties and calibration maps, at the base rate of pool (runs and the
// folds held out from them; see [fitted.atBaseRate]): the inner folds of
// the out-of-fold scoring that a fold's policy is calibrated on.
func refit(fits []subFit, records []Record, runs, pool []int) ([]subFit, error) {
	var out []subFit
	for _, f := range fits {
		r := f.data.runsOf(runs)
		if trainable(records, r) != "" {
			continue
		}
		train := samplesOf(f.data.ds, r)
		view := f.data.ds.on(r)
		ft, err := fitOn(view, train, f.data.spec.Features, f.fit.cols, f.fit.lambda)
		if err != nil {
			return nil, err
		}
		ft = ft.atBaseRate(view, train, successRate(f.data.ds, samplesOf(f.data.ds, f.data.runsOf(pool))))
		ft.a, ft.b = f.fit.a, f.fit.b
		out = append(out, subFit{data: f.data, fit: ft})
	}
	return out, nil
}

// Train fits a learned model on records: a family of sub-models
// ([SubModelSpecs]), each over its own features. Each boundary of each run
// is one example (weighted so that every run counts the same) of "this run
// succeeds" against the trajectory's features. Features and the L2 penalty
// are chosen by cross-validation grouped by task family, and a Platt map
// calibrates the out-of-fold scores. The reported figures come from nested
// grouped cross-validation: every run is scored, through the real
// [overseer.LearnedJudge], by a model fitted without its task family.
func Train(ctx context.Context, records []Record, opts TrainOptions) (*TrainResult, error) {
	if len(records) == 0 {
		return nil, fmt.Errorf("%w: %w", ErrTrain, ErrNoRuns)
	}
	if opts.Features == nil {
		opts.Features = DefaultFeaturesFor(records)
	}
	if opts.Lambdas == nil {
		opts.Lambdas = DefaultLambdas()
	}
	if opts.Folds == 0 {
		opts.Folds = 5
	}
	if opts.Budget == 0 {
		opts.Budget = 0.05
	}
	if opts.Promise == "" {
		opts.Promise = overseer.DefaultPromiseKind
	}
	if opts.Folds < 2 {
		return nil, fmt.Errorf("%w: %d folds: use at least 2", ErrTrain, opts.Folds)
	}
	replays := make([][]Replayed, len(records))
	for i, rec := range records {
		replays[i] = Replay(rec)
	}
	var subs []*subData
	for _, spec := range SubModelSpecs(opts.Features) {
		sd, err := newSubData(records, replays, spec)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrTrain, err)
		}
		subs = append(subs, sd)
	}
	all := make([]int, len(records))
	for i := range all {
		all[i] = i
	}
	nFamilies := families(records, all)
	if nFamilies < 3 {
		// Name the families: a run's family is derived from its id unless
		// set, and an importer's input (a .traj) has no field to set it.
		var names []string
		seen := map[string]bool{}
		for _, r := range records {
			if f := r.FamilyName(); !seen[f] {
				seen[f] = true
				names = append(names, f)
			}
		}
		return nil, fmt.Errorf("%w: nested cross-validation needs runs of at least three task families, and these %d runs are of %d (%s): "+
			"add runs of other tasks (a run's family is its task.family, else its id without the trailing number, as a SWE-bench instance's repository)",
			ErrTrain, len(records), nFamilies, joinAnd(names, "and"))
	}
	res := &TrainResult{Lambda: map[string]float64{}, CVByKind: []KindRates{{Kind: overseer.PromiseConfident}, {Kind: overseer.PromiseExpected}}}
	outer := groupFolds(records, all, opts.Folds)
	res.Folds = len(outer)
	res.CV = make([]ScoredRun, len(records))
	pick := func(runs []int) []Record {
		out := make([]Record, len(runs))
		for i, r := range runs {
			out[i] = records[r]
		}
		return out
	}
	perSub := map[string]*SubModelResult{}
	for _, sd := range subs {
		perSub[sd.spec.Name] = &SubModelResult{Name: sd.spec.Name, Runs: len(sd.runsOf(all))}
	}
	for f := range outer {
		train := otherFolds(outer, f)
		fits, _, err := fitFamily(records, subs, train, opts.Lambdas, opts.Folds-1)
		if err != nil {
			return nil, fmt.Errorf("%w: fold %d: %w", ErrTrain, f+1, err)
		}
		m, _ := familyModel(fmt.Sprintf("cv-fold-%d", f+1), fits)
		heldOut := pick(outer[f])
		testScored, err := Score(ctx, heldOut, ScoreOptions{Judge: &overseer.LearnedJudge{Model: m}})
		if err != nil {
			return nil, err
		}
		for i, r := range outer[f] {
			res.CV[r] = testScored[i]
		}
		res.FoldModels = append(res.FoldModels, FoldModel{Features: familyFeatures(m), HeldOut: len(outer[f]), Checkpoints: Checkpoints(testScored),
			Catches: CatchesAt(testScored, FixedFalsePauseRates)})
		// Each sub-model alone, on the held-out runs that carry its inputs.
		for _, sm := range m.SubModels {
			sd := subByName(subs, sm.Name)
			held := sd.runsOf(outer[f])
			alone := &overseer.LearnedModel{Format: m.Format, Version: m.Version, Shape: m.Shape, SubModels: []overseer.SubModel{sm},
				LoopReference: m.LoopReference}
			scored, err := Score(ctx, pick(held), ScoreOptions{Judge: &overseer.LearnedJudge{Model: alone}})
			if err != nil {
				return nil, err
			}
			r := perSub[sm.Name]
			r.FoldModels = append(r.FoldModels, FoldModel{Features: sm.FeatureNames(), HeldOut: len(held), Checkpoints: Checkpoints(scored)})
		}
		// The policy this fold would ship with: calibrated on its training
		// runs scored out of fold (inner folds), applied to its held-out runs.
		oof, err := outOfFold(ctx, records, fits, train, opts.Folds-1)
		if err != nil {
			return nil, fmt.Errorf("%w: fold %d: %w", ErrTrain, f+1, err)
		}
		for i := range res.CVByKind {
			k := &res.CVByKind[i]
			cal, err := Calibrate(oof, opts.Budget, k.Kind)
			if err != nil {
				k.Refused = append(k.Refused, fmt.Sprintf("fold %d: %v", f+1, err))
				continue
			}
			k.Rates.add(PolicyRatesOf(testScored, cal.Policy))
			k.addSpend(PauseSpendOf(heldOut, testScored, cal.Policy))
			k.gated = append(k.gated, gateRuns(testScored, cal.Policy, InForceOptions{})...)
		}
	}
	for i := range res.CVByKind {
		k := &res.CVByKind[i]
		k.InForce = InForce{Policy: fmt.Sprintf("certified %s in each fold, applied to its held-out runs", k.Kind)}
		k.InForce.GateFigures = gateFiguresOf(k.gated, func(g gatedRun) int { return g.judge })
		k.InForce.Judge = k.InForce.GateFigures
		// What a threshold on P set at each fixed hold rate would do to
		// the same held-out runs pooled: beside the certified policies,
		// the same rows eval prints.
		for _, rate := range FixedFalsePauseRates {
			k.InForce.AtHoldRates = append(k.InForce.AtHoldRates, atHoldRate(k.gated, rate))
		}
	}
	// The ranking at fixed spend: the same spends in every fold, set on
	// the held-out runs pooled.
	res.SpendAmounts = SpendAmounts(res.CV)
	for f := range outer {
		held := make([]ScoredRun, 0, len(outer[f]))
		for _, r := range outer[f] {
			held = append(held, res.CV[r])
		}
		res.FoldModels[f].AtSpend = CheckpointsAtSpend(held, res.SpendAmounts)
	}
	res.MeanAUROCAtSpend = meanOverFolds(res.FoldModels, func(f FoldModel) []Checkpoint { return f.AtSpend })
	for _, k := range res.CVByKind {
		if k.Kind == opts.Promise {
			res.CVPolicy, res.CVPolicyRefused = k.Rates, k.Refused
		}
	}
	fits, skipped, err := fitFamily(records, subs, all, opts.Lambdas, opts.Folds)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTrain, err)
	}
	if res.CalibrationRuns, err = outOfFold(ctx, records, fits, all, opts.Folds); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTrain, err)
	}
	res.MeanAUROC = meanFoldAUROC(res.FoldModels)
	res.Summary = TrainingSummary{Runs: len(records), Families: nFamilies, Boundaries: len(subs[0].ds.samples),
		Folds: res.Folds, CVAUROC: roundAll(res.MeanAUROC)}
	agents := map[string]bool{}
	for _, r := range records {
		if r.Outcome.Failed() {
			res.Summary.Failed++
		} else {
			res.Summary.Succeeded++
		}
		if r.Agent != "" && !agents[r.Agent] {
			agents[r.Agent] = true
			res.Summary.Agents = append(res.Summary.Agents, r.Agent)
		}
	}
	m, dropped := familyModel("", fits)
	if len(m.SubModels) == 0 {
		// Said here: Validate would only say the model has no sub-models.
		var selected []string
		for _, f := range fits {
			for _, n := range f.fit.names {
				if !slices.Contains(selected, n) {
					selected = append(selected, n)
				}
			}
		}
		return nil, fmt.Errorf("%w: every feature selected (%s) is the same at every boundary of the %d runs, so no sub-model has an input that varies: train on runs whose steps differ",
			ErrTrain, strings.Join(selected, ", "), len(records))
	}
	res.Summary.DroppedFeatures = dropped
	for _, f := range fits {
		res.Lambda[f.data.spec.Name] = f.fit.lambda
	}
	for _, sd := range subs {
		r := perSub[sd.spec.Name]
		r.Skipped = skipped[sd.spec.Name]
		r.MeanAUROC = meanFoldAUROC(r.FoldModels)
		r.Lambda = res.Lambda[sd.spec.Name]
		for i := range m.SubModels {
			if sm := &m.SubModels[i]; sm.Name == sd.spec.Name {
				r.Features = sm.FeatureNames()
				if sm.Training, err = json.Marshal(struct {
					Runs    int                `json:"runs"`
					Lambda  float64            `json:"lambda"`
					CVAUROC map[string]float64 `json:"cv_auroc,omitempty"`
				}{r.Runs, r.Lambda, roundAll(r.MeanAUROC)}); err != nil {
					return nil, err
				}
			}
		}
		res.SubModels = append(res.SubModels, *r)
	}
	if m.Training, err = json.Marshal(res.Summary); err != nil {
		return nil, err
	}
	if opts.NoLoopReference {
		m.LoopReference = nil
	}
	m.Version = opts.Version
	if m.Version == "" {
		m.Version = "learned-" + weightsHash(m)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTrain, err)
	}
	res.Model = m
	return res, nil
}

// outOfFold scores the runs of train, each by the family refitted without
// its task family (features, penalties and calibration kept from fits).
func outOfFold(ctx context.Context, records []Record, fits []subFit, train []int, k int) ([]ScoredRun, error) {
	folds := groupFolds(records, train, k)
	var out []ScoredRun
	for g := range folds {
		inner, err := refit(fits, records, otherFolds(folds, g), train)
		if err != nil {
			return nil, err
		}
		if len(inner) == 0 {
			continue
		}
		m, _ := familyModel("oof", inner)
		held := make([]Record, len(folds[g]))
		for i, r := range folds[g] {
			held[i] = records[r]
		}
		scored, err := Score(ctx, held, ScoreOptions{Judge: &overseer.LearnedJudge{Model: m}})
		if err != nil {
			return nil, err
		}
		out = append(out, scored...)
	}
	return out, nil
}

func subByName(subs []*subData, name string) *subData {
	for _, sd := range subs {
		if sd.spec.Name == name {
			return sd
		}
	}
	return nil
}

// familyFeatures lists every sub-model's features as "name:feature".
func familyFeatures(m *overseer.LearnedModel) []string {
	var out []string
	for _, sm := range m.SubModels {
		for _, f := range sm.FeatureNames() {
			out = append(out, sm.Name+":"+f)
		}
	}
	return out
}

func roundAll(m map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		out[k] = round4(v)
	}
	return out
}

func weightsHash(m *overseer.LearnedModel) string {
	h := sha256.New()
	for _, sm := range m.SubModels {
		fmt.Fprintf(h, "%s\n", sm.Name)
		for _, f := range sm.Features {
			fmt.Fprintf(h, "%s %g %g %g\n", f.Name, f.Mean, f.Std, f.Weight)
		}
		fmt.Fprintf(h, "%g %g %g\n", sm.Intercept, sm.Calibration.A, sm.Calibration.B)
	}
	return hex.EncodeToString(h.Sum(nil))[:10]
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// isLoopFeature says the feature reads an agent loop's whole-run counts
// (overseer.LoopFeatures).
func isLoopFeature(name string) bool { return slices.Contains(overseer.LoopFeatures(), name) }

// DefaultFeaturesFor is the feature pool [Train] selects from for records:
// an agent's runs (UnitStep), which replay as agent loops, are fit on the
// loop's features (overseer.LoopFeatures); jobs of phases on
// [DefaultFeatures].
func DefaultFeaturesFor(records []Record) []string {
	if ShapeOfRecords(records) == overseer.ShapeAgentLoop {
		return DefaultLoopFeatures()
	}
	return DefaultFeatures()
}

// DefaultLoopFeatures are the features a loop model is selected from
// unless told otherwise: an agent loop's rates, streaks and shares, and
// its turns and tokens read against the succeeded runs' at the same turn
// (the relative features, [judge.NeedsLoopReference]); not its sizes
// on its own agent's scale (turns so far, tokens per turn). A model that
// learned one agent's run lengths or context size would read another
// agent's longer runs or larger prompt as runs going wrong, and pause them
// all; the relative features read every type by its own succeeded runs.
func DefaultLoopFeatures() []string {
	var out []string
	for _, n := range overseer.LoopFeatures() {
		if !overseer.IsCumulativeFeature(n) && !judge.IsAgentScaleFeature(n) {
			out = append(out, n)
		}
	}
	return out
}

// loopReferenceOf is the LoopReference of the succeeded agent loops among
// runs (replays holds each record's Replay), nil when they are fewer than
// [judge.MinLoopReferenceRuns] or not loops.
func loopReferenceOf(records []Record, replays [][]Replayed, runs []int) *judge.LoopReference {
	var tokens [][]judge.TurnTokens
	for _, r := range runs {
		if records[r].Outcome.Failed() {
			continue
		}
		var byTurn []judge.TurnTokens
		for _, b := range replays[r] {
			if t := b.Trajectory; t.Loop.ModelCalls > len(byTurn) {
				byTurn = append(byTurn, judge.TurnTokens{Input: t.InputTokens, Output: t.OutputTokens})
			}
		}
		if len(byTurn) > 0 {
			tokens = append(tokens, byTurn)
		}
	}
	ref, err := judge.NewLoopReference(tokens)
	if err != nil {
		return nil
	}
	return ref
}
