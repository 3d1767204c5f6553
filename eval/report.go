package eval

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// Num is a figure that may be undefined; it is written to JSON as null
// when NaN.
type Num float64

// MarshalJSON writes null for NaN and infinities, the number otherwise.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(math.Round(f*1e4) / 1e4)
}

// String formats the figure with three decimals, "–" when undefined.
func (n Num) String() string {
	if math.IsNaN(float64(n)) {
		return "–"
	}
	return strconv.FormatFloat(float64(n), 'f', 3, 64)
}

// Checkpoint holds the measures of the judge's answer at one point of the
// runs: a fraction of each run's steps ("50%": the latest boundary at or
// before half of the run), or a step count for the runs still going then
// ("20 steps"). Failed runs are the positive class; the score is
// 1 − P(on objective).
type Checkpoint struct {
	At string `json:"at"`
	// KnowsLength marks a checkpoint at a fraction of each run ("50%"): it
	// compares runs at a point that depends on how long each turned out to
	// be, which no live judge knows (a turn count alone ranks runs there
	// by their length). The checkpoints after a number of steps and at a
	// spend (Tokens) rank the runs still running there, as a live judge
	// sees them.
	KnowsLength bool `json:"knows_run_length,omitempty"`
	// Tokens is the spend of a checkpoint at fixed spend
	// (CheckpointsAtSpend).
	Tokens    int64 `json:"tokens,omitempty"`
	Runs      int   `json:"runs"`
	Failed    int   `json:"failed"`
	AUROC     Num   `json:"auroc"`
	AUROCLow  Num   `json:"auroc_low"`
	AUROCHigh Num   `json:"auroc_high"`
	// CatchAt5 and CatchAt10 are the shares of failed runs whose answer
	// here is at or below the highest threshold that flags at most 5 % (10 %)
	// of the succeeded runs.
	CatchAt5  Num `json:"catch_at_5"`
	CatchAt10 Num `json:"catch_at_10"`
	// Brier is the mean squared error of P(on objective) as a probability
	// of success.
	Brier Num `json:"brier"`
	// BaseBrier is the Brier score of the constant guess of these runs'
	// own success rate: a judge above it would have done better saying
	// the base rate every time (its probabilities do not fit these runs).
	BaseBrier Num `json:"base_brier"`
	// Unreliable is set when fewer than MinRunsPerOutcome runs of either
	// outcome stand behind the AUROC.
	Unreliable  bool  `json:"unreliable,omitempty"`
	Reliability []Bin `json:"reliability"`
}

// MinRunsPerOutcome is the fewest runs of each outcome behind an AUROC
// that a report does not flag as unreliable: below it, one run more or
// less moves the figure by a tenth or more.
const MinRunsPerOutcome = 10

// Misfit reports whether the checkpoint's probabilities fit its runs worse
// than the constant guess of their success rate.
func (c Checkpoint) Misfit() bool {
	return !math.IsNaN(float64(c.Brier)) && !math.IsNaN(float64(c.BaseBrier)) && float64(c.Brier) > float64(c.BaseBrier)
}

// Bin is one row of a reliability table: the answers with P(on objective)
// in [Lo, Hi), their mean and the share of those runs that succeeded.
type Bin struct {
	Lo        float64 `json:"lo"`
	Hi        float64 `json:"hi"`
	Runs      int     `json:"runs"`
	Predicted Num     `json:"predicted"`
	Observed  Num     `json:"observed"`
}

// The checkpoints every report has.
var (
	CheckpointFractions = []float64{0.25, 0.5, 0.75, 1}
	CheckpointSteps     = []int{10, 20, 30, 40}
)

// answerAt returns the latest valid answer at or before step limit, or
// false when the run had none yet.
func answerAt(r ScoredRun, limit float64) (float64, bool) {
	v, ok := 0.0, false
	for _, p := range r.Points {
		if float64(p.Steps) > limit+1e-9 {
			break
		}
		if p.HasP() {
			v, ok = p.OnObjective(), true
		}
	}
	return v, ok
}

