package eval

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/judge"
)

// Spend is what stopping runs would have saved and held, in model tokens
// (input and output, as the runs reported them): for a pause policy,
// stopping each run at its first pause; for a token budget, stopping it at
// the budget. Saved is the failed runs' tokens after the stop, out of all
// they spent; Held the succeeded runs a stop would have held up.
type Spend struct {
	// InForce is what the gates in force (the policy's pauses and the
	// budgets given) do while the runs run, in tokens, cost and time
	// (InForceOf): set by the caller, whether or not the runs reported
	// tokens.
	InForce *InForce `json:"in_force,omitempty"`
	// Runs counts the runs that reported tokens; the figures below are
	// theirs, all zero when none did.
	Runs            int   `json:"runs"`
	FailedTokens    int64 `json:"failed_tokens"`
	SucceededTokens int64 `json:"succeeded_tokens"`
	// FailedShare is the failed runs' share of all tokens spent.
	FailedShare float64    `json:"failed_share"`
	Policy      SpendSaved `json:"policy"`
	// Budget is a token budget at the 95th percentile of the succeeded
	// runs' tokens, each run's from the runs of the other task families
	// (so that no run sets its own budget); BudgetTokens is their mean.
	Budget       SpendSaved `json:"budget"`
	BudgetTokens int64      `json:"budget_tokens"`
	// Relative is a relative budget learned from the other task families'
	// succeeded runs (RelativeSpendOf).
	Relative RelativeSpend `json:"relative"`
}

// SpendSaved is what one way of stopping runs would have saved and held.
type SpendSaved struct {
	SavedTokens int64   `json:"saved_tokens"`
	SavedShare  float64 `json:"saved_share"`
	Held        int     `json:"held"`
	Succeeded   int     `json:"succeeded"`
}

// spendBudgetPercentile is where in the succeeded runs' tokens the budget
// SpendOf measures sits.
const spendBudgetPercentile = 0.95

// SpendOf measures what stopping the runs would have saved: records and
// the runs Score made of them, in the same order, with policy deciding
// the pauses, and measures those of its relative budget (Relative). Runs
// without tokens count for nothing; ok is false when no run reported
// tokens.
func SpendOf(records []Record, scored []ScoredRun, policy overseer.Policy, measures SpendMeasures) (s Spend, ok bool) {
	runs := spendRunsOf(records, scored, policy)
	if len(runs) == 0 {
		// A relative budget may still compare turns or time.
		return Spend{Relative: RelativeSpendOf(records, measures)}, false
	}
	s.Runs = len(runs)
	s.Policy, s.FailedTokens, s.SucceededTokens = pauseSaved(runs)
	s.Budget.Succeeded = s.Policy.Succeeded
	var budgets []int64
	for _, r := range runs {
		var others []int64
		for _, o := range runs {
			if !o.failed && o.family != r.family {
				others = append(others, o.total)
			}
		}
		if len(others) == 0 {
			continue
		}
		budget := percentile(others, spendBudgetPercentile)
		budgets = append(budgets, budget)
		if r.total > budget {
			if r.failed {
				s.Budget.SavedTokens += r.total - budget
			} else {
				s.Budget.Held++
			}
		}
	}
	if all := s.FailedTokens + s.SucceededTokens; all > 0 {
		s.FailedShare = float64(s.FailedTokens) / float64(all)
	}
	if s.FailedTokens > 0 {
		s.Budget.SavedShare = float64(s.Budget.SavedTokens) / float64(s.FailedTokens)
	}
	var sum int64
	for _, b := range budgets {
		sum += b
	}
	if len(budgets) > 0 {
		s.BudgetTokens = sum / int64(len(budgets))
	}
	s.Relative = RelativeSpendOf(records, measures)
	return s, true
}

// PauseSpendOf is what stopping each run at the policy's first pause would
// have saved and held (SpendOf's Policy), with the failed runs' tokens in
// all: records and the runs Score made of them, in the same order. Runs
// without tokens count for nothing.
func PauseSpendOf(records []Record, scored []ScoredRun, policy overseer.Policy) (saved SpendSaved, failedTokens int64) {
	saved, failedTokens, _ = pauseSaved(spendRunsOf(records, scored, policy))
	return saved, failedTokens
}

// spendRun is one run as spend measures it.
type spendRun struct {
	tokens   []int64 // tokens through each step, by step count
	total    int64
	failed   bool
	family   string
	pausedAt int // the step of the first pause; -1 when none
}

