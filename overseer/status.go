package overseer

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// Status is the answer to the overseer.status query.
type Status struct {
	Mode Mode `json:"mode"`
	// Objective is the job's objective as the workflow gave it
	// ([SetObjective]).
	Objective string `json:"objective,omitempty"`
	// Band and OnObjective come from the latest successful assessment;
	// Assessed is false before the first one. Band is BandUnknown after an
	// assessment whose judge had no basis for P(on objective). Once an
	// agent loop has finished, Band is its RunBand (RunBand is then set):
	// the worst of its last assessments, not its last call's.
	Band        Band    `json:"band"`
	OnObjective float64 `json:"on_objective"`
	Assessed    bool    `json:"assessed"`
	RunBand     bool    `json:"run_band,omitempty"`
	// Basis is what the latest assessment was based on, in the judge's
	// words (the learned judge names its sub-model and inputs).
	Basis string `json:"basis,omitempty"`
	// Shape is ShapeAgentLoop on an agent loop (ShapeOf its trajectory);
	// empty on a job of phases, and in statuses of earlier releases.
	Shape  trajectory.Shape `json:"shape,omitempty"`
	Phase  string           `json:"phase,omitempty"`
	Paused bool             `json:"paused"`
	// GateID, PausedSince and PauseReason describe the open gate, if any
	// (the oldest, when phases flagged in parallel opened several). Send
	// GateID in ResumeRequest.Gate.
	GateID      string     `json:"gate_id,omitempty"`
	PausedSince *time.Time `json:"paused_since,omitempty"`
	PauseReason string     `json:"pause_reason,omitempty"`
	// GateDeadline is when the open gate's next deadline acts (escalate,
	// continue or abort), if it has one; Gates has each open gate's.
	GateDeadline *time.Time `json:"gate_deadline,omitempty"`
	// PendingNote is the process note the next phase (on an agent loop,
	// the next call) will receive; empty
	// once the job has ended or was aborted.
	PendingNote string `json:"pending_note,omitempty"`
	Digest      string `json:"digest,omitempty"`
	// Budget is the job's spend against its budget, from its latest
	// boundary; nil when it has no budget ([Budget]).
	Budget *BudgetStatus `json:"budget,omitempty"`
	// Assessments are the most recent ones, oldest first.
	Assessments []Assessment `json:"assessments"`
	// Approval is who may open the job's gates; zero when anyone who can
	// send the update may.
	Approval Approval `json:"approval,omitzero"`
	// StartedBy is, under the four-eyes rule, who started the job (memo
	// "overseer.started_by") as read when its latest gate opened; empty
	// otherwise, and in runs from before it was recorded.
	StartedBy string `json:"started_by,omitempty"`
	// MaxRedos is the most redos one held phase may have
	// (Options.MaxRedos); -1 when the job cannot redo a phase (MaxRedos
	// negative, or a run of the overseer's first structure). See
	// [Status.CanRedo].
	MaxRedos int `json:"max_redos,omitempty"`
	// RedoPhases are the phases a redo may run again (Options.RedoSafe),
	// when MaxRedos > 0 and the job's type is not declared safe as a
	// whole; absent: every phase.
	RedoPhases []string `json:"redo_phases,omitempty"`
	// Gates are the most recent pauses with their resumes, oldest first.
	Gates    []Gate   `json:"gates,omitempty"`
	Counters Counters `json:"counters"`
	// InPhase is the latest in-phase supervisor advice per phase activity
	// (see package supervision), most recent last.
	InPhase []InPhaseAdvice `json:"in_phase,omitempty"`
	// Notifying are the idempotency keys of the gate notifications being
	// sent (or retried) now; NotifyError describes the latest failure
	// (Counters.NotifyFailures counts the notifications not delivered).
	Notifying   []string `json:"notifying,omitempty"`
	NotifyError string   `json:"notify_error,omitempty"`
	// NotifyWorkflow is the id of the notifier workflow
	// ([NotifyWorkflowName]) the run handed its undelivered notifications
	// to when it ended; its result says which it delivered.
	NotifyWorkflow string `json:"notify_workflow,omitempty"`
}