// Checkpoints computes the measures at 25/50/75/100 % of each run (which
// know each run's length: Checkpoint.KnowsLength) and after 10/20/30/40
// steps, among the runs still going then.
func Checkpoints(runs []ScoredRun) []Checkpoint {
	var out []Checkpoint
	for _, f := range CheckpointFractions {
		c := checkpoint(fmt.Sprintf("%.0f%%", 100*f), runs, atFraction(f))
		c.KnowsLength = true
		out = append(out, c)
	}
	for _, n := range CheckpointSteps {
		out = append(out, AfterSteps(runs, n))
	}
	return out
}

// LeadSteps is where the one online ranking figure that leads a compact
// report stands (recalibrate --curve, replay's learning curve, a learn
// round's sentence, the dashboard): after this many steps, among the
// runs still going then.
const LeadSteps = 10

// AfterSteps is the checkpoint after n steps ("10 steps"): each run's
// latest answer at or before its n-th step, among the runs still going
// then (more than n steps in all), as a live judge sees them at that
// step; none of it depends on how long a run turned out to be.
func AfterSteps(runs []ScoredRun, n int) Checkpoint {
	return checkpoint(fmt.Sprintf("%d steps", n), runs, afterSteps(n))
}

// afterSteps answers with the latest answer at or before step n, for the
// runs still going then.
func afterSteps(n int) func(ScoredRun) (float64, bool) {
	return func(r ScoredRun) (float64, bool) {
		if r.Steps <= n {
			return 0, false
		}
		return answerAt(r, float64(n))
	}
}

// atFraction answers with the latest answer at or before fraction f of
// each run's steps.
func atFraction(f float64) func(ScoredRun) (float64, bool) {
	return func(r ScoredRun) (float64, bool) {
		if r.Steps == 0 {
			return 0, false
		}
		return answerAt(r, f*float64(r.Steps))
	}
}

// answersOf collects one answer per run that has one, with the run's class.
func answersOf(runs []ScoredRun, answer func(ScoredRun) (float64, bool)) (p []float64, failed []bool) {
	for _, r := range runs {
		if v, ok := answer(r); ok {
			p = append(p, v)
			failed = append(failed, r.Failed())
		}
	}
	return p, failed
}

func checkpoint(at string, runs []ScoredRun, answer func(ScoredRun) (float64, bool)) Checkpoint {
	c := Checkpoint{At: at}
	p, failed := answersOf(runs, answer)
	c.Runs = len(p)
	scores := make([]float64, len(p))
	var brier float64
	for i, v := range p {
		scores[i] = 1 - v
		if failed[i] {
			c.Failed++
			brier += v * v
		} else {
			brier += (1 - v) * (1 - v)
		}
	}
	c.AUROC = Num(AUROC(scores, failed))
	lo, hi := AUROCInterval(scores, failed, 0.95, 2000, 1)
	c.AUROCLow, c.AUROCHigh = Num(lo), Num(hi)
	c.CatchAt5 = Num(catchAtBudget(p, failed, 0.05))
	c.CatchAt10 = Num(catchAtBudget(p, failed, 0.10))
	c.Brier, c.BaseBrier = Num(math.NaN()), Num(math.NaN())
	if len(p) > 0 {
		c.Brier = Num(brier / float64(len(p)))
		rate := 1 - float64(c.Failed)/float64(len(p))
		c.BaseBrier = Num(rate * (1 - rate))
	}
	c.Unreliable = c.Failed < MinRunsPerOutcome || c.Runs-c.Failed < MinRunsPerOutcome
	c.Reliability = reliability(p, failed, 10)
	return c
}

// thresholdAtBudget is the highest threshold t among the values such that
// "value ≤ t" holds for at most budget of the negatives (succeeded runs):
// -1 when even the lowest value exceeds it, +Inf when the budget covers
// every negative, NaN without negatives.
func thresholdAtBudget(values []float64, failed []bool, budget float64) float64 {
	var negatives []float64
	for i, v := range values {
		if !failed[i] {
			negatives = append(negatives, v)
		}
	}
	if len(negatives) == 0 {
		return math.NaN()
	}
	return thresholdUnder(values, negatives, int(math.Floor(budget*float64(len(negatives))+1e-9)), -1)
}

