package overseer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// endWaitPhases are four boundaries: enough for the judge to fail three
// assessments in a row while the fourth is still in flight.
var endWaitPhases = []string{"spec", "code", "test", "review"}

// boundaryJudge answers each boundary with reply(k), k being the boundary
// (the phase runs its trajectory counts), whatever order the assessments
// reach it in.
func boundaryJudge(reply func(ctx context.Context, k int) (*jev.Response, error)) jev.Judge {
	return jev.JudgeFunc(func(ctx context.Context, req jev.Request) (*jev.Response, error) {
		var st overseer.State
		if err := json.Unmarshal(req.State, &st); err != nil {
			return nil, err
		}
		return reply(ctx, st.Trajectory.PhaseRuns)
	})
}

// newEndWaitHarness runs endWaitPhases in observe mode with judge in its
// automatic placement (a regular activity): assessments overlap the next
// phases, as they do in production. started is closed when the last phase
// starts.
func newEndWaitHarness(t *testing.T, judge jev.Judge) (h *harness, started chan struct{}) {
	t.Helper()
	h = newAutoHarness(t, overseer.Options{Mode: overseer.ModeObserve, Judge: judge, AssessTimeout: time.Hour})
	h.env.RegisterActivityWithOptions(h.rec.phase, activity.RegisterOptions{Name: "review"})
	h.env.SetTestTimeout(10 * time.Second) // a run that waited for the hanging judge fails here
	started = make(chan struct{})
	h.rec.startedPhase, h.rec.started = "review", started
	return h, started
}

func bySeq(s overseer.Status) map[int]overseer.Assessment {
	m := map[int]overseer.Assessment{}
	for _, a := range s.Assessments {
		m[a.Seq] = a
	}
	return m
}