// Aborted returns the gate a human aborted the job at, or nil.
func (s Status) Aborted() *Gate {
	if n := len(s.Gates); n > 0 && s.Gates[n-1].Action == ActionAbort {
		g := s.Gates[n-1]
		return &g
	}
	return nil
}

// Label is the status a person reads: "On track, 85%", "Paused", …
// What a paused job reads as. A job paused at a gate waits for a person,
// whatever its last P said: every surface leads with why it is paused, in
// a few words from the evidence (PauseWhy), and shows it in the band
// PausedBand gives, never On track. A breach rule can pause a job whose P
// is high: "On track, 75%" beside Paused would read as all is well.

// PausedBand is the band a paused job is shown in, given its latest
// verdict's band b: Off track stays Off track; anything else (On track,
// Needs a look, not assessed) is Needs a look.
func PausedBand(b Band) Band {
	if b == BandOffTrack {
		return b
	}
	return BandNeedsALook
}

// maxPauseWhy clips PauseWhy: a few words, for a list's row.
const maxPauseWhy = 120

// PauseWhy is why the job is paused, in a few words: the first line of its
// oldest open gate's evidence, else the rule that fired; "" when no gate
// is open.
func (s Status) PauseWhy() string {
	if !s.Paused {
		return ""
	}
	var oldest *Gate
	for i := range s.Gates {
		g := &s.Gates[i]
		if g.Outcome() == "open" && (oldest == nil || g.PausedAt.Before(oldest.PausedAt)) {
			oldest = g
		}
	}
	switch {
	case oldest != nil && len(oldest.Evidence) > 0:
		return trajectory.Clip(oldest.Evidence[0], maxPauseWhy)
	case oldest != nil && oldest.Reason != "":
		return trajectory.Clip(oldest.Reason, maxPauseWhy)
	}
	return trajectory.Clip(s.PauseReason, maxPauseWhy)
}

// Headline is the job's status as a sentence's start: the label, and for
// a paused job why it is paused and the band it is shown in, with the
// last P ("Paused: the agent repeated the same failing test run (Needs a
// look; the last assessment said 75%)").
func (s Status) Headline() string {
	if !s.Paused {
		return s.Label()
	}
	return pausedHeadline(s.PauseWhy(), s.Assessed, s.Band, s.OnObjective)
}

// pausedHeadline is Headline for a paused job.
func pausedHeadline(why string, assessed bool, band Band, p float64) string {
	h := "Paused"
	if why != "" {
		h += ": " + why
	}
	if assessed && band != BandUnknown {
		return h + fmt.Sprintf(" (%s; the last assessment said %.0f%%)", PausedBand(band), p*100)
	}
	return h + fmt.Sprintf(" (%s)", PausedBand(band))
}

func (s Status) Label() string {
	if s.Paused {
		return "Paused"
	}
	if !s.Assessed || s.Band == BandUnknown {
		return BandUnknown.String()
	}
	return fmt.Sprintf("%s, %.0f%%", s.Band, s.OnObjective*100)
}

// Counters count what the overseer did over the whole job, across
// continue-as-new.
type Counters struct {
	Phases              int `json:"phases"`
	Assessments         int `json:"assessments"`
	Failures            int `json:"failures"`
	ConsecutiveFailures int `json:"consecutive_failures"`
	Flags               int `json:"flags"`
	Pauses              int `json:"pauses"`
	Resumes             int `json:"resumes"`
	// IgnoredResumes counts resume signals that were dropped: nothing was
	// paused, the named gate was not open, or the request was invalid
	// (undecodable, unknown field, no by, unknown action, note too long).
	// A signal cannot be rejected, so it is counted, logged and dropped.
	IgnoredResumes int `json:"ignored_resumes"`
	// Redos counts the gates resumed with action redo (also counted in
	// Resumes): each ran its held phase again.
	Redos int `json:"redos,omitempty"`
	// Escalations and Expired count gate deadlines that acted: escalated
	// gates, and gates closed by their deadline (Gate.Expired).
	Escalations int `json:"escalations,omitempty"`
	Expired     int `json:"expired,omitempty"`
	// Notifications counts gate notifications the run delivered;
	// NotifyFailures those not delivered: counted at once when an attempt
	// fails, and no longer once a retry delivers it. A failure never holds
	// the gate or the job. (Runs from before the notifier workflow count a
	// failure only after all its attempts, or when the run ended first.)
	Notifications  int `json:"notifications,omitempty"`
	NotifyFailures int `json:"notify_failures,omitempty"`
}

