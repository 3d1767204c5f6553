package overseer_test

import (
	"cmp"
	"errors"
	"fmt"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/judge"
)

// turn is one turn of an agent loop: the model call, then the tool call
// it asked for, with its input (call) and its result; a call or result
// left empty is new at every turn.
type turn struct {
	tool         string
	failed       bool
	call, result string
}

// agentLoop records turns through the plugin's own recording of a call
// (TrajectoryRecorder.RecordCall).
func agentLoop(turns ...turn) overseer.Trajectory {
	var r overseer.TrajectoryRecorder
	dc := converter.GetDefaultDataConverter()
	payload := func(v string) *commonpb.Payload {
		p, err := dc.ToPayload(v)
		if err != nil {
			panic(err)
		}
		return p
	}
	for i, t := range turns {
		r.RecordCall(overseer.ActivityCall{Phase: "agent.model", Args: []any{i}, Result: payload(fmt.Sprint("answer ", i)),
			Report: &overseer.PhaseReport{Turns: 1, InputTokens: 3000, OutputTokens: 200}})
		call := overseer.ActivityCall{Phase: t.tool, Args: []any{cmp.Or(t.call, fmt.Sprint("call ", i))}}
		if t.failed {
			call.Err = errors.New("exit status 1")
		} else {
			call.Result = payload(cmp.Or(t.result, fmt.Sprint("result ", i)))
		}
		r.RecordCall(call)
	}
	return r.Trajectory()
}

// judgeLoop asks the shipped learned judge and evaluates its answers with
// the policy that goes with it.
func judgeLoop(t *testing.T, traj overseer.Trajectory) (overseer.Answers, overseer.Verdict) {
	t.Helper()
	j := &overseer.LearnedJudge{}
	a := ask(t, j, overseer.DefaultObligations(), traj)
	return a, overseer.PolicyFor(j).ForShape(overseer.ShapeAgentLoop).Evaluate(a)
}

// At stage 0 (the shipped loop model, which carries no workflow type's
// succeeded runs) the turn count alone does not move P: a healthy agent
// loop reads the same after 1, 3, 20 and 80 turns, and the basis says what
// the model waits for.
func TestAgentLoopTurnCountAloneDoesNotMovePAtStage0(t *testing.T) {
	for _, n := range []int{1, 3, 20, 80} {
		turns := make([]turn, n)
		for i := range turns {
			turns[i] = turn{tool: []string{"agent.read_file", "agent.edit_file", "agent.run_tests"}[i%3]}
		}
		a, v := judgeLoop(t, agentLoop(turns...))
		require.Equal(t, overseer.BandOnTrack, v.Band, "%d turns", n)
		assert.False(t, v.Flagged, "%d turns", n)
		assert.Equal(t, overseer.BreachNone, a.Breach, "%d turns", n)
		assert.Equal(t, 0.9, a.OnObjective, "%d turns", n)
		assert.Contains(t, a.Basis, "which it has none of yet", "%d turns", n)
	}
}

// withSucceededRuns is the shipped loop model given the reference of n
// succeeded runs of the given turns each (what a type's first
// recalibration stores).
func withSucceededRuns(t testing.TB, n, turns int) *overseer.LearnedModel {
	t.Helper()
	runs := make([][]judge.TurnTokens, n)
	for i := range runs {
		runs[i] = make([]judge.TurnTokens, turns)
		for k := range runs[i] {
			runs[i][k] = judge.TurnTokens{Input: int64(3000 * (k + 1)), Output: int64(200 * (k + 1))}
		}
	}
	ref, err := judge.NewLoopReference(runs)
	require.NoError(t, err)
	m := overseer.DefaultLoopModel()
	m.LoopReference = ref
	require.NoError(t, m.Validate())
	return m
}

// With the type's own succeeded runs the loop model reads a run's turns
// against theirs: the same 60 turns are late for a type whose succeeded
// runs take 20 and early for one whose take 200; and however long a job
// runs past them, P stops falling (the relative features are bounded).
func TestAgentLoopTurnsAreReadAgainstTheTypesSucceededRuns(t *testing.T) {
	healthy := func(n int) overseer.Trajectory {
		turns := make([]turn, n)
		for i := range turns {
			turns[i] = turn{tool: []string{"agent.read_file", "agent.edit_file", "agent.run_tests"}[i%3]}
		}
		return agentLoop(turns...)
	}
	p := func(m *overseer.LearnedModel, n int) overseer.Answers {
		return ask(t, &overseer.LearnedJudge{LoopModel: m}, overseer.DefaultObligations(), healthy(n))
	}
	short, long := withSucceededRuns(t, 20, 20), withSucceededRuns(t, 20, 200)
	atShort, atLong := p(short, 60), p(long, 60)
	assert.Contains(t, atShort.Basis, "loop ", "the loop model answers")
	assert.NotContains(t, atShort.Basis, "which it has none of yet")
	assert.Less(t, atShort.OnObjective, atLong.OnObjective, "60 turns against succeeded runs of 20 and of 200")
	assert.Less(t, p(short, 60).OnObjective, p(short, 5).OnObjective, "late against early, the same type")
	assert.Equal(t, p(short, 2000).OnObjective, p(short, 20000).OnObjective, "past e² times the succeeded runs' turns P stops falling")
}

