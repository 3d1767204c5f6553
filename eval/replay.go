package eval

import (
	"github.com/corohq/temporal-overseer/overseer"
)

// Replayed is the trajectory the plugin would send to its judge at one
// boundary of a recorded run.
type Replayed struct {
	// Steps is the number of agent steps done at this boundary.
	Steps      int
	Trajectory overseer.Trajectory
}

// Replay rebuilds, boundary by boundary, the bounded trajectory of a
// recorded run with the plugin's own rules ([overseer.TrajectoryRecorder]).
func Replay(rec Record) []Replayed {
	var r overseer.TrajectoryRecorder
	r.SetObjective(rec.Task.Objective)
	bs := rec.Boundaries()
	out := make([]Replayed, 0, len(bs))
	for _, b := range bs {
		r.RecordPhase(b.Run, b.Report)
		out = append(out, Replayed{Steps: b.Steps, Trajectory: r.Trajectory()})
	}
	return out
}
