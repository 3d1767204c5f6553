package eval

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/judge"
)

// Online figures: what a live judge and the gates in force can know while
// a run runs. A figure at a fraction of each run's length ("50%") compares
// runs at a point that depends on how long each one turned out to be,
// which no live judge knows: a turn count alone ranks runs there by their
// length. The figures here never look past the boundary they stand at:
//
//   - InForceOf walks each run boundary by boundary, as the plugin does
//     live, to the first gate the policy or a budget in force would open,
//     and says what that holds and catches and what stopping there saves;
//   - the checkpoints after a fixed number of steps (Checkpoints, "20
//     steps") and at a fixed spend (CheckpointsAtSpend, "1.48M tokens")
//     rank the runs still running there.

// InForceOptions are the gates in force beside the policy's pauses.
type InForceOptions struct {
	// Budget is a fixed budget every run has, as a team sets one per
	// workflow type or per run (overseer.Budget): at a bound the job
	// stops until a person decides. The zero budget bounds nothing.
	Budget overseer.Budget
	// RelativeGates counts the policy's relative budget (Policy.Spend)
	// as a gate, for a team that turns relative gates on
	// (overseer.Options.RelativeBudgetGates): a run stops where it first
	// reaches it, as at a fixed budget. Off (the plugin's default), it
	// only reads Needs a look and stops nothing, so it is no gate.
	RelativeGates bool
	// HoldRates are the shares of succeeded runs held at which the judge's
	// threshold on P is set instead of the policy's, with the budgets in
	// force (InForce.AtHoldRates); none when empty. FixedFalsePauseRates
	// is what the commands use.
	HoldRates []float64
}

// GateFigures are what gates do to runs while they run: each run stopped
// at the first boundary where a gate opens. A failed run stopped is caught,
// a succeeded one held (a reviewer must look and let it go on).
type GateFigures struct {
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	Held      int `json:"held"`
	Caught    int `json:"caught"`
	// HeldShare is Held / Succeeded, CaughtShare Caught / Failed.
	HeldShare   Num `json:"held_share"`
	CaughtShare Num `json:"caught_share"`
	// MedianCall is the median call (boundary, counted from 1: a call of
	// an agent loop, a phase run of a job of phases) at which a caught
	// run's first gate opened; MedianCallShare the median share of its
	// calls done by then; MedianSpendShare the median share of its tokens
	// spent by then, over the caught runs that reported tokens.
	MedianCall       Num `json:"median_call_at_first_catch"`
	MedianCallShare  Num `json:"median_call_share_at_first_catch"`
	MedianSpendShare Num `json:"median_spend_share_at_first_catch"`
	// The failed runs' spend in all, and after their first gate (what
	// stopping them there would have saved): tokens (SavedShare is the
	// share of the tokens), cost in USD, and time (the recorded calls'
	// durations). A share is null when the failed runs reported none.
	FailedTokens   int64         `json:"failed_tokens"`
	SavedTokens    int64         `json:"saved_tokens"`
	SavedShare     Num           `json:"saved_share"`
	FailedCostUSD  float64       `json:"failed_cost_usd"`
	SavedCostUSD   float64       `json:"saved_cost_usd"`
	SavedCostShare Num           `json:"saved_cost_share"`
	FailedTime     time.Duration `json:"failed_time_ns"`
	SavedTime      time.Duration `json:"saved_time_ns"`
	SavedTimeShare Num           `json:"saved_time_share"`

	calls, callShares, spendShares []float64
}

// InForce is what the gates in force do while the runs run (InForceOf):
// the policy's pauses and the budgets together, each run stopped at the
// first gate either opens.
type InForce struct {
	GateFigures
	// Policy names the policy whose pauses are a gate; Budget says the
	// fixed budget in force ("" for none); Relative the policy's relative
	// budget when it counts as a gate (InForceOptions.RelativeGates), and
	// RelativeAdvisory when the policy has one that is not a gate (it
	// reads Needs a look only).
	Policy           string `json:"policy"`
	Budget           string `json:"budget,omitempty"`
	Relative         string `json:"relative,omitempty"`
	RelativeAdvisory string `json:"relative_advisory,omitempty"`
	// Judge is the policy's pauses alone, Budgets the budgets alone (nil
	// when none is in force).
	Judge   GateFigures  `json:"judge"`
	Budgets *GateFigures `json:"budgets,omitempty"`
	// AtHoldRates are the gates with the judge's threshold on P set so
	// that at most each rate of the succeeded runs is held, the budgets in
	// force included.
	AtHoldRates []HoldRateGates `json:"at_hold_rates,omitempty"`
}

