package judge

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// LearnedModelFormat is the version of the learned-model file format. A
// file of another version is refused.
const LearnedModelFormat = "overseer-learned-model/v2"

// ErrModel is wrapped by every error about a learned-model file.
var ErrModel = errors.New("learned model")

// LearnedModel is a small family of fitted logistic models of "the run will
// succeed", each over a feature set of the bounded trajectory, with their
// calibration maps. It is a small JSON file: `overseer train` writes it,
// [LoadLearnedModel] reads it.
//
// The sub-models are listed richest first (e.g. one that reads token
// telemetry, then one over the trajectory's structure alone). At each
// boundary the judge uses the first sub-model whose every input the
// trajectory carries, never a training mean in place of a missing input;
// when none applies it abstains from P(on objective) ("Not assessed").
type LearnedModel struct {
	Format string `json:"format"`
	// Version names this model; an assessment records it with the
	// sub-model that answered, e.g. "learned-mini-swe-v2/telemetry".
	Version   string     `json:"version"`
	SubModels []SubModel `json:"sub_models"`
	// Training summarises what the model was fitted on; informational.
	Training json.RawMessage `json:"training,omitempty"`
	// Recalibration, when set, says for which runs the sub-models'
	// probability maps were refitted (stage 1).
	Recalibration *Recalibration `json:"recalibration,omitempty"`
	// Shape is the shape of the jobs the model was fit on: ShapeAgentLoop
	// for a loop model (its features are those of an agent loop's whole
	// run, LoopFeatures); empty for phases of work.
	Shape trajectory.Shape `json:"shape,omitempty"`
	// Reference, when set, is the distribution of P(on objective) among
	// the type's recent closed jobs at each point of their run, which a
	// verdict is ranked against ("lower than 92% of the last 200 CoroJob
	// jobs at this point"). A learn round stores it with a recalibration
	// (stage 1) and with a refit (stage 3); `overseer recalibrate` too.
	Reference *Reference `json:"reference,omitempty"`
	// LoopReference, when set, is what the succeeded runs the model was
	// fitted or recalibrated on looked like turn by turn, which a loop
	// model's relative features read a run against; nil: those features
	// are not available and a sub-model that reads them does not answer.
	LoopReference *LoopReference `json:"loop_reference,omitempty"`
}

// SubModel is one logistic model of a [LearnedModel] over its own
// features.
type SubModel struct {
	// Name says what the sub-model reads, e.g. "telemetry" or "structure".
	Name     string         `json:"name"`
	Features []ModelFeature `json:"features"`
	// Intercept is the linear score's constant term.
	Intercept float64 `json:"intercept"`
	// Calibration maps the linear score to a probability:
	// P(succeeds) = 1 / (1 + exp(-(A·score + B))).
	Calibration Calibration `json:"calibration"`
	// Training holds the sub-model's own cross-validated figures;
	// informational.
	Training json.RawMessage `json:"training,omitempty"`
}

// ModelFeature is one input of a sub-model: the feature's name, the
// training mean and standard deviation used to standardise it, and its
// weight.
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
func DefaultLearnedModel() *LearnedModel { return embeddedModel(defaultModelJSON, "default model") }

