package learn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
)

// Defaults of [DecideOptions].
const (
	DefaultBudget      = 0.05
	DefaultHoldOut     = 0.20
	DefaultMinFamilies = 3
)

// DecideOptions configure [Decide]. The zero value works.
type DecideOptions struct {
	// Budget is the false-pause promise, default DefaultBudget (5 %).
	Budget float64
	// HoldOut is the share of the newest runs held out of training to
	// compare the candidate and the current model on, default 20 %.
	HoldOut float64
	// MinFamilies is the task families training needs, default 3.
	MinFamilies int
	// Promise is the kind of false-pause promise the candidate's policy is
	// certified for, default overseer.DefaultPromiseKind.
	Promise overseer.PromiseKind
	// PauseBudget, when set, is the share of jobs a recalibrated model's
	// policy may pause (a reviewer-load control, eval.BudgetPolicy) until
	// a promise can be certified; without it such a policy never pauses
	// on P.
	PauseBudget float64
	// Version names the candidate; default a hash of its weights.
	Version string
	// For is the workflow type the jobs are of; a refit names it in its
	// training summary, so its verdicts say they are at stage 3.
	For string `json:"-"`
}

func (o *DecideOptions) defaults() {
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	if o.HoldOut == 0 {
		o.HoldOut = DefaultHoldOut
	}
	if o.MinFamilies == 0 {
		o.MinFamilies = DefaultMinFamilies
	}
	if o.Promise == "" {
		o.Promise = overseer.DefaultPromiseKind
	}
}

// runsNeeded is the succeeded runs a promise of the options' kind takes.
func (o DecideOptions) runsNeeded() int {
	if o.Promise == overseer.PromiseExpected {
		return eval.ConformalRunsNeeded(o.Budget)
	}
	return eval.RunsNeeded(o.Budget, eval.PromiseConfidence)
}

// promiseWords says the options' promise in a few words.
func (o DecideOptions) promiseWords() string {
	if o.Promise == overseer.PromiseExpected {
		return fmt.Sprintf("a %.0f%% false-pause promise in expectation", 100*o.Budget)
	}
	return fmt.Sprintf("a %.0f%% false-pause promise at %.0f%% confidence", 100*o.Budget, 100*eval.PromiseConfidence)
}

