package overseer_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
)

// turn is one turn of an agent loop: the model call, then the tool call
// it asked for.
type turn struct {
	tool     string
	failed   bool
	sameCall bool
}

func agentLoop(turns ...turn) overseer.Trajectory {
	var r overseer.TrajectoryRecorder
	for _, t := range turns {
		r.RecordPhase(overseer.PhaseRun{Phase: "agent.model"}, &overseer.PhaseReport{Turns: 1, InputTokens: 3000, OutputTokens: 200})
		r.RecordPhase(overseer.PhaseRun{Phase: t.tool, Failed: t.failed, SameCall: t.sameCall}, nil)
	}
	return r.Trajectory()
}

// judgeLoop asks the shipped learned judge and evaluates its answers with
// the policy that goes with it.
func judgeLoop(t *testing.T, traj overseer.Trajectory) (overseer.Answers, overseer.Verdict) {
	t.Helper()
	j := &overseer.LearnedJudge{}
	a := ask(t, j, overseer.DefaultObligations(), traj)
	return a, overseer.PolicyFor(j).Evaluate(a)
}

// Turn count alone does not move P: a healthy agent loop reads the same
// after 1, 3, 20 and 80 turns (the model fit on phases of work read every
// turn as a repeat: 0.81, 0.75, 0.74, then Needs a look).
func TestAgentLoopTurnCountAloneDoesNotMoveP(t *testing.T) {
	var first float64
	for _, n := range []int{1, 3, 20, 80} {
		turns := make([]turn, n)
		for i := range turns {
			turns[i] = turn{tool: []string{"agent.read_file", "agent.edit_file", "agent.run_tests"}[i%3]}
		}
		a, v := judgeLoop(t, agentLoop(turns...))
		require.Equal(t, overseer.BandOnTrack, v.Band, "%d turns", n)
		assert.False(t, v.Flagged, "%d turns", n)
		assert.Equal(t, overseer.BreachNone, a.Breach, "%d turns", n)
		assert.Contains(t, a.Basis, "agent-loop rules", "%d turns", n)
		if n == 1 {
			first = a.OnObjective
		}
		assert.Equal(t, first, a.OnObjective, "%d turns", n)
	}
}

// A tool failing on every call leaves On track at its second failure and
// pauses at its third; one failure is shown and changes nothing.
func TestAgentLoopToolFailingEveryCall(t *testing.T) {
	var turns []turn
	for i, want := range []struct {
		band    overseer.Band
		flagged bool
	}{{overseer.BandOnTrack, false}, {overseer.BandNeedsALook, false}, {overseer.BandOffTrack, true}, {overseer.BandOffTrack, true}} {
		turns = append(turns, turn{tool: "agent.run_tests", failed: true})
		a, v := judgeLoop(t, agentLoop(turns...))
		assert.Equal(t, want.band, v.Band, "after %d failed calls (P %.2f)", i+1, a.OnObjective)
		assert.Equal(t, want.flagged, v.Flagged, "after %d failed calls", i+1)
		assert.Equal(t, "obligation[0]", a.Breach, "after %d failed calls", i+1)
	}
}

// The same call again and again pauses at the third; the same call with
// other tools' work between (test, edit, test) is progress.
func TestAgentLoopRepeatedCalls(t *testing.T) {
	looping := []turn{{tool: "agent.read_file"}, {tool: "agent.read_file", sameCall: true}, {tool: "agent.read_file", sameCall: true}}
	a, v := judgeLoop(t, agentLoop(looping...))
	assert.True(t, v.Flagged, "P %.2f", a.OnObjective)
	assert.Equal(t, "obligation[2]", a.Breach)

	var tdd []turn
	for range 4 {
		tdd = append(tdd, turn{tool: "agent.run_tests", failed: true, sameCall: len(tdd) > 0}, turn{tool: "agent.edit_file"})
	}
	tdd = append(tdd, turn{tool: "agent.run_tests", sameCall: true})
	for i := range tdd {
		a, v := judgeLoop(t, agentLoop(tdd[:i+1]...))
		assert.False(t, v.Flagged, "after %d turns of test and edit (P %.2f, %s)", i+1, a.OnObjective, a.Breach)
	}
}

func TestShapeOf(t *testing.T) {
	var phases overseer.TrajectoryRecorder
	for _, p := range []string{"spec", "code", "test", "code", "test", "review"} {
		phases.RecordPhase(overseer.PhaseRun{Phase: p}, nil)
	}
	assert.Equal(t, overseer.ShapePhases, overseer.ShapeOf(phases.Trajectory()))
	assert.Equal(t, overseer.ShapeAgentLoop, overseer.ShapeOf(agentLoop(turn{tool: "t"}, turn{tool: "t"})))
	assert.Equal(t, overseer.ShapeAgentLoop, overseer.ShapeOf(agentLoop(turn{tool: "t"})), "from the first model call")
	declared := agentLoop(turn{tool: "t"}, turn{tool: "t"})
	declared.Shape = overseer.ShapePhases
	assert.Equal(t, overseer.ShapePhases, overseer.ShapeOf(declared), "what the workflow declared wins")
	for _, name := range []string{"CallLLM", "invoke_model", "chat", "openai.ChatCompletion"} {
		traj := agentLoop(turn{tool: "t"})
		traj.RunsByPhase = []overseer.Count{{Name: name, Count: 2}}
		assert.Equal(t, overseer.ShapeAgentLoop, overseer.ShapeOf(traj), name)
	}
}
