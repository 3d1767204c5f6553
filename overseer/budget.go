package overseer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer/judge"
)

// Budget bounds what one job may spend before a person looks: its phases'
// model tokens (input and output, as they reported them), their cost, the
// workflow time since the run started, the agent turns they reported, or
// its phase runs. A zero field bounds nothing. Give budgets per workflow
// type ([Options].Budgets) or per run (the memo field [BudgetMemoKey]);
// a run pins its budget when it starts.
//
// At [BudgetWarnShare] of a bound the job reads Needs a look, with the
// bound named. At the bound, in manage mode, a gate opens whose reason is
// the budget (Gate.Kind [GateKindBudget]), never a verdict's: a reviewer
// continues with a raised budget ([ResumeRequest].Budget) or aborts. In
// observe mode the job shows its spend against the budget and never stops.
// A bound the phases give nothing to check against (no tokens, no cost or
// no turns reported) is shown as unchecked ([BudgetStatus].Unchecked), not
// passed silently.
type Budget struct {
	Tokens    int64         `json:"tokens,omitempty"`
	CostUSD   float64       `json:"cost_usd,omitempty"`
	Elapsed   time.Duration `json:"elapsed_ns,omitempty"`
	Turns     int           `json:"turns,omitempty"`
	PhaseRuns int           `json:"phase_runs,omitempty"`
}

// BudgetWarnShare is the share of a bound at which a job reads Needs a
// look.
const BudgetWarnShare = 0.8

// BudgetMemoKey is the memo field that sets one run's budget, as JSON
// ({"tokens": 2000000, "elapsed_ns": 21600000000000}), instead of its
// workflow type's.
const BudgetMemoKey = "overseer.budget"

// How near a job is to its budget (BudgetStatus.State, the
// OverseerBudget search attribute, Summary.BudgetState).
const (
	// BudgetNear: at BudgetWarnShare of a bound.
	BudgetNear = "near"
	// BudgetReached: at a bound.
	BudgetReached = "reached"
)

// GateKindBudget is the Kind of a gate a budget opened.
const GateKindBudget = "budget"

// InvalidBudgetErrorType is the application error type of a run whose
// memo sets a budget that cannot be read ([BudgetMemoKey]); the run fails
// at its start, before any phase, and is not retried.
const InvalidBudgetErrorType = "OverseerInvalidBudget"

// IsZero says the budget bounds nothing.
func (b Budget) IsZero() bool { return b == Budget{} }

// Validate refuses a budget with a negative or non-finite bound.
func (b Budget) Validate() error {
	switch {
	case b.Tokens < 0, b.Turns < 0, b.PhaseRuns < 0, b.Elapsed < 0:
		return fmt.Errorf("overseer: a budget's bound is negative; give each bound as a positive number, or leave it out")
	case b.CostUSD < 0 || math.IsNaN(b.CostUSD) || math.IsInf(b.CostUSD, 0):
		return fmt.Errorf("overseer: budget cost_usd %v is not a positive number of dollars", b.CostUSD)
	}
	return nil
}

// String lists the budget's bounds: "2000000 tokens, $40.00, 6h0m0s".
func (b Budget) String() string {
	var parts []string
	if b.Tokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", b.Tokens))
	}
	if b.CostUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.2f", b.CostUSD))
	}
	if b.Elapsed > 0 {
		parts = append(parts, b.Elapsed.String())
	}
	if b.Turns > 0 {
		parts = append(parts, fmt.Sprintf("%d turns", b.Turns))
	}
	if b.PhaseRuns > 0 {
		parts = append(parts, fmt.Sprintf("%d phase runs", b.PhaseRuns))
	}
	if len(parts) == 0 {
		return "no bound"
	}
	return strings.Join(parts, ", ")
}