// through is the run's tokens through its first step steps.
func (r spendRun) through(step int) int64 {
	if step <= 0 {
		return 0
	}
	return r.tokens[min(step, len(r.tokens))-1]
}

// spendRunsOf are the runs that reported tokens, with the step of each
// one's first pause under policy.
func spendRunsOf(records []Record, scored []ScoredRun, policy overseer.Policy) []spendRun {
	var runs []spendRun
	for i, rec := range records {
		r := spendRun{tokens: tokensByStep(rec), failed: rec.Outcome.Failed(), family: rec.FamilyName(), pausedAt: -1}
		if n := len(r.tokens); n > 0 {
			r.total = r.tokens[n-1]
		}
		if r.total == 0 {
			continue
		}
		if i < len(scored) {
			r.pausedAt = firstPause(scored[i], policy)
		}
		runs = append(runs, r)
	}
	return runs
}

// pauseSaved is what stopping each run at its first pause saves of the
// failed runs' tokens and holds of the succeeded runs, and the tokens of
// each class.
func pauseSaved(runs []spendRun) (saved SpendSaved, failedTokens, succeededTokens int64) {
	for _, r := range runs {
		if r.failed {
			failedTokens += r.total
		} else {
			succeededTokens += r.total
			saved.Succeeded++
		}
		if r.pausedAt < 0 {
			continue
		}
		if r.failed {
			saved.SavedTokens += r.total - r.through(r.pausedAt)
		} else {
			saved.Held++
		}
	}
	if failedTokens > 0 {
		saved.SavedShare = float64(saved.SavedTokens) / float64(failedTokens)
	}
	return saved, failedTokens, succeededTokens
}

// tokensByStep is rec's tokens spent through each agent step, in order:
// element k-1 is the tokens of its first k steps (a phase run's tokens
// count at its last turn).
func tokensByStep(rec Record) []int64 {
	var out []int64
	var total int64
	for _, st := range rec.Steps {
		turns := 1
		if rec.unit() != UnitStep {
			turns = max(1, st.Turns)
		}
		for range turns - 1 {
			out = append(out, total)
		}
		total += st.InputTokens + st.OutputTokens
		out = append(out, total)
	}
	return out
}

// percentile is the q-quantile of values (nearest rank).
func percentile(values []int64, q float64) int64 {
	v := slices.Clone(values)
	slices.Sort(v)
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return v[max(0, min(i, len(v)-1))]
}

// Sentences says s in words, a line each.
func (s Spend) Sentences() []string {
	return []string{
		fmt.Sprintf("failed runs spent %d of the runs' %d tokens (%.0f%%)", s.FailedTokens, s.FailedTokens+s.SucceededTokens, 100*s.FailedShare),
		fmt.Sprintf("stopped at their first pause under this policy, failed runs would have saved %d tokens (%.1f%% of their spend); %d of %d succeeded runs held up by a pause",
			s.Policy.SavedTokens, 100*s.Policy.SavedShare, s.Policy.Held, s.Policy.Succeeded),
		fmt.Sprintf("a token budget at the succeeded runs' 95th percentile (%d tokens on average, each run's set by the other task families' runs) would have saved %d tokens (%.1f%% of the failed runs' spend), holding %d of %d succeeded runs",
			s.BudgetTokens, s.Budget.SavedTokens, 100*s.Budget.SavedShare, s.Budget.Held, s.Budget.Succeeded),
		s.Relative.Sentence(),
	}
}

// Saved is what oversight did and could have done on closed jobs, from
// their records and the reviewers' decisions at their gates (what a learn
// round reads): the failed jobs' share of the tokens, what they spent after
// their first pause (what stopping there would have saved), the jobs a
// reviewer aborted at a gate and what they had spent by then, and how long
// jobs waited at gates. Jobs that reported no tokens count for the gates
// and waits only (TokenJobs says how many reported any).
type Saved struct {
	Jobs      int `json:"jobs"`
	TokenJobs int `json:"token_jobs"`
	Failed    int `json:"failed"`
	// FailedTokens of AllTokens were the failed jobs'.
	FailedTokens int64 `json:"failed_tokens"`
	AllTokens    int64 `json:"all_tokens"`
	// PausedFailed failed jobs paused at a gate, and spent AfterFirstPause
	// tokens after their first one.
	PausedFailed    int   `json:"paused_failed"`
	AfterFirstPause int64 `json:"after_first_pause"`
	// Aborted jobs were stopped at a gate by a reviewer, having spent
	// AbortedTokens.
	Aborted       int   `json:"aborted"`
	AbortedTokens int64 `json:"aborted_tokens"`
	// Gates were decided by a reviewer, after waiting Waited in all and
	// MedianWait each in the middle: the judge's gates and the budgets'.
	Gates      int           `json:"gates"`
	Waited     time.Duration `json:"waited_ns"`
	MedianWait time.Duration `json:"median_wait_ns"`
	// Budgets is what the jobs' budgets stopped, apart from the judge's
	// pauses (PausedFailed, AfterFirstPause and Aborted count the judge's
	// gates only).
	Budgets BudgetStops `json:"budgets"`
}