// A tool failing on every call leaves On track at its second failure and,
// under the loop policy calibrated on real runs, pauses at its fourth; one
// failure is shown and changes nothing.
func TestAgentLoopToolFailingEveryCall(t *testing.T) {
	var turns []turn
	for i, want := range []struct {
		band    overseer.Band
		flagged bool
	}{{overseer.BandOnTrack, false}, {overseer.BandNeedsALook, false}, {overseer.BandNeedsALook, false}, {overseer.BandOffTrack, true}} {
		turns = append(turns, turn{tool: "agent.run_tests", failed: true, call: "go test ./..."})
		a, v := judgeLoop(t, agentLoop(turns...))
		assert.Equal(t, want.band, v.Band, "after %d failed calls (P %.2f)", i+1, a.OnObjective)
		assert.Equal(t, want.flagged, v.Flagged, "after %d failed calls", i+1)
		assert.Equal(t, "obligation[0]", a.Breach, "after %d failed calls", i+1)
	}
}

// The same call answered the same way again and again is looping: it
// leaves On track at the second repeat and pauses at the fourth. The same
// call with a new answer each time (a status check, tests run after each
// edit) is not: a healthy loop that calls one tool the same way every turn
// never pauses.
func TestAgentLoopRepeatedCalls(t *testing.T) {
	var looping []turn
	for i := range 4 {
		looping = append(looping, turn{tool: "agent.read_file", call: "main.go", result: "package main"})
		a, v := judgeLoop(t, agentLoop(looping...))
		assert.Equal(t, i == 3, v.Flagged, "after %d identical calls (P %.2f)", i+1, a.OnObjective)
		if i >= 1 {
			assert.Equal(t, "obligation[2]", a.Breach)
			assert.NotEqual(t, overseer.BandOnTrack, v.Band, "after %d identical calls", i+1)
		}
	}

	var status []turn
	for range 40 {
		status = append(status, turn{tool: "agent.job_status", call: "job-7"}) // the same call, a new result each time
		a, v := judgeLoop(t, agentLoop(status...))
		require.False(t, v.Flagged, "after %d status checks (P %.2f, %s)", len(status), a.OnObjective, a.Breach)
		require.Equal(t, overseer.BandOnTrack, v.Band, "after %d status checks (P %.2f)", len(status), a.OnObjective)
	}

	var tdd []turn
	for range 4 {
		tdd = append(tdd, turn{tool: "agent.run_tests", failed: true, call: "go test"}, turn{tool: "agent.edit_file"})
	}
	tdd = append(tdd, turn{tool: "agent.run_tests", call: "go test"})
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

// A failure a tool returns as its result and reports
// (overseer_report.failed_tool_categories) counts as a failure: the same
// verdicts as a tool whose activity fails.
func TestAgentLoopFailuresReportedAsResultsAreFailures(t *testing.T) {
	var r overseer.TrajectoryRecorder
	for i := range 4 {
		r.RecordCall(overseer.ActivityCall{Phase: "agent.model", Args: []any{i}, Report: &overseer.PhaseReport{Turns: 1}})
		r.RecordCall(overseer.ActivityCall{Phase: "agent.bash", Args: []any{"make test"},
			Report: &overseer.PhaseReport{FailedToolCategories: []string{"bash"}}})
	}
	reported := r.Trajectory()
	var failing []turn
	for range 4 {
		failing = append(failing, turn{tool: "agent.bash", failed: true, call: "make test"})
	}
	a, v := judgeLoop(t, reported)
	b, w := judgeLoop(t, agentLoop(failing...))
	assert.Equal(t, 4, reported.Loop.ToolFailures)
	assert.Equal(t, 4, reported.Loop.ReportedFailures)
	assert.Equal(t, b.OnObjective, a.OnObjective)
	assert.Equal(t, w.Band, v.Band)
	assert.True(t, v.Flagged, "four failures in a row, reported as results")
}

// A loop's digest (what each assessment records and the job page shows
// as the trajectory) speaks of calls, failures and looping, never of phase
// runs and repeats, which every single-tool loop has.
func TestAgentLoopDigestSpeaksOfCalls(t *testing.T) {
	failing := func(n int) []turn {
		var ts []turn
		for range n {
			ts = append(ts, turn{tool: "agent.run_tests", failed: true, call: "go test ./..."})
		}
		return ts
	}
	for _, tc := range []struct {
		name  string
		turns []turn
		want  string
	}{
		{"healthy", []turn{{tool: "agent.read_file"}, {tool: "agent.edit_file"}, {tool: "agent.run_tests"}},
			"agent loop, last call agent.run_tests; 3 model calls, 3 tool calls, 0 failed; tokens 9000 in, 600 out"},
		{"failing", append([]turn{{tool: "agent.read_file"}}, failing(4)...),
			"agent loop, last call agent.run_tests; 5 model calls, 5 tool calls, 4 failed, the last 4 in a row; nothing new for 3 tool calls; tokens 15000 in, 1000 out"},
		{"looping", []turn{{tool: "agent.read_file", call: "main.go", result: "package main"}, {tool: "agent.read_file", call: "main.go", result: "package main"},
			{tool: "agent.read_file", call: "main.go", result: "package main"}},
			"agent loop, last call agent.read_file; 3 model calls, 3 tool calls, 0 failed; 2 looping (the same call answered the same way); nothing new for 2 tool calls; tokens 9000 in, 600 out"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := agentLoop(tc.turns...).Digest()
			assert.Equal(t, tc.want, d)
			assert.NotContains(t, d, "phase")
			assert.NotContains(t, d, "repeats")
		})
	}
}
