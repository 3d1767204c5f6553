package judge

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// Band is the status shown for a job, derived from P(on objective).
type Band string

// The status bands. BandUnknown is shown before the first assessment.
const (
	BandUnknown    Band = ""
	BandOnTrack    Band = "on_track"
	BandNeedsALook Band = "needs_a_look"
	BandOffTrack   Band = "off_track"
)

// String returns the label a person reads.
func (b Band) String() string {
	switch b {
	case BandOnTrack:
		return "On track"
	case BandNeedsALook:
		return "Needs a look"
	case BandOffTrack:
		return "Off track"
	default:
		return "Not assessed"
	}
}

// Policy holds every threshold of the verdict. They are meant to be tuned
// to your agent and your tolerance for false pauses (`overseer calibrate`
// chooses them from recorded runs), so none of them is a constant. A zero
// Policy in [Options] means the policy that goes with the judge
// ([PolicyFor]).
type Policy struct {
	// Name identifies the policy, e.g. the policy file it was loaded from
	// or how it was calibrated; runs record it with their pinned
	// configuration. Informational.
	Name string
	// OnTrackAt is the lowest P(on objective) shown as On track. Default 0.70.
	OnTrackAt float64
	// NeedsALookAt is the lowest P(on objective) shown as Needs a look;
	// below it the job is Off track. Default 0.40.
	NeedsALookAt float64
	// PauseAtOrBelow pauses a managed job when P(on objective) is at or
	// below it. Default 0.25.
	PauseAtOrBelow float64
	// BreachConfidence is the lowest confidence of a breach choice (other
	// than none) that can pause. Default 0.5.
	BreachConfidence float64
	// BreachSeverity is the lowest severity score (0…3) that, with a
	// confident breach, pauses. Default 1.5.
	BreachSeverity float64
	// MaxConsecutiveFailures pauses a managed job for manual review after
	// this many judge failures in a row. Default 3; a negative value never
	// pauses on failures.
	MaxConsecutiveFailures int
	// Promise is the false-pause promise the thresholds were certified
	// for, with its evidence (`overseer calibrate` sets it); zero for
	// thresholds set by hand.
	Promise Promise
	// PauseBudget, when set, is what PauseAtOrBelow was chosen for instead
	// of a promise: a share of the type's recent jobs, whatever their
	// outcome, that the threshold would have paused (`overseer calibrate
	// --pause-budget`). A policy has a promise or a budget, not both.
	PauseBudget PauseBudget
	// Loop, when set, are the thresholds of agent loops (ShapeAgentLoop),
	// whose P(on objective) comes from the loop model on another scale
	// than the phase model's: calibrated for it as the rest is for
	// phases. Nil: agent loops are held to the same thresholds. Runs
	// pinned before it existed have none.
	Loop *Policy `json:",omitempty"`
	// Spend, when set, is the type's relative budget, learned from its
	// succeeded jobs (SpendBudget). Nil: none.
	Spend *SpendBudget `json:",omitempty"`
	// NoPause: the thresholds show bands only and pause nothing, neither
	// on P nor on a breach (UncertifiedModelPolicy): no threshold has been
	// certified for the judge's model.
	NoPause bool `json:",omitempty"`
}

// UncertifiedModelPolicy is the policy of a learned judge with a model of
// its own and no policy: its P is on the model's own scale, on which no
// fixed threshold means anything (P ≤ 0.25 held every succeeded run of an
// agent that succeeds one time in ten), so it shows the default bands and
// pauses nothing until `overseer calibrate` certifies thresholds for it.
func UncertifiedModelPolicy() Policy {
	p := DefaultPolicy()
	p.Name = "no policy certified for this model: it shows bands and pauses nothing (overseer calibrate --model FILE certifies one)"
	p.NoPause, p.MaxConsecutiveFailures = true, -1
	return p
}

// ForShape is the policy of a job of shape s: Loop for an agent loop,
// when set; p otherwise.
func (p Policy) ForShape(s trajectory.Shape) Policy {
	if s == trajectory.ShapeAgentLoop && p.Loop != nil {
		return *p.Loop
	}
	return p
}

// PauseBudget is a reviewer-load control, not a false-pause promise: the
// pause threshold is the highest at which at most MaxShare of Jobs recent
// closed jobs of the type would have paused (Paused did), by their rank
// alone. It needs no outcomes, so a team can have it before a promise can
// be certified; it says nothing about how many of the pauses are false.
type PauseBudget struct {
	MaxShare float64 `json:"max_pause_share"`
	Jobs     int     `json:"jobs"`
	Paused   int     `json:"paused"`
}

