package overseer

import (
	"fmt"
	"math"
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

// Policy holds every threshold of the verdict. The seed says these numbers
// must be tuned, so none of them is a constant. The zero value means
// DefaultPolicy.
type Policy struct {
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
}

// DefaultPolicy returns the seed's thresholds.
func DefaultPolicy() Policy {
	return Policy{
		OnTrackAt:              0.70,
		NeedsALookAt:           0.40,
		PauseAtOrBelow:         0.25,
		BreachConfidence:       0.5,
		BreachSeverity:         1.5,
		MaxConsecutiveFailures: 3,
	}
}

// withDefaults returns p, or DefaultPolicy when p is the zero value.
func (p Policy) withDefaults() Policy {
	if p == (Policy{}) {
		return DefaultPolicy()
	}
	return p
}

// Validate reports a policy whose thresholds contradict each other.
func (p Policy) Validate() error {
	for name, v := range map[string]float64{
		"OnTrackAt": p.OnTrackAt, "NeedsALookAt": p.NeedsALookAt, "PauseAtOrBelow": p.PauseAtOrBelow,
		"BreachConfidence": p.BreachConfidence,
	} {
		if math.IsNaN(v) || v < 0 || v > 1 {
			return fmt.Errorf("overseer: policy %s = %v, want a probability in [0,1]", name, v)
		}
	}
	if p.NeedsALookAt > p.OnTrackAt {
		return fmt.Errorf("overseer: policy NeedsALookAt (%v) above OnTrackAt (%v)", p.NeedsALookAt, p.OnTrackAt)
	}
	if math.IsNaN(p.BreachSeverity) || p.BreachSeverity < 0 || p.BreachSeverity > 3 {
		return fmt.Errorf("overseer: policy BreachSeverity = %v, want a score in [0,3]", p.BreachSeverity)
	}
	if p.MaxConsecutiveFailures == 0 {
		return fmt.Errorf("overseer: policy MaxConsecutiveFailures = 0; use a negative value to never pause on failures")
	}
	return nil
}

// BandFor maps P(on objective) to a band.
func (p Policy) BandFor(onObjective float64) Band {
	switch {
	case onObjective >= p.OnTrackAt:
		return BandOnTrack
	case onObjective >= p.NeedsALookAt:
		return BandNeedsALook
	default:
		return BandOffTrack
	}
}

// Verdict is what the policy makes of one set of answers.
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
func (p Policy) Evaluate(a Answers) Verdict {
	v := Verdict{Band: p.BandFor(a.OnObjective), OnObjective: a.OnObjective}
	switch {
	case a.OnObjective <= p.PauseAtOrBelow:
		v.Flagged = true
		v.Reason = fmt.Sprintf("P(on objective) %.2f is at or below %.2f", a.OnObjective, p.PauseAtOrBelow)
	case a.Breach != BreachNone && a.BreachConfidence >= p.BreachConfidence && a.Severity >= p.BreachSeverity:
		v.Flagged = true
		v.Reason = fmt.Sprintf("%s %q appears unmet (confidence %.2f, severity %.1f %s)",
			a.Breach, a.BreachText, a.BreachConfidence, a.Severity, severityLabel(a.Severity))
	}
	return v
}

func severityLabel(s float64) string {
	i := int(math.Round(s))
	if i < 0 || i >= len(SeverityLevels) {
		return ""
	}
	return "≈ " + SeverityLevels[i]
}
