package supervision

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

// Advice is the supervisor's recommendation. None carries execution
// authority: the host decides what to do with it.
type Advice string

// The advice values, from the least to the most attention they ask for.
const (
	// AdviceContinue: the worker may go on.
	AdviceContinue Advice = "CONTINUE"
	// AdviceRequestVerification: the work looks complete but has no
	// current, passed verification receipt (or too little test coverage).
	AdviceRequestVerification Advice = "REQUEST_VERIFICATION"
	// AdviceReviewCompletion: the work is complete and verified at its
	// current revision; a person or the host may review and finish it.
	AdviceReviewCompletion Advice = "REVIEW_COMPLETION"
	// AdviceReviewDocumentation: required documentation is missing.
	AdviceReviewDocumentation Advice = "REVIEW_DOCUMENTATION"
	// AdviceReviewDirection: the worker drifts, loops or breaks the
	// repository's instructions.
	AdviceReviewDirection Advice = "REVIEW_DIRECTION"
	// AdviceManualReview: a person should look (the task needs a human, the
	// worker failed, the evidence is incomplete or the checks uncertain).
	AdviceManualReview Advice = "MANUAL_REVIEW"
)

// Truth classifies one check's probability against the [Thresholds].
type Truth string

// Truth values. TruthUnknown means uncertain; it is not TruthNo.
const (
	TruthYes     Truth = "YES"
	TruthNo      Truth = "NO"
	TruthUnknown Truth = "UNKNOWN"
)

// Mode is the execution mode. An explicit mode is required; the value
// "ENFORCE" is rejected, since advice never has an actuator.
type Mode string

// Execution modes. ModeShadow corresponds to the overseer's observe mode:
// the supervisor judges and recommends, and nothing acts on it for you.
const (
	// ModeOff captures nothing and calls nothing.
	ModeOff Mode = "OFF"
	// ModeShadow observes and recommends without changing the worker.
	ModeShadow Mode = "SHADOW"
)

// modeEnforce is the mode that is always rejected.
const modeEnforce Mode = "ENFORCE"

// Status is the status of a [Decision] or a [Record].
type Status string

// Statuses.
const (
	// StatusDecided: the judge answered and the advice stands.
	StatusDecided Status = "DECIDED"
	// StatusInconclusive: the supervisor abstained (limits, missing task),
	// or decided on uncertain checks or truncated evidence.
	StatusInconclusive Status = "INCONCLUSIVE"
	// StatusError: the judge or the evidence source failed or timed out.
	StatusError Status = "ERROR"
	// StatusCancelled: the caller's context was cancelled.
	StatusCancelled Status = "CANCELLED"
	// StatusSkipped: nothing was judged (mode off, assessment limit).
	StatusSkipped Status = "SKIPPED"
)

// Reason says why a [Decision] has its status, or why a [Proposal] was
// made. Decisions without a report carry one of DISABLED, TIMEOUT,
// CALL_OR_RESPONSE_ERROR, CANCELLED, CONSTRAINT_LIMIT_OR_MISSING_TASK,
// STATE_LIMIT or ASSESSMENT_LIMIT; a decided report carries its selected
// proposal's reason: NEEDS_HUMAN, WORKER_FAILED, AGENTS_MD_DRIFT,
// WORK_OFF_TRACK, WORKER_STUCK, EVIDENCE_TRUNCATED,
// CURRENT_VERIFICATION_REQUIRED, TEST_COVERAGE_INSUFFICIENT,
// DOCUMENTATION_INCOMPLETE, COMPLETION_REVIEW_READY, UNCERTAIN_CHECKS,
// WORK_REMAINS or WORKER_MAY_CONTINUE.
type Reason string

const (
	reasonDisabled                   Reason = "DISABLED"
	reasonTimeout                    Reason = "TIMEOUT"
	reasonCallOrResponseError        Reason = "CALL_OR_RESPONSE_ERROR"
	reasonCancelled                  Reason = "CANCELLED"
	reasonConstraintLimitMissingTask Reason = "CONSTRAINT_LIMIT_OR_MISSING_TASK"
	reasonStateLimit                 Reason = "STATE_LIMIT"
	reasonAssessmentLimit            Reason = "ASSESSMENT_LIMIT"
	reasonNeedsHuman                 Reason = "NEEDS_HUMAN"
	reasonWorkerFailed               Reason = "WORKER_FAILED"
	reasonAgentsMDDrift              Reason = "AGENTS_MD_DRIFT"
	reasonWorkOffTrack               Reason = "WORK_OFF_TRACK"
	reasonWorkerStuck                Reason = "WORKER_STUCK"
	reasonEvidenceTruncated          Reason = "EVIDENCE_TRUNCATED"
	reasonCurrentVerification        Reason = "CURRENT_VERIFICATION_REQUIRED"
	reasonTestCoverageInsufficient   Reason = "TEST_COVERAGE_INSUFFICIENT"
	reasonDocumentationIncomplete    Reason = "DOCUMENTATION_INCOMPLETE"
	reasonCompletionReviewReady      Reason = "COMPLETION_REVIEW_READY"
	reasonUncertainChecks            Reason = "UNCERTAIN_CHECKS"
	reasonWorkRemains                Reason = "WORK_REMAINS"
	reasonWorkerMayContinue          Reason = "WORKER_MAY_CONTINUE"
)

// maxScopeChars bounds each scope value.
const maxScopeChars = 512

// Scope binds an observation to a user, a session and one run.
type Scope struct {
	UserID    string `json:"user_id"`
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id"`
}

