package overseer

import (
	"time"

	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// InPhaseSignalName is the signal by which the in-phase supervisor
// (package supervision) reports advice about a running phase activity; its
// argument is an InPhaseAdvice.
const InPhaseSignalName = "overseer.supervision"

// maxInPhase bounds the in-phase advice kept in the status.
const maxInPhase = 10

// InPhaseAdvice is the in-phase supervisor's advice about one running or
// finished phase activity: the payload of InPhaseSignalName, and what the
// status keeps of it (the latest per activity). Advice never changes the
// job: it is shown in the status for people and hosts to act on.
//
// Advice, Status and Reason hold the values of the supervision package's
// Advice, Status and Reason types (CONTINUE, REVIEW_COMPLETION…; DECIDED,
// ERROR…), as strings so that this package does not depend on it.
type InPhaseAdvice struct {
	// ActivityType and ActivityID name the supervised activity; RunID is
	// the supervisor's id for one attempt of it.
	ActivityType string `json:"activity_type"`
	ActivityID   string `json:"activity_id"`
	RunID        string `json:"run_id"`
	// Assessment counts the supervisor's assessments of the attempt.
	Assessment int    `json:"assessment"`
	Advice     string `json:"advice"`
	Status     string `json:"status"`
	Reason     string `json:"reason"`
	// Superseded is set when the work moved on while the judge answered:
	// the advice is then CONTINUE.
	Superseded          bool `json:"superseded"`
	ConsecutiveFailures int  `json:"consecutive_failures"`
	// VerifiedRevision is set when a current, passed verification receipt
	// covered the work.
	VerifiedRevision bool `json:"verified_revision"`
	// Final marks the assessment made after the activity completed.
	Final bool      `json:"final"`
	At    time.Time `json:"at"`
}

// recordInPhase records in-phase advice in the status: the latest per
// activity, the most recent activities kept.
func (r *run) recordInPhase(a InPhaseAdvice) {
	kept := r.st.InPhase[:0]
	for _, old := range r.st.InPhase {
		if old.ActivityID != a.ActivityID {
			kept = append(kept, old)
		}
	}
	r.st.InPhase = trajectory.Window(kept, a, maxInPhase)
}