// MinPauseBudgetJobs is the fewest recent jobs a pause budget is set on:
// with fewer, the share a threshold pauses moves by more than 5 points
// with one job.
const MinPauseBudgetJobs = 20

// Set reports whether the policy has a pause budget.
func (b PauseBudget) Set() bool { return b.MaxShare > 0 }

// String is the budget as a person reads it.
func (b PauseBudget) String() string {
	return fmt.Sprintf("a pause budget, not a false-pause promise: pauses at most %.1f%% of jobs like the %d recent ones it was set on (%d of them would have paused), whatever their outcome",
		100*b.MaxShare, b.Jobs, b.Paused)
}

// Guarantee is what the policy's pause threshold stands for, in one
// sentence: its promise, its pause budget, or neither.
func (p Policy) Guarantee() string {
	if p.NoPause {
		return "pauses nothing: no policy certified for the model"
	}
	if p.PauseBudget.Set() {
		return p.PauseBudget.String()
	}
	return p.Promise.String()
}

// PromiseKind says what a false-pause promise guarantees.
type PromiseKind string

// The kinds of promise.
const (
	// PromiseConfident: the one-sided upper confidence bound
	// (Clopper–Pearson, at Confidence) of the false-pause rate measured on
	// the succeeded runs is within MaxFalsePause. It takes 59 succeeded
	// runs for 5 % at 95 %, and buys fewer catches. The kind of a promise
	// that names none.
	PromiseConfident PromiseKind = "confidence"
	// PromiseExpected: on a new run like the succeeded runs it was
	// certified on, the chance of a false pause is at most MaxFalsePause
	// (split-conformal: the pause threshold lies below the ⌊(n+1)α⌋-th
	// lowest out-of-fold score of the n succeeded runs). An expectation
	// over new runs, not a bound on any one deployment's measured rate: it
	// takes 19 succeeded runs for 5 %.
	PromiseExpected PromiseKind = "expected"
)

// DefaultPromiseKind is the kind of promise a calibration certifies when
// none is asked for: on the shipped agent's runs, cross-validated by task
// family, it caught three times as many failed runs as PromiseConfident at
// the same 5 % budget (14.1 % against 4.7 %, pausing 2.5 % and 1.0 % of the
// succeeded runs), and it is within reach of a team's first few dozen
// jobs (19 succeeded runs against 59). A promise read from a file that
// names no kind is PromiseConfident, the only kind there was before.
const DefaultPromiseKind = PromiseExpected

// ParsePromiseKind parses a promise kind as a flag gives it; "" is
// DefaultPromiseKind.
func ParsePromiseKind(s string) (PromiseKind, error) {
	switch k := PromiseKind(s); k {
	case PromiseConfident, PromiseExpected:
		return k, nil
	case "":
		return DefaultPromiseKind, nil
	}
	return "", fmt.Errorf("overseer: unknown promise kind %q: use %q (a 95%% upper bound) or %q (in expectation on new runs)", s, PromiseConfident, PromiseExpected)
}

// Promise is a policy's false-pause promise and the evidence behind it:
// on SucceededRuns succeeded runs scored out of fold, the policy paused
// FalsePauses; of kind [PromiseConfident], the one-sided upper confidence
// bound (Clopper–Pearson, at Confidence) of its false-pause rate,
// UpperBound, is within MaxFalsePause; of kind [PromiseExpected], the
// rate on new runs is within it in expectation. Catches of FailedRuns is
// what it bought.
type Promise struct {
	// Kind is the promise's kind; empty means PromiseConfident.
	Kind          PromiseKind `json:"kind,omitempty"`
	MaxFalsePause float64     `json:"max_false_pause"`
	Confidence    float64     `json:"confidence"`
	SucceededRuns int         `json:"succeeded_runs"`
	FalsePauses   int         `json:"false_pauses"`
	UpperBound    float64     `json:"upper_bound"`
	FailedRuns    int         `json:"failed_runs"`
	Catches       int         `json:"catches"`
}

// Certified reports whether the policy carries a promise.
func (p Promise) Certified() bool { return p.MaxFalsePause > 0 }

// Expected reports whether the promise holds in expectation rather than
// with confidence.
func (p Promise) Expected() bool { return p.Kind == PromiseExpected }