// raisedBy is b with every bound r sets in place of b's.
func (b Budget) raisedBy(r Budget) Budget {
	if r.Tokens > 0 {
		b.Tokens = r.Tokens
	}
	if r.CostUSD > 0 {
		b.CostUSD = r.CostUSD
	}
	if r.Elapsed > 0 {
		b.Elapsed = r.Elapsed
	}
	if r.Turns > 0 {
		b.Turns = r.Turns
	}
	if r.PhaseRuns > 0 {
		b.PhaseRuns = r.PhaseRuns
	}
	return b
}

// atLeast is b with each of its bounds raised to o's where o's is higher.
func (b Budget) atLeast(o Budget) Budget {
	b.Tokens, b.CostUSD, b.Elapsed = max(b.Tokens, o.Tokens), max(b.CostUSD, o.CostUSD), max(b.Elapsed, o.Elapsed)
	b.Turns, b.PhaseRuns = max(b.Turns, o.Turns), max(b.PhaseRuns, o.PhaseRuns)
	return b
}

// BudgetStatus is a job's spend against its budget.
type BudgetStatus struct {
	Limit Budget `json:"limit"`
	Spent Budget `json:"spent"`
	// Unchecked names the bounds nothing the phases reported can be held
	// to ("tokens", "cost", "turns"): they are not passed silently.
	Unchecked []string `json:"unchecked,omitempty"`
	// Warning names the bound the job is at or past BudgetWarnShare of,
	// in words; Exceeded the one it reached, if any.
	Warning  string `json:"warning,omitempty"`
	Exceeded string `json:"exceeded,omitempty"`
	// Relative is the type's relative budget the run pinned (Policy.Spend),
	// and RelativeReached says, in words, that the job reached it (it
	// reads Near, never opens a gate).
	Relative        *SpendBudget `json:"relative,omitempty"`
	RelativeReached string       `json:"relative_reached,omitempty"`
	// RelativeGated: the relative budget opened its gate in this job
	// (Options.RelativeBudgetGates), which a reviewer closed; it opens
	// once per job, and only advises after.
	RelativeGated bool `json:"relative_gated,omitempty"`
}

// State is how near the job is to its budget: BudgetReached,
// BudgetNear, or "" below BudgetWarnShare of every bound (or without a
// budget, s nil).
func (s *BudgetStatus) State() string {
	switch {
	case s == nil:
		return ""
	case s.Exceeded != "":
		return BudgetReached
	case s.Warning != "":
		return BudgetNear
	}
	return ""
}

// budgetCheck is one bound against its spend.
type budgetCheck struct {
	name         string
	spent, limit float64
	reported     bool
	say          func(float64) string
}

// spendOf is what trajectory t spent, elapsed since the run started.
func spendOf(t Trajectory, elapsed time.Duration) Budget {
	return Budget{Tokens: t.InputTokens + t.OutputTokens, CostUSD: t.CostUSD, Elapsed: elapsed, Turns: t.Turns, PhaseRuns: t.PhaseRuns}
}

// budgetStatusOf is spent against limit. A token, cost or turn bound is
// unchecked while nothing was reported of it after a phase ran.
func budgetStatusOf(limit, spent Budget) BudgetStatus {
	s := BudgetStatus{Limit: limit, Spent: spent}
	count := func(v float64) string { return fmt.Sprintf("%.0f", v) }
	checks := []budgetCheck{
		{"tokens", float64(spent.Tokens), float64(limit.Tokens), spent.Tokens > 0, func(v float64) string { return count(v) + " tokens" }},
		{"cost", spent.CostUSD, limit.CostUSD, spent.CostUSD > 0, func(v float64) string { return fmt.Sprintf("$%.2f", v) }},
		{"time", float64(spent.Elapsed), float64(limit.Elapsed), true, func(v float64) string { return time.Duration(v).Round(time.Second).String() }},
		{"turns", float64(spent.Turns), float64(limit.Turns), spent.Turns > 0, func(v float64) string { return count(v) + " turns" }},
		{"phase runs", float64(spent.PhaseRuns), float64(limit.PhaseRuns), true, func(v float64) string { return count(v) + " phase runs" }},
	}
	worst := 0.0
	for _, c := range checks {
		if c.limit <= 0 {
			continue
		}
		if !c.reported {
			if spent.PhaseRuns > 0 {
				s.Unchecked = append(s.Unchecked, c.name)
			}
			continue
		}
		share := c.spent / c.limit
		words := fmt.Sprintf("spent %s of its budget of %s (%.0f%%)", c.say(c.spent), c.say(c.limit), 100*share)
		if share >= 1 && s.Exceeded == "" {
			s.Exceeded = words
		}
		if share >= BudgetWarnShare && share > worst {
			worst, s.Warning = share, words
		}
	}
	return s
}