func TestObserveRunDoesNotWaitForAFailingJudge(t *testing.T) {
	// lastAsked is closed when the judge is asked about the last boundary:
	// every phase has ended by then.
	lastAsked := make(chan struct{})
	var answeredLast atomic.Bool
	var started chan struct{}
	judge := boundaryJudge(func(ctx context.Context, k int) (*jev.Response, error) {
		if k < len(endWaitPhases) {
			// The judge answers nothing until the last phase has started
			// (had any phase waited for it, the run would never get
			// there) and it has been asked about the last boundary.
			for _, c := range []chan struct{}{started, lastAsked} {
				select {
				case <-c:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return nil, fmt.Errorf("%w: HTTP 401: wrong key", jev.ErrRejected) // not retried
		}
		// The last boundary's judge hangs for its whole budget (an hour),
		// beyond the end of the test.
		close(lastAsked)
		<-ctx.Done()
		answeredLast.Store(true)
		return nil, ctx.Err()
	})
	h, st := newEndWaitHarness(t, judge)
	started = st
	begin := h.env.Now()
	h.env.ExecuteWorkflow(phasesWorkflow, endWaitPhases)
	require.NoError(t, h.env.GetWorkflowError(), "a failing judge never fails the job")

	assert.False(t, answeredLast.Load(), "the run ended while the last boundary's judge still hung")
	assert.Less(t, h.env.Now().Sub(begin), time.Minute, "the run did not wait for the judge's budget (test clock)")
	assert.Len(t, h.rec.Calls(), len(endWaitPhases), "no phase was held back by the judge")

	s := h.status(t)
	assert.False(t, s.Assessed)
	assert.Equal(t, len(endWaitPhases), s.Counters.Assessments, "every boundary is recorded")
	assert.Equal(t, len(endWaitPhases), s.Counters.Failures)
	recs := bySeq(s)
	require.Len(t, recs, len(endWaitPhases))
	for k := 1; k < len(endWaitPhases); k++ {
		assert.Contains(t, recs[k].Error, "401", "boundary %d: the judge's own error", k)
	}
	last := recs[len(endWaitPhases)]
	assert.Equal(t, "review", last.Phase)
	assert.Nil(t, last.Verdict, "not assessed is never a verdict")
	assert.Contains(t, last.Error, "not assessed: the run ended without waiting for the judge, whose last 3 assessments failed")
	assert.NotEmpty(t, last.Digest, "the state that would have been assessed is recorded")
}

func TestObserveRunWaitsForAHealthyJudge(t *testing.T) {
	rejected := func() (*jev.Response, error) { return nil, fmt.Errorf("%w: HTTP 401: wrong key", jev.ErrRejected) }
	for _, tc := range []struct {
		name string
		// early answers boundaries 1…3.
		early func(k int) (*jev.Response, error)
	}{
		{name: "a slow judge", early: func(int) (*jev.Response, error) { return onTrack().Response, nil }},
		{name: "a judge that failed twice, then answered", early: func(k int) (*jev.Response, error) {
			if k < 3 {
				return rejected()
			}
			return onTrack().Response, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var started chan struct{}
			judge := boundaryJudge(func(ctx context.Context, k int) (*jev.Response, error) {
				select {
				case <-started:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				if k < len(endWaitPhases) {
					return tc.early(k)
				}
				// The last boundary's answer comes well after the last phase.
				select {
				case <-time.After(200 * time.Millisecond):
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return onTrack().Response, nil
			})
			h, st := newEndWaitHarness(t, judge)
			started = st
			h.env.ExecuteWorkflow(phasesWorkflow, endWaitPhases)
			require.NoError(t, h.env.GetWorkflowError())

			s := h.status(t)
			last := bySeq(s)[len(endWaitPhases)]
			assert.Empty(t, last.Error, "the last boundary was waited for")
			require.NotNil(t, last.Verdict, "and recorded")
			assert.Equal(t, overseer.BandOnTrack, s.Band)
			assert.Equal(t, len(endWaitPhases), s.Counters.Assessments)
		})
	}
}

func TestRunRecordedBeforeTheRuleStillWaits(t *testing.T) {
	// A history without the end-wait version marker (recorded before the
	// rule) replays with the wait, even for a failing judge. The last
	// boundary's answer comes only once the run's end has read the version,
	// that is after the end decided whether to wait for it.
	var started chan struct{}
	versionRead := make(chan struct{})
	judge := boundaryJudge(func(ctx context.Context, k int) (*jev.Response, error) {
		wait := started
		if k == len(endWaitPhases) {
			wait = versionRead
		}
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if k < len(endWaitPhases) {
			return nil, fmt.Errorf("%w: HTTP 401: wrong key", jev.ErrRejected)
		}
		return onTrack().Response, nil
	})
	h, st := newEndWaitHarness(t, judge)
	started = st
	var once sync.Once
	h.env.OnGetVersion("temporal-overseer/end-wait", workflow.DefaultVersion, 1).
		Run(func(mock.Arguments) { once.Do(func() { close(versionRead) }) }).
		Return(workflow.DefaultVersion)
	h.env.ExecuteWorkflow(phasesWorkflow, endWaitPhases)
	require.NoError(t, h.env.GetWorkflowError())
	last := bySeq(h.status(t))[len(endWaitPhases)]
	assert.Empty(t, last.Error)
	assert.NotNil(t, last.Verdict, "the old behaviour: the last boundary was waited for")
}

func TestObserveRunDoesNotWaitForAHangingJudge(t *testing.T) {
	// Every call hangs: no answer, no error, until its attempt times out.
	// The run ends without waiting for the judge's budget (an hour): by
	// then its attempts on this worker have failed three times in a row.
	var asked atomic.Int32
	judge := jev.JudgeFunc(func(ctx context.Context, req jev.Request) (*jev.Response, error) {
		asked.Add(1)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	h := newAutoHarness(t, overseer.Options{Mode: overseer.ModeObserve, Judge: judge,
		AssessTimeout: 50 * time.Millisecond, AssessTotalTimeout: time.Hour})
	h.env.RegisterActivityWithOptions(h.rec.phase, activity.RegisterOptions{Name: "review"})
	h.env.SetTestTimeout(30 * time.Second) // a run that waited for the hanging judge fails here
	h.env.ExecuteWorkflow(phasesWorkflow, endWaitPhases)
	require.NoError(t, h.env.GetWorkflowError(), "a hanging judge never fails the job")
	assert.Len(t, h.rec.Calls(), len(endWaitPhases), "no phase was held back by the judge")
	assert.GreaterOrEqual(t, int(asked.Load()), len(endWaitPhases), "every boundary asked the judge")

	s := h.status(t)
	assert.Equal(t, len(endWaitPhases), s.Counters.Assessments, "every boundary is recorded")
	assert.Equal(t, len(endWaitPhases), s.Counters.Failures)
	notWaited := 0
	for _, a := range s.Assessments {
		assert.Nil(t, a.Verdict, "boundary %d: not assessed is never a verdict", a.Seq)
		assert.True(t, strings.HasPrefix(a.Error, "not assessed: the run ended without waiting for the judge") ||
			strings.Contains(a.Error, "context deadline exceeded"), "boundary %d: %s", a.Seq, a.Error)
		if strings.Contains(a.Error, "attempts on this worker failed") {
			assert.Contains(t, a.Error, "(last: overseer.assess: judge: context deadline exceeded)")
			notWaited++
		}
	}
	assert.Positive(t, notWaited, "the boundaries still in flight at the end were not waited for: %+v", s.Assessments)
}
