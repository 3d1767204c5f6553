package ops_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	updatepb "go.temporal.io/api/update/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
)

// A gate continued through the overseer.resume update and one aborted by a
// signal (read from the gate the job failed with) are gate decisions; a
// gate closed by its deadline is not.
func TestRecordOfHistoryReadsGateDecisions(t *testing.T) {
	dc := converter.GetDefaultDataConverter()
	payloads := func(v any) *commonpb.Payloads {
		p, err := dc.ToPayloads(v)
		require.NoError(t, err)
		return p
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	at := func(s int) *timestamppb.Timestamp { return timestamppb.New(t0.Add(time.Duration(s) * time.Second)) }
	ptr := func(t time.Time) *time.Time { return &t }
	id := int64(0)
	ev := func(typ enumspb.EventType, s int, set func(e *historypb.HistoryEvent)) *historypb.HistoryEvent {
		id++
		e := &historypb.HistoryEvent{EventId: id, EventType: typ, EventTime: at(s)}
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
	var events []*historypb.HistoryEvent
	events = append(events, ev(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, 0, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
			WorkflowType: &commonpb.WorkflowType{Name: "Job"}}}
	}))
	events = append(events, phase("plan", 1)...)
	accepted := ev(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, 10, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_WorkflowExecutionUpdateAcceptedEventAttributes{WorkflowExecutionUpdateAcceptedEventAttributes: &historypb.WorkflowExecutionUpdateAcceptedEventAttributes{
			AcceptedRequest: &updatepb.Request{Input: &updatepb.Input{Name: overseer.ResumeName}}}}
	})
	continued := overseer.Gate{ID: "plan-1", Phase: "plan", PausedAt: t0.Add(2 * time.Second), ResumedAt: ptr(t0.Add(10 * time.Second)), By: "ana", Note: "go on", Action: overseer.ActionContinue}
	events = append(events, accepted, ev(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED, 10, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_WorkflowExecutionUpdateCompletedEventAttributes{WorkflowExecutionUpdateCompletedEventAttributes: &historypb.WorkflowExecutionUpdateCompletedEventAttributes{
			AcceptedEventId: accepted.EventId, Outcome: &updatepb.Outcome{Value: &updatepb.Outcome_Success{Success: payloads(continued)}}}}
	}))
	events = append(events, phase("code", 11)...)
	aborted := overseer.Gate{ID: "code-2", Phase: "code", PausedAt: t0.Add(12 * time.Second), ResumedAt: ptr(t0.Add(72 * time.Second)), By: "bo", Action: overseer.ActionAbort}
	events = append(events, ev(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, 72, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_WorkflowExecutionFailedEventAttributes{WorkflowExecutionFailedEventAttributes: &historypb.WorkflowExecutionFailedEventAttributes{
			Failure: &failurepb.Failure{Message: "aborted", FailureInfo: &failurepb.Failure_ApplicationFailureInfo{ApplicationFailureInfo: &failurepb.ApplicationFailureInfo{
				Type: overseer.AbortedErrorType, Details: payloads(aborted)}}}}}
	}))
	rec := ops.RecordOfHistory(events)
	require.Len(t, rec.Steps, 2)
	assert.Equal(t, []eval.GateDecision{
		{Gate: "plan-1", Phase: "plan", After: 1, By: "ana", Action: eval.GateContinue, Note: "go on", WaitMS: 8000},
		{Gate: "code-2", Phase: "code", After: 2, By: "bo", Action: eval.GateAbort, WaitMS: 60000},
	}, rec.Gates)

	// A gate its deadline aborted is no reviewer's decision.
	expired := aborted
	expired.By, expired.Expired, expired.ExpiredBy = "", true, "deadline 72h: abort"
	events[len(events)-1].GetWorkflowExecutionFailedEventAttributes().GetFailure().GetApplicationFailureInfo().Details = payloads(expired)
	rec = ops.RecordOfHistory(events)
	assert.Len(t, rec.Gates, 1)
}
