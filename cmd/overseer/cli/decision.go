package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/judge"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
	"github.com/corohq/temporal-overseer/worker"
)

// runsFlags are the flags of commands that read recorded runs.
type runsFlags struct {
	traces, format string
	source         eval.Source // what load read
}

func (r *runsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.traces, "traces", "", "recorded runs: a run-record .jsonl file or directory, a mini-swe-agent run directory, SWE-agent .traj files (Multi-SWE-bench's published runs among them), OpenAI chat logs with tool calls (OpenHands among them) or a phase-letter .csv (required)")
	fs.StringVar(&r.format, "format", "", "format of --traces: "+strings.Join(eval.Formats, ", ")+" (default: detected)")
}

func (r *runsFlags) load() ([]eval.Record, error) {
	if r.traces == "" {
		return nil, fmt.Errorf("%w: give --traces FILE|DIR", ErrUsage)
	}
	recs, src, err := eval.LoadSource(r.traces, r.format)
	r.source = src
	return recs, err
}

// printSource starts a command's text output with the format and labels
// files the runs were read with, and the files beside them it skipped: a
// run read in the wrong format, or against the wrong labels, is otherwise
// only seen in odd figures.
func (r *runsFlags) printSource(out io.Writer) {
	fmt.Fprintln(out, r.source)
	if note := r.source.SkippedNote(); note != "" {
		fmt.Fprintln(out, note)
	}
}

// scoringFlags pick the judge and policy that score runs, the content
// window a model judge reads, and how many runs it judges.
type scoringFlags struct {
	judge       judgeFlags
	policy      string
	concurrency int
	// window is --content-window (unset: defaultContentCalls for a model
	// judge, off for the others), windowBytes --content-bytes,
	// requestBytes --content-request-bytes.
	window       optionalInt
	windowBytes  int
	requestBytes int
	limit        int
	// inPrice and outPrice price the judge's tokens (USD per million).
	inPrice, outPrice float64

	// What score used: the content window (off for a judge that does
	// not read it) and, with --limit, the runs judged of those read.
	usedWindow   trajectory.ContentWindow
	usedJudge    jev.Judge
	usedBudget   time.Duration
	judged, of   int
	judgeIsModel bool
}

// defaultContentCalls is the calls a model judge's content window keeps
// when --content-window is not given.
const defaultContentCalls = 8

func (s *scoringFlags) register(fs *flag.FlagSet) {
	s.judge.register(fs)
	fs.StringVar(&s.policy, "policy", "", "policy file (overseer calibrate; default: the one that goes with the judge)")
	fs.IntVar(&s.concurrency, "concurrency", 4, "runs judged at once")
	fs.Var(&s.window, "content-window", fmt.Sprintf("the latest `calls` of a run a model judge reads at each boundary: excerpts of the recorded commands, outputs and messages, redacted, as the plugin's content window sends them live; 0 is off (default: %d for the openai and jev judges, off for learned and heuristic, which never read it)", defaultContentCalls))
	fs.IntVar(&s.windowBytes, "content-bytes", trajectory.DefaultContentCallBytes, "bytes of one call's excerpt in the content window (input, output and error together)")
	fs.IntVar(&s.requestBytes, "content-request-bytes", trajectory.DefaultContentRequestBytes, "bytes of the content window in all; the oldest calls are left out to fit (give what the worker's window has, to measure what it sends)")
	fs.IntVar(&s.limit, "limit", 0, "judge at most this many runs, so that a trial of a model judge is cheap: a deterministic sample, as many failed as succeeded runs where they allow, each the runs whose ids hash lowest (default: all)")
	fs.Float64Var(&s.inPrice, "judge-input-price", 0, "USD per million input tokens of the judge's model: the report then prices each assessment (with --judge-output-price)")
	fs.Float64Var(&s.outPrice, "judge-output-price", 0, "USD per million output tokens of the judge's model")
}

// sample is the runs --limit keeps: all without it, else eval.Sample.
func (s *scoringFlags) sample(records []eval.Record) ([]eval.Record, error) {
	s.judged, s.of = len(records), len(records)
	if s.limit < 0 {
		return nil, fmt.Errorf("%w: --limit %d: give a positive number of runs, or 0 for all", ErrUsage, s.limit)
	}
	out := eval.Sample(records, s.limit)
	s.judged = len(out)
	return out, nil
}

// contentWindow is the window the flags give the judge of kind: off for
// a judge that never reads one.
func (s *scoringFlags) contentWindow(kind string) (trajectory.ContentWindow, error) {
	s.judgeIsModel = isModelJudge(kind)
	if !s.judgeIsModel {
		return trajectory.ContentWindow{}, nil
	}
	calls := defaultContentCalls
	if s.window.set {
		calls = s.window.n
	}
	w := trajectory.ContentWindow{Calls: calls, CallBytes: s.windowBytes, RequestBytes: s.requestBytes}
	if err := w.Validate(); err != nil {
		return w, fmt.Errorf("%w: --content-window %d --content-bytes %d --content-request-bytes %d: %v", ErrUsage, calls, s.windowBytes, s.requestBytes, err)
	}
	if w.CallBytes == 0 {
		w.CallBytes = trajectory.DefaultContentCallBytes
	}
	if w.RequestBytes == 0 {
		w.RequestBytes = trajectory.DefaultContentRequestBytes
	}
	return w, nil
}

// isModelJudge says the judge of kind is a model that reads a content
// window (openai, jev); the learned and heuristic judges never do.
func isModelJudge(kind string) bool {
	k := strings.ToLower(kind)
	return k == worker.JudgeOpenAI || k == worker.JudgeJev
}