// HoldRateGates are the gates at one fixed hold rate: the judge's gate
// opens at the first boundary whose P(on objective) is at or below
// Threshold (the policy's breach rules aside), beside the budgets in
// force. The threshold is the largest P among the runs' lowest whose
// succeeded runs held, budgets included, are at most ⌊Rate × n⌋ of n, as
// CatchesAt sets it: a threshold never splits a tie, and with fewer than
// 1/Rate succeeded runs none may be held. Threshold is −1 when no run's
// P lies below the lowest a succeeded run may not be held at (the judge
// then never pauses), and null when the budgets alone hold more than the
// rate allows (BudgetsAlone; the figures are then the budgets') or no
// succeeded run has a P.
type HoldRateGates struct {
	Rate         float64 `json:"rate"`
	Threshold    Num     `json:"threshold"`
	BudgetsAlone bool    `json:"budgets_alone,omitempty"`
	GateFigures
}

// gatedRun is one run as the gates see it, boundary by boundary.
type gatedRun struct {
	failed bool
	spent  []overseer.Budget // at each boundary
	p      []float64         // P(on objective) at each boundary; NaN without
	judge  int               // the first boundary the policy flags; -1 for none
	budget int               // the first boundary a budget in force is reached at; -1 for none
}

func (g gatedRun) total() overseer.Budget {
	if len(g.spent) == 0 {
		return overseer.Budget{}
	}
	return g.spent[len(g.spent)-1]
}

// firstAtOrBelow is the first boundary whose P is at or below t, -1 for none.
func (g gatedRun) firstAtOrBelow(t float64) int {
	for i, v := range g.p {
		if v <= t {
			return i
		}
	}
	return -1
}

// minP is the run's lowest P, and whether it has any.
func (g gatedRun) minP() (float64, bool) {
	v, ok := math.Inf(1), false
	for _, x := range g.p {
		if !math.IsNaN(x) {
			v, ok = math.Min(v, x), true
		}
	}
	return v, ok
}

// earliest is the earlier of two boundaries, -1 standing for none.
func earliest(a, b int) int {
	switch {
	case a < 0:
		return b
	case b < 0:
		return a
	}
	return min(a, b)
}

// BudgetReached says whether spent reaches a bound of limit, as the
// plugin checks a budget at a boundary: at or past the bound, a token,
// cost or turn bound only once the phases reported some (an unreported
// one is unchecked, never reached).
func BudgetReached(limit, spent overseer.Budget) bool {
	switch {
	case limit.Tokens > 0 && spent.Tokens > 0 && spent.Tokens >= limit.Tokens,
		limit.CostUSD > 0 && spent.CostUSD > 0 && spent.CostUSD >= limit.CostUSD,
		limit.Elapsed > 0 && spent.Elapsed >= limit.Elapsed,
		limit.Turns > 0 && spent.Turns > 0 && spent.Turns >= limit.Turns,
		limit.PhaseRuns > 0 && spent.PhaseRuns >= limit.PhaseRuns:
		return true
	}
	return false
}

// spentOf is what a point's run had spent as a relative budget reads it:
// a recorded run's Elapsed is its time in phases (Point.Spent).
func spentOf(pt Point) judge.Spent {
	return judge.Spent{Tokens: pt.Spent.Tokens, Turns: pt.Spent.Turns, PhaseTime: pt.Spent.Elapsed, PhaseRuns: pt.Spent.PhaseRuns}
}

