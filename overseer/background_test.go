package overseer_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// In observe mode a judge that is not pure answers in the background: no
// phase waits for it. The judge here answers nothing until the last phase
// has started, so a phase that waited for an assessment would never start.
func TestBackgroundJudgeHoldsNoPhase(t *testing.T) {
	var started chan struct{}
	var asked atomic.Int32
	judge := boundaryJudge(func(ctx context.Context, k int) (*jev.Response, error) {
		asked.Add(1)
		select {
		case <-started:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return onTrack().Response, nil
	})
	h, st := newEndWaitHarness(t, judge)
	started = st
	seen := watchPlacement(h)
	h.env.ExecuteWorkflow(phasesWorkflow, endWaitPhases)
	require.NoError(t, h.env.GetWorkflowError())

	assert.Zero(t, seen.activities, "no regular activity")
	// The run's end records the answers that came meanwhile in one side
	// effect and waits in a local activity for each other one (how many
	// depends on the judge's timing); every boundary is recorded below.
	assert.EqualValues(t, len(endWaitPhases), asked.Load(), "the judge is asked once per boundary: the local activities adopt the calls in flight")
	s := h.status(t)
	recs := bySeq(s)
	require.Len(t, recs, len(endWaitPhases), "every boundary recorded")
	for k, a := range recs {
		assert.Empty(t, a.Error, "boundary %d", k)
		assert.NotNil(t, a.Verdict, "boundary %d", k)
		assert.Positive(t, a.Latency, "boundary %d: the judge's latency", k)
	}
	assert.Equal(t, len(endWaitPhases), s.Counters.Assessments)
	assert.Equal(t, overseer.BandOnTrack, s.Band)
}

// A judge that hangs for its whole budget holds no phase back: every phase
// has started before the first call gives up. The run's end waits at most
// about one budget: it adopts the calls in flight, which hang together,
// instead of asking the judge again.
func TestBackgroundHangingJudgeHoldsNoPhase(t *testing.T) {
	// Long enough for every phase to start before the first call gives up, on a
	// loaded machine too: the judge hangs in real time.
	const budget = 2 * time.Second
	started := make(chan struct{})
	var (
		mu                            sync.Mutex
		asked, inFlight, mostInFlight int
		gaveUp, lastPhaseBeforeGiveUp bool
	)
	judge := jev.JudgeFunc(func(ctx context.Context, _ jev.Request) (*jev.Response, error) {
		mu.Lock()
		asked++
		inFlight++
		mostInFlight = max(mostInFlight, inFlight)
		mu.Unlock()
		<-ctx.Done()
		mu.Lock()
		defer mu.Unlock()
		inFlight--
		if !gaveUp {
			gaveUp = true
			select {
			case <-started:
				lastPhaseBeforeGiveUp = true
			default:
			}
		}
		return nil, ctx.Err()
	})
	h := newAutoHarness(t, overseer.Options{Mode: overseer.ModeObserve, Judge: judge, AssessTimeout: budget, AssessTotalTimeout: budget})
	h.env.RegisterActivityWithOptions(h.rec.phase, activity.RegisterOptions{Name: "review"})
	h.env.SetTestTimeout(30 * time.Second)
	h.rec.startedPhase, h.rec.started = "review", started
	h.env.ExecuteWorkflow(phasesWorkflow, endWaitPhases)
	require.NoError(t, h.env.GetWorkflowError())
	mu.Lock()
	defer mu.Unlock()
	require.True(t, gaveUp)
	assert.True(t, lastPhaseBeforeGiveUp, "the last phase started before the judge gave up on the first boundary")
	assert.Equal(t, len(endWaitPhases), asked, "the judge is asked once per boundary: the run's end adopts the calls in flight")
	assert.Equal(t, len(endWaitPhases), mostInFlight, "every boundary's call hung at once")
	s := h.status(t)
	assert.Equal(t, len(endWaitPhases), s.Counters.Assessments)
	assert.Equal(t, len(endWaitPhases), s.Counters.Failures, "each boundary recorded as failed (timed out), or not assessed")
}