// thresholdUnder returns the highest candidate below the (allowed+1)-th
// lowest negative, so that "value ≤ t" holds for at most allowed
// negatives: floor when no candidate is that low, +Inf when allowed covers
// every negative.
func thresholdUnder(candidates, negatives []float64, allowed int, floor float64) float64 {
	if allowed >= len(negatives) {
		return math.Inf(1)
	}
	limit := slices.Sorted(slices.Values(negatives))[allowed]
	t := floor
	for _, v := range candidates {
		if v < limit && v > t {
			t = v
		}
	}
	return t
}

func catchAtBudget(values []float64, failed []bool, budget float64) float64 {
	return float64(catchAt(values, failed, budget).Catch)
}

func reliability(p []float64, failed []bool, bins int) []Bin {
	out := make([]Bin, bins)
	sums := make([]float64, bins)
	succ := make([]int, bins)
	for i := range out {
		out[i].Lo, out[i].Hi = float64(i)/float64(bins), float64(i+1)/float64(bins)
	}
	for i, v := range p {
		b := min(bins-1, int(v*float64(bins)))
		out[b].Runs++
		sums[b] += v
		if !failed[i] {
			succ[b]++
		}
	}
	for i := range out {
		out[i].Predicted, out[i].Observed = Num(math.NaN()), Num(math.NaN())
		if out[i].Runs > 0 {
			out[i].Predicted = Num(sums[i] / float64(out[i].Runs))
			out[i].Observed = Num(float64(succ[i]) / float64(out[i].Runs))
		}
	}
	return out
}

// PolicyRates are what a pause policy does to whole runs: a run is paused
// when any of its boundaries is flagged.
type PolicyRates struct {
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	// FalsePauses and Catches count paused succeeded and failed runs.
	FalsePauses int `json:"false_pauses"`
	Catches     int `json:"catches"`
	// FalsePauseRate is FalsePauses / Succeeded; CatchRate Catches / Failed.
	FalsePauseRate Num `json:"false_pause_rate"`
	CatchRate      Num `json:"catch_rate"`
	// MedianFirstPauseAt is the median share of a caught run's steps done
	// at its first pause; MedianLead is 1 minus it: the share still ahead.
	MedianFirstPauseAt Num `json:"median_first_pause_at"`
	MedianLead         Num `json:"median_lead"`
	firstPauses        []float64
}

func (r *PolicyRates) add(o PolicyRates) {
	r.Succeeded += o.Succeeded
	r.Failed += o.Failed
	r.FalsePauses += o.FalsePauses
	r.Catches += o.Catches
	r.firstPauses = append(r.firstPauses, o.firstPauses...)
	r.finish()
}

func (r *PolicyRates) finish() {
	r.FalsePauseRate = Num(ratio(r.FalsePauses, r.Succeeded))
	r.CatchRate = Num(ratio(r.Catches, r.Failed))
	r.MedianFirstPauseAt = Num(Median(r.firstPauses))
	r.MedianLead = 1 - r.MedianFirstPauseAt
}

// PolicyRatesOf applies a policy to every boundary of the runs.
func PolicyRatesOf(runs []ScoredRun, p overseer.Policy) PolicyRates {
	var r PolicyRates
	for _, run := range runs {
		first := firstPause(run, p)
		if run.Failed() {
			r.Failed++
			if first >= 0 {
				r.Catches++
				r.firstPauses = append(r.firstPauses, float64(first)/float64(max(1, run.Steps)))
			}
		} else {
			r.Succeeded++
			if first >= 0 {
				r.FalsePauses++
			}
		}
	}
	r.finish()
	return r
}

// firstPause is the number of steps done at the first boundary of the run
// that the policy flags, or -1 when it flags none.
func firstPause(r ScoredRun, p overseer.Policy) int {
	for _, pt := range r.Points {
		if pt.Err == "" && p.Evaluate(pt.Answers).Flagged {
			return pt.Steps
		}
	}
	return -1
}

