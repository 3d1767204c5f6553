package eval

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/corohq/temporal-overseer/overseer"
)

// OutOfFoldFolds is how many groups of task families [OutOfFoldScores]
// deals the runs into.
const OutOfFoldFolds = 5

// ErrNoOutOfFoldScores is wrapped by the refusal of [OutOfFoldScores]
// when no fold's other runs could be recalibrated on, or the runs scored
// are of one outcome, which certifies nothing.
var ErrNoOutOfFoldScores = errors.New("no out-of-fold scores")

// OutOfFold is what [OutOfFoldScores] scored, and what it could not.
type OutOfFold struct {
	// Runs are the runs scored out of fold, in input order; runs of a
	// fold whose other runs were refused a recalibration are left out.
	Runs []ScoredRun
	// Folds counts the folds scored; Unscored the runs left out.
	Folds, Unscored int
}

// OutOfFoldScores scores each record by model recalibrated (stage 1,
// [Recalibrate] with opts) on the records of the other task families,
// dealt into [OutOfFoldFolds] groups (run by run where the runs have
// fewer than three families). A stage-1 model reads a run against its
// type's succeeded runs (the loop reference, the calibration's map): scored
// by the model recalibrated on them, a succeeded run is read against
// itself and looks more typical than a new one would, so a pause
// threshold certified on those scores pauses new runs more often than it
// promises. Certified on these instead, the threshold is one for the
// model recalibrated on all of them, and holds for new runs as it holds
// for each run read by a model that never saw it. score gives every
// option of [Score] but the judge, which is each fold's model.
func OutOfFoldScores(ctx context.Context, records []Record, model *overseer.LearnedModel, opts RecalibrateOptions, score ScoreOptions) (OutOfFold, error) {
	// Each fold keeps model's feature standardisation (label-free, chosen
	// when model was recalibrated on all the runs) and refits what reads
	// the labels and the succeeded runs: the calibration's map and the
	// loop reference.
	opts.keepStandardization = true
	fams := familyFolds(records, OutOfFoldFolds)
	foldOf := func(i int) int { return fams[records[i].FamilyName()] }
	if len(fams) < 3 {
		foldOf = func(i int) int { return i % OutOfFoldFolds }
	}
	scored := make([]*ScoredRun, len(records))
	var out OutOfFold
	var refusal error
	for k := range OutOfFoldFolds {
		var train, held []Record
		var at []int
		for i, rec := range records {
			if foldOf(i) == k {
				held, at = append(held, rec), append(at, i)
			} else {
				train = append(train, rec)
			}
		}
		if len(held) == 0 {
			continue
		}
		m, err := Recalibrate(train, model, opts)
		if err != nil {
			out.Unscored += len(held)
			refusal = err
			continue
		}
		score.Judge = &overseer.LearnedJudge{Model: m}
		runs, err := Score(ctx, held, score)
		if err != nil {
			return OutOfFold{}, err
		}
		for j, r := range runs {
			scored[at[j]] = &r
		}
		out.Folds++
	}
	if out.Folds == 0 {
		return OutOfFold{}, fmt.Errorf("%w: no fold of the %d runs left runs to recalibrate on: %w", ErrNoOutOfFoldScores, len(records), refusal)
	}
	failed := 0
	for _, r := range scored {
		if r != nil {
			out.Runs = append(out.Runs, *r)
			if r.Failed() {
				failed++
			}
		}
	}
	if succeeded := len(out.Runs) - failed; succeeded == 0 || failed == 0 {
		return OutOfFold{}, fmt.Errorf("%w: %d runs were left out (their fold's others too few to recalibrate on), and the %d scored are %d succeeded and %d failed",
			ErrNoOutOfFoldScores, out.Unscored, len(out.Runs), succeeded, failed)
	}
	return out, nil
}

// ReadsAgainstItsRuns says model reads an agent loop against the type's
// own succeeded runs (its loop reference) and took them from the
// succeeded runs among records: it was recalibrated (stage 1) on them, so
// each of them is read against itself, and a pause threshold is certified
// on their [OutOfFoldScores].
func ReadsAgainstItsRuns(model *overseer.LearnedModel, records []Record) bool {
	if model == nil || model.LoopReference == nil || !model.NeedsLoopReference() {
		return false
	}
	own, err := withOwnLoopReference(model, records)
	return err == nil && reflect.DeepEqual(own.LoopReference, model.LoopReference)
}