// optionalInt is an int flag that knows whether it was given.
type optionalInt struct {
	n   int
	set bool
}

func (o *optionalInt) String() string {
	if o == nil || !o.set {
		return ""
	}
	return strconv.Itoa(o.n)
}

func (o *optionalInt) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil {
		return errors.New("give a whole number")
	}
	o.n, o.set = n, true
	return nil
}

// usage is the judge's usage over scored, priced as the flags say; nil
// when its answers reported none.
func (s *scoringFlags) usage(scored []eval.ScoredRun) *eval.JudgeUsage {
	u := eval.JudgeUsageOf(scored)
	if u != nil {
		u.Price(s.inPrice, s.outPrice)
	}
	return u
}

// printTrial says, for a model judge, the content window it read and, with
// --limit, the runs it judged.
func (s *scoringFlags) printTrial(out io.Writer) {
	if s.judgeIsModel {
		if s.usedWindow.On() {
			fmt.Fprintf(out, "content window: the latest %d calls of each run, %d bytes each and %d in all at most, redacted (--content-window, --content-bytes, --content-request-bytes)\n",
				s.usedWindow.Calls, s.usedWindow.CallBytes, s.usedWindow.RequestBytes)
		} else {
			fmt.Fprintln(out, "content window: off: the judge reads the counters only (--content-window 0)")
		}
	}
	if s.judged < s.of {
		fmt.Fprintf(out, "judged %d of the %d runs read: a deterministic sample (--limit %d)\n", s.judged, s.of, s.limit)
	}
}

