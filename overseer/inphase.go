package overseer

import "time"

// InPhaseSignalName is the signal by which the in-phase supervisor
// (package supervision) reports advice about a running phase activity.
const InPhaseSignalName = "overseer.supervision"

// maxInPhase bounds the in-phase advice kept in the status.
const maxInPhase = 10

// InPhaseAdvice is the latest in-phase supervisor advice for one running
// or finished phase activity. Advice never changes the job: it is shown in
// the status for people and hosts to act on.
type InPhaseAdvice struct {
	ActivityType        string    `json:"activity_type"`
	ActivityID          string    `json:"activity_id"`
	RunID               string    `json:"run_id"`
	Assessment          int       `json:"assessment"`
	Advice              string    `json:"advice"`
	Status              string    `json:"status"`
	Reason              string    `json:"reason"`
	Superseded          bool      `json:"superseded"`
	ConsecutiveFailures int       `json:"consecutive_failures"`
	VerifiedRevision    bool      `json:"verified_revision"`
	Final               bool      `json:"final"`
	At                  time.Time `json:"at"`
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
	r.st.InPhase = window(kept, a, maxInPhase)
}
