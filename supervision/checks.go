package supervision

import (
	"fmt"
	"math"
)

// Responsibilities of the checks and proposals.
const (
	respHumanEscalation = "core.human-escalation"
	respInstructions    = "repository.instructions"
	respWorkerHealth    = "core.worker-health"
	respCompletion      = "core.completion"
	respVerification    = "core.verification"
	respDocumentation   = "quality.documentation"
	respRuntime         = "runtime"
)

// checkID names one check within its responsibility.
type checkID string

// The check ids.
const (
	checkNeedsHuman              checkID = "needs_human"
	checkAgentsMDDrift           checkID = "agents_md_drift"
	checkMeaningfulProgress      checkID = "meaningful_progress"
	checkWorkerStuck             checkID = "worker_stuck"
	checkWorkOffTrack            checkID = "work_off_track"
	checkImplementationComplete  checkID = "implementation_complete"
	checkRequirementsSatisfied   checkID = "requirements_satisfied"
	checkReadyToFinish           checkID = "ready_to_finish"
	checkTestsSufficient         checkID = "tests_sufficient"
	checkNeedsVerification       checkID = "needs_verification"
	checkDocumentationSufficient checkID = "documentation_sufficient"
)

// check is one yes/no question, keyed "<responsibility>__<id>".
type check struct {
	responsibility string
	id             checkID
	question       string
}

// key is the check's question key.
func (c check) key() string { return key(c.responsibility, c.id) }

func key(resp string, id checkID) string { return resp + "__" + string(id) }

var baseChecks = [...]check{
	{respHumanEscalation, checkNeedsHuman, "Does the task need human judgment, missing credentials, clarification or permission before it can continue?"},
	{respInstructions, checkAgentsMDDrift, "Does the observed work materially violate the supplied repository instructions? Answer no when there are no instructions or no evidence of a violation."},
	{respWorkerHealth, checkMeaningfulProgress, "Is the worker making meaningful progress toward the original job?"},
	{respWorkerHealth, checkWorkerStuck, "Is the worker stuck or looping without progress? Normal investigation alone does not count as stuck."},
	{respWorkerHealth, checkWorkOffTrack, "Is the work drifting from the original task or making unrelated changes?"},
	{respCompletion, checkImplementationComplete, "Is the implementation of the original job complete, judged on the actual evidence rather than the worker's claim?"},
	{respCompletion, checkRequirementsSatisfied, "Does the supplied evidence establish that all original requirements are satisfied?"},
	{respCompletion, checkReadyToFinish, "Given all the evidence, is the job ready for completion review?"},
	{respVerification, checkTestsSufficient, "Are relevant test coverage and successful verification sufficient for this job?"},
	{respVerification, checkNeedsVerification, "Does the current state warrant independent verification before completion?"},
}

var documentationCheck = check{respDocumentation, checkDocumentationSufficient, "Is the required documentation complete, accurate and consistent with the implemented behaviour?"}

// checks returns the check list in its fixed order: 10 checks, 11 when
// documentation is required.
func checks(documentationRequired bool) []check {
	out := append([]check(nil), baseChecks[:]...)
	if documentationRequired {
		out = append(out, documentationCheck)
	}
	return out
}

// Thresholds classify each check's probability: [TruthNo] at or below No,
// [TruthYes] at or above Yes, [TruthUnknown] between. Both must be finite
// with 0 ≤ No < Yes ≤ 1. 0.2 / 0.8 is a reasonable start; it is not
// calibrated.
type Thresholds struct {
	No  float64 `json:"no"`
	Yes float64 `json:"yes"`
}

// validate checks the thresholds.
func (t Thresholds) validate() error {
	if math.IsNaN(t.No) || math.IsInf(t.No, 0) || math.IsNaN(t.Yes) || math.IsInf(t.Yes, 0) || t.No < 0 || t.Yes > 1 || t.No >= t.Yes {
		return fmt.Errorf("%w: thresholds no=%v yes=%v: need finite 0 ≤ no < yes ≤ 1", ErrInvalidConfig, t.No, t.Yes)
	}
	return nil
}

// classify maps a probability to a truth; both bounds are inclusive.
func (t Thresholds) classify(p float64) Truth {
	switch {
	case p <= t.No:
		return TruthNo
	case p >= t.Yes:
		return TruthYes
	default:
		return TruthUnknown
	}
}