// score builds the judge and policy and scores the records.
func (s *scoringFlags) score(ctx context.Context, records []eval.Record) (string, overseer.Policy, []eval.ScoredRun, error) {
	cfg, err := s.judge.config()
	if err != nil {
		return "", overseer.Policy{}, nil, err
	}
	if s.inPrice < 0 || s.outPrice < 0 {
		return "", overseer.Policy{}, nil, fmt.Errorf("%w: --judge-input-price and --judge-output-price must not be negative", ErrUsage)
	}
	window, err := s.contentWindow(cfg.Kind)
	if err != nil {
		return "", overseer.Policy{}, nil, err
	}
	s.usedWindow = window
	judge, err := cfg.NewJudge()
	if err != nil {
		return "", overseer.Policy{}, nil, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	policy := overseer.PolicyFor(judge)
	if s.policy != "" {
		if policy, err = overseer.LoadPolicy(s.policy); err != nil {
			return "", overseer.Policy{}, nil, err
		}
	}
	// Agent runs replay as agent loops (eval.Replay): their verdicts are
	// the loop thresholds', as a live loop's are.
	policy = policy.ForShape(eval.ShapeOfRecords(records))
	if s.concurrency < 1 {
		return "", overseer.Policy{}, nil, fmt.Errorf("%w: --concurrency must be at least 1", ErrUsage)
	}
	s.usedJudge, s.usedBudget = judge, cfg.Budget
	runs, err := eval.Score(ctx, records, eval.ScoreOptions{Judge: judge, Concurrency: s.concurrency, Budget: cfg.Budget, ContentWindow: window})
	if err != nil {
		return "", overseer.Policy{}, nil, err
	}
	return cfg.String(), policy, runs, nil
}

// Eval is `overseer eval`: how well a judge's answers anticipate failed
// runs, and what a pause policy does to them.
type Eval struct{}

// Synopsis implements Command.
func (*Eval) Synopsis() string {
	return "measure a judge and the gates in force on recorded runs: what they stop while runs run, ranking among the runs still running, calibration"
}

// Run implements Command.
func (*Eval) Run(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("eval", out)
	var runs runsFlags
	var scoring scoringFlags
	runs.register(fs)
	scoring.register(fs)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	plotDir := fs.String("plot", "", "write roc.svg and calibration.svg into this directory")
	asPhases := asPhasesFlag(fs)
	budgetJSON := fs.String("budget", "", `a budget every run has, as a team sets one (JSON, as the memo and resume take it: {"tokens": 2000000, "cost_usd": 40, "elapsed_ns": 21600000000000, "turns": 200, "phase_runs": 500}): what the gates in force do counts it beside the policy's pauses (time is the recorded calls' durations)`)
	measures := relativeMeasuresFlag(fs)
	relativeGates := fs.Bool("relative-budget-gates", false, "count the policy's relative budget as a gate, as the worker's --relative-budget-gates turns it on: a job stops where it first reaches it (without it, the relative budget only reads Needs a look and stops nothing)")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	var budget overseer.Budget
	if *budgetJSON != "" {
		b, err := overseer.ParseBudget(*budgetJSON)
		if err != nil {
			return fmt.Errorf("%w: --budget: %v", ErrUsage, err)
		}
		budget = b
	}
	records, err := runs.load()
	if err != nil {
		return err
	}
	records = recast(records, *asPhases)
	if records, err = scoring.sample(records); err != nil {
		return err
	}
	judge, policy, scored, err := scoring.score(ctx, records)
	if err != nil {
		return err
	}
	rep := eval.NewReport(judge, scored, policy)
	if lj, ok := scoring.usedJudge.(*overseer.LearnedJudge); ok && eval.ReadsAgainstItsRuns(lj.Model, records) {
		rep.InSample = fmt.Sprintf("in sample: %s was recalibrated on these runs, and reads each against the succeeded runs it is among, so these figures flatter it; measure it on runs it was not recalibrated on", lj.Model.Version)
	}
	rep.JudgeUsage = scoring.usage(scored)
	if scoring.usedWindow.On() {
		w := scoring.usedWindow
		rep.ContentWindow = &w
	}
	if scoring.judged < scoring.of {
		rep.RunsRead = scoring.of
	}
	sp, _ := eval.SpendOf(records, scored, policy, *measures)
	inForce := eval.InForceOf(scored, policy, eval.InForceOptions{Budget: budget, RelativeGates: *relativeGates, HoldRates: eval.FixedFalsePauseRates})
	sp.InForce = &inForce
	rep.Spend = &sp
	rep.Catches = eval.CatchesByGroup(records, scored, eval.FixedFalsePauseRates)
	rep.Pauses = eval.RecordedPausesByGroup(records, scored, policy)
	endings := eval.EndingsOf(scored, policy, eval.ShapeOfRecords(records))
	rep.Endings = &endings
	if *plotDir != "" {
		if err := eval.WritePlots(*plotDir, scored, rep); err != nil {
			return err
		}
	}
	if *asJSON {
		err = writeJSON(out, rep)
	} else {
		runs.printSource(out)
		scoring.printTrial(out)
		printReport(out, rep)
		if *plotDir != "" {
			fmt.Fprintf(out, "\nplots: %s/roc.svg, %s/calibration.svg\n", *plotDir, *plotDir)
		}
	}
	if err == nil && rep.Promise.Verdict == eval.PromiseBroken {
		// The report is out; the exit status tells a script.
		err = fmt.Errorf("%w: %d of %d succeeded runs paused against at most %.1f%%: recalibrate on these runs (overseer calibrate)",
			eval.ErrPromiseBroken, rep.Promise.FalsePauses, rep.Promise.Succeeded, 100*rep.Promise.MaxFalsePause)
	}
	return err
}

func writeJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printReport(out io.Writer, rep eval.Report) {
	fmt.Fprintf(out, "judge: %s", rep.Judge)
	if rep.Model != "" {
		fmt.Fprintf(out, ", model %s", rep.Model)
	}
	fmt.Fprintf(out, "\nruns: %d (%d failed: the positive class), %d boundaries, %d judge errors\n", rep.Runs, rep.Failed, rep.Boundaries, rep.JudgeErrors)
	if rep.InSample != "" {
		fmt.Fprintln(out, rep.InSample)
	}
	if rep.Spend != nil && rep.Spend.InForce != nil {
		fmt.Fprintf(out, "\nwhat the gates in force do while the runs run (each run walked call by call, as the plugin walks a live one, and stopped at its first gate):\n")
		for _, l := range rep.Spend.InForce.Sentences() {
			fmt.Fprintf(out, "  %s\n", l)
		}
	}
	fmt.Fprintf(out, "\n%s\n", onlineHeading)
	printCheckpoints(out, onlineCheckpoints(rep))
	fmt.Fprintf(out, "\n%s\n", lengthHeading)
	printCheckpoints(out, lengthCheckpoints(rep))
	if s := misfitSentence(rep.Checkpoints); s != "" {
		fmt.Fprintf(out, "\n%s\n", s)
	}
	fmt.Fprintf(out, "\npolicy %q:\n", rep.PolicyName)
	printRates(out, rep.Policy)
	if rep.PauseBudget != "" {
		fmt.Fprintf(out, "  %s\n", rep.PauseBudget)
	}
	fmt.Fprintf(out, "  %s\n", rep.Promise)
	printCatches(out, rep.Catches)
	printRecordedPauses(out, rep.Pauses)
	if rep.Endings != nil {
		fmt.Fprintf(out, "\nhow finished runs read:\n")
		for _, l := range rep.Endings.Sentences() {
			fmt.Fprintf(out, "  %s\n", l)
		}
	}
	if rep.JudgeUsage != nil {
		fmt.Fprintf(out, "\njudge usage: %s\n", rep.JudgeUsage.Sentence())
	}
	if rep.Spend != nil && rep.Spend.Runs > 0 {
		fmt.Fprintf(out, "\nspend (model tokens):\n")
		for _, l := range rep.Spend.Sentences() {
			fmt.Fprintf(out, "  %s\n", l)
		}
	} else if rep.Spend != nil && rep.Spend.Relative.Runs > 0 {
		fmt.Fprintf(out, "\nspend (the runs reported no tokens):\n  %s\n", rep.Spend.Relative.Sentence())
	}
	for _, c := range rep.Checkpoints {
		if c.At == "50%" {
			fmt.Fprintf(out, "\nreliability at 50%% (P(on objective) against the share that succeeded):\n")
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "P RANGE\tRUNS\tMEAN P\tSUCCEEDED")
			for _, b := range c.Reliability {
				fmt.Fprintf(tw, "%.1f–%.1f\t%d\t%s\t%s\n", b.Lo, b.Hi, b.Runs, b.Predicted, b.Observed)
			}
			tw.Flush()
		}
	}
}

// The headings of the two kinds of checkpoints: the runs still running
// after a number of steps or at a spend (what a live judge sees), and
// each run at a fraction of its own length (which no live judge knows).
const (
	onlineHeading = "ranking while the runs run, among the runs still running there (after N steps; at a token spend: the succeeded runs' 25/50/75% of tokens); failed runs are the positive class:"
	ofTheRun      = " of the run"
	wholeRun      = "whole run (lowest P)"
	lengthHeading = "at a fraction of each run's length, which knows the run's length (no live judge does: a turn count alone ranks runs there by their length), and over each whole run:"
)

// onlineCheckpoints are the report's checkpoints that a live judge could
// have stood at: after a number of steps, then at fixed spends.
func onlineCheckpoints(rep eval.Report) []eval.Checkpoint {
	var out []eval.Checkpoint
	for _, c := range rep.Checkpoints {
		if !c.KnowsLength {
			out = append(out, c)
		}
	}
	return append(out, rep.AtSpend...)
}

