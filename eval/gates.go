package eval

import (
	"fmt"

	"github.com/corohq/temporal-overseer/overseer"
)

// GateDecision is a reviewer's decision at one of a job's overseer gates,
// as `overseer export` reads it from the job's history: a label beside the
// job's outcome.
type GateDecision struct {
	// Gate is the gate's id ("code-2"), Phase the phase it held.
	Gate  string `json:"gate,omitempty"`
	Phase string `json:"phase"`
	// After is the number of the record's steps done when the gate opened:
	// the boundary the decision is about.
	After int `json:"after,omitempty"`
	// By is who decided, Action continue, redo or abort, Note their note.
	By     string `json:"by"`
	Action string `json:"action"`
	Note   string `json:"note,omitempty"`
	// Reason is the rule that paused, Evidence what happened in plain
	// words (overseer.Gate.Evidence).
	Reason   string   `json:"reason,omitempty"`
	Evidence []string `json:"evidence,omitempty"`
	// Needed is the judgement of the pause (overseer.Gate.Needed) and
	// NeededBy where it came from; nil in exports of gates recorded
	// before it existed.
	Needed   *bool  `json:"needed,omitempty"`
	NeededBy string `json:"needed_by,omitempty"`
	// WaitMS is how long the gate was open before the decision.
	WaitMS int64 `json:"wait_ms,omitempty"`
	// Attempt is which run of its phase the gate held (1 + the redos
	// before it, overseer.Gate.Attempt); 0 in gates recorded before redo.
	Attempt int `json:"attempt,omitempty"`
	// Kind is what opened the gate (overseer.Gate.Kind):
	// overseer.GateKindBudget for the job's budget, "" for the judge (a
	// flagged verdict, or a judge that kept failing). Records exported
	// before it existed have none: their gates read as the judge's.
	Kind string `json:"kind,omitempty"`
}

// Budget says the job's budget opened the gate, not the judge: it is no
// pause of the judge's, and every statistic of the judge's pauses leaves
// it out ([Record.JudgeGates]).
func (g GateDecision) Budget() bool { return g.Kind == overseer.GateKindBudget }

// JudgeGates are the record's gates the judge opened: those every figure
// of the judge's pauses counts (false pauses, catches, rescue), without
// the gates its budget opened.
func (r Record) JudgeGates() []GateDecision {
	var out []GateDecision
	for _, g := range r.Gates {
		if !g.Budget() {
			out = append(out, g)
		}
	}
	return out
}

// The actions of a GateDecision.
const (
	GateContinue = "continue"
	GateRedo     = "redo"
	GateAbort    = "abort"
)

// PauseNeeded reports whether the decision judged its pause needed: the
// recorded judgement (Needed: the reviewer's, or the overseer's rule when
// the reviewer did not say) when it has one. A gate exported before the
// judgement existed (Needed nil) keeps the old rule: an abort or a redo
// was needed, a continue was not.
func (g GateDecision) PauseNeeded() bool {
	if g.Needed != nil {
		return *g.Needed
	}
	return g.Action == GateAbort || g.Action == GateRedo
}

// falsePause reports whether the decision is a false pause on a run that
// then succeeded: a continue judged not needed.
func (g GateDecision) falsePause() bool {
	return (g.Action == GateContinue || g.Action == "") && !g.PauseNeeded()
}

// FalsePauses counts the run's false pauses: continues judged not needed
// (GateDecision.PauseNeeded) at the judge's gates on a run that succeeded
// (a budget's gate is no pause of the judge's). A run that succeeded
// after a needed pause has none: the pause helped. Apply [UseGateLabels]
// first, so that a run aborted at a gate counts as failed.
func (r Record) FalsePauses() int {
	if r.Outcome.Failed() {
		return 0
	}
	n := 0
	for _, g := range r.JudgeGates() {
		if g.falsePause() {
			n++
		}
	}
	return n
}

