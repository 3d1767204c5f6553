package conformance

import (
	"context"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// Mode is one way a pattern's worker runs: without the plugin, or with it
// in one of its modes.
type Mode struct {
	Name string
	// Plugin: the worker has the plugin, with Options.
	Plugin  bool
	Options overseer.Options
}

// Modes are the modes every pattern is held to: without the plugin, off,
// observe with the default judge, and manage with a judge that never
// pauses.
func Modes() []Mode {
	return []Mode{
		{Name: "without"},
		{Name: "off", Plugin: true, Options: overseer.Options{Mode: overseer.ModeOff}},
		{Name: "observe", Plugin: true, Options: overseer.Options{Mode: overseer.ModeObserve}},
		{Name: "manage", Plugin: true, Options: overseer.Options{Mode: overseer.ModeManage, Judge: NeverPauses{}}},
		// The judge in a local activity, which the workflow's own
		// cancellation of a phase's context must not cancel.
		{Name: "observe, judge in a local activity", Plugin: true, Options: overseer.Options{Mode: overseer.ModeObserve,
			Placement: overseer.PlacementLocalActivity}},
	}
}

// FlagsFirstPhase is a judge that finds a job's first phase off track and
// every later one on track: manage mode with it opens one gate, after the
// first phase, whatever the workflow does next.
type FlagsFirstPhase struct{}

var _ overseer.PureJudge = FlagsFirstPhase{}

// Pure marks the judge as safe to run in workflow code.
func (FlagsFirstPhase) Pure() {}

// Decide answers off track for the first phase of a job, as NeverPauses
// does for the others.
func (FlagsFirstPhase) Decide(ctx context.Context, req jev.Request) (*jev.Response, error) {
	var st overseer.State
	if err := jev.DecodeState(ctx, "flags-first-phase", req, &st); err != nil {
		return nil, err
	}
	resp, err := NeverPauses{}.Decide(ctx, req)
	if err != nil || st.Trajectory.PhaseRuns != 1 {
		return resp, err
	}
	resp.ModelVersion = "flags-first-phase"
	a := resp.Answers[overseer.QuestionOffTrack]
	a.Probability = jev.Prob(0.05)
	resp.Answers[overseer.QuestionOffTrack] = a
	return resp, nil
}

// NeverPauses is a judge that finds every phase on track: manage mode
// with it opens no gate, so what the suite sees is the plugin's own
// effect, not a verdict's. It is pure, so it answers in the workflow
// task as the shipped judges do.
type NeverPauses struct{}

var _ overseer.PureJudge = NeverPauses{}

// Pure marks the judge as safe to run in workflow code.
func (NeverPauses) Pure() {}

// Decide answers on track, unblocked, no obligation unmet.
func (NeverPauses) Decide(_ context.Context, req jev.Request) (*jev.Response, error) {
	resp := &jev.Response{ModelVersion: "never-pauses", Basis: "conformance", Answers: map[string]jev.Answer{}}
	for name, q := range req.Questions {
		switch q.Type {
		case jev.Noul:
			p := 0.02 // blocked
			if name == overseer.QuestionOffTrack {
				p = 0.97
			}
			resp.Answers[name] = jev.Answer{Type: jev.Noul, Probability: jev.Prob(p)}
		case jev.Choice:
			probs := map[string]float64{}
			for _, o := range q.Options {
				probs[o.Name] = 0.01
			}
			probs[q.Options[0].Name] = 1 - 0.01*float64(len(q.Options)-1)
			resp.Answers[name] = jev.Answer{Type: jev.Choice, Choice: q.Options[0].Name, Confidence: jev.Prob(0.95), Probabilities: probs}
		case jev.Score:
			resp.Answers[name] = jev.Answer{Type: jev.Score, Score: jev.Prob(0), Confidence: jev.Prob(0.95)}
		}
	}
	return resp, nil
}