// BudgetStops is what the jobs' budgets did on closed jobs: Jobs stopped at
// a budget's gate at least once; the failed ones of them (Failed) spent
// AfterFirstStop tokens after the first stop (what ending them there would
// have saved); Raised jobs were continued with a raised budget; Aborted
// were aborted at a budget's gate, having spent AbortedTokens.
type BudgetStops struct {
	Jobs           int   `json:"jobs"`
	Failed         int   `json:"failed"`
	AfterFirstStop int64 `json:"after_first_stop"`
	Raised         int   `json:"raised"`
	Aborted        int   `json:"aborted"`
	AbortedTokens  int64 `json:"aborted_tokens"`
}

// SavedOf measures Saved on records.
func SavedOf(records []Record) Saved {
	var s Saved
	var waits []int64
	for _, rec := range records {
		s.Jobs++
		tokens := tokensByStep(rec)
		var total int64
		if n := len(tokens); n > 0 {
			total = tokens[n-1]
		}
		if total > 0 {
			s.TokenJobs++
		}
		s.AllTokens += total
		failed := rec.Outcome.Failed()
		if failed {
			s.Failed++
			s.FailedTokens += total
		}
		after := func(step int) int64 { // tokens spent after step
			if step > 0 && len(tokens) > 0 {
				return total - tokens[min(step, len(tokens))-1]
			}
			return total
		}
		firstJudge, firstBudget, raised := -1, -1, false
		for _, g := range rec.Gates {
			s.Gates++
			waits = append(waits, g.WaitMS)
			s.Waited += time.Duration(g.WaitMS) * time.Millisecond
			switch {
			case g.Budget():
				if firstBudget < 0 {
					firstBudget = g.After
				}
				switch g.Action {
				case GateAbort:
					s.Budgets.Aborted++
					s.Budgets.AbortedTokens += total
				case GateContinue, "":
					raised = true
				}
			default:
				if firstJudge < 0 {
					firstJudge = g.After
				}
				if g.Action == GateAbort {
					s.Aborted++
					s.AbortedTokens += total
				}
			}
		}
		if failed && firstJudge >= 0 {
			s.PausedFailed++
			s.AfterFirstPause += after(firstJudge)
		}
		if firstBudget >= 0 {
			s.Budgets.Jobs++
			if raised {
				s.Budgets.Raised++
			}
			if failed {
				s.Budgets.Failed++
				s.Budgets.AfterFirstStop += after(firstBudget)
			}
		}
	}
	if len(waits) > 0 {
		s.MedianWait = time.Duration(percentile(waits, 0.5)) * time.Millisecond
	}
	return s
}

// Sentence says s in one sentence.
func (s Saved) Sentence() string {
	if s.Jobs == 0 {
		return "no closed jobs to add up"
	}
	var parts []string
	switch {
	case s.TokenJobs == 0:
		parts = append(parts, fmt.Sprintf("none of the %d closed jobs reported tokens, so their spend cannot be added up", s.Jobs))
	case s.AllTokens > 0:
		parts = append(parts, fmt.Sprintf("failed jobs spent %d of the %d closed jobs' %d tokens (%.0f%%)", s.FailedTokens, s.Jobs, s.AllTokens, 100*float64(s.FailedTokens)/float64(s.AllTokens)))
		if s.PausedFailed > 0 {
			jobs := "jobs"
			if s.PausedFailed == 1 {
				jobs = "job"
			}
			parts = append(parts, fmt.Sprintf("the %d failed %s that paused spent %d tokens after the first pause (what stopping there would have saved)", s.PausedFailed, jobs, s.AfterFirstPause))
		}
	}
	if s.Aborted > 0 {
		parts = append(parts, fmt.Sprintf("reviewers aborted %d at a gate, after %d tokens", s.Aborted, s.AbortedTokens))
	}
	if b := s.Budgets; b.Jobs > 0 {
		words := fmt.Sprintf("budgets, apart from the judge: %d jobs stopped at a budget (%d continued with a raised budget, %d aborted after %d tokens)", b.Jobs, b.Raised, b.Aborted, b.AbortedTokens)
		if b.Failed > 0 {
			words += fmt.Sprintf("; the %d failed of them spent %d tokens after the first stop (what ending them there would have saved)", b.Failed, b.AfterFirstStop)
		}
		parts = append(parts, words)
	}
	if s.Gates > 0 {
		parts = append(parts, fmt.Sprintf("jobs waited %s at %d gates (median %s)", s.Waited.Round(time.Second), s.Gates, s.MedianWait.Round(time.Second)))
	} else {
		parts = append(parts, "no job waited at a gate")
	}
	return strings.Join(parts, "; ")
}

