package overseer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// placementSeen counts where overseer.assess ran in one test run.
type placementSeen struct{ activities, localActivities int }

func watchPlacement(h *harness) *placementSeen {
	seen := &placementSeen{}
	h.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		if info.ActivityType.Name == overseer.AssessActivityName {
			seen.activities++
		}
	})
	h.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		seen.localActivities++ // the phases are regular activities: every local one is the judge
	})
	return seen
}

// pureJudge is a PureJudge that answers like the heuristic judge, or panics.
type pureJudge struct {
	overseer.HeuristicJudge
	panics bool
}

func (j pureJudge) Decide(ctx context.Context, req jev.Request) (*jev.Response, error) {
	if j.panics {
		panic("model file is corrupt")
	}
	return j.HeuristicJudge.Decide(ctx, req)
}

func TestAutomaticPlacement(t *testing.T) {
	for _, tc := range []struct {
		name           string
		mode           overseer.Mode
		judge          jev.Judge // nil: the harness's scripted judge, which is not pure
		queue          string
		activities     int
		localActivites int
		placement      overseer.Placement
		// background: at most 3 local activities, at the run's end.
		background bool
	}{
		{name: "pure judge runs in workflow code in observe mode", mode: overseer.ModeObserve, judge: pureJudge{}},
		{name: "pure judge runs in workflow code in manage mode", mode: overseer.ModeManage, judge: overseer.HeuristicJudge{}},
		// In the background: no activity of any kind for the boundaries
		// whose answer had arrived by the next one or by the run's end; a
		// local activity at the run's end for the others.
		{name: "remote judge in observe mode answers in the background", mode: overseer.ModeObserve, background: true},
		{name: "a regular activity when asked for", mode: overseer.ModeObserve, placement: overseer.PlacementActivity, activities: 3},
		{name: "the background means a local activity in manage mode", mode: overseer.ModeManage, placement: overseer.PlacementBackground, localActivites: 3},
		{name: "remote judge in manage mode is a local activity", mode: overseer.ModeManage, localActivites: 3},
		{name: "a task queue of its own makes it a regular activity", mode: overseer.ModeManage, judge: pureJudge{}, queue: "judges", activities: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newAutoHarness(t, overseer.Options{Mode: tc.mode, Judge: tc.judge, AssessTaskQueue: tc.queue, Placement: tc.placement}, onTrack(), onTrack(), onTrack())
			seen := watchPlacement(h)
			h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
			require.NoError(t, h.env.GetWorkflowError())
			assert.Equal(t, tc.activities, seen.activities, "overseer.assess as a regular activity")
			if tc.background {
				assert.LessOrEqual(t, seen.localActivities, 3, "at the run's end, a local activity for each answer still to come")
			} else {
				assert.Equal(t, tc.localActivites, seen.localActivities, "overseer.assess as a local activity")
			}
			s := h.status(t)
			require.Len(t, s.Assessments, 3, "every boundary is assessed, wherever the judge runs")
			for _, a := range s.Assessments {
				assert.Empty(t, a.Error)
				assert.NotNil(t, a.Verdict)
				assert.Positive(t, a.Latency, "the judge's latency is measured wherever it runs")
			}
		})
	}
}

func TestPanickingJudgeInWorkflowIsAFailedAssessment(t *testing.T) {
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage, Judge: pureJudge{panics: true}})
	h.env.ExecuteWorkflow(phasesWorkflow, []string{"spec"})
	require.NoError(t, h.env.GetWorkflowError(), "a judge's panic never fails the workflow task")
	s := h.status(t)
	require.Len(t, s.Assessments, 1)
	assert.Contains(t, s.Assessments[0].Error, "judge panicked: model file is corrupt")
	assert.Nil(t, s.Assessments[0].Verdict)
	assert.Equal(t, 1, s.Counters.ConsecutiveFailures, "counts towards the manual-review pause like any judge failure")
}

func TestResumeAfterJudgeFailuresCountsFailuresAfresh(t *testing.T) {
	opts := overseer.Options{Mode: overseer.ModeManage}
	opts.Policy = overseer.DefaultPolicy()
	opts.Policy.MaxConsecutiveFailures = 2
	down := jev.Step{Err: fmt.Errorf("%w: HTTP 401: wrong key", jev.ErrRejected)} // not retried: one step per boundary
	h := newHarness(t, opts, down, down, down, down, down, down, down, down, down, down, down, down)
	phases := []string{"spec", "code", "test", "spec"}
	for _, at := range []time.Duration{time.Hour, 3 * time.Hour} {
		h.env.RegisterDelayedCallback(func() { h.update(overseer.ResumeRequest{By: "erin"}) }, at)
	}
	h.env.ExecuteWorkflow(phasesWorkflow, phases)
	require.NoError(t, h.env.GetWorkflowError())
	s := h.status(t)
	assert.Equal(t, 2, s.Counters.Pauses, "paused after boundaries 2 and 4, not after 3")
	require.Len(t, s.Gates, 2)
	assert.Equal(t, "code-1", s.Gates[0].ID)
	assert.Equal(t, "spec-2", s.Gates[1].ID)
}