// lengthCheckpoints are the checkpoints at a fraction of each run, each
// labelled as knowing the run's length, then the whole run.
func lengthCheckpoints(rep eval.Report) []eval.Checkpoint {
	var out []eval.Checkpoint
	for _, c := range rep.Checkpoints {
		if c.KnowsLength {
			c.At += ofTheRun
			out = append(out, c)
		}
	}
	whole := rep.AnyBoundary
	whole.At = wholeRun
	return append(out, whole)
}

func printCheckpoints(out io.Writer, cps []eval.Checkpoint) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "AT\tRUNS\tFAILED\tAUROC\t95%% CI\tCATCH@5%%FP\tCATCH@10%%FP\tBRIER\tBASE-RATE BRIER\n")
	unreliable := false
	for _, c := range cps {
		auroc := c.AUROC.String()
		if c.Unreliable && !math.IsNaN(float64(c.AUROC)) {
			auroc += "*"
			unreliable = true
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", c.At, c.Runs, c.Failed, auroc, interval(c.AUROCLow, c.AUROCHigh), c.CatchAt5, c.CatchAt10, c.Brier, c.BaseBrier)
	}
	tw.Flush()
	if unreliable {
		fmt.Fprintf(out, "* unreliable: fewer than %d runs of one outcome stand behind this AUROC\n", eval.MinRunsPerOutcome)
	}
}

// interval prints a confidence interval, "–" where none exists.
func interval(lo, hi eval.Num) string {
	if math.IsNaN(float64(lo)) || math.IsNaN(float64(hi)) {
		return "–"
	}
	return lo.String() + "–" + hi.String()
}

// misfitSentence says, when the answers at mid-run fit the runs worse than
// a constant guess of their success rate, so and what fixes it; "" when
// they fit as well or better.
func misfitSentence(cps []eval.Checkpoint) string {
	for _, c := range cps {
		if c.At != "50%" || !c.Misfit() {
			continue
		}
		return fmt.Sprintf("At 50%% of the runs the judge's probabilities fit worse than always guessing these runs' success rate of %.0f%% (Brier %s against %s): "+
			"its ranking may still hold, but its P is off for this agent; recalibrate it on some of these runs: overseer recalibrate --traces DIR --out FILE (and --model FILE for a model other than the shipped one)",
			100*(1-float64(c.Failed)/float64(max(1, c.Runs))), c.Brier, c.BaseBrier)
	}
	return ""
}

func printRates(out io.Writer, r eval.PolicyRates) {
	fmt.Fprintf(out, "  pauses %s of succeeded runs (%d of %d) and catches %s of failed runs (%d of %d); median first pause at %s of the run\n",
		pct(r.FalsePauseRate), r.FalsePauses, r.Succeeded, pct(r.CatchRate), r.Catches, r.Failed, pct(r.MedianFirstPauseAt))
}

func pct(n eval.Num) string {
	if math.IsNaN(float64(n)) {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n))
}

// Train is `overseer train`: fits a learned judge on recorded runs.
type Train struct{}

// Synopsis implements Command.
func (*Train) Synopsis() string {
	return "fit a learned judge on recorded runs, with grouped cross-validated figures"
}

