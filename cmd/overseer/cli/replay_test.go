package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/worker"
)

var (
	replayServerOnce sync.Once
	replayServer     *testsuite.DevServer
	replayServerErr  error
)

// devServer is one dev server for the replay tests of this package.
func devServer(t *testing.T) *testsuite.DevServer {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a Temporal dev server")
	}
	replayServerOnce.Do(func() {
		replayServer, replayServerErr = testsuite.StartDevServer(context.Background(),
			testsuite.DevServerOptions{Output: io.Discard, Logger: worker.SDKLogger(zap.NewNop())})
	})
	require.NoError(t, replayServerErr)
	return replayServer
}

func TestMain(m *testing.M) {
	code := m.Run()
	if replayServer != nil {
		replayServer.Stop()
	}
	os.Exit(code)
}

// sweagentRuns are the two SWE-agent fixtures: one succeeded, one failed.
func sweagentRuns(t *testing.T) []eval.Record {
	t.Helper()
	recs, err := eval.LoadRuns(filepath.Join("..", "..", "..", "eval", "testdata", "sweagent"), "")
	require.NoError(t, err)
	require.Len(t, recs, 2)
	require.NotEqual(t, recs[0].Outcome.Failed(), recs[1].Outcome.Failed(), "one run of each outcome")
	return recs
}

// pauseEverywhere pauses at every boundary, so that each job meets the
// reviewer at each of its phases until it is aborted.
func pauseEverywhere() overseer.Policy {
	p := overseer.DefaultLearnedPolicy()
	p.Name, p.PauseAtOrBelow, p.Promise = "test: pause at every boundary", 1, overseer.Promise{}
	return p
}

func phases(j *replayJob) int { return len(j.in.Phases) }

func TestReplayTheOracleReviewerContinuesSucceededRunsAndAbortsFailedOnes(t *testing.T) {
	srv := devServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const delay = 3 * time.Millisecond
	res, err := runReplay(ctx, srv.Client(), replayOptions{Records: sweagentRuns(t), Jobs: 4, Concurrency: 2, Mode: overseer.ModeManage,
		Type: "ReplayTestOracle", Namespace: srv.Namespace(), Delay: delay, Speed: 1e6, Policy: pauseEverywhere()})
	require.NoError(t, err)
	require.Len(t, res.Jobs, 4, "four jobs, cycling the two runs")
	require.NoError(t, res.check())
	assert.Equal(t, 4, res.Replayed, "every history replays clean")
	gates := 0
	for _, j := range res.Jobs {
		assert.Equal(t, j.rec.ID, res.Jobs[(j.n-1)%2].rec.ID)
		assert.Zero(t, j.others, j.id)
		if j.rec.Outcome.Failed() {
			assert.Equal(t, eval.OutcomeFailed, j.outcome, j.id)
			assert.True(t, j.aborted, "%s: aborted at its first gate", j.id)
			assert.Equal(t, 1, j.gates, j.id)
			assert.Contains(t, j.closeErr, "abort", j.id)
		} else {
			assert.Equal(t, eval.OutcomeSucceeded, j.outcome, j.id)
			assert.False(t, j.aborted, j.id)
			assert.Equal(t, phases(j), j.gates, "%s: continued at a gate after each phase", j.id)
		}
		gates += j.gates
	}
	require.Len(t, res.Windows, 1, "no learn rounds: one window")
	w := res.Windows[0]
	rest := w
	rest.Online = eval.Checkpoint{} // its figures are NaN, which equal nothing
	assert.Equal(t, eval.LearningWindow{Window: 1, FirstJob: 1, LastJob: 4, Jobs: 4, Succeeded: 2, Failed: 2,
		Stage: overseer.StageUncalibrated, Model: overseer.DefaultLearnedModel().Version, Guarantee: pauseEverywhere().Guarantee(),
		MidRun: w.MidRun, SucceededPaused: 2, FailedCaught: 2, Gates: gates, ReviewerTime: time.Duration(gates) * delay}, rest)
	assert.Equal(t, 4, w.MidRun.Runs, "every job was assessed by mid-run")
	assert.True(t, w.MidRun.KnowsLength, "mid-run knows each job's length")
	assert.Equal(t, "10 steps", w.Online.At)
	assert.Zero(t, w.Online.Runs, "no job runs past 10 steps")

	var b strings.Builder
	res.print(&b, replayOptions{})
	assert.Contains(t, b.String(), "Outcomes: 4 of 4 jobs ended as recorded (2 aborted at a gate, counted failed)")
}