// Validate requires every value non-blank and at most 512 characters.
func (s Scope) Validate() error {
	for name, v := range map[string]string{"user_id": s.UserID, "session_id": s.SessionID, "run_id": s.RunID} {
		if strings.TrimSpace(v) == "" {
			return fmt.Errorf("supervision: scope %s is blank", name)
		}
		if len([]rune(v)) > maxScopeChars {
			return fmt.Errorf("supervision: scope %s is longer than %d characters", name, maxScopeChars)
		}
	}
	return nil
}

// Verification is a host-issued receipt of a check run against a revision.
type Verification struct {
	UserID    string `json:"user_id"`
	SessionID string `json:"session_id"`
	RunID     string `json:"run_id"`
	Revision  string `json:"revision"`
	Source    string `json:"source"`
	Passed    bool   `json:"passed"`
	Summary   string `json:"summary"`
}

// Evidence is the host's trusted view of the work: read from an
// [EvidenceSource], never from the model or tool arguments. Only a
// [Verification] receipt that passed, at the evidence's own non-blank
// revision and for the observation's [Scope], counts as verified, and only
// verified work can be advised for completion review.
type Evidence struct {
	Revision              string        `json:"revision"`
	RepositoryStatus      string        `json:"repository_status"`
	Diff                  string        `json:"diff"`
	ChangedFiles          []string      `json:"changed_files"`
	Instructions          string        `json:"instructions"`
	DocumentationRequired bool          `json:"documentation_required"`
	Verification          *Verification `json:"verification,omitempty"`
}

// missingEvidence is used when no evidence source is registered. It counts
// as explicitly missing evidence, not as success.
func missingEvidence() Evidence { return Evidence{ChangedFiles: []string{}} }

// verified reports whether the receipt is current and passed for scope:
// present, passed, non-blank revision and source, the same revision, and
// the same user, session and run.
func (e Evidence) verified(scope Scope) bool {
	v := e.Verification
	return v != nil && v.Passed &&
		strings.TrimSpace(e.Revision) != "" && strings.TrimSpace(v.Source) != "" &&
		v.Revision == e.Revision &&
		v.UserID == scope.UserID && v.SessionID == scope.SessionID && v.RunID == scope.RunID
}

// Snapshot is one observation of a running or finished task.
type Snapshot struct {
	Scope Scope `json:"scope"`
	// Sequence is the observation number (events seen so far).
	Sequence     int64    `json:"sequence"`
	Task         string   `json:"task"`
	Output       string   `json:"output"`
	RecentEvents []string `json:"recent_events"`
	WorkerActive bool     `json:"worker_active"`
	WorkerFailed bool     `json:"worker_failed"`
	// Truncated is set by the capture when evidence is incomplete (non-text
	// content, output overflow).
	Truncated bool          `json:"truncated"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	// Evidence is the host's evidence; nil means missing evidence.
	Evidence *Evidence `json:"evidence,omitempty"`
}

// Finding is one check's raw probability and its classification.
type Finding struct {
	Key         string  `json:"key"`
	Probability float64 `json:"probability"`
	Truth       Truth   `json:"truth"`
}

// Proposal is one candidate advice.
type Proposal struct {
	Responsibility string  `json:"responsibility"`
	Advice         Advice  `json:"advice"`
	Reason         Reason  `json:"reason"`
	Priority       int     `json:"priority"`
	Confidence     float64 `json:"confidence"`
}

// Report is everything one assessment found.
type Report struct {
	Scope     Scope      `json:"scope"`
	Sequence  int64      `json:"sequence"`
	Findings  []Finding  `json:"findings"`
	Proposals []Proposal `json:"proposals"`
	Selected  Proposal   `json:"selected"`
	// MeaningfulProgress is the informational progress signal, kept
	// separately: it never affects proposals.
	MeaningfulProgress *Finding  `json:"meaningful_progress,omitempty"`
	Truncated          bool      `json:"truncated"`
	VerifiedRevision   bool      `json:"verified_revision"`
	Model              string    `json:"model"`
	Usage              jev.Usage `json:"usage"`
}

// finding returns the finding of a check key.
func (r *Report) finding(key string) (Finding, bool) {
	for _, f := range r.Findings {
		if f.Key == key {
			return f, true
		}
	}
	return Finding{}, false
}

// Decision is the outcome of one observation. Report is nil for errors,
// skips and abstentions.
type Decision struct {
	Status Status  `json:"status"`
	Reason Reason  `json:"reason"`
	Report *Report `json:"report,omitempty"`
	// Recommendation holds the audit strings of the judgment (run id,
	// sequence, advice, model, token usage…), as in its Record.
	Recommendation map[string]string `json:"recommendation,omitempty"`
	// Err says what failed, for ERROR decisions.
	Err string `json:"error,omitempty"`
}

// ErrInvalidConfig is wrapped by every construction and validation error:
// a missing or unsupported mode, bad thresholds, limits, schedule or
// budget, and configuration documents that [ParseConfig] rejects.
var ErrInvalidConfig = errors.New("supervision: invalid configuration")

var (
	errEnforce      = fmt.Errorf("%w: ENFORCE mode is not supported: advice never has execution authority", ErrInvalidConfig)
	errModeRequired = fmt.Errorf("%w: an explicit mode (OFF or SHADOW) is required", ErrInvalidConfig)
)

// parseMode parses OFF or SHADOW, in any case (ENFORCE is rejected).
func parseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToUpper(strings.TrimSpace(s))); m {
	case ModeOff, ModeShadow:
		return m, nil
	case modeEnforce:
		return "", errEnforce
	case "":
		return "", errModeRequired
	}
	return "", fmt.Errorf("%w: unknown mode %q: use OFF or SHADOW", ErrInvalidConfig, s)
}
