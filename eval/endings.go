package eval

import (
	"fmt"

	"github.com/corohq/temporal-overseer/overseer"
)

// Endings is how finished runs read in a list of jobs, by outcome: the
// band each run ends with, as the plugin gives it (overseer.RunBand for an
// agent loop, the last verdict for phases), and, beside it, the band of its
// last verdict alone.
type Endings struct {
	Shape overseer.Shape `json:"shape"`
	// Succeeded and Failed count the runs by the band they end with;
	// LastSucceeded and LastFailed by their last verdict's.
	Succeeded     map[overseer.Band]int `json:"succeeded"`
	Failed        map[overseer.Band]int `json:"failed"`
	LastSucceeded map[overseer.Band]int `json:"last_succeeded"`
	LastFailed    map[overseer.Band]int `json:"last_failed"`
}

// EndingsOf measures Endings on scored runs of shape, under policy.
func EndingsOf(scored []ScoredRun, policy overseer.Policy, shape overseer.Shape) Endings {
	e := Endings{Shape: shape, Succeeded: map[overseer.Band]int{}, Failed: map[overseer.Band]int{},
		LastSucceeded: map[overseer.Band]int{}, LastFailed: map[overseer.Band]int{}}
	p := policy.ForShape(shape)
	for _, r := range scored {
		var bands []overseer.Band
		for _, pt := range r.Points {
			if pt.Err == "" {
				bands = append(bands, p.Evaluate(pt.Answers).Band)
			}
		}
		if len(bands) == 0 {
			continue
		}
		last := bands[len(bands)-1]
		end := last
		if shape == overseer.ShapeAgentLoop {
			end = overseer.RunBand(bands)
		}
		ends, lasts := e.Succeeded, e.LastSucceeded
		if r.Failed() {
			ends, lasts = e.Failed, e.LastFailed
		}
		ends[end]++
		lasts[last]++
	}
	return e
}

// Sentences says e in words, a line each.
func (e Endings) Sentences() []string {
	say := func(m map[overseer.Band]int) string {
		return fmt.Sprintf("%d On track, %d Needs a look, %d Off track", m[overseer.BandOnTrack], m[overseer.BandNeedsALook], m[overseer.BandOffTrack])
	}
	out := []string{
		fmt.Sprintf("succeeded runs end %s; failed runs end %s", say(e.Succeeded), say(e.Failed)),
	}
	if e.Shape == overseer.ShapeAgentLoop {
		out = append(out, fmt.Sprintf("(an agent loop ends on the worst band of its last %d assessments; by its last call alone: succeeded %s, failed %s)",
			overseer.RunBandWindow, say(e.LastSucceeded), say(e.LastFailed)))
	}
	return out
}
