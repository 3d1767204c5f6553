package trajectory

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

// The names of the four questions the overseer asks at every phase
// boundary (see [NewRequest]).
const (
	QuestionBreach   = "breach"
	QuestionOffTrack = "off_track"
	QuestionSeverity = "severity"
	QuestionBlocked  = "blocked"
)

// BreachNone is the breach option meaning no obligation appears unmet.
const BreachNone = "none"

// severityLevels is the severity scale, lowest first (score 0…3).
var severityLevels = []string{"Cosmetic", "Worth a look", "Review", "Stop"}

// SeverityLevel is the name of severity score i (0…3: Cosmetic, Worth a
// look, Review, Stop); "" outside the scale.
func SeverityLevel(i int) string {
	if i < 0 || i >= len(severityLevels) {
		return ""
	}
	return severityLevels[i]
}

// defaultObligations are checked at every boundary unless a workflow type
// defines its own list.
var defaultObligations = []string{
	"The phase produced the output required by its workflow contract.",
	"The work still serves the job's objective.",
	"The phase made progress instead of repeating earlier work.",
	"Failures were surfaced rather than silently worked around.",
}

// DefaultObligations returns the obligations checked at every boundary
// unless Options.Obligations lists others for the workflow type; the
// slice is the caller's own.
func DefaultObligations() []string { return slices.Clone(defaultObligations) }

// questionsOver builds the four standard questions over the obligations:
// breach is a choice over none and obligation[i].
func questionsOver(obligations []string) map[string]jev.Question {
	options := []jev.ChoiceOption{{Name: BreachNone, Description: "No phase obligation appears unmet."}}
	for i := range obligations {
		options = append(options, jev.ChoiceOption{Name: ObligationKey(i)})
	}
	return map[string]jev.Question{
		QuestionBreach:   {Type: jev.Choice, Options: options},
		QuestionOffTrack: {Type: jev.Noul, Instructions: "The work still serves the objective."},
		QuestionSeverity: {Type: jev.Score, Levels: append([]string(nil), severityLevels...)},
		QuestionBlocked:  {Type: jev.Noul, Instructions: "The agent is blocked."},
	}
}

// ObligationKey is the key of obligation i in the breach question: "obligation[i]".
func ObligationKey(i int) string { return "obligation[" + strconv.Itoa(i) + "]" }

// ObligationIndex parses "obligation[i]"; ok is false for anything else.
func ObligationIndex(key string) (int, bool) {
	rest, found := strings.CutPrefix(key, "obligation[")
	if !found {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(rest, "]"))
	return n, err == nil && strings.HasSuffix(rest, "]")
}

// State is the request state of a phase-boundary assessment.
type State struct {
	// WorkflowType is the job's workflow type, "" when the caller does not
	// know it (a recorded run put to a judge offline). A judge may name it:
	// the learned judge's basis says "not calibrated for CoroJob".
	WorkflowType     string     `json:"workflow_type,omitempty"`
	PhaseObligations []string   `json:"phase_obligations"`
	Trajectory       Trajectory `json:"trajectory"`
}

// NewRequest builds the Jev request for one boundary of a job of
// workflowType ("" when unknown).
func NewRequest(workflowType string, obligations []string, t Trajectory) (jev.Request, error) {
	state, err := json.Marshal(State{WorkflowType: workflowType, PhaseObligations: obligations, Trajectory: t})
	if err != nil {
		return jev.Request{}, fmt.Errorf("overseer: encode state: %w", err)
	}
	return jev.Request{State: state, Questions: questionsOver(obligations)}, nil
}

// Answers are the four standard answers, typed.
type Answers struct {
	// Breach is BreachNone or "obligation[i]".
	Breach           string  `json:"breach"`
	BreachText       string  `json:"breach_text,omitempty"`
	BreachConfidence float64 `json:"breach_confidence"`
	// OnObjective is P(the work still serves the objective). It is 0 and
	// OnObjectiveUnknown true when the judge abstained from the question.
	OnObjective float64 `json:"on_objective"`
	// OnObjectiveUnknown is true when the judge had no basis for
	// P(on objective) (it abstained): the verdict is "Not assessed", no
	// band is shown and P cannot pause the job.
	OnObjectiveUnknown bool    `json:"on_objective_unknown,omitempty"`
	Severity           float64 `json:"severity"`
	SeverityConfidence float64 `json:"severity_confidence"`
	Blocked            float64 `json:"blocked"`
	// Basis is what the judge says its answers are based on (for the
	// learned judge, the sub-model and its inputs).
	Basis string `json:"basis,omitempty"`
}

// ParseAnswers validates resp against req and extracts the four answers.
// Any problem is an error wrapping jev.ErrInvalidAnswer.
func ParseAnswers(req jev.Request, resp *jev.Response, obligations []string) (Answers, error) {
	if err := jev.Validate(req, resp); err != nil {
		return Answers{}, err
	}
	for _, q := range resp.Abstained {
		if q != QuestionOffTrack {
			return Answers{}, fmt.Errorf("%w: question %q: only %q may be abstained from", jev.ErrInvalidAnswer, q, QuestionOffTrack)
		}
	}
	breach := resp.Answers[QuestionBreach]
	severity := resp.Answers[QuestionSeverity]
	a := Answers{
		Breach:             breach.Choice,
		BreachConfidence:   *breach.Confidence,
		Severity:           *severity.Score,
		SeverityConfidence: *severity.Confidence,
		Blocked:            *resp.Answers[QuestionBlocked].Probability,
		Basis:              resp.Basis,
	}
	if p, ok := resp.Answers[QuestionOffTrack]; ok {
		a.OnObjective = *p.Probability
	} else {
		a.OnObjectiveUnknown = true
	}
	if i, ok := ObligationIndex(a.Breach); ok && i < len(obligations) {
		a.BreachText = obligations[i]
	}
	return a, nil
}