// Report is the outcome of `overseer eval`.
type Report struct {
	Judge string `json:"judge"`
	Model string `json:"model,omitempty"`
	// InSample, when set, says the figures flatter the judge: its model
	// was recalibrated on these runs (ReadsAgainstItsRuns; set by the
	// caller that has the model).
	InSample string `json:"in_sample,omitempty"`
	Runs     int    `json:"runs"`
	// Failed counts the failed or blocked runs: the positive class.
	Failed      int          `json:"failed"`
	Boundaries  int          `json:"boundaries"`
	JudgeErrors int          `json:"judge_errors"`
	Checkpoints []Checkpoint `json:"checkpoints"`
	// AtSpend are the checkpoints at fixed token spends, among the runs
	// still running there (CheckpointsAtSpend at SpendAmounts); none when
	// no run reported tokens.
	AtSpend []Checkpoint `json:"checkpoints_at_spend,omitempty"`
	// AnyBoundary measures the lowest P(on objective) over each whole run:
	// what a threshold pause rule sees.
	AnyBoundary Checkpoint `json:"any_boundary"`
	// Policy is what the given policy did.
	Policy     PolicyRates `json:"policy"`
	PolicyName string      `json:"policy_name,omitempty"`
	// Promise checks the policy's false-pause promise on these runs.
	Promise PromiseCheck `json:"promise"`
	// PauseBudget, for a policy with a pause budget, says the budget and
	// the share of these runs it paused.
	PauseBudget string `json:"pause_budget,omitempty"`
	// Spend is what the gates in force do while the runs run
	// (Spend.InForce) and, when the runs reported tokens, what stopping
	// them at the policy's first pause, or at a token budget, would have
	// saved and held (SpendOf; set by the caller that has the records).
	Spend *Spend `json:"spend,omitempty"`
	// Catches are the failed runs caught at FixedFalsePauseRates per
	// workflow type and shape (CatchesByGroup), and Pauses what the policy
	// would do to them as rescue against disruption (RecordedPausesByGroup);
	// set by the caller that has the records.
	Catches []GroupCatches   `json:"catches_at_fixed_false_pause_rate,omitempty"`
	Pauses  []RecordedPauses `json:"pauses_rescue_or_disruption,omitempty"`
	// Endings is how the finished runs read, by outcome (EndingsOf; set
	// by the caller that has the records).
	Endings *Endings `json:"endings,omitempty"`
	// JudgeUsage is the judge's tokens per assessment, when its answers
	// reported them (a model judge's do); nil when none did.
	JudgeUsage *JudgeUsage `json:"judge_usage,omitempty"`
	// ContentWindow is the content window the judge read at each
	// boundary (ScoreOptions.ContentWindow), nil when off; RunsRead, when
	// only a sample of the runs read was judged (Sample), how many were
	// read. Both are set by the caller that scored the runs.
	ContentWindow *trajectory.ContentWindow `json:"content_window,omitempty"`
	RunsRead      int                       `json:"runs_read,omitempty"`
}

// JudgeUsage is what a judge's calls took, over the assessments whose
// answers reported their token usage.
type JudgeUsage struct {
	// Assessments are the judge's calls that reported their usage, of
	// Calls made in all.
	Assessments int `json:"assessments"`
	Calls       int `json:"calls"`
	// InputTokens and OutputTokens are their totals; the means are per
	// assessment.
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	MeanInputTokens  Num   `json:"mean_input_tokens"`
	MeanOutputTokens Num   `json:"mean_output_tokens"`
	// With prices given (Price: USD per million input and output
	// tokens), USDPerAssessment is the mean cost of one assessment and
	// USD the total.
	InputUSDPerMillion  float64 `json:"input_usd_per_million,omitempty"`
	OutputUSDPerMillion float64 `json:"output_usd_per_million,omitempty"`
	USDPerAssessment    Num     `json:"usd_per_assessment,omitempty"`
	USD                 Num     `json:"usd,omitempty"`
}