// Assessment is one phase-boundary assessment as recorded on the job.
type Assessment struct {
	Seq     int       `json:"seq"`
	Phase   string    `json:"phase"`
	At      time.Time `json:"at"`
	Answers *Answers  `json:"answers,omitempty"`
	Verdict *Verdict  `json:"verdict,omitempty"`
	// Error is set instead of Answers when the judge failed or answered
	// something invalid.
	Error   string        `json:"error,omitempty"`
	Model   string        `json:"model,omitempty"`
	Usage   jev.Usage     `json:"usage"`
	Latency time.Duration `json:"latency_ns"`
	// Digest is a readable summary of the state that was evaluated.
	Digest string `json:"digest"`
	// Evidence is set when the assessment was flagged: what in the
	// trajectory tripped the flag, in plain words, most telling first
	// ([Evidence]); the gate it opened carries the same.
	Evidence []string `json:"evidence,omitempty"`
}

// Gate records one pause and how it ended.
type Gate struct {
	// ID names the gate in ResumeRequest.Gate: the phase and the job's
	// pause count, e.g. "code-2".
	ID string `json:"id,omitempty"`
	// holdsNext: the gate's phase result reached the workflow, and the
	// gate holds the workflow's next phase and the run's end instead
	// (runStructureV3).
	holdsNext bool
	// afterRun is the phase run the gate was opened after (pauseCause).
	afterRun int
	// AtBoundary says the gate was opened at a declared Boundary: the
	// workflow ran the phase's calls itself, so no redo can run them again
	// and none is offered (gates of earlier releases do not say so).
	AtBoundary bool `json:"at_boundary,omitempty"`
	// Kind is what opened the gate: GateKindBudget for a budget the job
	// reached; empty for a flagged verdict (or the judge failing).
	Kind string `json:"kind,omitempty"`
	// RaisedBudget is the budget the reviewer set when resuming it.
	RaisedBudget *Budget `json:"raised_budget,omitempty"`
	Phase        string  `json:"phase"`
	Reason       string  `json:"reason"`
	// Attempt is which run of its phase the gate holds: 1 for the phase's
	// first run, 2 for the run the first redo asked for, and so on (at
	// most 1 + MaxRedos); 0 in gates recorded before redo existed.
	Attempt int `json:"attempt,omitempty"`
	// Evidence is what happened, in plain words, computed from the
	// trajectory that tripped the flag ("test failed 3 times in a row, …"),
	// most telling first. Reason keeps the rule that fired.
	Evidence []string  `json:"evidence,omitempty"`
	PausedAt time.Time `json:"paused_at"`
	// ResumedAt is when the gate closed: resumed by By, or, if Expired, by
	// its deadline.
	ResumedAt *time.Time `json:"resumed_at,omitempty"`
	By        string     `json:"by,omitempty"`
	Note      string     `json:"note,omitempty"`
	Action    Action     `json:"action,omitempty"`
	// Needed is the judgement of the pause once the gate closed: was it
	// needed, or a false alarm. NeededBy says where it came from: the
	// reviewer (NeededByReviewer) or a rule (NeededByNote, NeededByNoNote,
	// NeededByAction, NeededByDeadline). Nil on open gates and on gates
	// recorded before it existed.
	Needed   *bool    `json:"needed,omitempty"`
	NeededBy NeededBy `json:"needed_by,omitempty"`
	// Cancelled says the run was cancelled while the gate was open.
	Cancelled bool `json:"cancelled,omitempty"`
	// Abandoned says the run continued as new while the gate was open:
	// the workflow never awaited the phase it held, and nobody can open
	// it any more.
	Abandoned bool `json:"abandoned,omitempty"`
	// Deadline is, while the gate is open, when its next deadline acts
	// ([GateDeadline]); nil when it has none.
	Deadline *time.Time `json:"deadline,omitempty"`
	// DeadlineBy names the rule Deadline acts by ("deadline 72h: abort"),
	// so a reviewer knows what waiting past it does; empty when Deadline
	// is nil (and in gates recorded before it existed).
	DeadlineBy string `json:"deadline_by,omitempty"`
	// DeadlineAction is what that rule does: escalate, continue or abort.
	DeadlineAction DeadlineAction `json:"deadline_action,omitempty"`
	// EscalatedAt is when the gate was escalated, by the rule EscalatedBy
	// ("deadline 24h: escalate").
	EscalatedAt *time.Time `json:"escalated_at,omitempty"`
	EscalatedBy string     `json:"escalated_by,omitempty"`
	// EscalatedLate is how long after its deadline the escalation came,
	// when that was a second or more: no worker ran the workflow at the
	// deadline, which acted as soon as one did. 0 means on time.
	EscalatedLate time.Duration `json:"escalated_late_ns,omitempty"`
	// Expired says nobody resumed the gate by its deadline: ExpiredBy names
	// the rule that closed it ("deadline 72h: abort") and Action what it
	// did. A gate an expiry with abort closed along with another has
	// ExpiredBy set and Expired false.
	Expired   bool   `json:"expired,omitempty"`
	ExpiredBy string `json:"expired_by,omitempty"`
	// ExpiredLate is, like EscalatedLate, how late the expiry came.
	ExpiredLate time.Duration `json:"expired_late_ns,omitempty"`
}