// String is the promise as a person reads it.
func (p Promise) String() string {
	if !p.Certified() {
		return "no false-pause promise (thresholds not certified on recorded runs)"
	}
	if p.Expected() {
		return fmt.Sprintf("pauses at most %.1f%% of succeeded runs in expectation on new runs like these (split-conformal; %d of %d paused when certified), catching %d of %d failed runs",
			100*p.MaxFalsePause, p.FalsePauses, p.SucceededRuns, p.Catches, p.FailedRuns)
	}
	return fmt.Sprintf("pauses at most %.1f%% of succeeded runs (%.0f%% upper bound %.1f%%; %d of %d paused when certified), catching %d of %d failed runs",
		100*p.MaxFalsePause, 100*p.Confidence, 100*p.UpperBound, p.FalsePauses, p.SucceededRuns, p.Catches, p.FailedRuns)
}

// DefaultPolicy returns fixed, uncalibrated thresholds: On track from
// P(on objective) 0.70, Needs a look from 0.40, pause at or below 0.25 or
// on a breach with confidence 0.5 and severity 1.5, and after 3 judge
// failures in a row. It is the policy of every judge but the shipped
// learned one ([PolicyFor]).
func DefaultPolicy() Policy {
	return Policy{
		Name:                   "default thresholds",
		OnTrackAt:              0.70,
		NeedsALookAt:           0.40,
		PauseAtOrBelow:         0.25,
		BreachConfidence:       0.5,
		BreachSeverity:         1.5,
		MaxConsecutiveFailures: 3,
	}
}

// PolicyFor is the policy that goes with a judge when none is given:
// [DefaultLearnedPolicy], calibrated for it, for a [LearnedJudge] with the
// shipped model (Model not set); [UncertifiedModelPolicy], which pauses
// nothing, for a LearnedJudge with a model of its own, which needs a
// policy of its own (`overseer calibrate`); [DefaultPolicy], fixed
// thresholds, for any other judge.
func PolicyFor(j jev.Judge) Policy {
	if l, ok := j.(*LearnedJudge); ok {
		if l.Model == nil {
			return DefaultLearnedPolicy()
		}
		return UncertifiedModelPolicy()
	}
	return DefaultPolicy()
}

// Validate reports a policy whose thresholds contradict each other.
func (p Policy) Validate() error {
	if p.Loop != nil {
		if err := p.Loop.Validate(); err != nil {
			return fmt.Errorf("the agent-loop policy: %w", err)
		}
	}
	// In a fixed order: the first problem is always the same one (the
	// model registry validates policies in workflow code).
	for _, f := range []struct {
		name string
		v    float64
	}{{"OnTrackAt", p.OnTrackAt}, {"NeedsALookAt", p.NeedsALookAt}, {"PauseAtOrBelow", p.PauseAtOrBelow}, {"BreachConfidence", p.BreachConfidence}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > 1 {
			return fmt.Errorf("overseer: policy %s = %v, want a probability in [0,1]", f.name, f.v)
		}
	}
	if p.NeedsALookAt > p.OnTrackAt {
		return fmt.Errorf("overseer: policy NeedsALookAt (%v) above OnTrackAt (%v)", p.NeedsALookAt, p.OnTrackAt)
	}
	if math.IsNaN(p.BreachSeverity) || p.BreachSeverity < 0 || p.BreachSeverity > 3 {
		return fmt.Errorf("overseer: policy BreachSeverity = %v, want a score in [0,3]", p.BreachSeverity)
	}
	if pr := p.Promise; pr != (Promise{}) && (!(pr.MaxFalsePause > 0 && pr.MaxFalsePause < 1) || !(pr.Kind == "" || pr.Kind == PromiseConfident || pr.Kind == PromiseExpected) ||
		(pr.Expected() && pr.Confidence != 0) || (!pr.Expected() && !(pr.Confidence > 0 && pr.Confidence < 1)) ||
		pr.FalsePauses < 0 || pr.FalsePauses > pr.SucceededRuns || pr.Catches < 0 || pr.Catches > pr.FailedRuns || math.IsNaN(pr.UpperBound)) {
		return fmt.Errorf("overseer: policy promise %+v is inconsistent: max_false_pause in (0,1), kind confidence (with a confidence in (0,1)) or expected (with none), counts within their runs", pr)
	}
	if p.MaxConsecutiveFailures == 0 {
		return fmt.Errorf("overseer: policy MaxConsecutiveFailures = 0; use a negative value to never pause on failures")
	}
	if b := p.PauseBudget; b != (PauseBudget{}) {
		switch {
		case !(b.MaxShare > 0 && b.MaxShare < 1) || b.Jobs < MinPauseBudgetJobs || b.Paused < 0 || b.Paused > b.Jobs:
			return fmt.Errorf("overseer: policy pause budget %+v is inconsistent: max_pause_share in (0,1), at least %d jobs, paused within them", b, MinPauseBudgetJobs)
		case p.Promise.Certified():
			return fmt.Errorf("overseer: policy has both a false-pause promise and a pause budget; keep one")
		}
	}
	return nil
}

