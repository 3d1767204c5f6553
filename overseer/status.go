package overseer

import (
	"fmt"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

// Status is the answer to the overseer.status query.
type Status struct {
	Mode Mode `json:"mode"`
	// Objective is the job's objective as the workflow gave it
	// ([SetObjective]).
	Objective string `json:"objective,omitempty"`
	// Band and OnObjective come from the latest successful assessment;
	// Assessed is false before the first one. Band is BandUnknown after an
	// assessment whose judge had no basis for P(on objective).
	Band        Band    `json:"band"`
	OnObjective float64 `json:"on_objective"`
	Assessed    bool    `json:"assessed"`
	// Basis is what the latest assessment was based on, in the judge's
	// words (the learned judge names its sub-model and inputs).
	Basis  string `json:"basis,omitempty"`
	Phase  string `json:"phase,omitempty"`
	Paused bool   `json:"paused"`
	// GateID, PausedSince and PauseReason describe the open gate, if any
	// (the oldest, when phases flagged in parallel opened several). Send
	// GateID in ResumeRequest.Gate.
	GateID      string     `json:"gate_id,omitempty"`
	PausedSince *time.Time `json:"paused_since,omitempty"`
	PauseReason string     `json:"pause_reason,omitempty"`
	// PendingNote is the process note the next phase will receive.
	PendingNote string `json:"pending_note,omitempty"`
	Digest      string `json:"digest,omitempty"`
	// Assessments are the most recent ones, oldest first.
	Assessments []Assessment `json:"assessments"`
	// Gates are the most recent pauses with their resumes, oldest first.
	Gates    []Gate   `json:"gates,omitempty"`
	Counters Counters `json:"counters"`
	// InPhase is the latest in-phase supervisor advice per phase activity
	// (see package supervision), most recent last.
	InPhase []InPhaseAdvice `json:"in_phase,omitempty"`
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
}

// Gate records one pause and how it ended.
type Gate struct {
	// ID names the gate in ResumeRequest.Gate: the phase and the job's
	// pause count, e.g. "code-2".
	ID        string     `json:"id,omitempty"`
	Phase     string     `json:"phase"`
	Reason    string     `json:"reason"`
	PausedAt  time.Time  `json:"paused_at"`
	ResumedAt *time.Time `json:"resumed_at,omitempty"`
	By        string     `json:"by,omitempty"`
	Note      string     `json:"note,omitempty"`
	Action    Action     `json:"action,omitempty"`
	// Cancelled says the run was cancelled while the gate was open.
	Cancelled bool `json:"cancelled,omitempty"`
}

// Action is what a human decides at a gate.
type Action string

// Gate actions.
const (
	ActionContinue Action = "continue"
	ActionAbort    Action = "abort"
)

// AbortedErrorType is the application error type a job ends with when a
// human aborts it at a gate.
const AbortedErrorType = "OverseerAborted"

func abortError(g Gate) error {
	msg := fmt.Sprintf("job aborted by %s at the overseer gate after phase %q", g.By, g.Phase)
	if g.Note != "" {
		msg += ": " + g.Note
	}
	return temporal.NewNonRetryableApplicationError(msg, AbortedErrorType, nil, g)
}
