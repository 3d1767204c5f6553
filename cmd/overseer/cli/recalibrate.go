package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
)

// Recalibrate is `overseer recalibrate`: stage 1 offline, on exported or
// imported runs of one workflow type or agent.
type Recalibrate struct{}

// Synopsis implements Command.
func (*Recalibrate) Synopsis() string {
	return "fit a learned model's probabilities to your own agent's closed runs (stage 1, no refit); writes a model file"
}

// Run implements Command.
func (*Recalibrate) Run(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("recalibrate", out)
	var runs runsFlags
	runs.register(fs)
	modelPath := fs.String("model", "", "model file to recalibrate (default: the shipped model)")
	modelOut := fs.String("out", "", "write the recalibrated model file here (required unless --curve)")
	forName := fs.String("for", "", "whose runs these are, named in every verdict (default: the base name of --traces)")
	version := fs.String("version", "", "version of the recalibrated model (default: the model's, -cal- and a hash)")
	minRuns := fs.Int("min-runs", eval.DefaultMinRecalibrationRuns, "fewest closed runs, of both outcomes, to recalibrate on")
	minSlope := fs.Int("min-slope-runs", eval.DefaultMinSlopeRuns, "fewest runs of each outcome before a sub-model's slope is refitted too")
	curve := fs.String("curve", "", "instead of writing a model, measure stage 1 by cross-validation grouped by task family on the first N runs, for each N of this comma-separated list (e.g. 10,20,30,40)")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *modelOut == "" && *curve == "" {
		return fmt.Errorf("%w: give --out FILE for the recalibrated model (or --curve N,N,… to measure)", ErrUsage)
	}
	var sizes []int
	if *curve != "" {
		for _, f := range strings.Split(*curve, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				return fmt.Errorf("%w: --curve: %q is not a number of runs; give e.g. 10,20,30", ErrUsage, f)
			}
			sizes = append(sizes, n)
		}
	}
	records, err := runs.load()
	if err != nil {
		return err
	}
	// The shipped model of the shape the runs replay as: agents' runs are
	// agent loops (eval.Replay).
	model := overseer.DefaultLearnedModel()
	if eval.ShapeOfRecords(records) == overseer.ShapeAgentLoop {
		model = overseer.DefaultLoopModel()
	}
	if *modelPath != "" {
		m, err := overseer.LoadLearnedModel(*modelPath)
		if err != nil {
			return fmt.Errorf("%w: --model: %v", ErrUsage, err)
		}
		model = m
	}
	eval.UseGateLabels(records)
	opts := eval.RecalibrateOptions{For: *forName, Version: *version, MinRuns: *minRuns, MinSlopeRuns: *minSlope}
	if opts.For == "" {
		opts.For = filepath.Base(filepath.Clean(runs.traces))
	}
	if sizes != nil {
		pts, err := eval.RecalibrationCurve(ctx, records, model, sizes, 5, opts)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(out, pts)
		}
		runs.printSource(out)
		printCurve(out, model.Version, len(records), pts)
		return nil
	}
	rec, err := eval.Recalibrate(records, model, opts)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(*modelOut, append(data, '\n'), 0o644); err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(out, struct {
			*overseer.Recalibration
			Reference *overseer.Reference `json:"reference,omitempty"`
		}{rec.Recalibration, rec.Reference})
	}
	r := rec.Recalibration
	runs.printSource(out)
	fmt.Fprintf(out, "model %s written to %s: %s, recalibrated (stage 1) on %d %s runs (%d succeeded, %d failed); no weight refitted\n",
		rec.Version, *modelOut, model.Version, r.Runs, r.For, r.Succeeded, r.Failed)
	for _, s := range r.SubModels {
		fmt.Fprintf(out, "  %-10s %s (%d runs reached it: %d succeeded, %d failed)\n", s.Name, s.Fitted, s.Runs, s.Succeeded, s.Failed)
	}
	if c := r.Restandardization; c != nil && c.Folds > 0 {
		verb := "kept the model's own"
		if c.Chosen {
			verb = "re-standardised the features on these runs"
		}
		fmt.Fprintf(out, "feature standardisation: %s (held-out at 50%% over %d folds, re-standardised against as is: Brier %.3f against %.3f, AUROC %.3f against %.3f)\n",
			verb, c.Folds, c.BrierRestandardized, c.BrierAsIs, c.AUROCRestandardized, c.AUROCAsIs)
	} else {
		fmt.Fprintf(out, "feature standardisation: kept the model's own (no fold could check re-standardisation)\n")
	}
	points := 0
	if rec.Reference != nil {
		points = len(rec.Reference.Points)
	}
	fmt.Fprintf(out, "reference for the relative verdict: %d points of a run with at least %d runs each\n", points, overseer.MinReferenceRuns)
	fmt.Fprintf(out, "use it: overseer eval --traces OTHER-RUNS --judge learned --model %s; or overseer model promote --model %s …\n", *modelOut, *modelOut)
	return nil
}

func printCurve(out io.Writer, model string, runs int, pts []eval.CurvePoint) {
	fmt.Fprintf(out, "stage 1 of %s on the first N runs, measured on the runs of held-out task families (5 folds grouped by family, %d runs): "+
		"the ranking after %d steps among the held-out runs still running then, all folds' scores pooled (the mean over folds beside it); "+
		"the Brier score at 50%% of the runs; the AUROC at 50%% of each run, which knows the run's length (no live judge does), mean over folds:\n", model, runs, eval.LeadSteps)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "N\tFOLDS RECALIBRATED\tHELD-OUT RUNS\tAUROC@%d STEPS POOLED (MEAN)\tBEFORE\tBRIER@50%%\tBEFORE\tBASE-RATE BRIER\tAUROC@50%% (KNOWS LENGTH)\tBEFORE\tSLOPE FITTED\n", eval.LeadSteps)
	lead := fmt.Sprintf("%d steps", eval.LeadSteps)
	for _, p := range pts {
		online, before := "–", "–"
		for _, o := range p.Online {
			if o.At == lead {
				online = fmt.Sprintf("%s (%s), %d runs", o.AUROC, o.MeanAUROC, o.Runs)
				before = fmt.Sprintf("%s (%s)", o.BeforeAUROC, o.BeforeMeanAUROC)
			}
		}
		fmt.Fprintf(tw, "%d\t%d of %d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\n", p.Runs, p.Folds-p.Refused, p.Folds, p.HeldOut, online, before,
			p.Brier, p.BeforeBrier, p.BaseBrier, p.AUROC, p.BeforeAUROC, p.SlopeFitted)
	}
	tw.Flush()
}