// Bounds of a relative budget (SpendBudgetOf).
const (
	// SpendBudgetMaxReached is the share of jobs like the succeeded ones
	// a relative budget lets reach it, in expectation.
	SpendBudgetMaxReached = 0.05
	// minSpendFit and minSpendCalibration are the succeeded jobs with
	// tokens the curve is fitted on and the factor calibrated on, at
	// least: split conformal at 5 % needs 19 to calibrate on.
	minSpendFit         = 10
	minSpendCalibration = 19
	// minLogNormalSpend is the fewest succeeded jobs a relative budget is
	// learned from when too few to split back its promise: a prediction
	// bound that assumes their spend is log-normal (logNormalSpendBudget).
	// Below five, the spread of their logs is a guess.
	minLogNormalSpend = 5
)

// SpendMeasures says which measures a relative budget compares
// (SpendBudgetOf), of those every succeeded job reported.
type SpendMeasures string

const (
	// SpendMeasuresAuto, the default: tokens, learned from the succeeded
	// jobs that reported some; where none did, turns and time in phases. A job's time depends
	// on what its tools ran on and its length is in its tokens: on the
	// shared mini-swe-agent runs, learned from a team's first 60 runs
	// and judged on held-out task families, adding turns and time held
	// twice the succeeded runs tokens alone did, past the promise
	// (docs/budgets.md).
	SpendMeasuresAuto SpendMeasures = ""
	// SpendMeasuresAll compares tokens, turns and time in phases
	// together, each the jobs reported, with one factor over a job's
	// highest ratio.
	SpendMeasuresAll SpendMeasures = "all"
)

// ParseSpendMeasures reads "auto" (or "") and "all".
func ParseSpendMeasures(s string) (SpendMeasures, error) {
	switch s {
	case "", "auto":
		return SpendMeasuresAuto, nil
	case string(SpendMeasuresAll):
		return SpendMeasuresAll, nil
	}
	return "", fmt.Errorf("relative budget measures %q: give auto (tokens where reported, else turns and time) or all (tokens, turns and time together)", s)
}

// ErrTooFewForSpendBudget is the refusal of a relative budget that too
// few succeeded jobs back.
var ErrTooFewForSpendBudget = errors.New("too few succeeded jobs with tokens, turns or time for a relative budget")

// SpendBudgetOf learns a relative budget from the succeeded records that
// reported what they spent: their task families split in two (the
// curve's half the smallest families, as many as it needs; see below),
// the curves are the median tokens, turns and time in phases by phase run
// of one half (of agent loops; of jobs of phases, one value, the median of
// their totals: learnSpendBudget says why), and the factor is the split-conformal quantile, at
// 1 − maxReached, of the other half's highest ratio to the curves (over
// every phase run and every measure), so that a new job like the
// succeeded ones reaches it with probability at most maxReached. The
// measures are those measures names (SpendMeasuresAuto: tokens, else
// turns and time) that every one of these jobs reported (some by its
// end): one job without it would have no ratio to calibrate on. With
// fewer jobs than the split needs (minSpendFit to fit and, at 5 %, 19 to
// calibrate on, from two families), from minLogNormalSpend (5) of them it
// learns a budget of their totals with the same promise if their spend is
// log-normal, and says so in Assumes (logNormalSpendBudget). It refuses,
// in one sentence that says how many runs it needs, below that.
// maxReached is a share in (0, 0.5).
func SpendBudgetOf(records []Record, maxReached float64, measures SpendMeasures) (overseer.SpendBudget, error) {
	if !(maxReached > 0 && maxReached < 0.5) {
		return overseer.SpendBudget{}, fmt.Errorf("relative budget: a promise of %v is not a share in (0, 0.5): give the share of jobs like the succeeded ones it may reach, such as 0.05", maxReached)
	}
	return spendBudgetOf(records, maxReached, measures, spendOnce())
}

