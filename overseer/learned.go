package overseer

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

// LearnedModelFormat is the version of the learned-model file format. A
// file of another version is refused.
const LearnedModelFormat = "overseer-learned-model/v1"

// ErrModel is wrapped by every error about a learned-model file.
var ErrModel = errors.New("learned model")

// LearnedModel is a fitted logistic model of "the run will succeed" over
// features of the bounded trajectory, with a calibration map. It is a small
// JSON file: `overseer train` writes it, [LoadLearnedModel] reads it.
type LearnedModel struct {
	Format string `json:"format"`
	// Version names this model; it is recorded as the model version of
	// every assessment the model makes.
	Version  string         `json:"version"`
	Features []ModelFeature `json:"features"`
	// Intercept is the linear score's constant term.
	Intercept float64 `json:"intercept"`
	// Calibration maps the linear score to a probability:
	// P(succeeds) = 1 / (1 + exp(-(A·score + B))).
	Calibration Calibration `json:"calibration"`
	// Training summarises what the model was fitted on; informational.
	Training json.RawMessage `json:"training,omitempty"`
}

// ModelFeature is one input of a learned model: the feature's name, the
// training mean and standard deviation used to standardise it, and its
// weight. A feature the trajectory cannot supply takes the mean (adds 0).
type ModelFeature struct {
	Name   string  `json:"name"`
	Mean   float64 `json:"mean"`
	Std    float64 `json:"std"`
	Weight float64 `json:"weight"`
}

// Calibration is a Platt map from the linear score to a probability.
type Calibration struct {
	Method string  `json:"method"` // "platt"
	A      float64 `json:"a"`
	B      float64 `json:"b"`
}

//go:embed default_model.json
var defaultModelJSON []byte

// DefaultLearnedModel returns the model that ships with the package,
// trained on recorded runs of one software-engineering agent (see the
// model's training summary). Each call returns a fresh copy.
func DefaultLearnedModel() *LearnedModel {
	m, err := parseLearnedModel(defaultModelJSON)
	if err != nil {
		panic("overseer: the embedded default model is invalid: " + err.Error())
	}
	return m
}

// LoadLearnedModel reads a learned-model file.
func LoadLearnedModel(path string) (*LearnedModel, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrModel, err)
	}
	m, err := parseLearnedModel(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// parseLearnedModel decodes and validates a learned model. Unknown fields
// are refused.
func parseLearnedModel(data []byte) (*LearnedModel, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m LearnedModel
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: not a model file: %v", ErrModel, err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate reports the first problem of the model in one sentence.
func (m *LearnedModel) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrModel, fmt.Sprintf(format, args...))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if m.Format != LearnedModelFormat {
		return bad("format %q is not %q: retrain the model with this version of overseer", m.Format, LearnedModelFormat)
	}
	if m.Version == "" {
		return bad("version is empty")
	}
	if len(m.Features) == 0 {
		return bad("no features")
	}
	seen := map[string]bool{}
	for _, f := range m.Features {
		if _, ok := features[f.Name]; !ok {
			return bad("unknown feature %q", f.Name)
		}
		if seen[f.Name] {
			return bad("feature %q is listed twice", f.Name)
		}
		seen[f.Name] = true
		if !finite(f.Mean) || !finite(f.Weight) || !finite(f.Std) || f.Std <= 0 {
			return bad("feature %q needs a finite mean and weight and a positive std", f.Name)
		}
	}
	if m.Calibration.Method != "platt" || !finite(m.Calibration.A) || !finite(m.Calibration.B) || !finite(m.Intercept) {
		return bad(`calibration must be {"method":"platt"} with finite a and b, and the intercept finite`)
	}
	return nil
}

func unknownFeature(name string) error {
	return fmt.Errorf("%w: unknown feature %q", ErrModel, name)
}

// score is the model's linear score of a trajectory (before calibration).
func (m *LearnedModel) score(t Trajectory) float64 {
	s := m.Intercept
	for _, f := range m.Features {
		v, ok := featureValue(f.Name, t)
		if !ok {
			continue // the training mean: standardised 0
		}
		s += f.Weight * (v - f.Mean) / f.Std
	}
	return s
}