// Run implements Command.
func (*Train) Run(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("train", out)
	var runs runsFlags
	runs.register(fs)
	modelOut := fs.String("out", "", "write the model file here (required)")
	policyOut := fs.String("policy-out", "", "also write a policy calibrated for the model on the training runs")
	budget := fs.Float64("max-false-pause", 0.05, "false-pause budget of --policy-out and of the cross-validated policy figures, in (0,1)")
	promise := promiseFlag(fs)
	measures := relativeMeasuresFlag(fs)
	folds := fs.Int("folds", 5, "folds of the cross-validation grouped by task family")
	version := fs.String("version", "", "model version (default: learned- and a hash of the weights)")
	featureSet := fs.String("features", "rates", "features to select from: rates (no cumulative sizes, and on agent loops no tokens per turn, which are the agent's own scale: turns and tokens are read against the succeeded runs' instead; safe for jobs of any length), all, or a comma-separated list")
	noLoopReference := fs.Bool("no-loop-reference", false, "write the model without its training runs' loop reference (what their succeeded runs looked like turn by turn): each workflow type then gets its own at its first recalibration, and the sub-models that need one do not answer before; the shipped loop model is written so")
	asJSON := fs.Bool("json", false, "print the cross-validated report as JSON")
	asPhases := asPhasesFlag(fs)
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if *modelOut == "" {
		return fmt.Errorf("%w: give --out FILE for the model", ErrUsage)
	}
	if err := checkBudget(*budget); err != nil {
		return err
	}
	kind, err := overseer.ParsePromiseKind(*promise)
	if err != nil {
		return fmt.Errorf("%w: --promise: %v", ErrUsage, err)
	}
	records, err := runs.load()
	if err != nil {
		return err
	}
	records = recast(records, *asPhases)
	var features []string
	switch *featureSet {
	case "rates":
		features = eval.DefaultFeaturesFor(records)
	case "all":
		features = overseer.FeatureNames()
	default:
		features = strings.Split(*featureSet, ",")
		for _, f := range features {
			if !slices.Contains(overseer.FeatureNames(), f) {
				return fmt.Errorf("%w: --features: unknown feature %q; known: %s", ErrUsage, f, strings.Join(overseer.FeatureNames(), ", "))
			}
		}
	}
	// Reviewers' decisions at gates are labels: an abort is a confirmed
	// failure whatever the close status said.
	gates := eval.UseGateLabels(records)
	res, err := eval.Train(ctx, records, eval.TrainOptions{Features: features, Folds: *folds, Version: *version, Budget: *budget, Promise: kind,
		NoLoopReference: *noLoopReference})
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(res.Model, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(*modelOut, append(data, '\n'), 0o644); err != nil {
		return err
	}
	var cal *eval.Calibration
	var calErr error
	relative := ""
	if *policyOut != "" {
		// Calibrated on out-of-fold answers (each run scored by the model
		// refitted without its task family), so that the promise it
		// prints is one about runs the model has not seen.
		c, err := eval.Calibrate(res.CalibrationRuns, *budget, kind)
		if err == nil {
			relative = withRelativeBudget(&c.Policy, records, *measures)
			err = writePolicy(*policyOut, c.Policy, c)
			cal = &c
		}
		if err != nil {
			// The model file is already written and good: say so, so that
			// the exit status is not read as "nothing was written".
			calErr = fmt.Errorf("model %s written to %s; only the policy (--policy-out %s) was refused: %w", res.Model.Version, *modelOut, *policyOut, err)
		}
	}
	// The pooled report's policy is the one certified in each fold,
	// applied to its held-out runs (a zero policy here flagged every
	// breach answer: a false-pause rate of 0.697 beside a 5 % promise).
	rep := eval.NewReport("learned (grouped cross-validation)", res.CV, judge.UncertifiedModelPolicy())
	rep.PolicyName = "the policy certified in each fold, applied to its held-out runs"
	rep.Policy, rep.Promise = res.CVPolicy, eval.CheckPromise(res.CVPolicy, *budget)
	broken := ""
	if rep.Promise.Verdict == eval.PromiseBroken {
		broken = fmt.Sprintf("the held-out runs break the promise: the policy certified in each fold paused %d of %d held-out succeeded runs, against at most %.1f%% (95%% lower bound %.1f%%): the policy this model's runs certify does not hold on runs it has not seen",
			rep.Promise.FalsePauses, rep.Promise.Succeeded, 100**budget, 100*rep.Promise.LowerBound)
		if *policyOut != "" && calErr == nil {
			calErr = fmt.Errorf("%w: model %s written to %s; the policy was not written to %s: %s", eval.ErrPromiseBroken, res.Model.Version, *modelOut, *policyOut, broken)
			if cal != nil {
				_ = os.Remove(*policyOut)
				cal = nil
			}
		}
	}
	if *asJSON {
		if err := writeJSON(out, struct {
			Model      string                `json:"model"`
			SubModels  []eval.SubModelResult `json:"sub_models"`
			Folds      int                   `json:"folds"`
			MeanAUROC  map[string]float64    `json:"cv_mean_auroc"`
			FoldModels []eval.FoldModel      `json:"fold_models"`
			Pooled     eval.Report           `json:"cv_pooled"`
			CVPolicy   eval.PolicyRates      `json:"cv_policy"`
			Refused    []string              `json:"cv_policy_refused,omitempty"`
			Policy     *eval.Calibration     `json:"policy,omitempty"`
			GateLabels eval.GateLabels       `json:"gate_labels"`
			Catches    heldOutCatches        `json:"cv_catches_at_fixed_false_pause_rate"`
			Warnings   []string              `json:"warnings,omitempty"`
			AtSpend    map[string]float64    `json:"cv_mean_auroc_at_spend,omitempty"`
			InForce    *eval.InForce         `json:"cv_in_force,omitempty"`
		}{res.Model.Version, res.SubModels, res.Folds, res.MeanAUROC, res.FoldModels, rep, res.CVPolicy, res.CVPolicyRefused, cal, gates, heldOutCatchesOf(res),
			nonEmpty(broken), res.MeanAUROCAtSpend, cvInForce(res, kind)}); err != nil {
			return err
		}
		return calErr
	}
	runs.printSource(out)
	fmt.Fprintf(out, "model %s written to %s\n", res.Model.Version, *modelOut)
	if broken != "" {
		fmt.Fprintf(out, "WARNING: %s\n", broken)
	}
	fmt.Fprintf(out, "trained on %d runs (%d succeeded, %d failed) of %d task families, %d boundaries\n",
		res.Summary.Runs, res.Summary.Succeeded, res.Summary.Failed, res.Summary.Families, res.Summary.Boundaries)
	fmt.Fprintf(out, "%s\n\n", gates)
	fmt.Fprintf(out, "sub-models, richest first (at each boundary the judge uses the first whose inputs the trajectory carries; with none, \"not assessed\"):\n")
	for _, sm := range res.SubModels {
		if sm.Skipped != "" {
			fmt.Fprintf(out, "  %-10s not fitted: %s\n", sm.Name, sm.Skipped)
			continue
		}
		fmt.Fprintf(out, "  %-10s %d runs; features %s; L2 penalty %g; cross-validated AUROC (mean over folds) after 10 steps %s, at 50%% of the run %s (which knows the run's length)\n",
			sm.Name, sm.Runs, strings.Join(sm.Features, ", "), sm.Lambda, meanOrDash(sm.MeanAUROC, "10 steps"), meanOrDash(sm.MeanAUROC, "50%"))
	}
	fmt.Fprintf(out, "\nnested %d-fold cross-validation grouped by task family: each fold's model (features, penalty, calibration and pause threshold chosen on the other folds) scores the held-out families. "+
		"The AUROC is of all held-out scores pooled (every run scored by a model that never saw its family; pooling also measures how differently the fold models are scaled), the mean over folds beside it.\n", res.Folds)
	fmt.Fprintf(out, "\n%s\n", onlineHeading)
	printFoldCheckpoints(out, onlineCheckpoints(rep), res, func(f eval.FoldModel) []eval.Checkpoint {
		var cps []eval.Checkpoint
		for _, c := range f.Checkpoints {
			if !c.KnowsLength {
				cps = append(cps, c)
			}
		}
		return append(cps, f.AtSpend...)
	})
	fmt.Fprintf(out, "\n%s\n", lengthHeading)
	printFoldCheckpoints(out, lengthCheckpoints(rep), res, func(f eval.FoldModel) []eval.Checkpoint {
		var cps []eval.Checkpoint
		for _, c := range f.Checkpoints {
			if c.KnowsLength {
				cps = append(cps, c)
			}
		}
		return cps
	})
	printHeldOutCatches(out, heldOutCatchesOf(res))
	for _, k := range res.CVByKind {
		fmt.Fprintf(out, "\na policy certified for at most %.0f%% false pauses %s on each fold's training runs scored out of fold, applied to its held-out runs:\n", 100**budget, promiseWords(k.Kind))
		if k.Rates.Succeeded > 0 {
			printRates(out, k.Rates)
			fmt.Fprintf(out, "  %s\n", k.InForce.Sentence("walked call by call while they ran, it"))
			for _, l := range k.InForce.HoldRateSentences() {
				fmt.Fprintf(out, "  %s\n", l)
			}
			fmt.Fprintf(out, "  on the held-out runs: %s\n", eval.CheckPromise(k.Rates, *budget))
		}
		for _, r := range k.Refused {
			fmt.Fprintf(out, "  refused in %s\n", r)
		}
	}
	if cal != nil {
		fmt.Fprintf(out, "\npolicy written to %s: pause at or below %.3f; Off track at or below it, On track from %.3f\n  promise: %s\n",
			*policyOut, cal.Policy.PauseAtOrBelow, cal.Policy.OnTrackAt, cal.Policy.Promise)
		fmt.Fprintf(out, "  %s\n", relative)
	}
	return calErr
}

// cvInForce is what the policy of kind, certified in each fold, does to
// its held-out runs while they run; nil when train measured none.
func cvInForce(res *eval.TrainResult, kind overseer.PromiseKind) *eval.InForce {
	for _, k := range res.CVByKind {
		if k.Kind == kind {
			return &k.InForce
		}
	}
	return nil
}

// printFoldCheckpoints prints the pooled held-out checkpoints cps with
// the mean over folds and each fold's AUROC beside them: of(fold) are the
// fold's checkpoints in the same order (the whole-run row has none).
func printFoldCheckpoints(out io.Writer, cps []eval.Checkpoint, res *eval.TrainResult, of func(eval.FoldModel) []eval.Checkpoint) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "AT\tRUNS\tFAILED\tAUROC POOLED\t95% CI\tBRIER\tBASE-RATE BRIER\tMEAN OVER FOLDS")
	for i := range res.FoldModels {
		fmt.Fprintf(tw, "\tFOLD %d", i+1)
	}
	fmt.Fprintln(tw)
	means := map[string]float64{}
	for k, v := range res.MeanAUROC {
		means[k] = v
	}
	for k, v := range res.MeanAUROCAtSpend {
		means[k] = v
	}
	unreliable := false
	for i, c := range cps {
		auroc := c.AUROC.String()
		if c.Unreliable && !math.IsNaN(float64(c.AUROC)) {
			auroc += "*"
			unreliable = true
		}
		at, _ := strings.CutSuffix(c.At, ofTheRun)
		mean := meanOrDash(means, at)
		if c.At == wholeRun {
			mean = "" // no fold figure
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s", c.At, c.Runs, c.Failed, auroc, interval(c.AUROCLow, c.AUROCHigh), c.Brier, c.BaseBrier, mean)
		for _, f := range res.FoldModels {
			fcs := of(f)
			if mean == "" || i >= len(fcs) {
				fmt.Fprint(tw, "\t")
				continue
			}
			fmt.Fprintf(tw, "\t%s", fcs[i].AUROC)
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "held-out runs\t\t\t\t\t\t\t")
	for _, f := range res.FoldModels {
		fmt.Fprintf(tw, "\t%d", f.HeldOut)
	}
	fmt.Fprintln(tw)
	tw.Flush()
	if unreliable {
		fmt.Fprintf(out, "* unreliable: fewer than %d runs of one outcome stand behind this AUROC\n", eval.MinRunsPerOutcome)
	}
}

// meanOrDash prints a fold-mean figure, or "–" where no fold had data.
func meanOrDash(m map[string]float64, at string) string {
	v, ok := m[at]
	if !ok || math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf("%.3f", v)
}

// relativeMeasuresFlag registers --relative-measures.
func relativeMeasuresFlag(fs *flag.FlagSet) *eval.SpendMeasures {
	m := new(eval.SpendMeasures)
	fs.Func("relative-measures", "what the relative budget learned from the runs compares: auto (tokens where the runs reported them, else turns and time in phases; the default) or all (tokens, turns and time together, one factor)", func(s string) error {
		v, err := eval.ParseSpendMeasures(s)
		*m = v
		return err
	})
	return m
}

// promiseFlag registers --promise.
func promiseFlag(fs *flag.FlagSet) *string {
	return fs.String("promise", string(overseer.DefaultPromiseKind), "kind of false-pause promise: confidence (the 95% upper bound of the rate is within the budget) or expected (in expectation on new runs like these; split-conformal, more catches)")
}

// promiseWords says a kind of promise in a few words.
func promiseWords(k overseer.PromiseKind) string {
	if k == overseer.PromiseExpected {
		return "in expectation (split-conformal)"
	}
	return "at 95% confidence (upper bound)"
}

// checkBudget refuses a false-pause budget outside (0,1) before any run is
// read.
func checkBudget(b float64) error {
	if !(b > 0 && b < 1) {
		return fmt.Errorf("%w: --max-false-pause %v: give a share in (0,1), e.g. 0.05", ErrUsage, b)
	}
	return nil
}

// writePolicy writes p as a policy file at path, with the calibration
// that chose it when there is one (nil otherwise).
func writePolicy(path string, p overseer.Policy, calibration any) error {
	data, err := overseer.MarshalPolicy(p, calibration)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// CalibrateCmd is `overseer calibrate`: chooses the policy that meets a
// false-pause budget with the best catch rate.
type CalibrateCmd struct{}

// Synopsis implements Command.
func (*CalibrateCmd) Synopsis() string {
	return "choose pause threshold and bands for a false-pause budget; writes a policy file"
}

// Run implements Command.
func (*CalibrateCmd) Run(ctx context.Context, args []string, out io.Writer) error {
	fs := newFlags("calibrate", out)
	var runs runsFlags
	var scoring scoringFlags
	runs.register(fs)
	scoring.register(fs)
	budget := fs.Float64("max-false-pause", 0.05, "largest share of succeeded runs the policy may pause, in (0,1)")
	promise := promiseFlag(fs)
	measures := relativeMeasuresFlag(fs)
	pauseBudget := fs.Float64("pause-budget", 0, "instead of a false-pause promise, pause at most this share of jobs like these, whatever their outcome (a reviewer-load control; needs no outcomes, at least 20 jobs), in (0,1)")
	policyOut := fs.String("out", "", "write the policy file here")
	asJSON := fs.Bool("json", false, "print the calibration as JSON")
	if err := parseNoArgs(fs, args); err != nil {
		return err
	}
	if err := checkBudget(*budget); err != nil {
		return err
	}
	kind, err := overseer.ParsePromiseKind(*promise)
	if err != nil {
		return fmt.Errorf("%w: --promise: %v", ErrUsage, err)
	}
	records, err := runs.load()
	if err != nil {
		return err
	}
	if records, err = scoring.sample(records); err != nil {
		return err
	}
	gates := eval.UseGateLabels(records)
	judge, base, scored, err := scoring.score(ctx, records)
	if err != nil {
		return err
	}
	certifyOn, outOfFold, err := scoring.outOfFold(ctx, records, scored)
	if errors.Is(err, eval.ErrUncertifiable) {
		return keepPolicyInForce(out, err, base, records, *measures, *policyOut)
	}
	if err != nil {
		return err
	}
	if outOfFold != "" && !*asJSON {
		fmt.Fprintln(out, outOfFold)
	}
	if *pauseBudget != 0 {
		return calibrateBudget(out, judge, base, certifyOn, records, *measures, *pauseBudget, *policyOut, *asJSON)
	}
	cal, err := eval.Calibrate(certifyOn, *budget, kind)
	if err != nil {
		return keepPolicyInForce(out, err, base, records, *measures, *policyOut)
	}
	relative := withRelativeBudget(&cal.Policy, records, *measures)
	if *policyOut != "" {
		if err := writePolicy(*policyOut, cal.Policy, cal); err != nil {
			return err
		}
	}
	if *asJSON {
		return writeJSON(out, struct {
			Judge     string           `json:"judge"`
			Policy    json.RawMessage  `json:"policy"`
			Result    eval.Calibration `json:"calibration"`
			OutOfFold string           `json:"out_of_fold,omitempty"`
			Gates     eval.GateLabels  `json:"gate_labels"`
			Usage     *eval.JudgeUsage `json:"judge_usage,omitempty"`
		}{judge, mustPolicyJSON(cal.Policy), cal, outOfFold, gates, scoring.usage(scored)})
	}
	p := cal.Policy
	runs.printSource(out)
	scoring.printTrial(out)
	fmt.Fprintf(out, "judge: %s; %d runs\n", judge, len(scored))
	if u := scoring.usage(scored); u != nil {
		fmt.Fprintf(out, "judge usage: %s\n", u.Sentence())
	}
	fmt.Fprintln(out)
	if cal.NoPauseOnP != "" {
		fmt.Fprintf(out, "No threshold on P: %s.\n\n", cal.NoPauseOnP)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	header := "BUDGET (95% BOUND)"
	if kind == overseer.PromiseExpected {
		header = "BUDGET (IN EXPECTATION)"
	}
	fmt.Fprintln(tw, header+"\tPAUSE AT OR BELOW\tFALSE PAUSES\tCATCHES\tFIRST PAUSE AT (MEDIAN)")
	for _, row := range cal.Table {
		if math.IsNaN(float64(row.Threshold)) {
			why := "breach answers alone exceed it"
			n := eval.RunsNeeded(row.Budget, eval.PromiseConfidence)
			if kind == overseer.PromiseExpected {
				n = eval.ConformalRunsNeeded(row.Budget)
			}
			if n > cal.Rates.Succeeded {
				why = fmt.Sprintf("needs %d succeeded runs", n)
			}
			fmt.Fprintf(tw, "%.0f%%\t–\t%s\t\t\n", 100*row.Budget, why)
			continue
		}
		fmt.Fprintf(tw, "%.0f%%\t%s\t%s (%d/%d)\t%s (%d/%d)\t%s\n", 100*row.Budget, row.Threshold, pct(row.Rates.FalsePauseRate), row.Rates.FalsePauses, row.Rates.Succeeded,
			pct(row.Rates.CatchRate), row.Rates.Catches, row.Rates.Failed, pct(row.Rates.MedianFirstPauseAt))
	}
	tw.Flush()
	fmt.Fprintf(out, "\nchosen for at most %.1f%% false pauses %s: pause at or below %.3f, breach confidence ≥ %.2f; On track from %.3f, Off track at or below %.3f\n",
		100**budget, promiseWords(kind), p.PauseAtOrBelow, p.BreachConfidence, p.OnTrackAt, p.PauseAtOrBelow)
	printRates(out, cal.Rates)
	fmt.Fprintf(out, "promise: %s\n", p.Promise)
	fmt.Fprintf(out, "%s\n", relative)
	fmt.Fprintf(out, "%s\n", gates)
	if *policyOut != "" {
		fmt.Fprintf(out, "policy written to %s: use it with `overseer worker --policy %s` or overseer.LoadPolicy\n", *policyOut, *policyOut)
	}
	return nil
}

// outOfFold is what a pause policy is certified on: the runs' scores, or,
// where the judge is a learned model that reads a loop against the
// type's own succeeded runs and took them from these runs (overseer
// recalibrate on them), their out-of-fold scores (eval.OutOfFoldScores),
// with a sentence that says so; read against itself, a succeeded run
// looks more typical than a new one, and a threshold certified on it
// pauses new runs more often than it promises.
func (s *scoringFlags) outOfFold(ctx context.Context, records []eval.Record, scored []eval.ScoredRun) ([]eval.ScoredRun, string, error) {
	lj, ok := s.usedJudge.(*overseer.LearnedJudge)
	if !ok || !eval.ReadsAgainstItsRuns(lj.Model, records) {
		return scored, "", nil
	}
	oof, err := eval.OutOfFoldScores(ctx, records, lj.Model, eval.RecalibrateOptions{For: lj.Model.Recalibration.For},
		eval.ScoreOptions{Concurrency: s.concurrency, Budget: s.usedBudget, ContentWindow: s.usedWindow})
	if errors.Is(err, eval.ErrNoOutOfFoldScores) {
		return nil, "", fmt.Errorf("%w: %s was recalibrated on these runs, so its pauses are certified on each run scored by it recalibrated without the run's task family, and %v", eval.ErrUncertifiable, lj.Model.Version, err)
	}
	if err != nil {
		return nil, "", err
	}
	say := fmt.Sprintf("certified out of fold: %s was recalibrated on these runs, so each run is scored by it recalibrated on the runs of the other task families (%d folds)", lj.Model.Version, oof.Folds)
	if oof.Unscored > 0 {
		say += fmt.Sprintf("; %d of the runs left out, their fold's others too few to recalibrate on", oof.Unscored)
	}
	return oof.Runs, say, nil
}

// withRelativeBudget puts in p the relative budget the runs' succeeded
// ones back (Policy.Spend), as a learn round's promotion does, and says
// it, or why none. It reads Needs a look where a job reaches it, and
// stops the job only where the worker turns its gate on.
func withRelativeBudget(p *overseer.Policy, records []eval.Record, measures eval.SpendMeasures) string {
	sb, err := eval.SpendBudgetOf(records, eval.SpendBudgetMaxReached, measures)
	if err != nil {
		p.Spend = nil
		return "no relative budget: " + err.Error()
	}
	p.Spend = &sb
	return "relative budget in the policy: " + sb.String() + "; a job that reaches it reads Needs a look, and waits at a budget gate where the worker runs with --relative-budget-gates"
}

// keepPolicyInForce answers a calibration that certified no pause policy
// (refused): with --out, the policy in force (base: the one that goes
// with the judge) is written with the relative budget the runs back, when
// they back one, so that what the runs can say is not lost; the refusal
// is returned either way.
func keepPolicyInForce(out io.Writer, refused error, base overseer.Policy, records []eval.Record, measures eval.SpendMeasures, policyOut string) error {
	if policyOut == "" || !errors.Is(refused, eval.ErrUncertifiable) {
		return refused
	}
	relative := withRelativeBudget(&base, records, measures)
	if base.Spend == nil {
		return refused
	}
	if err := writePolicy(policyOut, base, nil); err != nil {
		return err
	}
	fmt.Fprintf(out, "no pause policy certified; %s written to %s with the policy in force (%s)\n", relative, policyOut, base.Guarantee())
	return refused
}

// calibrateBudget is `overseer calibrate --pause-budget`.
func calibrateBudget(out io.Writer, judge string, base overseer.Policy, scored []eval.ScoredRun, records []eval.Record, measures eval.SpendMeasures, share float64, policyOut string, asJSON bool) error {
	p, err := eval.BudgetPolicy(scored, share, base)
	if err != nil {
		return err
	}
	relative := withRelativeBudget(&p, records, measures)
	if policyOut != "" {
		if err := writePolicy(policyOut, p, nil); err != nil {
			return err
		}
	}
	if asJSON {
		return writeJSON(out, struct {
			Judge  string          `json:"judge"`
			Policy json.RawMessage `json:"policy"`
		}{judge, mustPolicyJSON(p)})
	}
	fmt.Fprintf(out, "judge: %s; %d jobs\npause at or below %.3f; On track from %.3f, Off track below %.3f\n%s\n%s\n",
		judge, len(scored), p.PauseAtOrBelow, p.OnTrackAt, p.NeedsALookAt, p.Guarantee(), relative)
	if policyOut != "" {
		fmt.Fprintf(out, "policy written to %s: use it with `overseer worker --policy %s` or overseer.LoadPolicy\n", policyOut, policyOut)
	}
	return nil
}

func mustPolicyJSON(p overseer.Policy) json.RawMessage {
	data, err := overseer.MarshalPolicy(p, nil)
	if err != nil {
		return json.RawMessage("null")
	}
	return data
}

// nonEmpty is s as a list of one, or none when s is empty.
func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