// spendOnce is SpendByPhaseRun replaying each record (by its ID) once.
func spendOnce() func(Record) []judge.Spent {
	byRun := map[string][]judge.Spent{}
	return func(rec Record) []judge.Spent {
		s, ok := byRun[rec.ID]
		if !ok {
			s = SpendByPhaseRun(rec)
			byRun[rec.ID] = s
		}
		return s
	}
}

// SpendByPhaseRun is what a recorded run had spent by each of its phase
// runs, as the plugin counts them (an agent loop's model and tool calls;
// Trajectory.PhaseRuns): the index a relative budget is learned on and
// checked against, live (checkBudget) and on recorded runs alike. An
// agent step is two calls, a model call and its tool's, so a curve by
// step would be read twice as late.
func SpendByPhaseRun(rec Record) []judge.Spent {
	var out []judge.Spent
	for _, b := range Replay(rec) {
		s := judge.SpentOf(b.Trajectory)
		for len(out) < s.PhaseRuns {
			at := s
			at.PhaseRuns = len(out) + 1
			out = append(out, at)
		}
	}
	return out
}

// spendBudgetOf is SpendBudgetOf with spend giving each record's spend by
// phase run (spendOnce: a caller that learns many budgets replays each
// record once). SpendMeasuresAuto learns a budget of tokens, and of turns
// and time only where no succeeded job reported tokens.
func spendBudgetOf(records []Record, maxReached float64, measures SpendMeasures, spend func(Record) []judge.Spent) (overseer.SpendBudget, error) {
	m := spendTurns | spendTime
	switch {
	case measures == SpendMeasuresAll:
		m = allMeasures
	case slices.ContainsFunc(records, func(rec Record) bool { return !rec.Outcome.Failed() && spendTokens.reportedBy(spend(rec)) }):
		m = spendTokens
	}
	return learnSpendBudget(records, maxReached, spend, m)
}

// measureSet is a set of the measures a relative budget may compare.
type measureSet uint8

const (
	spendTokens measureSet = 1 << iota
	spendTurns
	spendTime
	allMeasures = spendTokens | spendTurns | spendTime
)

// reportedBy says whether a job whose spend by phase run is s reported a
// measure of m by its end.
func (m measureSet) reportedBy(s []judge.Spent) bool {
	if len(s) == 0 {
		return false
	}
	last := s[len(s)-1]
	return m&spendTokens != 0 && last.Tokens > 0 || m&spendTurns != 0 && last.Turns > 0 || m&spendTime != 0 && last.PhaseTime > 0
}