// ErrInvalidBudget is the error of a budget that cannot be read
// (ParseBudget).
var ErrInvalidBudget = errors.New("not a budget")

// ParseBudget reads a budget as the memo ([BudgetMemoKey]), `overseer
// resume --budget` and a job spec give it: JSON such as {"tokens":
// 2000000, "cost_usd": 40, "elapsed_ns": 21600000000000, "turns": 200,
// "phase_runs": 500}, every bound positive. An unknown field is refused,
// not ignored: a misspelt bound would bound nothing.
func ParseBudget(s string) (Budget, error) {
	var b Budget
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return Budget{}, fmt.Errorf("%w (%v); give JSON such as {\"tokens\": 2000000, \"cost_usd\": 40, \"elapsed_ns\": 21600000000000}", ErrInvalidBudget, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		// A second object would be dropped without a word: {"tokens": 2000}
		// {"cost_usd": 40} would bound the tokens only.
		return Budget{}, fmt.Errorf("%w: it has data after its JSON object; give every bound in one object, such as {\"tokens\": 2000000, \"cost_usd\": 40}", ErrInvalidBudget)
	}
	if err := b.Validate(); err != nil {
		return Budget{}, err
	}
	return b, nil
}

// budgetFromMemo reads the run's budget from its memo (BudgetMemoKey):
// nil when it sets none.
func budgetFromMemo(ctx workflow.Context) (*Budget, error) {
	s, ok, err := memoString(ctx, BudgetMemoKey)
	if err != nil || !ok {
		return nil, err
	}
	b, err := ParseBudget(s)
	if err != nil {
		return nil, fmt.Errorf("overseer: memo %s: %w", BudgetMemoKey, err)
	}
	return &b, nil
}

// checkBudget records the run's spend at this boundary against its budget
// in the status, and returns it; nil when the run has no budget.
func (r *run) checkBudget(ctx workflow.Context, traj Trajectory) *BudgetStatus {
	relative := r.cfg.Policy.Spend
	if r.cfg.Budget == nil && relative == nil {
		return nil
	}
	var limit Budget
	if r.cfg.Budget != nil {
		limit = *r.cfg.Budget
	}
	elapsed := workflow.Now(ctx).Sub(r.started(ctx))
	spent := spendOf(traj, elapsed)
	s := budgetStatusOf(limit, spent)
	if r.st.Budget != nil {
		s.RelativeGated = r.st.Budget.RelativeGated
	}
	if relative != nil {
		s.Relative = relative
		rs := judge.SpentOf(traj)
		if words := relative.Reached(rs); words != "" {
			s.RelativeReached = words
			if s.Warning == "" {
				s.Warning = words
			}
			if r.cfg.RelativeGates && !s.RelativeGated && s.Exceeded == "" {
				// The team turned the relative budget's gate on: it stops
				// the job as a bound does, once.
				s.Exceeded = "reached the relative budget: it " + words
			}
		}
		for _, m := range relative.Unreported(rs) {
			s.Unchecked = append(s.Unchecked, "relative "+m)
		}
	}
	if s.Exceeded != "" && r.st.Budget.State() != BudgetReached {
		metricBudgetReached(ctx, r.cfg.Mode)
	}
	r.st.Budget = &s
	return &s
}