// bandFor maps P(on objective) to a band.
func (p Policy) bandFor(onObjective float64) Band {
	switch {
	case onObjective >= p.OnTrackAt:
		return BandOnTrack
	case onObjective >= p.NeedsALookAt:
		return BandNeedsALook
	default:
		return BandOffTrack
	}
}

// Verdict is what the policy makes of one set of answers. Band is
// BandUnknown ("Not assessed") when the judge abstained from
// P(on objective).
type Verdict struct {
	Band        Band    `json:"band"`
	OnObjective float64 `json:"on_objective"`
	// Flagged is true when the manage-mode pause rule holds. In observe mode
	// it is recorded but changes nothing.
	Flagged bool `json:"flagged"`
	// Reason says in one sentence why the phase was flagged.
	Reason string `json:"reason,omitempty"`
}

// Evaluate applies the policy to validated answers.
func (p Policy) Evaluate(a trajectory.Answers) Verdict {
	v := Verdict{Band: p.bandFor(a.OnObjective), OnObjective: a.OnObjective}
	if a.OnObjectiveUnknown {
		v.Band = BandUnknown
	}
	switch {
	case p.NoPause:
	case !a.OnObjectiveUnknown && a.OnObjective <= p.PauseAtOrBelow:
		v.Flagged = true
		v.Reason = fmt.Sprintf("P(on objective) %.3f is at or below the pause threshold %.3f", a.OnObjective, p.PauseAtOrBelow)
	case a.Breach != trajectory.BreachNone && a.BreachConfidence >= p.BreachConfidence && a.Severity >= p.BreachSeverity:
		v.Flagged = true
		v.Reason = fmt.Sprintf("%s %q appears unmet (confidence %.2f, severity %.1f %s)",
			a.Breach, a.BreachText, a.BreachConfidence, a.Severity, severityLabel(a.Severity))
	}
	return v
}

func severityLabel(s float64) string {
	level := trajectory.SeverityLevel(int(math.Round(s)))
	if level == "" {
		return ""
	}
	return "≈ " + level
}

// policyFileFormat is the version of the policy file format.
const policyFileFormat = "overseer-policy/v1"

// ErrPolicy is wrapped by every error about a policy file.
var ErrPolicy = errors.New("policy file")

// policyFile is a policy on disk, as `overseer calibrate` writes it.
type policyFile struct {
	Format                 string          `json:"format"`
	Name                   string          `json:"name"`
	OnTrackAt              float64         `json:"on_track_at"`
	NeedsALookAt           float64         `json:"needs_a_look_at"`
	PauseAtOrBelow         float64         `json:"pause_at_or_below"`
	BreachConfidence       float64         `json:"breach_confidence"`
	BreachSeverity         float64         `json:"breach_severity"`
	MaxConsecutiveFailures int             `json:"max_consecutive_failures"`
	Promise                *Promise        `json:"promise,omitempty"`
	PauseBudget            *PauseBudget    `json:"pause_budget,omitempty"`
	Calibration            json.RawMessage `json:"calibration,omitempty"`
	// AgentLoop is Policy.Loop, a policy file of its own.
	AgentLoop json.RawMessage `json:"agent_loop,omitempty"`
	// SpendBudget is Policy.Spend.
	SpendBudget *SpendBudget `json:"spend_budget,omitempty"`
	// NoPause is Policy.NoPause: written so that the policy in force of a
	// model nobody certified, kept with a relative budget, still pauses
	// nothing when read back.
	NoPause bool `json:"no_pause,omitempty"`
}

// MarshalPolicy writes p as a policy file; calibration, if not nil, is
// kept in it as information (how the thresholds were chosen).
func MarshalPolicy(p Policy, calibration any) ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	f := policyFile{Format: policyFileFormat, Name: p.Name, OnTrackAt: p.OnTrackAt, NeedsALookAt: p.NeedsALookAt,
		PauseAtOrBelow: p.PauseAtOrBelow, BreachConfidence: p.BreachConfidence, BreachSeverity: p.BreachSeverity,
		MaxConsecutiveFailures: p.MaxConsecutiveFailures, NoPause: p.NoPause}
	if p.Promise.Certified() {
		promise := p.Promise
		f.Promise = &promise
	}
	if p.PauseBudget.Set() {
		budget := p.PauseBudget
		f.PauseBudget = &budget
	}
	if calibration != nil {
		raw, err := json.Marshal(calibration)
		if err != nil {
			return nil, err
		}
		f.Calibration = raw
	}
	f.SpendBudget = p.Spend
	if p.Loop != nil {
		raw, err := MarshalPolicy(*p.Loop, nil)
		if err != nil {
			return nil, fmt.Errorf("agent_loop: %w", err)
		}
		f.AgentLoop = raw
	}
	return json.MarshalIndent(f, "", "  ")
}

