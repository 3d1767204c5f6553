package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/learn"
)

// asPhasesFlag registers --as-phases: the docs' figures of the phase model
// on agents' runs come from the runs recast as the jobs of phases a
// CoroJob is.
func asPhasesFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("as-phases", false, "recast agents' runs as jobs of phases (each run of consecutive steps of one action class a phase: the shape of a CoroJob), judged by the phase model, instead of replaying them as agent loops")
}

// recast returns records as jobs of phases when asPhases is set.
func recast(records []eval.Record, asPhases bool) []eval.Record {
	if !asPhases {
		return records
	}
	out := make([]eval.Record, len(records))
	for i, r := range records {
		out[i] = r.AsPhases()
	}
	return out
}

// printCatches prints the catches at the fixed false-pause rates per
// workflow type and shape.
func printCatches(out io.Writer, groups []eval.GroupCatches) {
	if len(groups) == 0 {
		return
	}
	fmt.Fprintf(out, "\ncatches at a fixed false-pause rate (a run paused when its lowest P is at or below the largest threshold that pauses at most that share of the succeeded runs; ties are never split):\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tSHAPE\tRUNS\tFAILED\tAUROC (WHOLE RUN)\t"+rateHeaders(groups[0].Catches))
	for _, g := range groups {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", g.Type, g.Shape, g.Runs, g.Failed, g.AUROC, catchCells(g.Catches))
	}
	tw.Flush()
}

func rateHeaders(cs []eval.CatchAtRate) string {
	var h []string
	for _, c := range cs {
		h = append(h, fmt.Sprintf("CAUGHT AT %g%% OF SUCCEEDED PAUSED", 100*c.Rate))
	}
	return strings.Join(h, "\t")
}

func catchCells(cs []eval.CatchAtRate) string {
	var cells []string
	for _, c := range cs {
		cells = append(cells, c.String())
	}
	return strings.Join(cells, "\t")
}

// heldOutCatches are the catches at the fixed false-pause rates of
// `overseer train`'s cross-validation: summed over the folds (each fold
// model's threshold set on its own held-out runs), and pooled (one
// threshold over every held-out score, which also measures how
// differently the fold models are scaled).
type heldOutCatches struct {
	Folds  []eval.CatchAtRate `json:"summed_over_folds"`
	Pooled []eval.CatchAtRate `json:"pooled"`
}

func heldOutCatchesOf(res *eval.TrainResult) heldOutCatches {
	var sets [][]eval.CatchAtRate
	for _, f := range res.FoldModels {
		sets = append(sets, f.Catches)
	}
	return heldOutCatches{Folds: eval.SumCatches(sets...), Pooled: eval.CatchesAt(res.CV, eval.FixedFalsePauseRates)}
}

func printHeldOutCatches(out io.Writer, h heldOutCatches) {
	fmt.Fprintf(out, "\nheld-out catches at a fixed false-pause rate (a run paused when its lowest P is at or below the largest threshold that pauses at most that share of the succeeded held-out runs):\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\t"+rateHeaders(h.Pooled))
	fmt.Fprintf(tw, "each fold model on its held-out runs, summed\t%s\n", catchCells(h.Folds))
	fmt.Fprintf(tw, "all held-out scores pooled\t%s\n", catchCells(h.Pooled))
	tw.Flush()
}

// printRecordedPauses prints, per workflow type and shape, what the policy
// would do to recorded runs as rescue against disruption.
func printRecordedPauses(out io.Writer, groups []eval.RecordedPauses) {
	if len(groups) == 0 {
		return
	}
	fmt.Fprintf(out, "\nshould pauses be on? (the rule: pause only when p, the failure rate of flagged runs, > d/(r+d); recorded runs show p, not r or d):\n")
	for _, g := range groups {
		fmt.Fprintf(out, "  %s (%s): %s\n", g.Type, g.Shape, g.Sentence)
	}
}

// printRescue prints a learn round's rescue against disruption: one
// sentence for the type, which recommends and never switches a mode.
func printRescue(out io.Writer, res learn.Result) {
	if len(res.Catches) > 0 {
		var parts []string
		for _, c := range res.Catches {
			parts = append(parts, fmt.Sprintf("at %g%% of succeeded jobs paused %s", 100*c.Rate, c))
		}
		fmt.Fprintf(out, "failed jobs caught on the assessments they recorded live (a threshold on their lowest P): %s\n", strings.Join(parts, "; "))
	}
	if res.Rescue == nil { // rounds before the estimate measured none
		return
	}
	fmt.Fprintf(out, "should pauses be on for %s? %s (the rule: pause only when p > d/(r+d); the overseer never switches mode)\n", res.Type, res.Rescue.Sentence)
}
