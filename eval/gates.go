package eval

import "fmt"

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
}

// The actions of a GateDecision.
const (
	GateContinue = "continue"
	GateRedo     = "redo"
	GateAbort    = "abort"
)

// GateLabels count the gate decisions [UseGateLabels] used.
type GateLabels struct {
	// Aborts are gates a reviewer aborted: confirmed failures.
	Aborts int `json:"aborts"`
	// Relabelled counts the runs an abort made failed although their
	// outcome said otherwise.
	Relabelled int `json:"relabelled"`
	// Continues are gates a reviewer continued; FalsePauses those of them on
	// jobs that then succeeded: pauses the policy in force should not have
	// made.
	Continues   int `json:"continues"`
	FalsePauses int `json:"false_pauses"`
	// RunsWithFalsePause counts the succeeded runs with at least one.
	RunsWithFalsePause int `json:"runs_with_false_pause"`
}

// UseGateLabels applies the reviewers' decisions to records (in place) and
// counts them: a run aborted at a gate is a confirmed failure at that
// boundary, so its outcome becomes failed whatever its close status said;
// a continue on a run that then succeeded is a recorded false pause. A
// continue on a run that failed later says nothing more than its outcome.
func UseGateLabels(records []Record) GateLabels {
	var l GateLabels
	for i := range records {
		r := &records[i]
		falsePauses := 0
		aborted := false
		for _, g := range r.Gates {
			switch g.Action {
			case GateAbort:
				l.Aborts++
				aborted = true
			case GateContinue, "":
				l.Continues++
				falsePauses++
			}
		}
		if aborted {
			if !r.Outcome.Failed() {
				l.Relabelled++
			}
			r.Outcome = OutcomeFailed
			continue
		}
		if !r.Outcome.Failed() && falsePauses > 0 {
			l.FalsePauses += falsePauses
			l.RunsWithFalsePause++
		}
	}
	return l
}

// Any reports whether any gate decision was used.
func (l GateLabels) Any() bool { return l.Aborts+l.Continues > 0 }

// String says the counts in one sentence.
func (l GateLabels) String() string {
	if !l.Any() {
		return "no reviewer decisions at gates in these runs"
	}
	return fmt.Sprintf("reviewers' decisions used as labels: %d aborts at a gate (confirmed failures; %d runs relabelled failed), %d continues, %d of them on jobs that then succeeded (recorded false pauses, on %d runs)",
		l.Aborts, l.Relabelled, l.Continues, l.FalsePauses, l.RunsWithFalsePause)
}