// Readiness says whether labelled runs are enough to refit on.
type Readiness struct {
	Runs      int `json:"runs"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Families  int `json:"families"`
	// TrainSucceeded are the succeeded runs left for training once the
	// newest runs are held out; RunsNeeded what the promise needs there.
	TrainSucceeded int `json:"train_succeeded"`
	RunsNeeded     int `json:"runs_needed"`
	// TrainFamilies are the task families among the runs left for
	// training: grouped cross-validation needs MinFamilies of them.
	TrainFamilies int  `json:"train_families"`
	Ready         bool `json:"ready"`
	// Sentence says it in one sentence; when not ready, how many more
	// labelled runs are needed.
	Sentence string `json:"sentence"`
	// Stage is the type's calibration stage before the round (see
	// StageOf); Recalibrate says whether stage 1 can run when a refit
	// cannot; Next says what the round does next, or what the next stage
	// needs, in one sentence.
	Stage       int    `json:"stage"`
	Recalibrate bool   `json:"recalibrate,omitempty"`
	Next        string `json:"next,omitempty"`
	// StageNeeds says how many closed jobs each stage needs at the
	// type's success rate (eval.StageNeeds).
	StageNeeds string `json:"stage_needs,omitempty"`
}

// split holds out the first HoldOut share of records, newest first (as
// ops.Export returns them).
func split(records []eval.Record, holdOut float64) (held, train []eval.Record) {
	n := int(math.Ceil(holdOut * float64(len(records))))
	n = min(n, len(records))
	return records[:n], records[n:]
}

// Ready checks records (labels applied, newest first) against the promise.
func Ready(records []eval.Record, opts DecideOptions) Readiness {
	opts.defaults()
	r := Readiness{Runs: len(records), RunsNeeded: opts.runsNeeded()}
	fams := map[string]bool{}
	for _, rec := range records {
		fams[rec.FamilyName()] = true
		if rec.Outcome.Failed() {
			r.Failed++
		} else {
			r.Succeeded++
		}
	}
	r.Families = len(fams)
	// What a refit needs where it needs it: the promise's succeeded runs,
	// failed runs and task families among the older runs it trains on;
	// both outcomes among the newest it measures the candidate on.
	held, train := split(records, opts.HoldOut)
	trainFamilies := map[string]bool{}
	trainFailed := 0
	for _, rec := range train {
		trainFamilies[rec.FamilyName()] = true
		if rec.Outcome.Failed() {
			trainFailed++
		} else {
			r.TrainSucceeded++
		}
	}
	r.TrainFamilies = len(trainFamilies)
	heldFailed := 0
	for _, rec := range held {
		if rec.Outcome.Failed() {
			heldFailed++
		}
	}
	var missing []string
	if more := r.RunsNeeded - r.TrainSucceeded; more > 0 {
		// Every new run is newest: a share HoldOut of them is held out.
		total := int(math.Ceil(float64(more) / (1 - opts.HoldOut)))
		missing = append(missing, fmt.Sprintf("about %d more succeeded runs (%d to train on beyond the newest %.0f%% held out)", total, more, 100*opts.HoldOut))
	}
	if more := opts.MinFamilies - r.Families; more > 0 {
		missing = append(missing, fmt.Sprintf("runs of %d more task families", more))
	} else if more := opts.MinFamilies - r.TrainFamilies; more > 0 {
		missing = append(missing, fmt.Sprintf("runs of %d more task families among the older runs (the newest %.0f%% held out have %d of their own)", more, 100*opts.HoldOut, r.Families-r.TrainFamilies))
	}
	if trainFailed == 0 || heldFailed == 0 {
		missing = append(missing, "failed runs both among the newest and the older runs")
	}
	if len(held) > 0 && heldFailed == len(held) {
		missing = append(missing, "succeeded runs among the newest")
	}
	have := fmt.Sprintf("%d labelled runs (%d succeeded, %d failed, %d task families)", r.Runs, r.Succeeded, r.Failed, r.Families)
	if len(missing) == 0 {
		r.Ready = true
		r.Sentence = fmt.Sprintf("%s: enough to refit and keep %s (%d succeeded runs to train on, %d needed)",
			have, opts.promiseWords(), r.TrainSucceeded, r.RunsNeeded)
		return r
	}
	r.Sentence = fmt.Sprintf("%s: %s takes %d succeeded runs to train on and %d task families; needs %s",
		have, opts.promiseWords(), r.RunsNeeded, opts.MinFamilies, joinAnd(missing))
	return r
}

func joinAnd(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	out := s[0]
	for _, x := range s[1 : len(s)-1] {
		out += ", " + x
	}
	return out + " and " + s[len(s)-1]
}

// Figures are a candidate's and the current model's measures on the
// held-out newest runs.
type Figures struct {
	// Stage is the calibration stage the candidate would put the type at
	// (overseer.StageRecalibrated …); 0 for a refit of a round before the
	// stages, which is overseer.StageRefit.
	Stage   int `json:"stage,omitempty"`
	Trained int `json:"trained"`
	HeldOut int `json:"held_out"`
	// Calibration is the candidate's policy chosen on its out-of-fold
	// training runs; CalibrationError why none could be.
	Calibration      *eval.Calibration `json:"calibration,omitempty"`
	CalibrationError string            `json:"calibration_error,omitempty"`
	// Promise is the candidate's policy checked on the held-out runs.
	Promise *eval.PromiseCheck `json:"promise,omitempty"`
	// CandidateAUROCSteps and CurrentAUROCSteps are the ranking after
	// eval.LeadSteps steps among the runs still running then, as a live
	// judge sees them: the figure a round's sentence leads with, and the
	// one a refit is promoted on (it ranks no worse here, when both can
	// be measured).
	CandidateAUROCSteps float64 `json:"candidate_auroc_10_steps"`
	CurrentAUROCSteps   float64 `json:"current_auroc_10_steps"`
	// AUROC at 50 % of each run's steps on the held-out runs: a point that
	// knows each run's length, which no live judge does. Kept for reading
	// beside the online ranking; no decision rests on it.
	CandidateAUROC float64 `json:"candidate_auroc_50"`
	CurrentAUROC   float64 `json:"current_auroc_50"`
	// CandidateBrier and CurrentBrier are a recalibration's measure: the
	// Brier score at 50 % of each job, on the jobs it was fitted to.
	CandidateBrier float64            `json:"candidate_brier_50,omitempty"`
	CurrentBrier   float64            `json:"current_brier_50,omitempty"`
	Current        string             `json:"current"`
	CurrentPromise *eval.PromiseCheck `json:"current_promise,omitempty"`
	Labels         eval.GateLabels    `json:"gate_labels"`
}

// figure is a measure of [Figures] as JSON holds it: null when it could
// not be measured (NaN: an AUROC on runs of one outcome, …), read back as
// NaN, since JSON has no NaN and a round's result must encode whatever
// the runs were.
type figure float64

func (f figure) MarshalJSON() ([]byte, error) {
	if v := float64(f); math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

func (f *figure) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		*f = figure(math.NaN())
		return nil
	}
	return json.Unmarshal(data, (*float64)(f))
}

// figuresJSON is Figures with its measures as figures.
type figuresJSON struct {
	plainFigures
	CandidateAUROCSteps *figure `json:"candidate_auroc_10_steps,omitempty"`
	CurrentAUROCSteps   *figure `json:"current_auroc_10_steps,omitempty"`
	CandidateAUROC      figure  `json:"candidate_auroc_50"`
	CurrentAUROC        figure  `json:"current_auroc_50"`
	CandidateBrier      figure  `json:"candidate_brier_50,omitempty"`
	CurrentBrier        figure  `json:"current_brier_50,omitempty"`
}

type plainFigures Figures

// MarshalJSON writes a measure that could not be measured as null.
func (f Figures) MarshalJSON() ([]byte, error) {
	steps := func(v float64) *figure { x := figure(v); return &x }
	return json.Marshal(figuresJSON{plainFigures(f), steps(f.CandidateAUROCSteps), steps(f.CurrentAUROCSteps),
		figure(f.CandidateAUROC), figure(f.CurrentAUROC), figure(f.CandidateBrier), figure(f.CurrentBrier)})
}

// UnmarshalJSON reads a null measure as NaN (not measured).
func (f *Figures) UnmarshalJSON(data []byte) error {
	var v figuresJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*f = Figures(v.plainFigures)
	f.CandidateAUROC, f.CurrentAUROC, f.CandidateBrier, f.CurrentBrier = float64(v.CandidateAUROC), float64(v.CurrentAUROC), float64(v.CandidateBrier), float64(v.CurrentBrier)
	// Figures written before the online ranking have none: not measured.
	f.CandidateAUROCSteps, f.CurrentAUROCSteps = math.NaN(), math.NaN()
	if v.CandidateAUROCSteps != nil {
		f.CandidateAUROCSteps = float64(*v.CandidateAUROCSteps)
	}
	if v.CurrentAUROCSteps != nil {
		f.CurrentAUROCSteps = float64(*v.CurrentAUROCSteps)
	}
	return nil
}

// RankedOnline says whether the candidate's and the current model's
// ranking after eval.LeadSteps steps were both measured.
func (f Figures) RankedOnline() bool {
	return !math.IsNaN(f.CandidateAUROCSteps) && !math.IsNaN(f.CurrentAUROCSteps)
}

// RanksWorseOnline says the candidate ranks worse than the current model
// after eval.LeadSteps steps, or could not be measured where the current
// model could.
func (f Figures) RanksWorseOnline() bool {
	if math.IsNaN(f.CurrentAUROCSteps) {
		return false
	}
	return math.IsNaN(f.CandidateAUROCSteps) || f.CandidateAUROCSteps < f.CurrentAUROCSteps
}

// Online says whether the figures carry the ranking after eval.LeadSteps
// steps (figures of rounds before it do not).
func (f Figures) Online() bool {
	return !math.IsNaN(f.CandidateAUROCSteps) || !math.IsNaN(f.CurrentAUROCSteps)
}

// says is a measure in a round's sentence: three decimals, or "not
// measurable" for NaN.
func says(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "not measurable"
	}
	return fmt.Sprintf("%.3f", v)
}

// Decision is what [Decide] concluded about one candidate.
type Decision struct {
	Version string `json:"version"`
	Promote bool   `json:"promote"`
	// Reason says why, in one sentence with the figures.
	Reason  string  `json:"reason"`
	Figures Figures `json:"figures"`
	// Model and Policy are the candidate's files (when one was fitted).
	Model  json.RawMessage `json:"-"`
	Policy json.RawMessage `json:"-"`
}

// Current is the model jobs use now and its policy.
type Current struct {
	Model  *overseer.LearnedModel
	Policy overseer.Policy
}

// ForRecords is the model and policy that judge jobs like records in the
// plugin: [Current.ForShape] the shape they replay as
// ([eval.ShapeOfRecords]); c when there are none.
func (c Current) ForRecords(records []eval.Record) Current {
	if len(records) == 0 {
		return c
	}
	return c.ForShape(eval.ShapeOfRecords(records))
}

// ForShape is the model and policy that judge jobs of shape s in the
// plugin: for an agent loop, the shipped loop model under the policy's
// loop part when the current model is one of phases (the learned judge
// never asks a phase model about a loop), so that a round recalibrates and
// compares the judge that answers the type's jobs.
func (c Current) ForShape(s overseer.Shape) Current {
	if s != overseer.ShapeAgentLoop || c.Model.Shape == overseer.ShapeAgentLoop {
		return c
	}
	return Current{Model: overseer.DefaultLoopModel(), Policy: c.Policy.ForShape(overseer.ShapeAgentLoop)}
}

// ErrNotReady is returned by Decide when the runs are too few.
var ErrNotReady = errors.New("too few labelled runs")

// Decide refits a candidate on records (newest first; gate labels are
// applied here) and decides whether to promote it over current:
//
//   - the newest HoldOut share of the runs is held out; the rest trains
//     (eval.Train, grouped by task family) and the candidate's policy is
//     calibrated on its out-of-fold training runs (eval.Calibrate must
//     certify the promise);
//   - on the held-out runs the candidate's policy must keep the promise
//     (eval.CheckPromise neither broken nor above it);
//   - the candidate must rank no worse as a live judge sees the runs: its
//     AUROC after eval.LeadSteps steps, among the held-out runs still
//     running then, at least the current model's. Where that cannot be
//     measured for both (runs shorter than that, or of one outcome among
//     those still running) the ranking is not compared and the round says
//     so: a figure at a share of each run's length knows the run's length,
//     which no live judge does, and decides nothing.
func Decide(ctx context.Context, records []eval.Record, current Current, opts DecideOptions) (Decision, error) {
	opts.defaults()
	records = append([]eval.Record(nil), records...)
	labels := eval.UseGateLabels(records)
	if r := Ready(records, opts); !r.Ready {
		return Decision{}, fmt.Errorf("%w: %s", ErrNotReady, r.Sentence)
	}
	held, train := split(records, opts.HoldOut)
	d := Decision{Figures: Figures{Stage: overseer.StageRefit, Trained: len(train), HeldOut: len(held), Labels: labels, Current: current.Model.Version}}
	res, err := eval.Train(ctx, train, eval.TrainOptions{Budget: opts.Budget, Version: opts.Version, Promise: opts.Promise})
	if err != nil {
		if ctx.Err() != nil {
			return d, err
		}
		// Runs that cannot be fitted (a fold without a failed run, …) are a
		// refusal of this round, not a failure of the loop.
		d.Reason = fmt.Sprintf("refused: no candidate could be fitted on the %d older runs: %v", len(train), err)
		return d, nil
	}
	d.Version = res.Model.Version
	if opts.For != "" {
		res.Model.Training = withWorkflowType(res.Model.Training, opts.For)
	}
	// The relative verdict goes on after a refit: the candidate's answers
	// among all the type's recent jobs, as a recalibration stores them.
	res.Model.Reference = eval.ReferenceOf(records, res.Model)
	// A candidate that does not validate (a number no JSON holds, …) is
	// refused with why, not a round that fails.
	if err := res.Model.Validate(); err != nil {
		d.Reason = fmt.Sprintf("refused %s: its model file does not hold: %v", d.Version, err)
		return d, nil
	}
	if d.Model, err = json.Marshal(res.Model); err != nil {
		return d, err
	}
	cand, err := eval.Score(ctx, held, eval.ScoreOptions{Judge: &overseer.LearnedJudge{Model: res.Model}})
	if err != nil {
		return d, err
	}
	cur, err := eval.Score(ctx, held, eval.ScoreOptions{Judge: &overseer.LearnedJudge{Model: current.Model}})
	if err != nil {
		return d, err
	}
	d.Figures.measureRanking(cand, cur)
	cp := eval.CheckPromise(eval.PolicyRatesOf(cur, current.Policy), opts.Budget)
	d.Figures.CurrentPromise = &cp
	ranks := fmt.Sprintf("on the %d newest runs, %s", len(held), d.Figures.rankingWords("runs", "the current model "+current.Model.Version+"'s"))
	cal, err := eval.Calibrate(res.CalibrationRuns, opts.Budget, opts.Promise)
	if err != nil {
		d.Figures.CalibrationError = err.Error()
		d.Reason = fmt.Sprintf("refused %s: its out-of-fold runs cannot certify the promise (%v); %s", d.Version, err, ranks)
		return d, nil
	}
	d.Figures.Calibration = &cal
	if d.Policy, err = overseer.MarshalPolicy(cal.Policy, cal); err != nil {
		d.Reason = fmt.Sprintf("refused %s: its policy does not hold: %v; %s", d.Version, err, ranks)
		return d, nil
	}
	pc := eval.CheckPromise(eval.PolicyRatesOf(cand, cal.Policy), opts.Budget)
	d.Figures.Promise = &pc
	switch {
	case pc.Verdict == eval.PromiseBroken || pc.Verdict == eval.PromiseAbove:
		d.Reason = fmt.Sprintf("refused %s: on the %d newest runs it did not train on, %s; %s", d.Version, len(held), pc, ranks)
	case d.Figures.RanksWorseOnline():
		d.Reason = fmt.Sprintf("refused %s: it ranks worse after %d steps among the runs still running then: %s", d.Version, eval.LeadSteps, ranks)
	case !d.Figures.RankedOnline():
		d.Promote = true
		d.Reason = fmt.Sprintf("promote %s: %s; the ranking after %d steps could not be compared on these runs (shorter, or of one outcome among those still running): promoted on its promise alone; %s",
			d.Version, pc, eval.LeadSteps, ranks)
	default:
		d.Promote = true
		d.Reason = fmt.Sprintf("promote %s: %s; %s", d.Version, pc, ranks)
	}
	return d, nil
}

// measureRanking sets the candidate's and the current model's AUROC
// after eval.LeadSteps steps and at 50 % of each run.
func (f *Figures) measureRanking(cand, cur []eval.ScoredRun) {
	f.CandidateAUROCSteps = float64(eval.AfterSteps(cand, eval.LeadSteps).AUROC)
	f.CurrentAUROCSteps = float64(eval.AfterSteps(cur, eval.LeadSteps).AUROC)
	f.CandidateAUROC, f.CurrentAUROC = auroc50(cand), auroc50(cur)
}

// rankingWords says the ranking figures, the online one first: "AUROC
// after 10 steps, among the runs still running then, 0.612 against the
// current model learned-a's 0.598; at 50% of each run (which knows the
// run's length) …", current naming whose figures the candidate's stand
// against.
func (f Figures) rankingWords(runs, current string) string {
	return fmt.Sprintf("AUROC after %d steps, among the %s still running then, %s against %s %s; at 50%% of each run (which knows the run's length) %s against %s",
		eval.LeadSteps, runs, says(f.CandidateAUROCSteps), current, says(f.CurrentAUROCSteps), says(f.CandidateAUROC), says(f.CurrentAUROC))
}

// auroc50 is the AUROC at 50 % of each run's steps, NaN when unmeasurable.
func auroc50(runs []eval.ScoredRun) float64 {
	for _, c := range eval.Checkpoints(runs) {
		if c.At == "50%" {
			return float64(c.AUROC)
		}
	}
	return math.NaN()
}

// withWorkflowType adds the workflow type to a model's training summary.
func withWorkflowType(training json.RawMessage, workflowType string) json.RawMessage {
	summary := map[string]any{}
	if len(training) > 0 {
		if err := json.Unmarshal(training, &summary); err != nil {
			summary = map[string]any{"summary": training}
		}
	}
	summary["workflow_type"] = workflowType
	data, err := json.Marshal(summary)
	if err != nil {
		return training
	}
	return data
}
