package overseer_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

func TestBandBoundaries(t *testing.T) {
	p := overseer.DefaultPolicy()
	for _, tc := range []struct {
		p    float64
		want overseer.Band
	}{
		{1.0, overseer.BandOnTrack},
		{0.70, overseer.BandOnTrack},
		{0.6999, overseer.BandNeedsALook},
		{0.69, overseer.BandNeedsALook},
		{0.40, overseer.BandNeedsALook},
		{0.3999, overseer.BandOffTrack},
		{0.39, overseer.BandOffTrack},
		{0, overseer.BandOffTrack},
	} {
		t.Run(fmt.Sprint(tc.p), func(t *testing.T) {
			assert.Equal(t, tc.want, p.Evaluate(overseer.Answers{OnObjective: tc.p, Breach: overseer.BreachNone, BreachConfidence: 0.9}).Band)
		})
	}
}

func TestPauseRuleBoundaries(t *testing.T) {
	p := overseer.DefaultPolicy()
	none, obl := overseer.BreachNone, "obligation[1]"
	for _, tc := range []struct {
		name       string
		a          overseer.Answers
		flagged    bool
		band       overseer.Band
		reasonPart string
	}{
		{"P at 0.25 pauses", overseer.Answers{OnObjective: 0.25, Breach: none}, true, overseer.BandOffTrack, "at or below the pause threshold 0.250"},
		{"P just above 0.25 does not", overseer.Answers{OnObjective: 0.2501, Breach: none}, false, overseer.BandOffTrack, ""},
		{"breach at 0.5 confidence and 1.5 severity pauses", overseer.Answers{OnObjective: 0.85, Breach: obl, BreachConfidence: 0.5, Severity: 1.5}, true, overseer.BandOnTrack, "obligation[1]"},
		{"breach confidence just below 0.5", overseer.Answers{OnObjective: 0.85, Breach: obl, BreachConfidence: 0.4999, Severity: 3}, false, overseer.BandOnTrack, ""},
		{"breach severity just below 1.5", overseer.Answers{OnObjective: 0.85, Breach: obl, BreachConfidence: 1, Severity: 1.4999}, false, overseer.BandOnTrack, ""},
		{"no breach, high severity", overseer.Answers{OnObjective: 0.5, Breach: none, BreachConfidence: 1, Severity: 3}, false, overseer.BandNeedsALook, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := p.Evaluate(tc.a)
			assert.Equal(t, tc.flagged, v.Flagged)
			assert.Equal(t, tc.band, v.Band)
			assert.Contains(t, v.Reason, tc.reasonPart)
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	bad := overseer.DefaultPolicy()
	bad.NeedsALookAt = 0.8
	assert.ErrorContains(t, bad.Validate(), "above OnTrackAt")
	bad = overseer.DefaultPolicy()
	bad.BreachSeverity = 4
	assert.ErrorContains(t, bad.Validate(), "BreachSeverity")
	bad = overseer.DefaultPolicy()
	bad.MaxConsecutiveFailures = 0
	assert.ErrorContains(t, bad.Validate(), "negative value to never pause")
	assert.NoError(t, overseer.DefaultPolicy().Validate())

	_, err := overseer.NewPlugin(overseer.Options{Mode: "enforce"})
	assert.ErrorContains(t, err, `unknown mode "enforce"`)
	_, err = overseer.NewPlugin(overseer.Options{Placement: overseer.PlacementLocalActivity, AssessTaskQueue: "judges"})
	assert.ErrorContains(t, err, `Placement is "local_activity", which has no task queue`)
	_, err = overseer.NewPlugin(overseer.Options{Placement: overseer.PlacementWorkflow, Judge: jev.NewScripted()})
	assert.ErrorContains(t, err, "needs a judge that can run in workflow code")
	_, err = overseer.NewPlugin(overseer.Options{Placement: "sidecar"})
	assert.ErrorContains(t, err, `unknown Placement "sidecar"`)
	_, err = overseer.NewPlugin(overseer.Options{AssessTaskQueue: "judges"})
	assert.NoError(t, err, "a task queue of its own makes the automatic placement a regular activity")
}
