package supervision

import (
	"fmt"
	"math"
)

// Responsibilities of the checks.
const (
	RespHumanEscalation = "core.human-escalation"
	RespInstructions    = "repository.instructions"
	RespWorkerHealth    = "core.worker-health"
	RespCompletion      = "core.completion"
	RespVerification    = "core.verification"
	RespDocumentation   = "quality.documentation"
	RespRuntime         = "runtime"
)

// Check is one yes/no question, keyed "<responsibility>__<id>".
type Check struct {
	Responsibility string
	ID             string
	Question       string
}

// Key is the check's question key.
func (c Check) Key() string { return c.Responsibility + "__" + c.ID }

// Check ids.
const (
	NeedsHuman              = "needs_human"
	AgentsMDDrift           = "agents_md_drift"
	MeaningfulProgress      = "meaningful_progress"
	WorkerStuck             = "worker_stuck"
	WorkOffTrack            = "work_off_track"
	ImplementationComplete  = "implementation_complete"
	RequirementsSatisfied   = "requirements_satisfied"
	ReadyToFinish           = "ready_to_finish"
	TestsSufficient         = "tests_sufficient"
	NeedsVerification       = "needs_verification"
	DocumentationSufficient = "documentation_sufficient"
)

var baseChecks = []Check{
	{RespHumanEscalation, NeedsHuman, "Does the task need human judgment, missing credentials, clarification or permission before it can continue?"},
	{RespInstructions, AgentsMDDrift, "Does the observed work materially violate the supplied repository instructions? Answer no when there are no instructions or no evidence of a violation."},
	{RespWorkerHealth, MeaningfulProgress, "Is the worker making meaningful progress toward the original job?"},
	{RespWorkerHealth, WorkerStuck, "Is the worker stuck or looping without progress? Normal investigation alone does not count as stuck."},
	{RespWorkerHealth, WorkOffTrack, "Is the work drifting from the original task or making unrelated changes?"},
	{RespCompletion, ImplementationComplete, "Is the implementation of the original job complete, judged on the actual evidence rather than the worker's claim?"},
	{RespCompletion, RequirementsSatisfied, "Does the supplied evidence establish that all original requirements are satisfied?"},
	{RespCompletion, ReadyToFinish, "Given all the evidence, is the job ready for completion review?"},
	{RespVerification, TestsSufficient, "Are relevant test coverage and successful verification sufficient for this job?"},
	{RespVerification, NeedsVerification, "Does the current state warrant independent verification before completion?"},
}

var documentationCheck = Check{RespDocumentation, DocumentationSufficient, "Is the required documentation complete, accurate and consistent with the implemented behaviour?"}

// Checks returns the check list in its fixed order: 10 checks, 11 when
// documentation is required. Offline evaluation uses the same definitions.
func Checks(documentationRequired bool) []Check {
	out := append([]Check(nil), baseChecks...)
	if documentationRequired {
		out = append(out, documentationCheck)
	}
	return out
}

// Thresholds classify probabilities: NO at or below No, YES at or above
// Yes, UNKNOWN between. The seed's example values 0.2 / 0.8 are
// uncalibrated.
type Thresholds struct {
	No  float64 `json:"no"`
	Yes float64 `json:"yes"`
}

// NewThresholds validates: both finite, no ≥ 0, yes ≤ 1, no < yes.
func NewThresholds(no, yes float64) (Thresholds, error) {
	t := Thresholds{No: no, Yes: yes}
	return t, t.Validate()
}

// Validate checks the thresholds.
func (t Thresholds) Validate() error {
	if math.IsNaN(t.No) || math.IsInf(t.No, 0) || math.IsNaN(t.Yes) || math.IsInf(t.Yes, 0) || t.No < 0 || t.Yes > 1 || t.No >= t.Yes {
		return fmt.Errorf("%w: thresholds no=%v yes=%v: need finite 0 ≤ no < yes ≤ 1", ErrInvalidConfig, t.No, t.Yes)
	}
	return nil
}

// Classify maps a probability to a truth; both bounds are inclusive.
func (t Thresholds) Classify(p float64) Truth {
	switch {
	case p <= t.No:
		return No
	case p >= t.Yes:
		return Yes
	default:
		return Unknown
	}
}
