package eval_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
)

// An exported job (unit call) replays call by call as the interceptor
// recorded it: the same call answered the same way is looping, a failed
// call keeps its error, a result's report counts, and the judge's shape
// holds from the first call.
func TestAnExportedLoopReplaysAsTheInterceptorRecordedIt(t *testing.T) {
	steps := []eval.Step{{Phase: "llm", Call: "c0", Output: "o0", Turns: 1}}
	for range 4 {
		steps = append(steps, eval.Step{Phase: "read_file", Call: "main.go", Output: "package main"})
	}
	steps = append(steps,
		eval.Step{Phase: "run_tests", Call: "go test", Failed: true, Error: "exit status 1"},
		eval.Step{Phase: "run_tests", Call: "go test", Failed: true, Error: "exit status 1"},
		eval.Step{Phase: "bash", Call: "ls", Output: "x", FailedTools: []string{"bash"}})
	rec := eval.Record{Format: eval.RecordFormat, ID: "job-1", Outcome: eval.OutcomeFailed, Unit: eval.UnitCall, Steps: steps}
	require.NoError(t, rec.Validate())
	assert.Equal(t, overseer.ShapeAgentLoop, eval.ShapeOfRecord(rec))

	replayed := eval.Replay(rec)
	require.Len(t, replayed, len(steps))
	loop := replayed[4].Trajectory.Loop
	assert.Equal(t, 3, loop.Looping, "the second to fourth identical read_file calls with the same result")
	loop = replayed[6].Trajectory.Loop
	assert.Equal(t, 2, loop.SameErrorStreak)
	assert.Equal(t, "exit status 1", loop.LastError)
	last := replayed[7].Trajectory
	assert.Equal(t, 3, last.Loop.ToolFailures, "a failure reported on a result is a failure")
	assert.Equal(t, 1, last.Turns, "only the model call reported a turn")

	// Declared by the workflow: the names alone would say phases.
	rec.Shape = overseer.ShapeAgentLoop
	for i := range rec.Steps {
		rec.Steps[i].Phase = "act"
	}
	assert.Equal(t, overseer.ShapeAgentLoop, eval.ShapeOfRecord(rec))
	assert.Equal(t, overseer.ShapeAgentLoop, overseer.ShapeOf(eval.Replay(rec)[0].Trajectory))
	rec.Shape = ""
	assert.Equal(t, overseer.ShapePhases, eval.ShapeOfRecord(rec))
}