// ParsePolicy reads the content of a policy file, like [LoadPolicy].
func ParsePolicy(data []byte) (Policy, error) { return parsePolicy(data) }

// parsePolicy reads a policy file. Every threshold must be present; unknown
// fields are refused. A policy without a name is named after its
// thresholds.
func parsePolicy(data []byte) (Policy, error) {
	var present map[string]json.RawMessage
	if err := json.Unmarshal(data, &present); err != nil {
		return Policy{}, fmt.Errorf("%w: not a JSON object: %v", ErrPolicy, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f policyFile
	if err := dec.Decode(&f); err != nil {
		return Policy{}, fmt.Errorf("%w: %v", ErrPolicy, err)
	}
	if f.Format != policyFileFormat {
		return Policy{}, fmt.Errorf("%w: format %q is not %q", ErrPolicy, f.Format, policyFileFormat)
	}
	for _, k := range []string{"on_track_at", "needs_a_look_at", "pause_at_or_below", "breach_confidence", "breach_severity", "max_consecutive_failures"} {
		if _, ok := present[k]; !ok {
			return Policy{}, fmt.Errorf("%w: %s is missing", ErrPolicy, k)
		}
	}
	p := Policy{Name: f.Name, OnTrackAt: f.OnTrackAt, NeedsALookAt: f.NeedsALookAt, PauseAtOrBelow: f.PauseAtOrBelow,
		BreachConfidence: f.BreachConfidence, BreachSeverity: f.BreachSeverity, MaxConsecutiveFailures: f.MaxConsecutiveFailures, NoPause: f.NoPause}
	if f.Promise != nil {
		p.Promise = *f.Promise
	}
	if f.PauseBudget != nil {
		p.PauseBudget = *f.PauseBudget
	}
	if f.SpendBudget != nil {
		if err := f.SpendBudget.Validate(); err != nil {
			return Policy{}, fmt.Errorf("%w: spend_budget: %v", ErrPolicy, err)
		}
		p.Spend = f.SpendBudget
	}
	if err := p.Validate(); err != nil {
		return Policy{}, fmt.Errorf("%w: %v", ErrPolicy, err)
	}
	if len(f.AgentLoop) > 0 {
		loop, err := parsePolicy(f.AgentLoop)
		if err != nil {
			return Policy{}, fmt.Errorf("agent_loop: %w", err)
		}
		if loop.Loop != nil {
			return Policy{}, fmt.Errorf("%w: agent_loop: a loop policy has no agent_loop of its own", ErrPolicy)
		}
		p.Loop = &loop
	}
	if p.Name == "" {
		p.Name = fmt.Sprintf("pause at or below %.3f", p.PauseAtOrBelow)
	}
	return p, nil
}

// LoadPolicy reads a policy file written by `overseer calibrate` (or by
// hand). Give the policy to [Options].Policy.
func LoadPolicy(path string) (Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Policy{}, fmt.Errorf("%w: %v", ErrPolicy, err)
	}
	p, err := parsePolicy(data)
	if err != nil {
		return Policy{}, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

//go:embed default_policy.json
var defaultPolicyJSON []byte

// DefaultLearnedPolicy is the policy calibrated for [DefaultLearnedModel]
// with `overseer calibrate --max-false-pause 0.05` on its cross-validated
// training runs. It is the policy of the zero [Options].
func DefaultLearnedPolicy() Policy {
	p, err := parsePolicy(defaultPolicyJSON)
	if err != nil {
		panic("overseer: the embedded default policy is invalid: " + err.Error())
	}
	loop, err := parsePolicy(defaultLoopPolicyJSON)
	if err != nil {
		panic("overseer: the embedded default loop policy is invalid: " + err.Error())
	}
	p.Loop = &loop
	return p
}

// defaultLoopPolicyJSON is the policy calibrated for [DefaultLoopModel]
// (`overseer train --policy-out` on the shared runs replayed as agent
// loops): DefaultLearnedPolicy's Loop.
//
//go:embed default_loop_policy.json
var defaultLoopPolicyJSON []byte
