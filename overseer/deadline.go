package overseer

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"
)

// DeadlineAction is what happens to a gate nobody resumed by its deadline.
type DeadlineAction string

// The deadline actions.
const (
	// DeadlineEscalate notifies the escalation audience (a [GateEvent] of
	// kind [GateEscalated]) and keeps waiting, up to the final deadline if
	// one is set, for ever otherwise.
	DeadlineEscalate DeadlineAction = "escalate"
	// DeadlineContinue closes the gate as expired and lets the job go on,
	// as a resume with action continue would (without a reviewer's note).
	DeadlineContinue DeadlineAction = "continue"
	// DeadlineAbort closes the gate as expired and ends the job with an
	// application error of type [AbortedErrorType].
	DeadlineAbort DeadlineAction = "abort"
)

// GateDeadline says how long a gate waits for a person and what happens
// then. The zero value has no deadline: the gate waits for ever, as before.
//
// Its text form (ParseGateDeadline, String) is one or two rules, each a Go
// duration and an action: "24h:abort", "4h:continue", "24h:escalate" or
// "24h:escalate,72h:abort".
type GateDeadline struct {
	// After is how long a gate may stay open, from its opening, before
	// Action is taken. 0 means no deadline.
	After time.Duration `json:"after,omitempty"`
	// Action is taken at After: escalate, continue or abort.
	Action DeadlineAction `json:"action,omitempty"`
	// FinalAfter is, with Action escalate, the second deadline, also
	// counted from the gate's opening (so it is longer than After). 0 means
	// the escalated gate waits for ever.
	FinalAfter time.Duration `json:"final_after,omitempty"`
	// FinalAction is taken at FinalAfter: continue or abort.
	FinalAction DeadlineAction `json:"final_action,omitempty"`
}

// IsZero says the gate has no deadline.
func (d GateDeadline) IsZero() bool { return d == GateDeadline{} }

// Validate checks that the deadline is complete and consistent.
func (d GateDeadline) Validate() error {
	if d.IsZero() {
		return nil
	}
	switch {
	case d.After <= 0:
		return fmt.Errorf("overseer: gate deadline %s: the deadline must be a positive duration", d)
	case d.Action != DeadlineEscalate && d.Action != DeadlineContinue && d.Action != DeadlineAbort:
		return fmt.Errorf("overseer: gate deadline action %q: use escalate, continue or abort", d.Action)
	case d.Action != DeadlineEscalate && (d.FinalAfter != 0 || d.FinalAction != ""):
		return fmt.Errorf("overseer: gate deadline %s: only escalate can be followed by a final deadline", d)
	case d.Action == DeadlineEscalate && (d.FinalAfter == 0) != (d.FinalAction == ""):
		return fmt.Errorf("overseer: gate deadline %s: a final deadline needs both a duration and an action", d)
	case d.FinalAfter != 0 && d.FinalAfter <= d.After:
		return fmt.Errorf("overseer: gate deadline %s: the final deadline (%s) counts from the gate's opening and must be later than the first (%s)",
			d, shortDuration(d.FinalAfter), shortDuration(d.After))
	case d.FinalAction != "" && d.FinalAction != DeadlineContinue && d.FinalAction != DeadlineAbort:
		return fmt.Errorf("overseer: gate final deadline action %q: use continue or abort", d.FinalAction)
	}
	return nil
}

// String is the deadline's text form, "" for none.
func (d GateDeadline) String() string {
	if d.IsZero() {
		return ""
	}
	s := shortDuration(d.After) + ":" + string(d.Action)
	if d.FinalAfter != 0 || d.FinalAction != "" {
		s += "," + shortDuration(d.FinalAfter) + ":" + string(d.FinalAction)
	}
	return s
}

// ParseGateDeadline parses a deadline's text form: "24h:abort",
// "4h:continue", "24h:escalate", "24h:escalate,72h:abort". "" and "none"
// are no deadline.
func ParseGateDeadline(s string) (GateDeadline, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "none") || strings.EqualFold(s, "off") {
		return GateDeadline{}, nil
	}
	rules := strings.Split(s, ",")
	if len(rules) > 2 {
		return GateDeadline{}, fmt.Errorf("overseer: gate deadline %q has %d rules; give one or two, e.g. 24h:escalate,72h:abort", s, len(rules))
	}
	var d GateDeadline
	for i, rule := range rules {
		after, action, ok := strings.Cut(strings.TrimSpace(rule), ":")
		if !ok {
			return GateDeadline{}, fmt.Errorf("overseer: gate deadline rule %q: write DURATION:ACTION, e.g. 24h:abort", rule)
		}
		dur, err := time.ParseDuration(strings.TrimSpace(after))
		if err != nil {
			return GateDeadline{}, fmt.Errorf("overseer: gate deadline rule %q: %q is not a duration (e.g. 30m, 24h)", rule, after)
		}
		a := DeadlineAction(strings.ToLower(strings.TrimSpace(action)))
		if i == 0 {
			d.After, d.Action = dur, a
		} else {
			d.FinalAfter, d.FinalAction = dur, a
		}
	}
	return d, d.Validate()
}