// GateLabels count the gate decisions [UseGateLabels] used.
type GateLabels struct {
	// Aborts are gates a reviewer aborted: confirmed failures.
	Aborts int `json:"aborts"`
	// Relabelled counts the runs an abort made failed although their
	// outcome said otherwise.
	Relabelled int `json:"relabelled"`
	// Continues are gates a reviewer continued; FalsePauses those of them
	// judged not needed on jobs that then succeeded: pauses the policy in
	// force should not have made. NeededContinues are the continues judged
	// needed (a note that redirected the job): never false pauses.
	Continues       int `json:"continues"`
	NeededContinues int `json:"needed_continues"`
	FalsePauses     int `json:"false_pauses"`
	// RunsWithFalsePause counts the succeeded runs with at least one.
	RunsWithFalsePause int `json:"runs_with_false_pause"`
	// Redos are gates a reviewer resumed with action redo: the phase's
	// result was rejected and the phase ran again. Each is a needed pause
	// (never a false one): the reviewer's label that the step the gate held
	// was wrong. They are counted and said, and leave the run's outcome its
	// own (the rejected result never reached the workflow). RunsRedone
	// counts the runs with at least one, and RedoneSucceeded those of them
	// that then succeeded (the redo saved the job).
	Redos           int `json:"redos,omitempty"`
	RunsRedone      int `json:"runs_redone,omitempty"`
	RedoneSucceeded int `json:"redone_succeeded,omitempty"`
	// Unjudged counts the decisions exported before gates recorded whether
	// the pause was needed (GateDecision.Needed nil): the old rule judged
	// them, a continue not needed, an abort needed.
	Unjudged int `json:"unjudged,omitempty"`
	// BudgetStops are decisions at gates the jobs' budgets opened,
	// counted apart from the judge's (none of the counts above includes
	// them): BudgetRaises continued with a raised budget, BudgetAborts
	// aborted (the run is then failed, as at any abort).
	BudgetStops  int `json:"budget_stops,omitempty"`
	BudgetRaises int `json:"budget_raises,omitempty"`
	BudgetAborts int `json:"budget_aborts,omitempty"`
}

// UseGateLabels applies the reviewers' decisions to records (in place) and
// counts them: a run aborted at a gate is a confirmed failure at that
// boundary, so its outcome becomes failed whatever its close status said;
// a continue judged not needed (GateDecision.PauseNeeded) on a run that
// then succeeded is a recorded false pause, while a run that succeeded
// after a needed pause has none. A continue on a run that failed later
// says nothing more than its outcome. Decisions exported before the
// judgement existed keep the old rule (every continue not needed) and are
// counted in Unjudged.
func UseGateLabels(records []Record) GateLabels {
	var l GateLabels
	for i := range records {
		r := &records[i]
		aborted, redos := false, 0
		for _, g := range r.Gates {
			if g.Budget() {
				l.BudgetStops++
				switch g.Action {
				case GateAbort:
					l.BudgetAborts++
					aborted = true
				case GateContinue, "":
					l.BudgetRaises++
				}
				continue
			}
			if g.Needed == nil {
				l.Unjudged++
			}
			switch g.Action {
			case GateAbort:
				l.Aborts++
				aborted = true
			case GateRedo:
				l.Redos++
				redos++
			case GateContinue, "":
				l.Continues++
				if g.PauseNeeded() {
					l.NeededContinues++
				}
			}
		}
		if redos > 0 {
			l.RunsRedone++
			if !aborted && !r.Outcome.Failed() {
				l.RedoneSucceeded++
			}
		}
		if aborted {
			if !r.Outcome.Failed() {
				l.Relabelled++
			}
			r.Outcome = OutcomeFailed
			continue
		}
		if n := r.FalsePauses(); n > 0 {
			l.FalsePauses += n
			l.RunsWithFalsePause++
		}
	}
	return l
}

// Any reports whether any gate decision was used.
func (l GateLabels) Any() bool { return l.Aborts+l.Continues+l.Redos+l.BudgetStops > 0 }

// String says the counts in one sentence.
func (l GateLabels) String() string {
	if !l.Any() {
		return "no reviewer decisions at gates in these runs"
	}
	s := fmt.Sprintf("reviewers' decisions used as labels: %d aborts at a gate (confirmed failures; %d runs relabelled failed), %d continues (%d judged needed), %d of them judged not needed on jobs that then succeeded (recorded false pauses, on %d runs)",
		l.Aborts, l.Relabelled, l.Continues, l.NeededContinues, l.FalsePauses, l.RunsWithFalsePause)
	if l.Redos > 0 {
		s += fmt.Sprintf("; %d redos (a phase's result the reviewer rejected: needed pauses, never false ones, on %d runs, %d of which then succeeded)",
			l.Redos, l.RunsRedone, l.RedoneSucceeded)
	}
	if l.Unjudged > 0 {
		s += fmt.Sprintf("; %d decisions exported before gates recorded whether the pause was needed are judged by the old rule (a continue not needed)", l.Unjudged)
	}
	if l.BudgetStops > 0 {
		s += fmt.Sprintf("; apart from the judge's pauses, %d stops at a budget (%d continued with a raised budget, %d aborted)", l.BudgetStops, l.BudgetRaises, l.BudgetAborts)
	}
	return s
}
