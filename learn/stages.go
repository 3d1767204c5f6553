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

// StageOf is the calibration stage the current model and policy give a
// type: the model's own (overseer.LearnedModel.Stage), and
// overseer.StageCertified for a recalibrated model whose policy carries a
// promise.
func StageOf(cur Current) int {
	s := cur.Model.Stage()
	if s == overseer.StageRecalibrated && cur.Policy.Promise.Certified() {
		return overseer.StageCertified
	}
	return s
}

// stageNames say the stages in a few words.
var stageNames = map[int]string{
	overseer.StageUncalibrated: "stage 0, not calibrated for the type",
	overseer.StageRecalibrated: "stage 1, recalibrated",
	overseer.StageCertified:    "stage 2, recalibrated with a certified pause policy",
	overseer.StageRefit:        "stage 3, refitted on the type's jobs",
}

// recalibrationReady says whether stage 1 can run on records (labels
// applied) for a type whose current model is cur, and, when it cannot,
// what it needs.
func recalibrationReady(records []eval.Record, cur Current) (bool, string) {
	succeeded, failed := eval.Outcomes(records)
	if r := cur.Model.Recalibration; r != nil && r.Runs >= len(records) {
		return false, fmt.Sprintf("it is recalibrated on %d jobs already; it recalibrates again when more have closed", r.Runs)
	}
	if cur.Model.Stage() == overseer.StageRefit {
		return false, "it was refitted on the type's jobs: recalibration has nothing to add"
	}
	min := eval.DefaultMinRecalibrationRuns
	switch {
	case len(records) < min:
		return false, fmt.Sprintf("stage 1 (recalibration) needs %d closed jobs of both outcomes; %d have closed", min, len(records))
	case succeeded == 0 || failed == 0:
		return false, fmt.Sprintf("stage 1 (recalibration) needs closed jobs of both outcomes; all %d %s", len(records), map[bool]string{true: "succeeded", false: "failed"}[failed == 0])
	}
	return true, ""
}

// DecideRecalibration does stage 1 for workflowType on records (newest
// first, labels applied): it recalibrates the current model on them and
// promotes the result when its probabilities fit the jobs better than the
// current model's do (Brier score at 50 % of each job). The candidate's
// policy is certified on the same jobs when they allow the promise (stage
// 2: a recalibration fits two numbers per sub-model, so scoring them on
// the jobs it was fitted to flatters it little; a loop model, which reads
// a job against the type's succeeded jobs, is certified out of fold), and
// otherwise has bands from the jobs and no pause on P.
func DecideRecalibration(ctx context.Context, records []eval.Record, current Current, workflowType string, opts DecideOptions) (Decision, error) {
	opts.defaults()
	records = append([]eval.Record(nil), records...)
	labels := eval.UseGateLabels(records)
	d := Decision{Figures: Figures{Stage: overseer.StageRecalibrated, Trained: len(records), Labels: labels, Current: current.Model.Version}}
	base := current.Model
	rec, err := eval.Recalibrate(records, base, eval.RecalibrateOptions{For: workflowType, Version: opts.Version})
	if err != nil {
		d.Reason = fmt.Sprintf("refused a recalibration: %v", err)
		return d, nil
	}
	d.Version = rec.Version
	if d.Model, err = json.Marshal(rec); err != nil { // Recalibrate validated it: numbers finite
		return d, err
	}
	cand, err := eval.Score(ctx, records, eval.ScoreOptions{Judge: &overseer.LearnedJudge{Model: rec}})
	if err != nil {
		return d, err
	}
	cur, err := eval.Score(ctx, records, eval.ScoreOptions{Judge: &overseer.LearnedJudge{Model: current.Model}})
	if err != nil {
		return d, err
	}
	d.Figures.CandidateBrier, d.Figures.CurrentBrier = brier50(cand), brier50(cur)
	d.Figures.measureRanking(cand, cur)
	fit := fmt.Sprintf("Brier at 50%% on the %d closed jobs %s against the current model %s's %s (%s)",
		len(records), says(d.Figures.CandidateBrier), current.Model.Version, says(d.Figures.CurrentBrier), d.Figures.rankingWords("jobs", "its"))
	policy := eval.UncertifiedPolicy(cand, fmt.Sprintf("stage 1: bands from %d %s jobs; no pause on P until a promise can be certified", len(records), workflowType), current.Policy)
	uncertified := "no pause on P until a promise can be certified"
	// A model that reads a loop against the type's own succeeded runs
	// reads each of these against itself: its pauses are certified on
	// each job scored by the candidate recalibrated without the job's
	// task family (eval.OutOfFoldScores).
	certifyOn, err := cand, error(nil)
	if rec.NeedsLoopReference() {
		var oof eval.OutOfFold
		if oof, err = eval.OutOfFoldScores(ctx, records, rec, eval.RecalibrateOptions{For: workflowType}, eval.ScoreOptions{}); err != nil && !errors.Is(err, eval.ErrNoOutOfFoldScores) {
			return d, err
		}
		certifyOn = oof.Runs
	}
	var cal eval.Calibration
	if err == nil {
		cal, err = eval.Calibrate(certifyOn, opts.Budget, opts.Promise)
	}
	if err == nil {
		policy, d.Figures.Calibration, d.Figures.Stage = cal.Policy, &cal, overseer.StageCertified
	} else {
		d.Figures.CalibrationError = err.Error()
		if opts.PauseBudget > 0 {
			if bp, err := eval.BudgetPolicy(cand, opts.PauseBudget, policy); err == nil {
				policy = bp
				uncertified = bp.PauseBudget.String() + ", until a promise can be certified"
			} else {
				uncertified += " (" + err.Error() + ")"
			}
		}
	}
	var calibration any
	if d.Figures.Calibration != nil {
		calibration = d.Figures.Calibration
	}
	if d.Policy, err = overseer.MarshalPolicy(policy, calibration); err != nil {
		d.Reason = fmt.Sprintf("refused %s (stage 1): its policy does not hold: %v", d.Version, err)
		return d, nil
	}
	if math.IsNaN(d.Figures.CandidateBrier) || !(d.Figures.CandidateBrier < d.Figures.CurrentBrier) {
		d.Reason = fmt.Sprintf("refused %s (stage 1): its probabilities fit no better: %s", d.Version, fit)
		return d, nil
	}
	d.Promote = true
	d.Reason = fmt.Sprintf("promote %s (%s): %s", d.Version, stageNames[d.Figures.Stage], fit)
	if d.Figures.Calibration == nil {
		d.Reason += "; " + uncertified + ": " + d.Figures.CalibrationError
	}
	return d, nil
}

// brier50 is the Brier score at 50 % of each run's steps, NaN when
// unmeasurable.
func brier50(runs []eval.ScoredRun) float64 {
	for _, c := range eval.Checkpoints(runs) {
		if c.At == "50%" {
			return float64(c.Brier)
		}
	}
	return math.NaN()
}
