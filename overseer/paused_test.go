package overseer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/corohq/temporal-overseer/overseer"
)

// TestAPausedJobReadsAsOneToLookAt: the band a paused job is shown in is
// never On track, and its headline leads with why it is paused.
func TestAPausedJobReadsAsOneToLookAt(t *testing.T) {
	for _, tc := range []struct {
		last, shown overseer.Band
	}{
		{overseer.BandOnTrack, overseer.BandNeedsALook},
		{overseer.BandNeedsALook, overseer.BandNeedsALook},
		{overseer.BandOffTrack, overseer.BandOffTrack},
		{overseer.BandUnknown, overseer.BandNeedsALook},
	} {
		assert.Equal(t, tc.shown, overseer.PausedBand(tc.last), "%s", tc.last)
	}
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	s := overseer.Status{Paused: true, Assessed: true, Band: overseer.BandOnTrack, OnObjective: 0.75, Gates: []overseer.Gate{
		{ID: "code-2", Phase: "code", PausedAt: at.Add(time.Hour), Evidence: []string{"later"}},
		{ID: "code-1", Phase: "code", PausedAt: at, Reason: "breach of obligation[2] (confidence 0.81), severity 2.0",
			Evidence: []string{"test ran 4 times in the last 8 phase runs"}},
	}}
	assert.Equal(t, "test ran 4 times in the last 8 phase runs", s.PauseWhy(), "the oldest open gate's first line of evidence")
	assert.Equal(t, "Paused: test ran 4 times in the last 8 phase runs (Needs a look; the last assessment said 75%)", s.Headline())
	s.Paused = false
	assert.Equal(t, "On track, 75%", s.Headline())

	ev := overseer.GateEvent{Kind: overseer.GateOpened, WorkflowID: "job-1", Gate: "code-1", Phase: "code",
		Reason: "breach", Evidence: []string{"test ran 4 times in the last 8 phase runs"}}
	assert.Equal(t, "Job job-1 is paused after phase code: test ran 4 times in the last 8 phase runs; it waits for a person at gate code-1.", ev.Sentence())
}
