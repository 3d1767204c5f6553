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

// The advice values, in the seed's names.
const (
	Continue            Advice = "CONTINUE"
	RequestVerification Advice = "REQUEST_VERIFICATION"
	ReviewCompletion    Advice = "REVIEW_COMPLETION"
	ReviewDocumentation Advice = "REVIEW_DOCUMENTATION"
	ReviewDirection     Advice = "REVIEW_DIRECTION"
	ManualReview        Advice = "MANUAL_REVIEW"
)

// Truth classifies one check's probability.
type Truth string

// Truth values. Unknown means uncertain; it is not No.
const (
	Yes     Truth = "YES"
	No      Truth = "NO"
	Unknown Truth = "UNKNOWN"
)

// Mode is the execution mode. Supervision accepts Off and Shadow only.
type Mode string

// Execution modes.
const (
	// Off captures nothing and calls nothing.
	Off Mode = "OFF"
	// Shadow observes and recommends without changing the worker.
	Shadow Mode = "SHADOW"
	// Enforce is rejected: advice never has an actuator.
	Enforce Mode = "ENFORCE"
)

// Status is the status of a Decision or a Record.
type Status string

// Statuses.
const (
	Decided      Status = "DECIDED"
	Inconclusive Status = "INCONCLUSIVE"
	Error        Status = "ERROR"
	Cancelled    Status = "CANCELLED"
	Skipped      Status = "SKIPPED"
)

// Reason strings of Decisions and Records.
const (
	ReasonDisabled                   = "DISABLED"
	ReasonTimeout                    = "TIMEOUT"
	ReasonCallOrResponseError        = "CALL_OR_RESPONSE_ERROR"
	ReasonCancelled                  = "CANCELLED"
	ReasonConstraintLimitMissingTask = "CONSTRAINT_LIMIT_OR_MISSING_TASK"
	ReasonStateLimit                 = "STATE_LIMIT"
	ReasonAssessmentLimit            = "ASSESSMENT_LIMIT"
	ReasonNeedsHuman                 = "NEEDS_HUMAN"
	ReasonWorkerFailed               = "WORKER_FAILED"
	ReasonAgentsMDDrift              = "AGENTS_MD_DRIFT"
	ReasonWorkOffTrack               = "WORK_OFF_TRACK"
	ReasonWorkerStuck                = "WORKER_STUCK"
	ReasonEvidenceTruncated          = "EVIDENCE_TRUNCATED"
	ReasonCurrentVerification        = "CURRENT_VERIFICATION_REQUIRED"
	ReasonTestCoverageInsufficient   = "TEST_COVERAGE_INSUFFICIENT"
	ReasonDocumentationIncomplete    = "DOCUMENTATION_INCOMPLETE"
	ReasonCompletionReviewReady      = "COMPLETION_REVIEW_READY"
	ReasonUncertainChecks            = "UNCERTAIN_CHECKS"
	ReasonWorkRemains                = "WORK_REMAINS"
	ReasonWorkerMayContinue          = "WORKER_MAY_CONTINUE"
)

// MaxScopeChars bounds each scope value.
const MaxScopeChars = 512

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
		if len([]rune(v)) > MaxScopeChars {
			return fmt.Errorf("supervision: scope %s is longer than %d characters", name, MaxScopeChars)
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
// EvidenceSource, never from the model or tool arguments.
type Evidence struct {
	Revision              string        `json:"revision"`
	RepositoryStatus      string        `json:"repository_status"`
	Diff                  string        `json:"diff"`
	ChangedFiles          []string      `json:"changed_files"`
	Instructions          string        `json:"instructions"`
	DocumentationRequired bool          `json:"documentation_required"`
	Verification          *Verification `json:"verification,omitempty"`
}

// MissingEvidence is used when no evidence source is registered. It counts
// as explicitly missing evidence, not as success.
func MissingEvidence() Evidence { return Evidence{ChangedFiles: []string{}} }

// Verified reports whether the receipt is current and passed for scope:
// present, passed, non-blank revision and source, the same revision, and
// the same user, session and run.
func (e Evidence) Verified(scope Scope) bool {
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
	Reason         string  `json:"reason"`
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

// Finding returns the finding of a check key.
func (r *Report) Finding(key string) (Finding, bool) {
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
	Reason string  `json:"reason"`
	Report *Report `json:"report,omitempty"`
	// Recommendation holds the audit strings of the seed.
	Recommendation map[string]string `json:"recommendation,omitempty"`
	// Err says what failed, for ERROR decisions.
	Err string `json:"error,omitempty"`
}

// Advice returns the selected advice of a decision that has a report.
func (d Decision) Advice() (Advice, bool) {
	if d.Report == nil {
		return "", false
	}
	return d.Report.Selected.Advice, true
}

// Errors of construction and validation.
var (
	ErrEnforce       = errors.New("supervision: ENFORCE mode is not supported: advice never has execution authority")
	ErrModeRequired  = errors.New("supervision: an explicit mode (OFF or SHADOW) is required")
	ErrInvalidConfig = errors.New("supervision: invalid configuration")
)

// ParseMode parses OFF, SHADOW (ENFORCE is rejected).
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToUpper(strings.TrimSpace(s))); m {
	case Off, Shadow:
		return m, nil
	case Enforce:
		return "", ErrEnforce
	case "":
		return "", ErrModeRequired
	}
	return "", fmt.Errorf("supervision: unknown mode %q: use OFF or SHADOW", s)
}
