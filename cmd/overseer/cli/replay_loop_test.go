package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
)

// Agents' runs stream as the loop a team writes on Temporal: each turn a
// model-call activity, then the tool activity it asked for, each call a
// boundary the plugin judges with the loop's policy; the jobs close as the
// runs did, their histories replay, and the learn rounds and the curve
// read them as loops (the loop model is the one in force).
func TestReplayStreamsAgentRunsAsTheLoopATeamWrites(t *testing.T) {
	srv := devServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	policy := pauseEverywhere()
	policy.Loop = nil // the loop's policy is this one: it pauses at every call
	res, err := runReplay(ctx, srv.Client(), replayOptions{Records: sweagentRuns(t), Loops: true, Jobs: 2, Concurrency: 2, Mode: overseer.ModeManage,
		Type: "ReplayTestLoop", Namespace: srv.Namespace(), Delay: time.Millisecond, Policy: policy})
	require.NoError(t, err)
	require.NoError(t, res.check())
	assert.Equal(t, 2, res.Replayed, "every history replays clean")
	for _, j := range res.Jobs {
		require.NotNil(t, j.loop, j.id)
		calls, _ := j.loop.Calls()
		if j.rec.Outcome.Failed() {
			assert.True(t, j.aborted, "%s: aborted at its first gate", j.id)
			assert.Equal(t, 1, j.gates, j.id)
		} else {
			assert.Equal(t, len(calls), j.gates, "%s: continued at a gate after each model and tool call", j.id)
			assert.Len(t, j.scored.Points, len(calls), "%s: one verdict per call", j.id)
			assert.Equal(t, len(j.rec.Steps), j.scored.Points[len(calls)-1].Steps, "%s: the last call is at the run's last turn", j.id)
		}
		for _, p := range j.scored.Points {
			assert.True(t, strings.HasPrefix(p.Model, overseer.DefaultLoopModel().Version), "%s: judged by the loop model, not %q", j.id, p.Model)
		}
	}

	typ := "ReplayTestLoopLearn" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	res, err = runReplay(ctx, srv.Client(), replayOptions{Records: sweagentRuns(t), Loops: true, Jobs: 4, Concurrency: 2, Mode: overseer.ModeObserve,
		LearnEvery: 2, Type: typ, Namespace: srv.Namespace()})
	require.NoError(t, err)
	require.NoError(t, res.check())
	require.Len(t, res.Rounds, 1)
	for _, w := range res.Windows {
		assert.Equal(t, overseer.DefaultLoopModel().Version, w.Model, "window %d: the loop model is in force for loop jobs", w.Window)
	}
	for _, j := range res.Jobs {
		assert.NotEmpty(t, j.scored.Points, j.id)
		assert.Equal(t, j.rec.Outcome.Failed(), j.outcome == eval.OutcomeFailed, "%s closed as its run did", j.id)
	}
}
