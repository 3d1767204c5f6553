package supervision

import "context"

// What the external tests need of the package's internals.

// Check ids, as the judge's question keys end.
const (
	CheckNeedsHuman              = string(checkNeedsHuman)
	CheckAgentsMDDrift           = string(checkAgentsMDDrift)
	CheckMeaningfulProgress      = string(checkMeaningfulProgress)
	CheckWorkerStuck             = string(checkWorkerStuck)
	CheckWorkOffTrack            = string(checkWorkOffTrack)
	CheckImplementationComplete  = string(checkImplementationComplete)
	CheckRequirementsSatisfied   = string(checkRequirementsSatisfied)
	CheckReadyToFinish           = string(checkReadyToFinish)
	CheckTestsSufficient         = string(checkTestsSufficient)
	CheckNeedsVerification       = string(checkNeedsVerification)
	CheckDocumentationSufficient = string(checkDocumentationSufficient)
)

// Reasons.
const (
	ReasonDisabled                   = reasonDisabled
	ReasonTimeout                    = reasonTimeout
	ReasonCallOrResponseError        = reasonCallOrResponseError
	ReasonConstraintLimitMissingTask = reasonConstraintLimitMissingTask
	ReasonStateLimit                 = reasonStateLimit
	ReasonNeedsHuman                 = reasonNeedsHuman
	ReasonWorkerFailed               = reasonWorkerFailed
	ReasonAgentsMDDrift              = reasonAgentsMDDrift
	ReasonWorkOffTrack               = reasonWorkOffTrack
	ReasonWorkerStuck                = reasonWorkerStuck
	ReasonEvidenceTruncated          = reasonEvidenceTruncated
	ReasonCurrentVerification        = reasonCurrentVerification
	ReasonTestCoverageInsufficient   = reasonTestCoverageInsufficient
	ReasonCompletionReviewReady      = reasonCompletionReviewReady
	ReasonUncertainChecks            = reasonUncertainChecks
	ReasonWorkRemains                = reasonWorkRemains
	ReasonWorkerMayContinue          = reasonWorkerMayContinue
)

const MaxScopeChars = maxScopeChars

var (
	ErrEnforce      = errEnforce
	ErrModeRequired = errModeRequired
	AdviceRecords   = adviceRecords
)

// Observe exposes the observation with a capture function.
func (s *Supervisor) Observe(ctx context.Context, capture func(context.Context) (Snapshot, error)) Decision {
	return s.observe(ctx, capture)
}

// Classify exposes the classification of a probability.
func (t Thresholds) Classify(p float64) Truth { return t.classify(p) }

// NewThresholds returns validated thresholds.
func NewThresholds(no, yes float64) (Thresholds, error) {
	t := Thresholds{No: no, Yes: yes}
	return t, t.validate()
}

// WorkerMayContinueLast reports whether the always-present CONTINUE
// proposal closes the list.
func WorkerMayContinueLast(ps []Proposal) bool {
	last := ps[len(ps)-1]
	return last.Reason == reasonWorkerMayContinue && last.Priority == 0
}