func TestReplayAReviewerWhoIsAlwaysWrongAbortsSucceededRunsAndCannotSaveFailedOnes(t *testing.T) {
	srv := devServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := runReplay(ctx, srv.Client(), replayOptions{Records: sweagentRuns(t), Jobs: 2, Concurrency: 2, Mode: overseer.ModeManage,
		Type: "ReplayTestWrong", Namespace: srv.Namespace(), ErrorRate: 1, Speed: 1e6, Policy: pauseEverywhere()})
	require.NoError(t, err)
	require.NoError(t, res.check(), "an abort counts as failed")
	for _, j := range res.Jobs {
		assert.Equal(t, eval.OutcomeFailed, j.outcome, j.id)
		if j.rec.Outcome.Failed() {
			assert.False(t, j.aborted, j.id)
			assert.Equal(t, phases(j), j.gates, "%s: continued at every gate", j.id)
			assert.Contains(t, j.closeErr, "RecordedRunFailed", "%s: ended failed as recorded", j.id)
		} else {
			assert.True(t, j.aborted, j.id)
			assert.Equal(t, 1, j.gates, j.id)
		}
	}
}

func TestReplayRunsALearnRoundBetweenWindowsInObserveMode(t *testing.T) {
	srv := devServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	typ := "ReplayTestLearn" + time.Now().Format("150405.000000")
	typ = strings.ReplaceAll(typ, ".", "")
	res, err := runReplay(ctx, srv.Client(), replayOptions{Records: sweagentRuns(t), Jobs: 6, Concurrency: 3, Mode: overseer.ModeObserve,
		LearnEvery: 2, Type: typ, Namespace: srv.Namespace(), Speed: 1e6})
	require.NoError(t, err)
	require.NoError(t, res.check())
	require.Len(t, res.Windows, 3)
	require.Len(t, res.Rounds, 2, "a round after each window but the last")
	for i, r := range res.Rounds {
		assert.Equal(t, typ, r.Type)
		assert.Equal(t, i+1, r.Rounds)
		assert.Equal(t, 2*(i+1), r.Readiness.Runs, "round %d learned from every job closed before it, and only those", i+1)
	}
	for _, w := range res.Windows {
		assert.Equal(t, 2, w.Jobs)
		assert.Zero(t, w.Gates, "observe mode opens no gate")
	}
	for _, j := range res.Jobs {
		assert.Equal(t, j.expected(), j.outcome)
		assert.NotEmpty(t, j.scored.Points, j.id)
	}
}

func TestReplayCheckNamesTheJobsThatDidNotEndAsRecorded(t *testing.T) {
	ok := &eval.Record{ID: "a", Outcome: eval.OutcomeSucceeded}
	failed := &eval.Record{ID: "b", Outcome: eval.OutcomeFailed}
	res := &replayResult{Jobs: []*replayJob{
		{id: "j1", rec: ok, outcome: eval.OutcomeSucceeded},
		{id: "j2", rec: failed, outcome: eval.OutcomeSucceeded},
		{id: "j3", rec: ok, outcome: eval.OutcomeFailed, aborted: true},
		{id: "j4", rec: ok, outcome: eval.OutcomeFailed},
		{id: "j5", rec: ok},
		{id: "j6", rec: ok, outcome: eval.OutcomeSucceeded, others: 1},
	}}
	err := res.check()
	require.Error(t, err)
	assert.Equal(t, "the replay's outcome check failed: j2 ended succeeded, recorded failed; j4 ended failed, recorded succeeded; j5 did not close; j6 had 1 gates not opened by the simulated reviewer", err.Error())
}

func TestReplayRefusesBadFlagsInOneSentence(t *testing.T) {
	for args, want := range map[string]string{
		"":                                   "give --traces, a directory of recorded runs",
		"--traces x --mode off":              `--mode "off": use manage or observe`,
		"--traces x --reviewer-error-rate 2": "--reviewer-error-rate 2: give a share in [0,1], e.g. 0.1",
		"--traces x --concurrency 0":         "--concurrency 1 or more",
		"--traces x --speed 0":               "--speed a factor above 0",
		"--traces /nonexistent-overseer-replay-dir": "no such file or directory",
	} {
		err := (&ReplayCmd{}).Run(context.Background(), strings.Fields(args), io.Discard)
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), want, args)
	}
}

// TestReplayOfSharedOpenHandsRuns streams a few of the shared OpenHands
// sample's runs (read where they are, never copied: they state no
// licence) through the dev server with the shipped model and policy.
func TestReplayOfSharedOpenHandsRuns(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "shared", "data", "traces", "openhands-sample")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("the shared OpenHands sample is not here (%v)", err)
	}
	srv := devServer(t)
	recs, err := eval.LoadRuns(dir, "")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := runReplay(ctx, srv.Client(), replayOptions{Records: recs, Jobs: 8, Concurrency: 4, Mode: overseer.ModeManage,
		Type: "ReplayTestOpenHands", Namespace: srv.Namespace(), Speed: 1e6, StepTime: time.Microsecond})
	require.NoError(t, err)
	require.NoError(t, res.check())
	require.Len(t, res.Jobs, 8)
	assert.Equal(t, 8, res.Replayed, "every history replays clean")
	for _, j := range res.Jobs {
		assert.Equal(t, j.expected(), j.outcome, j.id)
		if !j.aborted {
			assert.Len(t, j.scored.Points, len(j.in.Phases), "%s: one verdict per recorded phase", j.id)
		}
	}
}