// gateRuns walks each run boundary by boundary and finds the first gate
// of the policy and of the budgets in force.
func gateRuns(runs []ScoredRun, policy overseer.Policy, opts InForceOptions) []gatedRun {
	out := make([]gatedRun, 0, len(runs))
	relative := policy.Spend
	if !opts.RelativeGates {
		relative = nil
	}
	for _, r := range runs {
		g := gatedRun{failed: r.Failed(), judge: -1, budget: -1}
		for i, pt := range r.Points {
			g.spent = append(g.spent, pt.Spent)
			p := math.NaN()
			if pt.HasP() {
				p = pt.OnObjective()
			}
			g.p = append(g.p, p)
			if g.judge < 0 && pt.Err == "" && policy.Evaluate(pt.Answers).Flagged {
				g.judge = i
			}
			if g.budget < 0 && (BudgetReached(opts.Budget, pt.Spent) ||
				relative != nil && relative.Reached(spentOf(pt)) != "") {
				g.budget = i
			}
		}
		out = append(out, g)
	}
	return out
}

// add counts one run stopped at boundary first (-1: never).
func (f *GateFigures) add(g gatedRun, first int) {
	total := g.total()
	if !g.failed {
		f.Succeeded++
		if first >= 0 {
			f.Held++
		}
		return
	}
	f.Failed++
	f.FailedTokens += total.Tokens
	f.FailedCostUSD += total.CostUSD
	f.FailedTime += total.Elapsed
	if first < 0 {
		return
	}
	f.Caught++
	at := g.spent[first]
	f.calls = append(f.calls, float64(first+1))
	f.callShares = append(f.callShares, float64(first+1)/float64(len(g.spent)))
	if total.Tokens > 0 {
		f.spendShares = append(f.spendShares, float64(at.Tokens)/float64(total.Tokens))
	}
	f.SavedTokens += total.Tokens - at.Tokens
	f.SavedCostUSD += total.CostUSD - at.CostUSD
	f.SavedTime += total.Elapsed - at.Elapsed
}

func (f *GateFigures) finish() {
	f.HeldShare, f.CaughtShare = Num(ratio(f.Held, f.Succeeded)), Num(ratio(f.Caught, f.Failed))
	f.MedianCall, f.MedianCallShare, f.MedianSpendShare = Num(Median(f.calls)), Num(Median(f.callShares)), Num(Median(f.spendShares))
	share := func(saved, all float64) Num {
		if all <= 0 {
			return Num(math.NaN())
		}
		return Num(saved / all)
	}
	f.SavedShare = share(float64(f.SavedTokens), float64(f.FailedTokens))
	f.SavedCostShare = share(f.SavedCostUSD, f.FailedCostUSD)
	f.SavedTimeShare = share(float64(f.SavedTime), float64(f.FailedTime))
}

// gateFiguresOf counts the runs, each stopped at first(run).
func gateFiguresOf(runs []gatedRun, first func(gatedRun) int) GateFigures {
	var f GateFigures
	for _, g := range runs {
		f.add(g, first(g))
	}
	f.finish()
	return f
}

// InForceOf is what the gates in force would have done to the runs while
// they ran: each run walked boundary by boundary, as the plugin walks a
// live one, to the first boundary where policy flags its answers (a
// pause) or a budget in force is reached (opts). The runs' points must
// carry what they had spent (Score fills Point.Spent in).
func InForceOf(runs []ScoredRun, policy overseer.Policy, opts InForceOptions) InForce {
	gated := gateRuns(runs, policy, opts)
	out := InForce{Policy: policy.Name}
	if !opts.Budget.IsZero() {
		out.Budget = opts.Budget.String()
	}
	if s := policy.Spend; s != nil {
		if opts.RelativeGates {
			out.Relative = s.String()
		} else {
			out.RelativeAdvisory = s.String()
		}
	}
	out.GateFigures = gateFiguresOf(gated, func(g gatedRun) int { return earliest(g.judge, g.budget) })
	out.Judge = gateFiguresOf(gated, func(g gatedRun) int { return g.judge })
	if out.Budget != "" || out.Relative != "" {
		b := gateFiguresOf(gated, func(g gatedRun) int { return g.budget })
		out.Budgets = &b
	}
	for _, rate := range opts.HoldRates {
		out.AtHoldRates = append(out.AtHoldRates, atHoldRate(gated, rate))
	}
	return out
}

