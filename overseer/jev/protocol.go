package jev

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
)

// QuestionType is the permitted shape of one answer.
type QuestionType string

// The three answer shapes of the Jev protocol.
const (
	// Noul asks for the probability that a statement is true.
	Noul QuestionType = "noul"
	// Choice asks for one option from caller-defined criteria.
	Choice QuestionType = "choice"
	// Score asks for a position on a caller-defined ordered scale.
	Score QuestionType = "score"
)

// Question is one typed question. Which fields are used depends on Type:
// Noul uses Instructions; Choice uses Options (in order) and OptionText;
// Score uses Levels.
type Question struct {
	Type QuestionType `json:"type"`
	// Instructions is the statement whose probability a Noul question asks for.
	Instructions string `json:"instructions,omitempty"`
	// Options are the choice options in a stable order. On the wire they
	// become the criteria object: option -> description (null = the option
	// text itself).
	Options []ChoiceOption `json:"-"`
	// Levels is the ordered scale of a Score question, lowest first.
	Levels []string `json:"-"`
}

// ChoiceOption is one option of a Choice question. An empty Description is
// sent as null, meaning "the option text itself".
type ChoiceOption struct {
	Name        string
	Description string
}

// MarshalJSON writes the protocol's wire shape: choice criteria as an
// object (option -> description or null, in the options' order), score
// criteria as a list.
func (q Question) MarshalJSON() ([]byte, error) {
	wire := map[string]any{"type": q.Type}
	switch q.Type {
	case Noul:
		wire["instructions"] = q.Instructions
	case Choice:
		criteria := make(orderedCriteria, len(q.Options))
		copy(criteria, q.Options)
		wire["criteria"] = criteria
	case Score:
		wire["criteria"] = q.Levels
	}
	if q.Instructions != "" {
		wire["instructions"] = q.Instructions
	}
	return json.Marshal(wire)
}

// UnmarshalJSON reads the wire shape written by MarshalJSON. Choice options
// come back in the object's order.
func (q *Question) UnmarshalJSON(data []byte) error {
	var wire struct {
		Type         QuestionType    `json:"type"`
		Instructions string          `json:"instructions"`
		Criteria     json.RawMessage `json:"criteria"`
	}
	if err := json.Unmarshal(data, &wire); err != nil {
		return err
	}
	*q = Question{Type: wire.Type, Instructions: wire.Instructions}
	switch wire.Type {
	case Choice:
		var c orderedCriteria
		if err := json.Unmarshal(wire.Criteria, &c); err != nil {
			return fmt.Errorf("choice criteria: %w", err)
		}
		q.Options = c
	case Score:
		if err := json.Unmarshal(wire.Criteria, &q.Levels); err != nil {
			return fmt.Errorf("score criteria: %w", err)
		}
	}
	return nil
}

// orderedCriteria is a JSON object whose key order is kept.
type orderedCriteria []ChoiceOption

func (c orderedCriteria) MarshalJSON() ([]byte, error) {
	buf := []byte{'{'}
	for i, o := range c {
		if i > 0 {
			buf = append(buf, ',')
		}
		k, _ := json.Marshal(o.Name)
		buf = append(buf, k...)
		buf = append(buf, ':')
		if o.Description == "" {
			buf = append(buf, "null"...)
		} else {
			v, _ := json.Marshal(o.Description)
			buf = append(buf, v...)
		}
	}
	return append(buf, '}'), nil
}

func (c *orderedCriteria) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("criteria must be an object")
	}
	*c = nil
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := tok.(string)
		var desc *string
		if err := dec.Decode(&desc); err != nil {
			return err
		}
		o := ChoiceOption{Name: name}
		if desc != nil {
			o.Description = *desc
		}
		*c = append(*c, o)
	}
	return nil
}

// Request is one structured-decision call: some state and named questions.
type Request struct {
	// State is any JSON value the questions are asked about.
	State json.RawMessage `json:"state"`
	// Questions maps a question name to its question.
	Questions map[string]Question `json:"questions"`
}

// Answer is one typed answer. Exactly the fields of its Type are meaningful.
type Answer struct {
	Type QuestionType `json:"type"`
	// Probability answers a Noul question, in [0,1].
	Probability *float64 `json:"probability,omitempty"`
	// Choice is the chosen option of a Choice question.
	Choice string `json:"choice,omitempty"`
	// Score is the position on a Score question's scale, 0…len(levels)-1,
	// possibly fractional.
	Score *float64 `json:"score,omitempty"`
	// Confidence in the choice or score, in [0,1].
	Confidence *float64 `json:"confidence,omitempty"`
	// Probabilities per option (Choice) or per level (Score), each in [0,1].
	Probabilities map[string]float64 `json:"probabilities,omitempty"`
}