// Outcome says how the gate ended, in one word: open, resumed, redone,
// aborted, expired or cancelled.
func (g Gate) Outcome() string {
	switch {
	case g.Cancelled:
		return "cancelled"
	case g.Abandoned:
		return "abandoned"
	case g.Expired:
		return "expired"
	case g.ResumedAt == nil:
		return "open"
	case g.Action == ActionAbort:
		return "aborted"
	case g.Action == ActionRedo:
		return "redone"
	}
	return "resumed"
}

// Action is what a human decides at a gate.
type Action string

// Gate actions.
const (
	ActionContinue Action = "continue"
	// ActionRedo runs the held phase again, the same activity with the
	// same input, with the reviewer's note as its process note.
	ActionRedo  Action = "redo"
	ActionAbort Action = "abort"
)

// NeededBy says where a gate's Needed judgement came from.
type NeededBy string

// Sources of Gate.Needed.
const (
	// NeededByReviewer: the reviewer said (ResumeRequest.Needed).
	NeededByReviewer NeededBy = "reviewer"
	// NeededByNote: not said; a continue with a note counts as needed.
	NeededByNote NeededBy = "continue with a note"
	// NeededByNoNote: not said; a continue without a note counts as a
	// false alarm.
	NeededByNoNote NeededBy = "continue without a note"
	// NeededByAction: a redo or an abort is always needed.
	NeededByAction NeededBy = "redo or abort"
	// NeededByDeadline: a deadline closed the gate; nobody judged it, so
	// it counts as not needed when it continued and needed when it aborted.
	NeededByDeadline NeededBy = "deadline"
)

// AbortedErrorType is the application error type a job ends with when a
// human aborts it at a gate.
const AbortedErrorType = "OverseerAborted"

func abortError(g Gate) error {
	msg := fmt.Sprintf("job aborted by %s at the overseer gate after phase %q", g.By, g.Phase)
	if g.Expired {
		msg = fmt.Sprintf("job aborted at the overseer gate %s after phase %q: nobody resumed it by its %s", g.ID, g.Phase, g.ExpiredBy)
	}
	if g.Note != "" {
		msg += ": " + g.Note
	}
	return temporal.NewNonRetryableApplicationError(msg, AbortedErrorType, nil, g)
}

// Step is what one boundary of the job closes, in words: "call" on an
// agent loop, "phase" on a job of phases.
func (s Status) Step() string { return stepNoun(s.Shape) }

// loopShape is shape when it is ShapeAgentLoop, else empty: what a
// status or an event records, so that a job of phases writes what it
// wrote before.
func loopShape(shape trajectory.Shape) trajectory.Shape {
	if shape == trajectory.ShapeAgentLoop {
		return shape
	}
	return ""
}

// stepNoun is [Status.Step] for a shape.
func stepNoun(shape trajectory.Shape) string {
	if shape == trajectory.ShapeAgentLoop {
		return "call"
	}
	return "phase"
}