// started is when the job started: its first run's start, carried across
// continue-as-new, else this run's.
func (r *run) started(ctx workflow.Context) time.Time {
	if !r.jobStarted.IsZero() {
		return r.jobStarted
	}
	return workflow.GetInfo(ctx).WorkflowStartTime
}

// budgetRulesChangeID versions four rules of budgets (version 1):
//   - a budget gate's resume is checked against the spend at the moment of
//     the resume, time at the gate included, not against the spend when
//     the gate opened;
//   - a continue without a raise is taken when the budget in force (raised
//     at another gate meanwhile) is no longer reached;
//   - a gate deadline whose action is continue escalates a budget gate
//     instead of continuing it unraised;
//   - a continue-as-new successor that pins no budget keeps the one its
//     predecessor ended with.
//
// Histories recorded before it replay with the old rules. It is recorded
// only where a rule applies.
const budgetRulesChangeID = "temporal-overseer/budget-gate-rules"

// budgetRulesOn says the run follows budgetRulesChangeID's rules, reading
// the version where commands may be sent (commands true) or the one read
// so far (an update's validator, which sends none: a live run that has not
// read it follows them, as its handler will).
func (r *run) budgetRulesOn(ctx workflow.Context, commands bool) bool {
	if r.budgetRules == nil {
		if !commands {
			return true
		}
		v := workflow.GetVersion(ctx, budgetRulesChangeID, workflow.DefaultVersion, 1)
		r.budgetRules = &v
	}
	return *r.budgetRules >= 1
}

// settleBudgetRules reads budgetRulesChangeID where a resume of a budget
// gate may send commands (a signal, the update's handler), so that the
// check (checkBudgetResume) and the validator agree.
func (r *run) settleBudgetRules(ctx workflow.Context, req ResumeRequest) {
	if g := r.gateFor(req); g != nil && g.Kind == GateKindBudget && req.Action != ActionAbort {
		r.budgetRulesOn(ctx, true)
	}
}

// checkBudgetResume refuses a resume of gate g that its budget cannot
// take: a budget gate continues only with a budget that lifts the bound the
// job reached above what it spent, measured when the resume arrives (time
// at the gate counts), and is never redone.
func (r *run) checkBudgetResume(ctx workflow.Context, g *Gate, req ResumeRequest) error {
	if req.Budget != nil {
		if err := req.Budget.Validate(); err != nil {
			return invalidResume("%s", err.Error())
		}
	}
	if g.Kind != GateKindBudget || req.Action == ActionAbort {
		return nil
	}
	if req.Action == ActionRedo {
		return refusal(RedoRefusedErrorType, fmt.Sprintf("overseer: gate %s cannot be redone: the job's budget opened it; continue with a raised budget or abort", g.ID))
	}
	limit := Budget{}
	if r.cfg.Budget != nil {
		limit = *r.cfg.Budget
	}
	var spent Budget
	if r.st.Budget != nil {
		spent = r.st.Budget.Spent
	}
	now := r.budgetRulesOn(ctx, false)
	if now {
		// Time spent waiting here counts against a time budget: the raise
		// must hold now, not when the gate opened.
		spent.Elapsed = max(spent.Elapsed, workflow.Now(ctx).Sub(r.started(ctx)))
	}
	if req.Budget == nil {
		if now && budgetStatusOf(limit, spent).Exceeded == "" {
			// Spend never falls: the budget in force was raised at another
			// gate since this one opened, high enough already.
			return nil
		}
		return invalidResume("gate %s was opened by the job's budget (%s): continue with a raised budget (\"budget\": {\"tokens\": N, \"cost_usd\": N, \"elapsed_ns\": N, \"turns\": N, \"phase_runs\": N}), or abort", g.ID, limit)
	}
	raised := limit.raisedBy(*req.Budget)
	if still := budgetStatusOf(raised, spent); still.Exceeded != "" {
		return invalidResume("the raised budget (%s) is still reached: the job %s; raise that bound above it", raised, still.Exceeded)
	}
	return nil
}