// atHoldRate sets the judge's threshold on P so that, with the budgets in
// force, at most rate of the succeeded runs are held (see HoldRateGates).
func atHoldRate(gated []gatedRun, rate float64) HoldRateGates {
	h := HoldRateGates{Rate: rate, Threshold: Num(math.NaN())}
	succeeded, byBudget := 0, 0
	var candidates, negatives []float64
	for _, g := range gated {
		v, ok := g.minP()
		if ok {
			candidates = append(candidates, v)
		}
		if g.failed {
			continue
		}
		succeeded++
		switch {
		case g.budget >= 0:
			byBudget++
		case ok:
			negatives = append(negatives, v)
		}
	}
	allowed := int(math.Floor(rate*float64(succeeded)+1e-9)) - byBudget
	budgets := func(g gatedRun) int { return g.budget }
	switch {
	case allowed < 0:
		h.BudgetsAlone = true
		h.GateFigures = gateFiguresOf(gated, budgets)
		return h
	case len(negatives) == 0:
		h.GateFigures = gateFiguresOf(gated, budgets)
		return h
	}
	t := thresholdUnder(candidates, negatives, allowed, -1)
	h.Threshold = Num(t)
	h.GateFigures = gateFiguresOf(gated, func(g gatedRun) int { return earliest(g.firstAtOrBelow(t), g.budget) })
	return h
}

// Sentences say the figures in plain words, a line each: what the gates
// in force held, caught and saved, by cause, and at the fixed hold rates.
func (f InForce) Sentences() []string {
	gates := "the policy's pauses"
	if f.Budget != "" {
		gates += ", a budget of " + f.Budget
	}
	if f.Relative != "" {
		gates += ", the relative budget (" + f.Relative + ")"
	}
	out := []string{fmt.Sprintf("gates in force: %s%s", gates, inForceNote(f))}
	out = append(out, f.Sentence("together"))
	if f.Budgets != nil {
		out = append(out, f.Judge.Sentence("the judge's pauses alone"), f.Budgets.Sentence("the budgets alone"))
	}
	return append(out, f.HoldRateSentences()...)
}

// HoldRateSentences say the gates at the fixed hold rates, a line each
// (InForce.AtHoldRates).
func (f InForce) HoldRateSentences() []string {
	var out []string
	for _, h := range f.AtHoldRates {
		switch {
		case h.BudgetsAlone:
			out = append(out, h.Sentence(fmt.Sprintf("at %g%% of succeeded runs held: the budgets alone hold more, so no threshold on P; the budgets", 100*h.Rate)))
		case math.IsNaN(float64(h.Threshold)):
			out = append(out, fmt.Sprintf("at %g%% of succeeded runs held: no succeeded run has a P to set a threshold on", 100*h.Rate))
		default:
			with := ""
			if f.Budgets != nil {
				with = ", with the budgets"
			}
			judge := fmt.Sprintf("the judge pausing at P ≤ %.3f", float64(h.Threshold))
			if h.Threshold < 0 {
				// Below every run's P: ⌊rate × n⌋ allows none, and the
				// lowest P is a succeeded run's.
				judge = "no threshold on P holds so few: the judge never pauses"
			}
			out = append(out, h.Sentence(fmt.Sprintf("at %g%% of succeeded runs held (%s%s)", 100*h.Rate, judge, with)))
		}
	}
	return out
}

func inForceNote(f InForce) string {
	if f.RelativeAdvisory != "" {
		return fmt.Sprintf(" (the policy's relative budget, %s, only reads Needs a look: no gate; --relative-budget-gates counts it as one)", f.RelativeAdvisory)
	}
	if f.Budget == "" && f.Relative == "" {
		return " (no budget: --budget gives one)"
	}
	return ""
}