// calibrate maps a linear score to P(the run succeeds).
func (m *LearnedModel) calibrate(score float64) float64 {
	return 1 / (1 + math.Exp(-(m.Calibration.A*score + m.Calibration.B)))
}

// predictSuccess is the calibrated probability that the run succeeds.
func (m *LearnedModel) predictSuccess(t Trajectory) float64 {
	return m.calibrate(m.score(t))
}

// LearnedJudge answers the four questions from features of the bounded
// trajectory alone, offline and in microseconds:
//
//   - P(on objective) is the model's calibrated probability that the run
//     will succeed ([LearnedModel.predictSuccess]), clamped to [0.01, 0.99].
//   - breach follows fixed rules, strongest first, and only for
//     obligations the workflow type has: obligation[0] (output) when the
//     last phase failed as an activity (confidence 0.6, +0.15 per further
//     failure in a row, at most 0.95) or reported a missing output (0.8);
//     obligation[1] (objective) on lane ping-pong, two or more returns to an
//     earlier lane in the recent window (0.25 per return, at most 0.95);
//     obligation[2] (progress) when a work item was reopened twice or more
//     and the last phase still had failed tool calls or failed (0.3 per
//     reopening, at most 0.95). Failed tool calls feed the model,
//     not a breach: obligation[3] is never chosen.
//   - severity is 3 × the breach confidence when a breach is chosen, else
//     1.5 × (1 − P(on objective)), below "Review".
//   - blocked is 0.05 + 0.25 per phase failed in a row, at most 0.97.
//
// The zero value uses [DefaultLearnedModel].
type LearnedJudge struct {
	Model *LearnedModel
}

var _ PureJudge = (*LearnedJudge)(nil)

// Pure implements [PureJudge]: the judge may run in workflow code.
func (*LearnedJudge) Pure() {}

// Decide implements jev.Judge.
func (j *LearnedJudge) Decide(ctx context.Context, req jev.Request) (*jev.Response, error) {
	var st State
	if err := jev.DecodeState(ctx, "learned judge", req, &st); err != nil {
		return nil, err
	}
	m := j.Model
	if m == nil {
		m = defaultModel
	}
	t := st.Trajectory
	onObjective := clamp(m.predictSuccess(t), 0.01, 0.99)
	breach, confidence := learnedBreach(t, len(st.PhaseObligations))
	severity := 1.5 * (1 - onObjective)
	if breach != BreachNone {
		severity = 3 * confidence
	}
	blocked := blockedAfter(t.FailureStreak)

	return answersResponse(req, m.Version, breach, confidence, onObjective, severity, blocked), nil
}

var defaultModel = DefaultLearnedModel()

// learnedBreach applies the learned judge's breach rules. With no breach it
// returns BreachNone and the confidence that none applies.
func learnedBreach(t Trajectory, obligations int) (string, float64) {
	var signal [3]float64
	if n := len(t.RecentPhases); n > 0 {
		last := t.RecentPhases[n-1]
		if last.Failed {
			signal[0] = math.Min(0.6+0.15*float64(max(0, t.FailureStreak-1)), 0.95)
		} else if last.NoOutput {
			signal[0] = 0.8
		}
	}
	if returns := signalsOf(t).pingPongs; returns >= 2 {
		signal[1] = math.Min(0.25*float64(returns), 0.95)
	}
	loops := 0
	for _, w := range t.WorkItems {
		loops = max(loops, w.Loops)
	}
	if n := len(t.RecentPhases); loops >= 2 && n > 0 && (t.RecentPhases[n-1].FailedTools > 0 || t.RecentPhases[n-1].Failed) {
		signal[2] = math.Min(0.3*float64(loops), 0.95)
	}
	breach, best := BreachNone, 0.0
	for i, s := range signal {
		if i < obligations && s > best {
			breach, best = obligationKey(i), s
		}
	}
	if breach == BreachNone {
		return BreachNone, 0.9
	}
	return breach, best
}