// shortDuration prints 24h, 90m or 1h30m rather than 24h0m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// rule names a deadline rule in a gate's record: "deadline 24h: abort".
func rule(after time.Duration, action DeadlineAction) string {
	return fmt.Sprintf("deadline %s: %s", shortDuration(after), action)
}

// GateDeadlineMemoKey is the memo field that sets the gate deadline of one
// run, in ParseGateDeadline's text form, overriding its workflow type's:
// start a workflow with memo {"overseer.gate_deadline": "24h:abort"}. An
// unreadable value is logged and the type's deadline applies.
const GateDeadlineMemoKey = "overseer.gate_deadline"

// deadline is the gate deadline of this run: its memo's, else the pinned
// one. The memo is part of the run's start event, so it reads the same on
// every replay and on every worker.
func (r *run) deadline(ctx workflow.Context) GateDeadline {
	s, ok, err := memoString(ctx, GateDeadlineMemoKey)
	if !ok {
		return r.cfg.GateDeadline
	}
	var d GateDeadline
	if err == nil {
		d, err = ParseGateDeadline(s)
	}
	if err != nil {
		r.logger.Warn("overseer: ignoring the memo's gate deadline", "memo", GateDeadlineMemoKey, "error", err.Error())
		return r.cfg.GateDeadline
	}
	return d
}

// deadlineChangeID versions the final deadline's timer: runs recorded
// before it count the final deadline from when the escalation was
// processed, which drifts by any outage at the first deadline.
const deadlineChangeID = "temporal-overseer/deadline-from-opening"

// lateAfter is how late a deadline must act to be recorded as late: less
// is a workflow task's ordinary latency, more means no worker ran the
// workflow at the deadline.
const lateAfter = time.Second

// awaitGate tells that the gate opened and waits until it is closed,
// taking the deadline's actions on the way. Both deadlines count from the
// gate's opening: one that passed while no worker ran the workflow acts as
// soon as one does, and records how late it acted. It returns the
// context's error if the run is cancelled.
func (r *run) awaitGate(ctx workflow.Context, g *Gate) error {
	closed := func() bool { return r.openGate(g.ID) < 0 }
	d := r.deadline(ctx)
	if !d.IsZero() {
		at := g.PausedAt.Add(d.After)
		r.setDeadline(ctx, g, &at, rule(d.After, d.Action), d.Action)
	}
	r.publishSummary(ctx)
	r.notify(ctx, GateOpened, *g)
	if d.IsZero() {
		return workflow.Await(ctx, closed)
	}
	// The gate opened in this workflow task, so the first timer already
	// counts from the opening.
	ok, err := workflow.AwaitWithTimeout(ctx, d.After, closed)
	if err != nil || ok {
		return err
	}
	if d.Action == DeadlineContinue && r.keepsBudgetGate(ctx, g) {
		// A budget gate continues only with a raised budget: its continue
		// deadline tells the escalation audience and keeps waiting.
		r.escalate(ctx, g, GateDeadline{After: d.After, Action: DeadlineEscalate},
			rule(d.After, d.Action)+" (a budget gate continues only with a raised budget: escalated instead)")
		return workflow.Await(ctx, closed)
	}
	if d.Action != DeadlineEscalate {
		r.expire(ctx, g, rule(d.After, d.Action), d.Action, late(ctx, g, d.After))
		return nil
	}
	r.escalate(ctx, g, d, rule(d.After, d.Action))
	if d.FinalAfter == 0 {
		return workflow.Await(ctx, closed)
	}
	finalAt := g.PausedAt.Add(d.FinalAfter)
	wait := finalAt.Sub(workflow.Now(ctx))
	if workflow.GetVersion(ctx, deadlineChangeID, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		// Recorded before the final deadline counted from the opening: its
		// timer counts from the escalation, so it acts that much later than
		// the opening plus FinalAfter. Show when it acts, and measure its
		// lateness from then, so that the drift is not reported as late.
		wait = d.FinalAfter - d.After
		finalAt = workflow.Now(ctx).Add(wait)
		r.setDeadline(ctx, g, &finalAt, rule(d.FinalAfter, d.FinalAction), d.FinalAction)
		r.publishSummary(ctx)
	}
	if wait > 0 {
		ok, err = workflow.AwaitWithTimeout(ctx, wait, closed)
		if err != nil || ok {
			return err
		}
	}
	if d.FinalAction == DeadlineContinue && r.keepsBudgetGate(ctx, g) {
		// Escalated already: the gate waits for a raise or an abort.
		r.setDeadline(ctx, g, nil, "", "")
		r.publishSummary(ctx)
		r.logger.Warn("overseer: budget gate kept open at its continue deadline", "gate", g.ID, "rule", rule(d.FinalAfter, d.FinalAction))
		return workflow.Await(ctx, closed)
	}
	r.expire(ctx, g, rule(d.FinalAfter, d.FinalAction), d.FinalAction, lateSince(ctx, finalAt))
	return nil
}

