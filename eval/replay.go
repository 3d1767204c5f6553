package eval

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
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
//   - a job exported from Temporal (UnitCall) is replayed call by call,
//     each activity recorded through [overseer.TrajectoryRecorder.RecordCall]
//     as the interceptor recorded it live: a job of phases as phases, an
//     agent loop as a loop;
//   - a job of phases (UnitPhase) is replayed phase run by phase run.
//
// Its trajectories carry no content window: see [ReplayContent].
func Replay(rec Record) []Replayed { return ReplayContent(rec, trajectory.ContentWindow{}) }

// ReplayContent is [Replay] with a content window, as a model judge reads
// it live (overseer.Options.ContentWindows): each call's excerpt, built
// from the recorded texts (Step.Command, Step.Printed, Step.Message) as the
// replayed loop's activities carry them, redacted with
// trajectory.RedactSecrets. A job of phases (UnitPhase) has no calls and
// no window; an exported job (UnitCall) shows the digests it was recorded
// with. The zero window is off: then it is Replay.
func ReplayContent(rec Record, w trajectory.ContentWindow) []Replayed {
	switch rec.unit() {
	case UnitStep:
		return ReplayLoop(rec, workflows.ToolFailuresAsErrors, w)
	case UnitCall:
		return replayCalls(rec, w)
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

// replayCalls replays an exported job (UnitCall) call by call.
func replayCalls(rec Record, w trajectory.ContentWindow) []Replayed {
	var r overseer.TrajectoryRecorder
	r.SetContentWindow(w, nil)
	r.SetObjective(rec.Task.Objective)
	if rec.Shape != "" {
		r.SetShape(rec.Shape)
	}
	out := make([]Replayed, 0, len(rec.Steps))
	steps := 0
	for _, s := range rec.Steps {
		steps += max(1, s.Turns)
		r.RecordCall(activityCallOf(s))
		out = append(out, Replayed{Steps: steps, Trajectory: r.Trajectory()})
	}
	return out
}

// activityCallOf is an exported call as the interceptor observed it. The
// digests of its input and result stand for them: the plugin only ever
// compares them.
func activityCallOf(s Step) overseer.ActivityCall {
	call := overseer.ActivityCall{Phase: s.Phase, Duration: time.Duration(s.DurationMS) * time.Millisecond,
		Report: &overseer.PhaseReport{Turns: s.Turns, CostUSD: s.CostUSD, InputTokens: s.InputTokens, OutputTokens: s.OutputTokens,
			Rework: s.Rework, FailedToolCategories: s.FailedTools, OutputMissing: s.OutputMissing}}
	if s.Failed {
		call.Err = recordedError(s.Error)
	}
	if s.Call != "" {
		call.Args = []any{s.Call}
	}
	if s.Output != "" {
		call.Result = &commonpb.Payload{Data: []byte(s.Output)}
	}
	return call
}

// recordedError is a failed call's recorded error message ("" when the
// export could not read one).
type recordedError string

func (e recordedError) Error() string { return string(e) }

// ShapeOfRecords is the shape the records replay as: ShapeAgentLoop when
// every one replays as an agent loop ([ShapeOfRecord]), ShapePhases
// otherwise.
func ShapeOfRecords(records []Record) overseer.Shape {
	for _, r := range records {
		if ShapeOfRecord(r) != overseer.ShapeAgentLoop {
			return overseer.ShapePhases
		}
	}
	return overseer.ShapeAgentLoop
}

// ShapeOfRecord is the shape one record replays as ([Replay]): an agent's
// run (UnitStep) as an agent loop; any other as the plugin judged it: its
// Shape, else what [overseer.ShapeOf] makes of its phases' names.
func ShapeOfRecord(r Record) overseer.Shape {
	switch {
	case r.unit() == UnitStep:
		return overseer.ShapeAgentLoop
	case r.Shape != "":
		return r.Shape
	}
	var t overseer.TrajectoryRecorder
	for _, s := range r.Steps {
		t.RecordPhase(overseer.PhaseRun{Phase: s.Phase}, nil)
	}
	return overseer.ShapeOf(t.Trajectory())
}

// ReplayLoop replays an agent's run (UnitStep) as the loop
// [workflows.RecordedLoop] runs: the activities its model and tool calls
// would be ([LoopInput]), each recorded as the interceptor records a live
// call. toolFailures is how the loop's tool reports a failed command
// (workflows.ToolFailuresAsErrors or ToolFailuresAsResults); w is the
// content window (see [ReplayContent]; the zero window is off).
func ReplayLoop(rec Record, toolFailures string, w trajectory.ContentWindow) []Replayed {
	in := LoopInput(rec)
	in.ToolFailures = toolFailures
	var r overseer.TrajectoryRecorder
	r.SetContentWindow(w, nil)
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
//
// The step's texts ride with the turn, each cut to MaxStepTextBytes: the
// tool receives its Command (a step known by its Text receives that Text,
// its Command then joins what the model said: the tool's input must tell
// the same call as before), prints its Printed, and the model says its
// Message.
func LoopInput(rec Record) workflows.RecordedLoopInput {
	in := workflows.RecordedLoopInput{Objective: rec.Task.Objective, Outcome: string(rec.Outcome)}
	for i, s := range rec.Steps {
		t := workflows.RecordedTurn{Command: s.Call, Output: s.Output, ExitCode: s.ExitCode, TimedOut: s.TimedOut,
			InputTokens: s.InputTokens, OutputTokens: s.OutputTokens, CostUSD: s.CostUSD, DurationMS: s.DurationMS,
			Text: Excerpt(s.Command, MaxStepTextBytes), Printed: Excerpt(s.Printed, MaxStepTextBytes), Message: Excerpt(s.Message, MaxStepTextBytes)}
		if s.failureCategory() == "format" {
			t.FormatError, t.Command, t.Text = true, "", ""
		}
		if t.Command == "" && !t.FormatError {
			// Known by its Text: the tool's input carries that, the
			// model's answer the whole command.
			t.Command, t.Text = "text "+Digest(s.Text), Excerpt(s.Text, MaxStepTextBytes)
			if s.Text == "" {
				t.Command, t.Text = fmt.Sprintf("step %d", i+1), ""
			}
			if cmd := Excerpt(s.Command, MaxStepTextBytes); cmd != "" && cmd != t.Text {
				t.Message = Excerpt(joinTexts(s.Message, cmd), MaxStepTextBytes)
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

// joinTexts joins the texts that are not empty, a blank line apart.
func joinTexts(texts ...string) string {
	var parts []string
	for _, s := range texts {
		if s = strings.TrimSpace(s); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n\n")
}

// Digest stands for a text in a record (Step.Call, Step.Output): the
// overseer only ever compares such texts.
func Digest(text string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(text))
	return fmt.Sprintf("%016x", h.Sum64())
}
