package overseer

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// RunBandWindow is how many of a finished agent loop's last assessments
// its band reads (RunBand).
const RunBandWindow = 20

// RunBand is the band a finished agent loop reads, from the bands of its
// assessments in order (since a reviewer last resumed it at a gate, when
// one did): the worst of the last RunBandWindow. An agent's
// last call is often its submission, which works whether or not the run
// did: read alone, it would clear everything the run went through, and a
// list of finished jobs would say that all went well. BandUnknown when no
// assessment had a band.
func RunBand(bands []Band) Band {
	worst := BandUnknown
	for _, b := range bands[max(0, len(bands)-RunBandWindow):] {
		if b != BandUnknown && (worst == BandUnknown || bandRank(b) < bandRank(worst)) {
			worst = b
		}
	}
	return worst
}

// bandRank orders the bands from the worst.
func bandRank(b Band) int {
	switch b {
	case BandOffTrack:
		return 0
	case BandNeedsALook:
		return 1
	}
	return 2
}

// settleRunBand sets a finished agent loop's band to its RunBand, and
// says so where a view reads it (runs pinned with RunBand; earlier runs
// end on their last verdict, as they ran).
func (r *run) settleRunBand(ctx workflow.Context) {
	if !r.cfg.RunBand || ShapeOf(r.traj) != ShapeAgentLoop {
		return
	}
	// A reviewer who resumed a gate looked at what came before and
	// redirected the run: the band reads what came after.
	var since time.Time
	for _, g := range r.st.Gates {
		if g.ResumedAt != nil && g.Action != ActionAbort && g.ResumedAt.After(since) {
			since = *g.ResumedAt
		}
	}
	bands := make([]Band, 0, len(r.st.Assessments))
	for _, a := range r.st.Assessments {
		if a.Verdict != nil && !a.At.Before(since) {
			bands = append(bands, a.Verdict.Band)
		}
	}
	b := RunBand(bands)
	if b == BandUnknown || b == r.st.Band {
		return
	}
	r.st.Band, r.st.RunBand = b, true
	r.publish(ctx)
}