// embeddedModel parses a model file the package embeds; one that does not
// parse is a broken build.
func embeddedModel(data []byte, what string) *LearnedModel {
	m, err := parseLearnedModel(data)
	if err != nil {
		panic("overseer: the embedded " + what + " is invalid: " + err.Error())
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

// ParseLearnedModel decodes and validates the content of a learned-model
// file, like [LoadLearnedModel]: a file of another format is refused with
// that sentence.
func ParseLearnedModel(data []byte) (*LearnedModel, error) { return parseLearnedModel(data) }

// parseLearnedModel decodes and validates a learned model. Unknown fields
// are refused; the format is checked first, so that a file of another
// version gets that sentence rather than a field error.
func parseLearnedModel(data []byte) (*LearnedModel, error) {
	var head struct {
		Format string `json:"format"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%w: not a model file: %v", ErrModel, err)
	}
	if head.Format != LearnedModelFormat {
		return nil, fmt.Errorf("%w: format %q is not %q: retrain the model with this version of overseer", ErrModel, head.Format, LearnedModelFormat)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m LearnedModel
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: not a model file: %v", ErrModel, err)
	}
	if r := m.Recalibration; r != nil && r.legacyReference != nil {
		if m.Reference == nil {
			m.Reference = r.legacyReference
		}
		r.legacyReference = nil
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
	if len(m.SubModels) == 0 {
		return bad("no sub-models")
	}
	names := map[string]bool{}
	for _, sm := range m.SubModels {
		if sm.Name == "" || names[sm.Name] {
			return bad("sub-model names must be set and distinct (%q)", sm.Name)
		}
		names[sm.Name] = true
		if len(sm.Features) == 0 {
			return bad("sub-model %q has no features", sm.Name)
		}
		seen := map[string]bool{}
		for _, f := range sm.Features {
			if !isFeature(f.Name) {
				return bad("sub-model %q: unknown feature %q", sm.Name, f.Name)
			}
			if seen[f.Name] {
				return bad("sub-model %q: feature %q is listed twice", sm.Name, f.Name)
			}
			seen[f.Name] = true
			if !finite(f.Mean) || !finite(f.Weight) || !finite(f.Std) || f.Std <= 0 {
				return bad("sub-model %q: feature %q needs a finite mean and weight and a positive std", sm.Name, f.Name)
			}
		}
		if sm.Calibration.Method != "platt" || !finite(sm.Calibration.A) || !finite(sm.Calibration.B) || !finite(sm.Intercept) {
			return bad(`sub-model %q: calibration must be {"method":"platt"} with finite a and b, and the intercept finite`, sm.Name)
		}
	}
	if err := m.finite(); err != nil {
		return err
	}
	if m.Reference != nil {
		if err := m.Reference.validate(); err != nil {
			return err
		}
	}
	if m.LoopReference != nil {
		if err := m.LoopReference.validate(); err != nil {
			return err
		}
	}
	if m.Recalibration != nil {
		return m.Recalibration.validate(m)
	}
	return nil
}

// MarshalJSON encodes the model, and refuses one holding a number JSON
// has none for (NaN, ±Inf) with a sentence that names it, not the
// encoder's "unsupported value".
func (m LearnedModel) MarshalJSON() ([]byte, error) {
	if err := m.finite(); err != nil {
		return nil, err
	}
	type plain LearnedModel // without this method
	return json.Marshal(plain(m))
}

// finite reports the first number of the model that is not finite, in
// one sentence.
func (m *LearnedModel) finite() error {
	bad := func(what string) error {
		return fmt.Errorf("%w: %s is not a finite number: the fit that made it went wrong; refit the model", ErrModel, what)
	}
	ok := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	for _, sm := range m.SubModels {
		for _, f := range sm.Features {
			if !ok(f.Mean) || !ok(f.Std) || !ok(f.Weight) {
				return bad(fmt.Sprintf("sub-model %q's feature %q (its mean, std or weight)", sm.Name, f.Name))
			}
		}
		if !ok(sm.Intercept) || !ok(sm.Calibration.A) || !ok(sm.Calibration.B) {
			return bad(fmt.Sprintf("sub-model %q's intercept or calibration", sm.Name))
		}
	}
	if r := m.Recalibration; r != nil && r.Restandardization != nil {
		s := r.Restandardization
		for _, v := range []float64{s.BrierAsIs, s.BrierRestandardized, s.AUROCAsIs, s.AUROCRestandardized} {
			if !ok(v) {
				return bad("a figure of the recalibration's re-standardisation check (leave out one not measured)")
			}
		}
	}
	if r := m.Reference; r != nil {
		for _, p := range r.Points {
			for _, q := range p.Quantiles {
				if !ok(q) {
					return bad(fmt.Sprintf("a quantile of the reference at %d phase runs", p.FromPhaseRuns))
				}
			}
		}
	}
	return nil
}

func unknownFeature(name string) error {
	return fmt.Errorf("%w: unknown feature %q", ErrModel, name)
}

// FeatureNames lists the sub-model's inputs in order.
func (sm *SubModel) FeatureNames() []string {
	names := make([]string, len(sm.Features))
	for i, f := range sm.Features {
		names[i] = f.Name
	}
	return names
}

// inputs reads the sub-model's features from the trajectory, false when
// it lacks any of them.
func (sm *SubModel) inputs(t trajectory.Trajectory, ref *LoopReference) ([]float64, bool) {
	vals := make([]float64, len(sm.Features))
	for i, f := range sm.Features {
		v, ok := featureValue(f.Name, t, ref)
		if !ok {
			return nil, false
		}
		vals[i] = v
	}
	return vals, true
}

// predictSuccess is the calibrated probability that the run succeeds,
// from the sub-model's inputs.
func (sm *SubModel) predictSuccess(vals []float64) float64 {
	return sm.Calibration.Apply(sm.linearScore(vals))
}

// linearScore is the sub-model's linear score of its inputs, before the
// calibration map.
func (sm *SubModel) linearScore(vals []float64) float64 {
	score := sm.Intercept
	for i, f := range sm.Features {
		score += f.Weight * (vals[i] - f.Mean) / f.Std
	}
	return score
}

// Apply maps a linear score to the probability of success.
func (c Calibration) Apply(score float64) float64 {
	return 1 / (1 + math.Exp(-(c.A*score + c.B)))
}

// LinearScore is the linear score of the richest sub-model whose inputs
// the trajectory carries, with its index in SubModels; false when none
// applies. Recalibration refits the map from this score to P.
func (m *LearnedModel) LinearScore(t trajectory.Trajectory) (int, float64, bool) {
	for i := range m.SubModels {
		if vals, ok := m.SubModels[i].inputs(t, m.LoopReference); ok {
			return i, m.SubModels[i].linearScore(vals), true
		}
	}
	return -1, 0, false
}

// Basis is the sentence an assessment by this sub-model records.
func (sm *SubModel) Basis() string {
	return fmt.Sprintf("%s sub-model: %s", sm.Name, strings.Join(sm.FeatureNames(), ", "))
}

// SubModelFor is the richest sub-model whose inputs the trajectory
// carries, or nil when none applies.
func (m *LearnedModel) SubModelFor(t trajectory.Trajectory) *SubModel {
	sm, _ := m.pick(t)
	return sm
}

// pick is SubModelFor with the inputs it read, so they are read once.
func (m *LearnedModel) pick(t trajectory.Trajectory) (*SubModel, []float64) {
	for i := range m.SubModels {
		if vals, ok := m.SubModels[i].inputs(t, m.LoopReference); ok {
			return &m.SubModels[i], vals
		}
	}
	return nil, nil
}

// LearnedJudge answers the four questions from features of the bounded
// trajectory alone, offline and in microseconds:
//
//   - P(on objective) is the calibrated probability that the run will
//     succeed, clamped to [0.01, 0.99], from the richest sub-model whose
//     inputs the trajectory carries ([LearnedModel.SubModelFor]); from the
//     third failure of the latest phase without a success in between
//     ([FailureRepeats]) its odds are halved for each failure after the
//     first: a phase that keeps failing is going wrong whatever the token
//     rates say; the
//     assessment's model version names that sub-model and its basis lists
//     the inputs. With no sub-model applicable the judge abstains: the
//     verdict is "Not assessed" and P cannot pause.
//   - breach follows fixed rules, strongest first, and only for
//     obligations the workflow type has: obligation[0] (output) when the
//     last phase failed as an activity (confidence 0.30 for one failure,
//     +0.15 for each further failure of the phase without a success in
//     between, at most 0.95: [FailureRepeats]; one or two failures are
//     shown, the third pauses under the default floor of 0.5) or reported
//     a missing output (0.8);
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
	// Model judges phases of work; if nil, the shipped model. A loop
	// model (Shape ShapeAgentLoop) given here judges agent loops instead.
	Model *LearnedModel
	// LoopModel judges agent loops; if nil, Model when it is a loop
	// model, else the shipped loop model.
	LoopModel *LearnedModel
}

// models are the judge's phase model and loop model.
func (j *LearnedJudge) models() (phases, loops *LearnedModel) {
	phases, loops = j.Model, j.LoopModel
	if phases != nil && phases.Shape == trajectory.ShapeAgentLoop {
		if loops == nil {
			loops = phases
		}
		phases = nil
	}
	if phases == nil {
		phases = defaultModel
	}
	if loops == nil {
		loops = defaultLoopModel
	}
	return phases, loops
}

var _ PureJudge = (*LearnedJudge)(nil)

// Pure implements [PureJudge]: the judge may run in workflow code.
func (*LearnedJudge) Pure() {}

// Decide implements jev.Judge.
func (j *LearnedJudge) Decide(ctx context.Context, req jev.Request) (*jev.Response, error) {
	var st trajectory.State
	if err := jev.DecodeState(ctx, "learned judge", req, &st); err != nil {
		return nil, err
	}
	m, lm := j.models()
	t := st.Trajectory
	if trajectory.ShapeOf(t) == trajectory.ShapeAgentLoop {
		// The phase model was fit on phases of work: one per model or
		// tool call, it would read every turn as a repeat. The loop model
		// judges, with the agent-loop rules inside its answer.
		return loopResponse(req, lm, st), nil
	}
	breach, confidence := learnedBreach(t, len(st.PhaseObligations))
	blocked := blockedAfter(t.FailureStreak)
	sm, vals := m.pick(t)
	if sm == nil {
		// No basis for P: abstain rather than answer a base rate. The
		// breach rules still answer; severity is theirs alone.
		severity := 0.0
		if breach != trajectory.BreachNone {
			severity = 3 * confidence
		}
		resp := answersResponse(req, m.Version, breach, confidence, 0, severity, blocked)
		delete(resp.Answers, trajectory.QuestionOffTrack)
		resp.Abstained = []string{trajectory.QuestionOffTrack}
		resp.Basis = "not assessed: the trajectory lacks the inputs of every sub-model (" + m.inputsSummary() + ")"
		return resp, nil
	}
	onObjective := clamp(failureAdjusted(sm.predictSuccess(vals), FailureRepeats(t)), 0.01, 0.99)
	severity := 1.5 * (1 - onObjective)
	if breach != trajectory.BreachNone {
		severity = 3 * confidence
	}
	resp := answersResponse(req, m.Version+"/"+sm.Name, breach, confidence, onObjective, severity, blocked)
	resp.Basis = sm.Basis() + "; " + m.StageSentence(sm.Name, st.WorkflowType)
	if s, ok := m.Reference.Standing(t.PhaseRuns, round(onObjective)); ok {
		of := st.WorkflowType
		if of == "" {
			of = m.referenceFor()
		}
		resp.Basis += "; " + s.Sentence(of)
	}
	return resp, nil
}

// inputsSummary lists what each sub-model needs, for the sentence of an
// abstention.
func (m *LearnedModel) inputsSummary() string {
	parts := make([]string, len(m.SubModels))
	for i, sm := range m.SubModels {
		parts[i] = sm.Name + " needs " + strings.Join(sm.FeatureNames(), ", ")
	}
	return strings.Join(parts, "; ")
}

var defaultModel = DefaultLearnedModel()

//go:embed default_loop_model.json
var defaultLoopModelJSON []byte

// DefaultLoopModel returns the loop model that ships with the package:
// fit on recorded runs of a coding agent replayed as the agent loop a team
// writes on Temporal (see the model's training summary). Each call returns
// a fresh copy.
func DefaultLoopModel() *LearnedModel {
	return embeddedModel(defaultLoopModelJSON, "default loop model")
}

var defaultLoopModel = DefaultLoopModel()

// loopResponse is the learned judge's answer on an agent loop: P(on
// objective) from the loop model m, over the run's whole loop statistics,
// held at or below what the agent-loop rules give (a tool failing again
// and again with no progress, the same call answered the same way), which
// also name the breach; the rules alone when m has no sub-model the
// trajectory can feed.
func loopResponse(req jev.Request, m *LearnedModel, st trajectory.State) *jev.Response {
	t := st.Trajectory
	breach, confidence, ruleP, blocked := agentLoopAnswers(t, len(st.PhaseObligations))
	sm, vals := m.pick(t)
	if sm == nil {
		resp := agentLoopResponse(req, m.Version, st)
		if m.LoopReference == nil && m.NeedsLoopReference() {
			resp.Basis = agentLoopAwaitingReference + "; " + m.StageSentence("", st.WorkflowType)
		}
		return resp
	}
	onObjective := clamp(min(sm.predictSuccess(vals), ruleP), 0.01, 0.99)
	severity := 1.5 * (1 - onObjective)
	if breach != trajectory.BreachNone {
		severity = 3 * confidence
	}
	resp := answersResponse(req, m.Version+"/"+sm.Name, breach, confidence, onObjective, severity, blocked)
	resp.Basis = "loop " + sm.Basis() + "; " + m.StageSentence(sm.Name, st.WorkflowType)
	if ruleP < agentLoopOnTrack {
		resp.Basis += "; held at or below the agent-loop rules' " + strconv.FormatFloat(ruleP, 'f', 2, 64)
	}
	return resp
}

// FailureRepeats is how many times the latest phase run's phase has failed
// without succeeding in between: its consecutive failures, or the phase
// runs failed in a row (Trajectory.FailureStreak) when that is more (no
// progress between failures). Runs of other phases between two failures
// of the phase do not break its count: an agent's model call between two
// calls of a tool that keeps failing is no progress on the tool. Zero
// when the latest run succeeded. Counted in the recent window.
func FailureRepeats(t trajectory.Trajectory) int {
	n := len(t.RecentPhases)
	if n == 0 || !t.RecentPhases[n-1].Failed {
		return 0
	}
	phase, same := t.RecentPhases[n-1].Phase, 0
	for i := n - 1; i >= 0; i-- {
		r := t.RecentPhases[i]
		if r.Phase != phase {
			continue
		}
		if !r.Failed {
			break
		}
		same++
	}
	return max(t.FailureStreak, same)
}

// failureConfidence is the confidence of the output breach after a phase
// failed n times without succeeding in between: 0.30 for one, 0.45 for
// two, below the default breach floor (0.5), so a failure the workflow
// goes on to handle is recorded and shown but does not pause; 0.60 at the
// third, which pauses a managed job; at most 0.95.
func failureConfidence(n int) float64 {
	return math.Min(0.15+0.15*float64(n), 0.95)
}

// failureAdjusted is P(on objective) after a phase failed n times without
// succeeding in between. One or two failures leave P as the model says:
// workflows handle them (a retry loop, a saga), and a calibrated policy's
// pause threshold can sit close below a typical P (0.655 under the shipped
// model's), so any lowering there would pause them. From the third, when
// the breach rule pauses too, the model's odds are halved for every failure
// after the first: 0.81 reads 0.52 after three, 0.35 after four.
func failureAdjusted(p float64, n int) float64 {
	if n < 3 {
		return p
	}
	odds := p / (1 - p) * math.Pow(0.5, float64(n-1))
	return odds / (1 + odds)
}

// learnedBreach applies the learned judge's breach rules. With no breach it
// returns BreachNone and the confidence that none applies.
func learnedBreach(t trajectory.Trajectory, obligations int) (string, float64) {
	var signal [3]float64
	if n := len(t.RecentPhases); n > 0 {
		last := t.RecentPhases[n-1]
		if last.Failed {
			signal[0] = failureConfidence(FailureRepeats(t))
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
	breach, best := trajectory.BreachNone, 0.0
	for i, s := range signal {
		if i < obligations && s > best {
			breach, best = trajectory.ObligationKey(i), s
		}
	}
	if breach == trajectory.BreachNone {
		return trajectory.BreachNone, 0.9
	}
	return breach, best
}
