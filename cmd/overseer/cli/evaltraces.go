package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/supervision"
)

// EvalTraces replays recorded agent runs through the phase-boundary judge
// and the in-phase supervisor and prints how well each anticipates a failed
// run. It is a bench command: it measures, it asserts nothing but the
// receipt rule.
type EvalTraces struct{}

// Synopsis implements Command.
func (*EvalTraces) Synopsis() string {
	return "replay recorded agent runs (mini-swe-agent-1 traces with outcomes) through both judges; print a table (--dir DIR)"
}

// EvalTracesHonesty is printed with every table.
const EvalTracesHonesty = "Both judges here are rules, not models: overseer.HeuristicJudge scores re-runs, " +
	"failure streaks, rework, missing outputs and failed tool calls at each derived phase boundary, and " +
	"supervision.HeuristicJudge reads the last message and the action labels. Phases are derived from shell " +
	"commands by eval's own classifier. These numbers say how well these rules anticipate a failed run on " +
	"this sample (one agent, one model, one benchmark), nothing more: they are not a measure of a model " +
	"judge, nor of any other agent. Without a host verification receipt the completion advice can never be " +
	"REVIEW_COMPLETION, by design."

// Run implements Command.
func (*EvalTraces) Run(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("eval-traces", out)
	dir := fs.String("dir", "", "data directory with labels.json and trajs/*.traj.json")
	limit := fs.Int("limit", 0, "evaluate only the first N traces by name (0: all)")
	perRun := fs.Bool("runs", false, "also print one line per run")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := noArgs(pos); err != nil {
		return err
	}
	if *dir == "" {
		return fmt.Errorf("%w: give --dir DIR (for example ../shared/data/traces/mini-swe-agent-gemini-3-pro)", ErrUsage)
	}
	if *limit < 0 {
		return fmt.Errorf("%w: --limit must be 0 or more", ErrUsage)
	}
	start := time.Now()
	results, unlabelled, err := eval.Run(ctx, *dir, eval.Options{Limit: *limit})
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	if len(results) == 0 {
		return errors.New("no labelled runs to evaluate")
	}
	s := eval.Summarize(results)
	if *perRun {
		writeEvalRuns(out, results)
	}
	writeEvalTable(out, *dir, s, unlabelled, elapsed)
	if s.ReviewCompletionWithoutReceipt > 0 {
		return fmt.Errorf("%d runs got %s without a verification receipt", s.ReviewCompletionWithoutReceipt, supervision.ReviewCompletion)
	}
	return nil
}

func writeEvalRuns(out io.Writer, results []eval.Result) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tOUTCOME\tACTIONS\tPHASES\tFAILED TOOLS\tREWORK\tLOOPS\tMIN P\tFIRST FLAG\tCOMPLETION")
	for _, r := range results {
		outcome := "failed"
		if r.Resolved {
			outcome = "resolved"
		}
		flag := "-"
		if r.Flagged() {
			flag = fmt.Sprintf("#%d %s (%.0f%%)", r.FirstFlag, r.Phases[r.FirstFlag].Class, 100*r.FirstFlagFraction)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%.2f\t%s\t%s\n", r.ID, outcome, r.Actions, len(r.Phases),
			r.FailedTools, r.Rework, r.Loops, r.MinOnObjective, flag, r.Advice())
	}
	_ = tw.Flush()
	fmt.Fprintln(out)
}