// keepsBudgetGate says a continue deadline leaves gate g open: the budget
// opened it (budgetRulesChangeID).
func (r *run) keepsBudgetGate(ctx workflow.Context, g *Gate) bool {
	return g.Kind == GateKindBudget && r.budgetRulesOn(ctx, true)
}

// late is how long after the deadline at after (from the gate's opening) it
// is now, to a tenth of a second, or 0 when that is less than lateAfter.
func late(ctx workflow.Context, g *Gate, after time.Duration) time.Duration {
	return lateSince(ctx, g.PausedAt.Add(after))
}

// lateSince is how long after at it is now, as late says it.
func lateSince(ctx workflow.Context, at time.Time) time.Duration {
	l := workflow.Now(ctx).Sub(at)
	if l < lateAfter {
		return 0
	}
	return l.Round(100 * time.Millisecond)
}

// lateText is ", 5.1s late" for a rule that acted late, "" for one on time.
func lateText(l time.Duration) string {
	if l <= 0 {
		return ""
	}
	return ", " + l.String() + " late"
}

// setDeadline records when the gate's next deadline acts, by which rule
// and what it does.
func (r *run) setDeadline(ctx workflow.Context, g *Gate, at *time.Time, by string, action DeadlineAction) {
	g.Deadline, g.DeadlineBy, g.DeadlineAction = at, by, action
	r.recordGate(*g)
	r.syncGates(ctx)
}

// clearDeadline forgets the next deadline of a gate that closed.
func (g *Gate) clearDeadline() { g.Deadline, g.DeadlineBy, g.DeadlineAction = nil, "", "" }

// escalate records the first deadline of an escalating gate, by the rule
// by, and notifies the escalation audience; the gate stays open.
func (r *run) escalate(ctx workflow.Context, g *Gate, d GateDeadline, by string) {
	now := workflow.Now(ctx)
	g.EscalatedAt, g.EscalatedBy, g.EscalatedLate = &now, by, late(ctx, g, d.After)
	var next *time.Time
	nextBy, nextAction := "", DeadlineAction("")
	if d.FinalAfter != 0 {
		at := g.PausedAt.Add(d.FinalAfter)
		next, nextBy, nextAction = &at, rule(d.FinalAfter, d.FinalAction), d.FinalAction
	}
	r.st.Counters.Escalations++
	metricEscalation(ctx)
	r.setDeadline(ctx, g, next, nextBy, nextAction)
	r.publishSummary(ctx) // the queue shows the next deadline
	r.logger.Warn("overseer: gate escalated", "gate", g.ID, "phase", g.Phase, "rule", g.EscalatedBy, "late", g.EscalatedLate)
	r.notify(ctx, GateEscalated, *g)
}

// expire closes an open gate nobody resumed by its deadline with the
// deadline's action: continue lets the phase's result through, abort ends
// the job (and closes every other open gate with it). lateBy is how late
// the deadline acted.
func (r *run) expire(ctx workflow.Context, g *Gate, by string, action DeadlineAction, lateBy time.Duration) {
	i := r.openGate(g.ID)
	if i < 0 {
		return
	}
	now := workflow.Now(ctx)
	g.ResumedAt, g.Action, g.Expired, g.ExpiredBy, g.ExpiredLate = &now, Action(action), true, by, lateBy
	// Nobody judged the pause: a continue counts as not needed, an abort
	// as needed (NeededByDeadline).
	g.Needed, g.NeededBy = ptrTo(g.Action == ActionAbort), NeededByDeadline
	g.clearDeadline()
	r.open = slices.Delete(r.open, i, i+1)
	closed := []*Gate{g}
	if g.Action == ActionAbort {
		for _, o := range r.open {
			o.ResumedAt, o.Action = &now, ActionAbort
			o.Needed, o.NeededBy = ptrTo(true), NeededByDeadline
			o.clearDeadline()
			o.ExpiredBy = "closed with gate " + g.ID + " (" + by + ")"
			closed = append(closed, o)
		}
		r.open = nil
		r.aborted = g
	}
	// No person looked: judge failures are not counted afresh, and the
	// next phase gets the process note without a reviewer's note.
	r.st.Counters.Expired++
	metricExpiry(ctx, *g)
	for _, c := range closed {
		r.recordGate(*c)
		r.reportGate(ctx, *c, now)
	}
	r.syncGates(ctx)
	r.logger.Warn("overseer: gate expired", "gate", g.ID, "phase", g.Phase, "rule", by, "action", string(g.Action), "late", lateBy)
	r.notify(ctx, GateExpired, *g)
}