// learnSpendBudget learns the budget of the measures of m from the
// succeeded jobs that reported one of them by their end, each measure
// covered where every one of those jobs reported it.
func learnSpendBudget(records []Record, maxReached float64, spend func(Record) []judge.Spent, m measureSet) (overseer.SpendBudget, error) {
	byFamily := map[string][][]judge.Spent{}
	// An agent loop's phase runs are its calls, each a model call or its
	// tool's, alike enough that what the succeeded jobs had spent by the
	// k-th is a pace to hold a job to. A job of phases runs a few unlike
	// phases, whose first ones' spend varies by task: a curve by phase
	// run would set the one factor by that early spread (on the shared
	// mini-swe-agent runs recast as phases, 21× the median, reached at the
	// first phase by a fifth of a held-out repository's succeeded runs),
	// so its budget compares totals.
	byPhaseRun := true
	for _, rec := range records {
		if rec.Outcome.Failed() {
			continue
		}
		if s := spend(rec); m.reportedBy(s) {
			byFamily[rec.FamilyName()] = append(byFamily[rec.FamilyName()], s)
			byPhaseRun = byPhaseRun && ShapeOfRecord(rec) == overseer.ShapeAgentLoop
		}
	}
	// Whole families to each half: the curve's takes the smallest
	// families (many of them, for a typical curve) until it has its
	// share, the calibrating half the rest. Its share is half, or, where
	// whole families would leave the calibrating half too few to back the
	// promise, what fitting the curve needs (minSpendFit), so that the
	// calibrating half, which sets the promise, is as large as it can be.
	families := slices.SortedFunc(maps.Keys(byFamily), func(a, b string) int {
		if c := len(byFamily[a]) - len(byFamily[b]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	total := 0
	for _, jobs := range byFamily {
		total += len(jobs)
	}
	split := func(fitShare int) (fit, cal [][]judge.Spent) {
		for i, f := range families {
			if len(fit) < fitShare && i < len(families)-1 {
				fit = append(fit, byFamily[f]...)
			} else {
				cal = append(cal, byFamily[f]...)
			}
		}
		return fit, cal
	}
	// rank is the split-conformal rank, ⌈(n+1)(1 − maxReached)⌉, of the
	// ratio the factor sits above among n calibrating ones; backs says a
	// split's calibrating half has it, so backs the promise asked.
	rank := func(n int) int { return int(math.Ceil(float64(n+1) * (1 - maxReached))) }
	backs := func(fit, cal [][]judge.Spent) bool { return len(fit) >= minSpendFit && rank(len(cal)) <= len(cal) }
	fit, cal := split((total + 1) / 2)
	if !backs(fit, cal) {
		// Whole families overshoot the half: the fewest the curve needs.
		fit, cal = split(minSpendFit)
	}
	// Split conformal where the halves back the promise asked; else, from
	// fewer jobs, a prediction bound on their totals that assumes their
	// spend is log-normal; else a refusal that says what it needs.
	if len(families) < 2 || !backs(fit, cal) {
		if total < minLogNormalSpend {
			succeeded, _ := Outcomes(records)
			return overseer.SpendBudget{}, fmt.Errorf("%w: a promise of %.0f%% needs %d to fit and %d to calibrate on, from two task families or more, or %d if their spend is log-normal; "+
				"there are %d, from %d %s; at the success rate of these %d runs (%d succeeded), that is about %d closed runs (%d without assuming it)",
				ErrTooFewForSpendBudget, 100*maxReached, minSpendFit, minSpendCalibration, minLogNormalSpend,
				total, len(families), plural(len(families), "task family", "task families"), len(records), succeeded,
				closedRunsFor(minLogNormalSpend, succeeded, len(records)), closedRunsFor(minSpendFit+minSpendCalibration, succeeded, len(records)))
		}
		return logNormalSpendBudget(append(fit, cal...), maxReached, m)
	}
	b := overseer.SpendBudget{MaxReached: maxReached, Jobs: len(cal)}
	if err := setCurves(&b, append(slices.Clip(fit), cal...), m, func(measure func(judge.Spent) int64) []int64 {
		if byPhaseRun {
			return medianCurve(fit, measure)
		}
		return medianTotal(fit, measure)
	}); err != nil {
		return overseer.SpendBudget{}, err
	}
	k := rank(len(cal))
	scores := make([]float64, len(cal))
	for i, s := range cal {
		scores[i] = highestRatio(s, b)
	}
	slices.Sort(scores)
	// Just above the k-th score: a job reaches the budget at a ratio at
	// or above the factor.
	b.Factor = math.Nextafter(scores[k-1], math.Inf(1))
	return b, nil
}

// setCurves gives b a curve of each measure of m that every one of jobs
// reported, made by curve from the measure, or refuses when there is none.
func setCurves(b *overseer.SpendBudget, jobs [][]judge.Spent, m measureSet, curve func(measure func(judge.Spent) int64) []int64) error {
	if m&spendTokens != 0 && everyReports(jobs, spendTokens) {
		b.Curve = curve(func(s judge.Spent) int64 { return s.Tokens })
	}
	if m&spendTurns != 0 && everyReports(jobs, spendTurns) {
		b.TurnsCurve = curve(func(s judge.Spent) int64 { return int64(s.Turns) })
	}
	if m&spendTime != 0 && everyReports(jobs, spendTime) {
		for _, v := range curve(func(s judge.Spent) int64 { return int64(s.PhaseTime) }) {
			b.PhaseTimeCurve = append(b.PhaseTimeCurve, time.Duration(v))
		}
	}
	if len(b.Covers()) == 0 {
		return fmt.Errorf("%w: none of tokens, turns or time in phases was reported by all %d succeeded runs; "+
			"a relative budget compares a measure every one of them reports (PhaseReport.InputTokens and OutputTokens, Turns)", ErrTooFewForSpendBudget, len(jobs))
	}
	return nil
}

// logNormalSpendBudget is the budget of the measures of m that jobs, too
// few to split, back if their spend is log-normal: each curve is one
// value, the geometric mean of the jobs' totals, and the factor the
// one-sided prediction bound at 1 − maxReached on the log of each job's
// highest ratio to them, mean + t(n−1)·s·√(1+1/n), which a new job like
// them reaches with probability maxReached when those logs are normal.
// (Runs unlike them reach it more often: on the shared mini-swe-agent
// runs, from 6–20 succeeded runs, 4.3–5.2 % of held-out succeeded runs of
// the same repositories at 5 %, 6.6–8.3 % of other repositories';
// docs/budgets.md.)
func logNormalSpendBudget(jobs [][]judge.Spent, maxReached float64, m measureSet) (overseer.SpendBudget, error) {
	b := overseer.SpendBudget{MaxReached: maxReached, Jobs: len(jobs), Assumes: judge.SpendAssumesLogNormal}
	// One value a curve: the geometric mean of the jobs' totals.
	if err := setCurves(&b, jobs, m, func(measure func(judge.Spent) int64) []int64 {
		logs := 0.0
		for _, s := range jobs {
			logs += math.Log(float64(measure(s[len(s)-1])))
		}
		return []int64{max(1, int64(math.Round(math.Exp(logs/float64(len(jobs))))))}
	}); err != nil {
		return overseer.SpendBudget{}, err
	}
	logs := make([]float64, len(jobs))
	mean := 0.0
	for i, s := range jobs {
		logs[i] = math.Log(highestRatio(s, b))
		mean += logs[i] / float64(len(jobs))
	}
	variance := 0.0
	for _, l := range logs {
		variance += (l - mean) * (l - mean) / float64(len(jobs)-1)
	}
	if variance == 0 {
		return overseer.SpendBudget{}, fmt.Errorf("%w: the %d succeeded runs spent alike in %s, so they say nothing of how far a run like them may spend; "+
			"a budget of their totals needs runs whose spend varies, or %d to fit and %d to calibrate on", ErrTooFewForSpendBudget, len(jobs), strings.Join(b.Covers(), " and "), minSpendFit, minSpendCalibration)
	}
	n := float64(len(jobs))
	bound := mean + studentTQuantile(1-maxReached, len(jobs)-1)*math.Sqrt(variance)*math.Sqrt(1+1/n)
	b.Factor = math.Nextafter(math.Exp(bound), math.Inf(1))
	return b, nil
}

// everyReports says every job reported measure m by its end.
func everyReports(jobs [][]judge.Spent, m measureSet) bool {
	for _, s := range jobs {
		if !m.reportedBy(s) {
			return false
		}
	}
	return len(jobs) > 0
}

// medianCurve is the median, at each phase run, of the jobs' measure by
// then (a job that had ended counts its total), as far as the longest.
func medianCurve(jobs [][]judge.Spent, measure func(judge.Spent) int64) []int64 {
	longest := 0
	for _, s := range jobs {
		longest = max(longest, len(s))
	}
	curve := make([]int64, longest)
	at := make([]int64, len(jobs))
	for k := range longest {
		for i, s := range jobs {
			at[i] = measure(s[min(k, len(s)-1)])
		}
		curve[k] = percentile(at, 0.5)
		if k > 0 && curve[k] < curve[k-1] {
			curve[k] = curve[k-1]
		}
	}
	return curve
}

// medianTotal is a one-value curve: the median of the jobs' totals of
// measure.
func medianTotal(jobs [][]judge.Spent, measure func(judge.Spent) int64) []int64 {
	totals := make([]int64, len(jobs))
	for i, s := range jobs {
		totals[i] = measure(s[len(s)-1])
	}
	return []int64{percentile(totals, 0.5)}
}

// highestRatio is a job's highest ratio to the curves, over its phase
// runs and the measures b covers.
func highestRatio(spend []judge.Spent, b overseer.SpendBudget) float64 {
	best := 0.0
	for _, s := range spend {
		r, _ := b.Ratio(s)
		best = max(best, r)
	}
	return best
}

// firstReached is the first phase run (1-based) at which a job reaches
// the relative budget b; 0 when it never does.
func firstReached(spend []judge.Spent, b overseer.SpendBudget) int {
	for k, s := range spend {
		if r, name := b.Ratio(s); name != "" && r >= b.Factor {
			return k + 1
		}
	}
	return 0
}

// RelativeSpend is what a relative budget would have done on recorded
// runs, each run's budget learned from the runs of the other task families
// (grouped by family, so that no run sets its own): failed runs' tokens it
// would have saved, stopping them where it was reached, and the succeeded
// runs that would have reached it. Refused lists the families whose
// budget could not be learned (too few runs backed it).
type RelativeSpend struct {
	SpendSaved
	// Caught counts the failed runs that reached it, of Failed; where the
	// runs reported no tokens, these (and Held) are what it says.
	Caught  int      `json:"caught"`
	Failed  int      `json:"failed"`
	Runs    int      `json:"runs"`
	Refused []string `json:"refused,omitempty"`
	// Learned counts the task families whose budget was learned;
	// MeanFactor is the learned factors' mean; Covers the measures the
	// learned budgets covered, each once.
	Learned    int      `json:"learned"`
	MeanFactor float64  `json:"mean_factor"`
	Covers     []string `json:"covers,omitempty"`
	// InTotal counts the task families whose budget compares totals (one
	// value a curve: learned from jobs of phases, or log-normal);
	// LogNormal those whose budget, learned from too few succeeded runs of
	// the others to split, assumes their spend is log-normal
	// (SpendBudget.Assumes).
	InTotal   int `json:"in_total,omitempty"`
	LogNormal int `json:"log_normal,omitempty"`
}

// RelativeSpendOf measures RelativeSpend on records, each budget of the
// measures named.
func RelativeSpendOf(records []Record, measures SpendMeasures) RelativeSpend {
	var s RelativeSpend
	byFamily := map[string][]Record{}
	for _, rec := range records {
		byFamily[rec.FamilyName()] = append(byFamily[rec.FamilyName()], rec)
	}
	families := slices.Sorted(maps.Keys(byFamily))
	var failedTokens int64
	var factors float64
	spend := spendOnce()
	for _, f := range families {
		var others []Record
		for _, g := range families {
			if g != f {
				others = append(others, byFamily[g]...)
			}
		}
		b, err := spendBudgetOf(others, SpendBudgetMaxReached, measures, spend)
		if err != nil {
			s.Refused = append(s.Refused, f)
			continue
		}
		s.Learned++
		factors += b.Factor
		if b.Assumes == judge.SpendAssumesLogNormal {
			s.LogNormal++
		}
		if b.InTotal() {
			s.InTotal++
		}
		for _, m := range b.Covers() {
			if !slices.Contains(s.Covers, m) {
				s.Covers = append(s.Covers, m)
			}
		}
		for _, rec := range byFamily[f] {
			t := spend(rec)
			if !allMeasures.reportedBy(t) {
				continue
			}
			s.Runs++
			at := firstReached(t, b)
			if rec.Outcome.Failed() {
				total := t[len(t)-1].Tokens
				failedTokens += total
				s.Failed++
				if at > 0 {
					s.Caught++
					s.SavedTokens += total - t[at-1].Tokens
				}
				continue
			}
			s.Succeeded++
			if at > 0 {
				s.Held++
			}
		}
	}
	if failedTokens > 0 {
		s.SavedShare = float64(s.SavedTokens) / float64(failedTokens)
	}
	if s.Learned > 0 {
		s.MeanFactor = factors / float64(s.Learned)
	}
	return s
}

// Sentence says s in one sentence.
func (s RelativeSpend) Sentence() string {
	if s.Runs == 0 {
		return fmt.Sprintf("no relative budget could be learned: for each of the %d task families, too few succeeded runs of the others reported tokens, turns or time", len(s.Refused))
	}
	// Where every family's budget compares totals, the factor is of
	// totals; a mix is said below.
	compared := "at the same call"
	if s.InTotal > 0 && s.InTotal == s.Learned {
		compared = "in all"
	}
	out := fmt.Sprintf("a relative budget learned from the other task families' succeeded runs (%.1f× their median %s %s on average, promising at most %.0f%% of runs like them reach it) "+
		"is reached by %d of %d succeeded runs and %d of %d failed ones",
		s.MeanFactor, strings.Join(s.Covers, "/"), compared, 100*SpendBudgetMaxReached, s.Held, s.Succeeded, s.Caught, s.Failed)
	if s.SavedShare > 0 || s.SavedTokens > 0 {
		out += fmt.Sprintf("; stopped where they reached it, the failed runs would have saved %d tokens (%.1f%% of their spend)", s.SavedTokens, 100*s.SavedShare)
	}
	if s.InTotal > s.LogNormal && s.InTotal < s.Learned {
		out += fmt.Sprintf("; for %d %s of phases, the budget compares totals",
			s.InTotal-s.LogNormal, plural(s.InTotal-s.LogNormal, "task family", "task families"))
	}
	if s.LogNormal > 0 {
		out += fmt.Sprintf("; for %d %s, too few to split, the budget compares totals, and its promise holds if their spend is log-normal",
			s.LogNormal, plural(s.LogNormal, "task family", "task families"))
	}
	if len(s.Refused) > 0 {
		out += fmt.Sprintf("; not learned for %d %s (too few runs of the others)", len(s.Refused), plural(len(s.Refused), "task family", "task families"))
	}
	return out
}