func writeEvalTable(out io.Writer, dir string, s eval.Summary, unlabelled int, elapsed time.Duration) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "traces\t%s\n", dir)
	fmt.Fprintf(tw, "runs\t%d: %d resolved, %d failed", s.Runs, s.Resolved, s.Failed)
	if unlabelled > 0 {
		fmt.Fprintf(tw, " (%d without a label skipped)", unlabelled)
	}
	fmt.Fprintf(tw, "\n")
	fmt.Fprintf(tw, "actions, phase boundaries\t%d, %d\n", s.Actions, s.Boundaries)
	fmt.Fprintln(tw, "\t")
	fmt.Fprintln(tw, "PHASE-BOUNDARY SIGNAL\toverseer.HeuristicJudge, DefaultPolicy; positive class = failed run")
	fmt.Fprintf(tw, "AUROC of 1 − min P(on objective)\t%s (95%% bootstrap %s)\n", evalNum(s.AUROC), evalInterval(s.AUROCLow, s.AUROCHigh))
	fmt.Fprintf(tw, "flag rate, failed runs\t%s (%d of %d)\n", evalPct(s.FlagRateFailed), s.FlaggedFailed, s.Failed)
	fmt.Fprintf(tw, "flag rate, resolved runs\t%s (%d of %d)\n", evalPct(s.FlagRateResolved), s.FlaggedResolved, s.Resolved)
	fmt.Fprintf(tw, "precision of flagged ⇒ failed\t%s (base rate %s)\n", evalPct(s.Precision), evalPct(float64(s.Failed)/float64(s.Runs)))
	fmt.Fprintf(tw, "recall of flagged ⇒ failed\t%s\n", evalPct(s.Recall))
	fmt.Fprintf(tw, "median elapsed at first flag\t%s of the run's actions (%d flagged runs; %d flagged before submit)\n",
		evalPct(s.MedianFirstFlag), s.FlaggedFailed+s.FlaggedResolved, s.FlaggedBeforeSubmit)
	for _, c := range s.FirstFlagCauses {
		fmt.Fprintf(tw, "first flag by %s\t%s%s\n", c.Name, evalCount(c), obligationText(c.Name))
	}
	fmt.Fprintf(tw, "baselines (AUROC)\tnumber of actions %s, failed tool calls %s\n", evalNum(s.ActionsAUROC), evalNum(s.FailedToolsAUROC))
	fmt.Fprintln(tw, "\t")
	fmt.Fprintln(tw, "COMPLETION SIGNAL\tsupervision.HeuristicJudge, SHADOW, thresholds 0.2/0.8; evidence missing (no receipt)")
	for _, a := range s.Advice {
		fmt.Fprintf(tw, "%s\t%s\n", a.Name, evalCount(a))
	}
	check := "ok"
	if s.ReviewCompletionWithoutReceipt > 0 {
		check = "FAILED"
	}
	fmt.Fprintf(tw, "check: no %s without a receipt\t%s (%d of %d runs had a receipt)\n", supervision.ReviewCompletion, check, s.Receipts, s.Runs)
	fmt.Fprintln(tw, "\t")
	rate := float64(s.Runs) / elapsed.Seconds()
	fmt.Fprintf(tw, "TIMING\t%d runs in %s: %.0f runs/s, %.0f boundaries/s (load, replay, both judges; 1 goroutine)\n",
		s.Runs, elapsed.Round(time.Millisecond), rate, float64(s.Boundaries)/elapsed.Seconds())
	_ = tw.Flush()
	fmt.Fprintln(out)
	fmt.Fprintln(out, evalWrap(EvalTracesHonesty, 100))
}

func evalCount(c eval.OutcomeCount) string {
	runs := "runs"
	if c.Total() == 1 {
		runs = "run"
	}
	return fmt.Sprintf("%d %s: %d resolved, %d failed", c.Total(), runs, c.Resolved, c.Failed)
}

// obligationText quotes a default obligation named by its key.
func obligationText(key string) string {
	for i, o := range overseer.DefaultObligations {
		if key == fmt.Sprintf("obligation[%d]", i) {
			return fmt.Sprintf(" (%q)", o)
		}
	}
	return ""
}

func evalNum(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", v)
}

func evalPct(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

func evalInterval(lo, hi float64) string {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return "n/a"
	}
	return fmt.Sprintf("%.3f–%.3f", lo, hi)
}

// evalWrap breaks text into lines of at most width characters at spaces.
func evalWrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(text) {
		l := len([]rune(w))
		if i > 0 {
			if n+1+l > width {
				b.WriteByte('\n')
				n = 0
			} else {
				b.WriteByte(' ')
				n++
			}
		}
		b.WriteString(w)
		n += l
	}
	return b.String()
}
