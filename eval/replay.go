package eval

import (
	"fmt"
	"hash/fnv"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/workflows"
)

// Replayed is the trajectory the plugin would send to its judge at one
// boundary of a recorded run.
type Replayed struct {
	// Steps is the number of agent steps done at this boundary.
	Steps      int
	Trajectory overseer.Trajectory
}

// Replay rebuilds, boundary by boundary, the bounded trajectory the plugin
// would record for a recorded run, with the plugin's own code
// ([overseer.TrajectoryRecorder]). It is the one path every command takes
// from a recorded run to its trajectories (eval, train, calibrate,
// recalibrate, replay, learn rounds):
//
//   - an agent's run (UnitStep) is replayed as the loop a team writes on
//     Temporal ([workflows.RecordedLoop]): each step a model-call activity,
//     then the tool activity it asked for, each call a boundary, recorded
//     through [overseer.TrajectoryRecorder.RecordCall] as the interceptor
//     records a live call;
//   - a job of phases (UnitPhase, e.g. exported from Temporal) is replayed
//     phase run by phase run, as the plugin saw it.
func Replay(rec Record) []Replayed {
	if rec.unit() == UnitStep {
		return ReplayLoop(rec, workflows.ToolFailuresAsErrors)
	}
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

// ShapeOfRecords is the shape the records replay as: ShapeAgentLoop when
// every one is an agent's run (UnitStep), ShapePhases otherwise.
func ShapeOfRecords(records []Record) overseer.Shape {
	for _, r := range records {
		if r.unit() != UnitStep {
			return overseer.ShapePhases
		}
	}
	return overseer.ShapeAgentLoop
}

// ReplayLoop replays an agent's run (UnitStep) as the loop
// [workflows.RecordedLoop] runs: the activities its model and tool calls
// would be ([LoopInput]), each recorded as the interceptor records a live
// call. toolFailures is how the loop's tool reports a failed command
// (workflows.ToolFailuresAsErrors or ToolFailuresAsResults).
func ReplayLoop(rec Record, toolFailures string) []Replayed {
	in := LoopInput(rec)
	in.ToolFailures = toolFailures
	var r overseer.TrajectoryRecorder
	r.SetObjective(in.Objective)
	calls, turnOf := in.Calls()
	out := make([]Replayed, 0, len(calls))
	for i, c := range calls {
		r.RecordCall(c)
		out = append(out, Replayed{Steps: turnOf[i] + 1, Trajectory: r.Trajectory()})
	}
	return out
}

// LoopInput is an agent's run as the input of [workflows.RecordedLoop]:
// one turn per step. A step without its command (Call) is known by its
// Text, and one without its output (Output) never answered as another
// did; a failed step without its exit code exited 1.
func LoopInput(rec Record) workflows.RecordedLoopInput {
	in := workflows.RecordedLoopInput{Objective: rec.Task.Objective}
	for i, s := range rec.Steps {
		t := workflows.RecordedTurn{Command: s.Call, Output: s.Output, ExitCode: s.ExitCode, TimedOut: s.TimedOut,
			InputTokens: s.InputTokens, OutputTokens: s.OutputTokens, CostUSD: s.CostUSD, DurationMS: s.DurationMS}
		if s.failureCategory() == "format" {
			t.FormatError, t.Command = true, ""
		}
		if t.Command == "" && !t.FormatError {
			t.Command = "text " + Digest(s.Text)
			if s.Text == "" {
				t.Command = fmt.Sprintf("step %d", i+1)
			}
		}
		if t.Output == "" {
			// What the tool printed is unknown: never the same as before.
			t.Output = fmt.Sprintf("step %d", i+1)
		}
		if s.Failed && !t.FormatError && t.ExitCode == 0 && !t.TimedOut {
			t.ExitCode = 1
		}
		if !s.Failed {
			t.ExitCode, t.TimedOut = 0, false
		}
		in.Turns = append(in.Turns, t)
	}
	return in
}

// Digest stands for a text in a record (Step.Call, Step.Output): the
// overseer only ever compares such texts.
func Digest(text string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(text))
	return fmt.Sprintf("%016x", h.Sum64())
}