// JudgeUsageOf is the judge's usage over the runs' points; nil when no
// point reported any.
func JudgeUsageOf(runs []ScoredRun) *JudgeUsage {
	var u JudgeUsage
	for _, r := range runs {
		for _, p := range r.Points {
			u.Calls++
			if p.InputTokens == 0 && p.OutputTokens == 0 {
				continue
			}
			u.Assessments++
			u.InputTokens += p.InputTokens
			u.OutputTokens += p.OutputTokens
		}
	}
	if u.Assessments == 0 {
		return nil
	}
	u.MeanInputTokens = Num(float64(u.InputTokens) / float64(u.Assessments))
	u.MeanOutputTokens = Num(float64(u.OutputTokens) / float64(u.Assessments))
	return &u
}

// Price sets the cost of the usage at these prices, in USD per million
// input and output tokens; both 0 leaves it unpriced.
func (u *JudgeUsage) Price(inputUSDPerMillion, outputUSDPerMillion float64) {
	if inputUSDPerMillion == 0 && outputUSDPerMillion == 0 {
		return
	}
	u.InputUSDPerMillion, u.OutputUSDPerMillion = inputUSDPerMillion, outputUSDPerMillion
	usd := (float64(u.InputTokens)*inputUSDPerMillion + float64(u.OutputTokens)*outputUSDPerMillion) / 1e6
	u.USD, u.USDPerAssessment = Num(usd), Num(usd/float64(u.Assessments))
}

// Sentence says the usage in one line.
func (u JudgeUsage) Sentence() string {
	s := fmt.Sprintf("%s input and %s output tokens per assessment on average (%d of %d assessments reported their usage; %d and %d tokens in all)",
		strconv.FormatFloat(float64(u.MeanInputTokens), 'f', 0, 64), strconv.FormatFloat(float64(u.MeanOutputTokens), 'f', 0, 64),
		u.Assessments, u.Calls, u.InputTokens, u.OutputTokens)
	if u.InputUSDPerMillion != 0 || u.OutputUSDPerMillion != 0 {
		s += fmt.Sprintf("; at $%g and $%g per million input and output tokens, $%.5f per assessment, $%.2f in all",
			u.InputUSDPerMillion, u.OutputUSDPerMillion, float64(u.USDPerAssessment), float64(u.USD))
	}
	return s
}

// NewReport measures scored runs and what policy does to them.
func NewReport(judge string, runs []ScoredRun, policy overseer.Policy) Report {
	rep := Report{Judge: judge, Runs: len(runs), PolicyName: policy.Name}
	for _, r := range runs {
		if r.Failed() {
			rep.Failed++
		}
		rep.Boundaries += len(r.Points)
		for _, p := range r.Points {
			if p.Err != "" {
				rep.JudgeErrors++
			} else if rep.Model == "" {
				rep.Model = p.Model
			}
		}
	}
	rep.JudgeUsage = JudgeUsageOf(runs)
	rep.Checkpoints = Checkpoints(runs)
	rep.AtSpend = CheckpointsAtSpend(runs, SpendAmounts(runs))
	rep.AnyBoundary = checkpoint("any boundary", runs, minAnswer)
	rep.Policy = PolicyRatesOf(runs, policy)
	rep.Promise = CheckPromise(rep.Policy, policy.Promise.MaxFalsePause)
	if b := policy.PauseBudget; b.Set() {
		paused := rep.Policy.FalsePauses + rep.Policy.Catches
		rep.PauseBudget = fmt.Sprintf("%s; on these runs it paused %d of %d (%.1f%%)", b, paused, len(runs), 100*float64(paused)/float64(max(1, len(runs))))
	}
	return rep
}

func minAnswer(r ScoredRun) (float64, bool) {
	v, ok := 1.0, false
	for _, p := range r.Points {
		if p.HasP() {
			v, ok = math.Min(v, p.OnObjective()), true
		}
	}
	return v, ok
}
