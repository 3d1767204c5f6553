package overseer_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
)

// telemetryRecorder is a Telemetry that keeps what it is given.
type telemetryRecorder struct {
	mu       sync.Mutex
	assessed []overseer.AssessedEvent
	gates    []overseer.GateClosedEvent
	stops    []overseer.BudgetStopEvent
	panics   bool
}

func (r *telemetryRecorder) Assessed(_ workflow.Context, ev overseer.AssessedEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.panics {
		panic("exporter down")
	}
	r.assessed = append(r.assessed, ev)
}

func (r *telemetryRecorder) GateClosed(_ workflow.Context, ev overseer.GateClosedEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gates = append(r.gates, ev)
}

func (r *telemetryRecorder) BudgetStopped(_ workflow.Context, ev overseer.BudgetStopEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stops = append(r.stops, ev)
}

func TestTelemetryReportsEachAssessmentAndTheGateAtItsClose(t *testing.T) {
	tel := &telemetryRecorder{}
	breach := answer(0.8, "obligation[2]", 0.9, 3) // flagged by the breach, not by P
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage, Telemetry: tel}, onTrack(), breach, onTrack())
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "bob", Note: "find the root cause"})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())

	st := h.status(t)
	require.Len(t, st.Assessments, 3)
	require.Len(t, tel.assessed, 3, "one event per assessment")
	for i, a := range st.Assessments {
		ev := tel.assessed[i]
		assert.Equal(t, a.Seq, ev.Seq)
		assert.Equal(t, a.Phase, ev.Phase)
		assert.Equal(t, string(a.Verdict.Band), ev.Label)
		assert.Equal(t, a.Verdict.Flagged, ev.Flagged)
		assert.Equal(t, "phasesWorkflow", ev.Job.WorkflowType)
		assert.NotEmpty(t, ev.Job.WorkflowID)
		assert.NotEmpty(t, ev.Job.RunID)
	}
	assert.Equal(t, overseer.EvaluationOnObjective, tel.assessed[0].Name)
	require.NotNil(t, tel.assessed[0].Score)
	assert.InDelta(t, 0.9, *tel.assessed[0].Score, 1e-9)
	// The flag came from the obligation: the event scores it.
	assert.Equal(t, "obligation[2]", tel.assessed[1].Name)
	require.NotNil(t, tel.assessed[1].Score)
	assert.InDelta(t, 0.9, *tel.assessed[1].Score, 1e-9)
	assert.InDelta(t, 0.8, *tel.assessed[1].OnObjective, 1e-9)
	assert.Equal(t, st.Assessments[1].Evidence, tel.assessed[1].Evidence)

	require.Len(t, tel.gates, 1, "the gate is reported once, when it closes")
	g := tel.gates[0]
	assert.Equal(t, st.Gates[0].ID, g.Gate)
	assert.Equal(t, overseer.GateKindFlag, g.Kind)
	assert.Equal(t, "bob", g.Reviewer)
	assert.Equal(t, overseer.ActionContinue, g.Action)
	assert.Equal(t, "resumed", g.Outcome)
	assert.Equal(t, "find the root cause", g.Note)
	assert.Equal(t, st.Gates[0].PausedAt, g.OpenedAt)
	assert.Equal(t, *st.Gates[0].ResumedAt, g.ClosedAt)
	assert.Equal(t, g.ClosedAt.Sub(g.OpenedAt), g.Wait)
	assert.GreaterOrEqual(t, g.Wait, time.Hour)
	assert.Empty(t, tel.stops)
}

func TestTelemetryReportsABudgetStop(t *testing.T) {
	tel := &telemetryRecorder{}
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage, Telemetry: tel, Budget: overseer.Budget{PhaseRuns: 2}},
		onTrack(), onTrack(), onTrack())
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "ann", Budget: &overseer.Budget{PhaseRuns: 5}})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())

	require.Len(t, tel.stops, 1)
	st := h.status(t)
	require.Len(t, st.Gates, 1)
	assert.Equal(t, st.Gates[0].ID, tel.stops[0].Gate)
	assert.Equal(t, st.Gates[0].Reason, tel.stops[0].Reason)
	assert.Contains(t, tel.stops[0].Reason, "phase runs")
	require.Len(t, tel.gates, 1)
	assert.Equal(t, overseer.GateKindBudget, tel.gates[0].Kind)
	assert.Equal(t, "ann", tel.gates[0].Reviewer)
}

func TestTelemetryThatPanicsNeverFailsTheJob(t *testing.T) {
	tel := &telemetryRecorder{panics: true}
	h := newHarness(t, overseer.Options{Telemetry: tel}, onTrack(), onTrack(), onTrack())
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())
	assert.Len(t, h.status(t).Assessments, 3)
}