// Usage is the token usage of one call.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// Response is a judge's answer to a Request.
type Response struct {
	Answers map[string]Answer `json:"answers"`
	// ModelVersion names the model that answered.
	ModelVersion string `json:"model_version"`
	// Basis says in a few words what the answers are based on, e.g. the
	// inputs a model read. Optional; shown beside the verdict.
	Basis string `json:"basis,omitempty"`
	// Abstained names the questions the judge could not answer from the
	// state it was given; they have no answer. A judge that lacks the
	// evidence for a question says so here instead of guessing.
	Abstained []string `json:"abstained,omitempty"`
	Usage     Usage    `json:"usage"`
	// Latency is measured by the caller when the judge leaves it zero.
	Latency time.Duration `json:"latency_ns"`
}

// ErrInvalidAnswer is wrapped by every validation failure of a Response: a
// malformed answer is an error, never a verdict.
var ErrInvalidAnswer = errors.New("jev: invalid answer")

// Validate checks resp against the questions of req. It reports every
// problem it finds, each naming the question, joined into one error that
// wraps ErrInvalidAnswer.
func Validate(req Request, resp *Response) error {
	if resp == nil || len(resp.Answers) == 0 {
		return fmt.Errorf("%w: empty response", ErrInvalidAnswer)
	}
	var errs []error
	for _, name := range resp.Abstained {
		if _, ok := req.Questions[name]; !ok {
			errs = append(errs, fmt.Errorf("abstained %q: no such question", name))
		}
		if _, ok := resp.Answers[name]; ok {
			errs = append(errs, fmt.Errorf("question %q: answered and abstained", name))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(req.Questions)) {
		a, ok := resp.Answers[name]
		if !ok {
			if !slices.Contains(resp.Abstained, name) {
				errs = append(errs, fmt.Errorf("question %q: missing answer", name))
			}
			continue
		}
		if err := validateAnswer(req.Questions[name], a); err != nil {
			errs = append(errs, fmt.Errorf("question %q: %w", name, err))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(resp.Answers)) {
		if _, ok := req.Questions[name]; !ok {
			errs = append(errs, fmt.Errorf("answer %q: no such question", name))
		}
	}
	if resp.Usage.InputTokens < 0 || resp.Usage.OutputTokens < 0 {
		errs = append(errs, fmt.Errorf("usage: negative token count"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidAnswer, errors.Join(errs...))
	}
	return nil
}

func validateAnswer(q Question, a Answer) error {
	if a.Type != "" && a.Type != q.Type {
		return fmt.Errorf("answer type %q, want %q", a.Type, q.Type)
	}
	switch q.Type {
	case Noul:
		return checkProbability("probability", a.Probability)
	case Choice:
		if a.Choice == "" {
			return errors.New("missing choice")
		}
		names := make(map[string]bool, len(q.Options))
		for _, o := range q.Options {
			names[o.Name] = true
		}
		if !names[a.Choice] {
			return fmt.Errorf("unknown choice option %q", a.Choice)
		}
		if err := checkProbability("confidence", a.Confidence); err != nil {
			return err
		}
		return checkDistribution(a.Probabilities, names)
	case Score:
		if a.Score == nil {
			return errors.New("missing score")
		}
		s := *a.Score
		if math.IsNaN(s) || s < 0 || s > float64(len(q.Levels)-1) {
			return fmt.Errorf("score %v outside the scale 0…%d", s, len(q.Levels)-1)
		}
		if err := checkProbability("confidence", a.Confidence); err != nil {
			return err
		}
		names := make(map[string]bool, len(q.Levels))
		for _, l := range q.Levels {
			names[l] = true
		}
		return checkDistribution(a.Probabilities, names)
	default:
		return fmt.Errorf("unknown question type %q", q.Type)
	}
}

func checkProbability(field string, p *float64) error {
	if p == nil {
		return fmt.Errorf("missing %s", field)
	}
	if !validProbability(*p) {
		return fmt.Errorf("%s %v outside [0,1]", field, *p)
	}
	return nil
}

func validProbability(p float64) bool { return !math.IsNaN(p) && p >= 0 && p <= 1 }

// checkDistribution accepts an absent distribution (it is optional on the
// wire) but rejects unknown keys and values outside [0,1].
func checkDistribution(probs map[string]float64, names map[string]bool) error {
	for _, k := range slices.Sorted(maps.Keys(probs)) {
		if !names[k] {
			return fmt.Errorf("probability for unknown option %q", k)
		}
		if !validProbability(probs[k]) {
			return fmt.Errorf("probability of %q %v outside [0,1]", k, probs[k])
		}
	}
	return nil
}
