package ops_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	updatepb "go.temporal.io/api/update/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
)

// historyContinuedAt is the history of a job whose plan gate a reviewer
// continued through the overseer.resume update, the update returning g.
func historyContinuedAt(t *testing.T, g overseer.Gate) []*historypb.HistoryEvent {
	t.Helper()
	dc := converter.GetDefaultDataConverter()
	t0 := g.PausedAt.Add(-2 * time.Second)
	id := int64(0)
	ev := func(typ enumspb.EventType, s int, set func(e *historypb.HistoryEvent)) *historypb.HistoryEvent {
		id++
		e := &historypb.HistoryEvent{EventId: id, EventType: typ, EventTime: timestamppb.New(t0.Add(time.Duration(s) * time.Second))}
		set(e)
		return e
	}
	phase := func(name string, s int) []*historypb.HistoryEvent {
		sched := ev(enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, s, func(e *historypb.HistoryEvent) {
			e.Attributes = &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
				ActivityType: &commonpb.ActivityType{Name: name}}}
		})
		done := ev(enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, s+1, func(e *historypb.HistoryEvent) {
			e.Attributes = &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{
				ScheduledEventId: sched.EventId}}
		})
		return []*historypb.HistoryEvent{sched, done}
	}
	result, err := dc.ToPayloads(g)
	require.NoError(t, err)
	events := []*historypb.HistoryEvent{ev(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, 0, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
			WorkflowType: &commonpb.WorkflowType{Name: "Job"}}}
	})}
	events = append(events, phase("plan", 1)...)
	accepted := ev(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, 10, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_WorkflowExecutionUpdateAcceptedEventAttributes{WorkflowExecutionUpdateAcceptedEventAttributes: &historypb.WorkflowExecutionUpdateAcceptedEventAttributes{
			AcceptedRequest: &updatepb.Request{Input: &updatepb.Input{Name: overseer.ResumeName}}}}
	})
	events = append(events, accepted, ev(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED, 10, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_WorkflowExecutionUpdateCompletedEventAttributes{WorkflowExecutionUpdateCompletedEventAttributes: &historypb.WorkflowExecutionUpdateCompletedEventAttributes{
			AcceptedEventId: accepted.EventId, Outcome: &updatepb.Outcome{Value: &updatepb.Outcome_Success{Success: result}}}}
	}))
	return append(events, phase("code", 11)...)
}

// The export carries each gate's judgement of its pause, and a job that
// succeeded after a needed pause is no false pause in the labels train and
// the learn round read; one continued and marked not needed is.
func TestExportedGateDecisionsCarryWhetherThePauseWasNeeded(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	resumed := t0.Add(8 * time.Second)
	for _, tc := range []struct {
		name   string
		needed bool
		by     overseer.NeededBy
		want   eval.GateLabels
	}{
		{"resumed with a note", true, overseer.NeededByNote, eval.GateLabels{Continues: 1, NeededContinues: 1}},
		{"marked not needed", false, overseer.NeededByReviewer, eval.GateLabels{Continues: 1, FalsePauses: 1, RunsWithFalsePause: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := overseer.Gate{ID: "plan-1", Phase: "plan", Reason: "off track", PausedAt: t0, ResumedAt: &resumed, By: "ana",
				Note: "find the root cause first", Action: overseer.ActionContinue, Needed: new(tc.needed), NeededBy: tc.by}
			rec := ops.RecordOfHistory(historyContinuedAt(t, g))
			require.Len(t, rec.Gates, 1)
			d := rec.Gates[0]
			require.NotNil(t, d.Needed)
			assert.Equal(t, tc.needed, *d.Needed)
			assert.Equal(t, string(tc.by), d.NeededBy)

			recs := []eval.Record{{Format: eval.RecordFormat, ID: "job-1", Outcome: eval.OutcomeSucceeded, Unit: eval.UnitPhase, Steps: rec.Steps, Gates: rec.Gates}}
			assert.Equal(t, tc.want, eval.UseGateLabels(recs))
		})
	}

	// A gate recorded before the judgement existed: none in the export,
	// and the old rule in the labels.
	g := overseer.Gate{ID: "plan-1", Phase: "plan", PausedAt: t0, ResumedAt: &resumed, By: "ana", Note: "go on", Action: overseer.ActionContinue}
	rec := ops.RecordOfHistory(historyContinuedAt(t, g))
	require.Len(t, rec.Gates, 1)
	assert.Nil(t, rec.Gates[0].Needed)
	assert.Empty(t, rec.Gates[0].NeededBy)
	l := eval.UseGateLabels([]eval.Record{{Format: eval.RecordFormat, ID: "job-1", Outcome: eval.OutcomeSucceeded, Unit: eval.UnitPhase, Steps: rec.Steps, Gates: rec.Gates}})
	assert.Equal(t, eval.GateLabels{Continues: 1, FalsePauses: 1, RunsWithFalsePause: 1, Unjudged: 1}, l)
}
