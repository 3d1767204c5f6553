package judge

import (
	"context"
	"math"

	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// heuristicModelVersion is the model version the heuristic judge reports.
const heuristicModelVersion = "overseer-heuristic-v1"

// HeuristicJudge answers the four standard questions with fixed rules over
// the trajectory's signals. It is not a model and does not understand the
// work: it is deterministic, free and offline, for demos, tests and as a
// fallback. The rules:
//
//   - P(on objective) starts at 0.92 and drops for successful re-runs of the
//     current phase within the recent window of phase runs (0.08 each, at
//     most 0.40), lane ping-pong within that window (0.12 per return to an
//     earlier lane, at most 0.45), failure streaks (0.23 per failed run in a
//     row, at most 0.70), recent rework (0.04 per unit, at most 0.20) and a
//     missing output (0.10).
//   - breach picks the default obligation with the strongest signal when it
//     reaches 0.5: missing output → obligation[0], lane ping-pong →
//     obligation[1], re-runs of the same phase → obligation[2], failed tool
//     calls (0.2 each) in a phase that still succeeded → obligation[3]. Custom obligation
//     lists only get obligation[i] for i < 4 when they have that many.
//   - severity is 3 × the strongest problem signal.
//   - blocked rises with the failure streak.
type HeuristicJudge struct{}

var _ PureJudge = HeuristicJudge{}

// Pure implements [PureJudge]: the judge may run in workflow code.
func (HeuristicJudge) Pure() {}

// Decide implements jev.Judge.
func (HeuristicJudge) Decide(ctx context.Context, req jev.Request) (*jev.Response, error) {
	var st trajectory.State
	if err := jev.DecodeState(ctx, "heuristic judge", req, &st); err != nil {
		return nil, err
	}
	if trajectory.ShapeOf(st.Trajectory) == trajectory.ShapeAgentLoop {
		// Its rules read phases of work; an agent loop gets the rules
		// that fit it, as from the learned judge.
		return agentLoopResponse(req, heuristicModelVersion, st), nil
	}
	s := signalsOf(st.Trajectory)
	onObjective := clamp(0.92-s.penalty(), 0.02, 0.98)

	breach, breachSignal := trajectory.BreachNone, 0.0
	for i, sig := range []float64{s.missingOutput, s.pingPong, s.repeats, s.hiddenFailures} {
		if i < len(st.PhaseObligations) && sig >= 0.5 && sig > breachSignal {
			breach, breachSignal = trajectory.ObligationKey(i), sig
		}
	}
	confidence := 1 - math.Max(math.Max(s.missingOutput, s.pingPong), math.Max(s.repeats, s.hiddenFailures))
	if breach != trajectory.BreachNone {
		confidence = breachSignal
	}
	problem := math.Max(breachSignal, 1-onObjective-0.08)
	severity := clamp(3*problem, 0, 3)
	blocked := blockedAfter(st.Trajectory.FailureStreak)

	resp := answersResponse(req, heuristicModelVersion, breach, confidence, onObjective, severity, blocked)
	resp.Basis = heuristicBasis
	return resp, nil
}

// heuristicBasis is the basis every heuristic assessment records.
const heuristicBasis = "heuristic rules: reruns, lane ping-pong, rework, hidden failures, missing outputs"

// blockedAfter is P(blocked) after a streak of failed phase runs: 0.05,
// plus 0.25 per failed run, at most 0.97.
func blockedAfter(failureStreak int) float64 {
	return clamp(0.05+0.25*float64(failureStreak), 0, 0.97)
}

// answersResponse builds the four answers of a rules- or model-based judge:
// the chosen breach with its confidence (the rest spread evenly over the
// other options), P(on objective), a severity score with a triangular
// distribution over the levels, and P(blocked), rounded to 0.001.
func answersResponse(req jev.Request, model, breach string, confidence, onObjective, severity, blocked float64) *jev.Response {
	breachQ := req.Questions[trajectory.QuestionBreach]
	probs := make(map[string]float64, len(breachQ.Options))
	for _, o := range breachQ.Options {
		probs[o.Name] = (1 - confidence) / float64(max(1, len(breachQ.Options)-1))
	}
	probs[breach] = confidence
	levels := map[string]float64{}
	for i := 0; trajectory.SeverityLevel(i) != ""; i++ {
		levels[trajectory.SeverityLevel(i)] = clamp(1-math.Abs(float64(i)-severity), 0, 1)
	}
	return &jev.Response{
		ModelVersion: model,
		Answers: map[string]jev.Answer{
			trajectory.QuestionBreach:   {Type: jev.Choice, Choice: breach, Confidence: jev.Prob(round(confidence)), Probabilities: probs},
			trajectory.QuestionOffTrack: {Type: jev.Noul, Probability: jev.Prob(round(onObjective))},
			trajectory.QuestionSeverity: {Type: jev.Score, Score: jev.Prob(round(severity)), Confidence: jev.Prob(0.6), Probabilities: levels},
			trajectory.QuestionBlocked:  {Type: jev.Noul, Probability: jev.Prob(round(blocked))},
		},
	}
}

type signals struct {
	reruns, pingPongs, rework, failureStreak         int
	missingOutput, pingPong, repeats, hiddenFailures float64
}

// PingPongs is how many times the job went back to a lane it had left,
// within the recent window, as the objective rule counts them.
func PingPongs(t trajectory.Trajectory) int { return signalsOf(t).pingPongs }

func signalsOf(t trajectory.Trajectory) signals {
	var s signals
	for _, p := range t.RecentPhases {
		if p.Phase == t.Phase && !p.Failed {
			s.reruns++
		}
	}
	s.reruns = max(0, s.reruns-1)
	s.failureStreak = t.FailureStreak
	seen := map[string]bool{}
	for _, sw := range t.RecentLaneSwitches {
		seen[sw.From] = true
		if seen[sw.To] && sw.AtRun > t.PhaseRuns-len(t.RecentPhases) {
			s.pingPongs++
		}
	}
	for _, p := range t.RecentPhases {
		s.rework += p.Rework
	}
	if n := len(t.RecentPhases); n > 0 {
		last := t.RecentPhases[n-1]
		if last.NoOutput {
			s.missingOutput = 0.8
		}
	}
	s.pingPong = clamp(0.25*float64(s.pingPongs), 0, 0.95)
	s.repeats = clamp(0.2*float64(s.reruns), 0, 0.95)
	if n := len(t.RecentPhases); n > 0 && !t.RecentPhases[n-1].Failed {
		s.hiddenFailures = clamp(0.2*float64(t.RecentPhases[n-1].FailedTools), 0, 0.9)
	}
	return s
}

func (s signals) penalty() float64 {
	p := math.Min(0.08*float64(s.reruns), 0.40) +
		math.Min(0.12*float64(s.pingPongs), 0.45) +
		math.Min(0.23*float64(s.failureStreak), 0.70) +
		math.Min(0.04*float64(s.rework), 0.20)
	if s.missingOutput > 0 {
		p += 0.10
	}
	return p
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }

func round(v float64) float64 { return math.Round(v*1000) / 1000 }