// Sentence says the figures in one line, led by who.
func (f GateFigures) Sentence(who string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: held %d of %d succeeded runs (%s) and caught %d of %d failed runs (%s)",
		who, f.Held, f.Succeeded, pct1(f.HeldShare), f.Caught, f.Failed, pct1(f.CaughtShare))
	if f.Caught > 0 {
		fmt.Fprintf(&b, ", the first at a median call %s (%s of the run's calls", num0(f.MedianCall), pct0(f.MedianCallShare))
		if !math.IsNaN(float64(f.MedianSpendShare)) {
			fmt.Fprintf(&b, ", %s of its tokens", pct0(f.MedianSpendShare))
		}
		b.WriteString(")")
	}
	var saved []string
	if f.FailedTokens > 0 {
		saved = append(saved, fmt.Sprintf("%s of their tokens (%d of %d)", pct1(f.SavedShare), f.SavedTokens, f.FailedTokens))
	}
	if f.FailedCostUSD > 0 {
		saved = append(saved, fmt.Sprintf("%s of their cost ($%.2f of $%.2f)", pct1(f.SavedCostShare), f.SavedCostUSD, f.FailedCostUSD))
	}
	if f.FailedTime > 0 {
		saved = append(saved, fmt.Sprintf("%s of their time (%s of %s)", pct1(f.SavedTimeShare), f.SavedTime.Round(time.Second), f.FailedTime.Round(time.Second)))
	}
	switch {
	case len(saved) > 0:
		fmt.Fprintf(&b, "; stopped there, the failed runs would have saved %s", strings.Join(saved, ", "))
	case f.Failed > 0:
		b.WriteString("; the failed runs reported no tokens, cost or time, so what stopping them saves cannot be said")
	}
	return b.String()
}

func pct1(n Num) string {
	if math.IsNaN(float64(n)) {
		return "–"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n))
}

func pct0(n Num) string {
	if math.IsNaN(float64(n)) {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(n))
}

func num0(n Num) string {
	if math.IsNaN(float64(n)) {
		return "–"
	}
	return fmt.Sprintf("%.0f", float64(n))
}

// SpendQuantiles are where in the succeeded runs' total tokens the
// checkpoints at fixed spend sit (SpendAmounts).
var SpendQuantiles = []float64{0.25, 0.5, 0.75}

// SpendAmounts are the token amounts the checkpoints at fixed spend stand
// at: the SpendQuantiles of the succeeded runs' total tokens (nearest
// rank), in order, each once; none when no succeeded run reported tokens.
func SpendAmounts(runs []ScoredRun) []int64 {
	var totals []int64
	for _, r := range runs {
		if n := len(r.Points); n > 0 && !r.Failed() && r.Points[n-1].Spent.Tokens > 0 {
			totals = append(totals, r.Points[n-1].Spent.Tokens)
		}
	}
	if len(totals) == 0 {
		return nil
	}
	var out []int64
	for _, q := range SpendQuantiles {
		if a := percentile(totals, q); len(out) == 0 || a > out[len(out)-1] {
			out = append(out, a)
		}
	}
	return out
}

// CheckpointsAtSpend measures the judge's answers at fixed token spends,
// among the runs still running there: a run counts at amount A when it
// spent more than A in all, with its latest answer at a boundary where it
// had spent at most A. A run that ended at or before A, or reported no
// tokens, is not among them.
func CheckpointsAtSpend(runs []ScoredRun, amounts []int64) []Checkpoint {
	out := make([]Checkpoint, 0, len(amounts))
	for _, a := range amounts {
		c := checkpoint(TokensText(a)+" tokens", runs, func(r ScoredRun) (float64, bool) {
			n := len(r.Points)
			if n == 0 || r.Points[n-1].Spent.Tokens <= a {
				return 0, false
			}
			v, ok := 0.0, false
			for _, p := range r.Points {
				if p.Spent.Tokens > a {
					break
				}
				if p.HasP() {
					v, ok = p.OnObjective(), true
				}
			}
			return v, ok
		})
		c.Tokens = a
		out = append(out, c)
	}
	return out
}

// TokensText writes a token count short: 1480000 → "1.48M", 412000 → "412k".
func TokensText(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	case n >= 1_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%d", n)
}
