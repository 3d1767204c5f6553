package ops

import (
	"cmp"

	commonpb "go.temporal.io/api/common/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/converter"

	"github.com/corohq/temporal-overseer/overseer"
)

// HistoryConverter is dc for the payloads of one run's history (of
// workflowID in namespace, "" for "default"): each payload is read in the
// serialization context the SDK wrote it in — the workflow's (markers,
// updates, memo, the workflow's input and result), one of its activities'
// (their inputs and results: the type and task queue of each activity the
// history schedules), a local activity's of the overseer (its judge), or a
// child workflow's (its input). A codec that binds each payload to its
// context (converter.PayloadCodecWithSerializationContext) opens it in that
// one only; any other converter reads it in the first. Without it, such a
// codec refuses every payload and a reader that skips what it cannot
// decode finds nothing (an export without gate decisions, an audit
// without records). dc is returned as it is when it knows no context.
func HistoryConverter(dc converter.DataConverter, namespace, workflowID string, events []*historypb.HistoryEvent) converter.DataConverter {
	if _, ok := dc.(converter.DataConverterWithSerializationContext); !ok {
		return dc
	}
	ns := cmp.Or(namespace, "default")
	bind := func(sc converter.SerializationContext) converter.DataConverter {
		return converter.WithDataConverterSerializationContext(dc, sc)
	}
	wf := bind(converter.WorkflowSerializationContext{Namespace: ns, WorkflowID: workflowID})
	c := &runConverter{DataConverter: wf, all: []converter.DataConverter{wf}}
	var workflowType, taskQueue string
	seen := map[converter.SerializationContext]bool{}
	add := func(sc converter.SerializationContext) {
		if !seen[sc] {
			seen[sc] = true
			c.all = append(c.all, bind(sc))
		}
	}
	for _, e := range events {
		if a := e.GetWorkflowExecutionStartedEventAttributes(); a != nil {
			workflowType, taskQueue = a.GetWorkflowType().GetName(), a.GetTaskQueue().GetName()
			// The judge's local activity (PlacementLocalActivity).
			add(converter.ActivitySerializationContext{Namespace: ns, WorkflowID: workflowID, WorkflowType: workflowType,
				ActivityType: overseer.AssessActivityName, TaskQueue: taskQueue, IsLocal: true})
		}
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			add(converter.ActivitySerializationContext{Namespace: ns, WorkflowID: workflowID, WorkflowType: workflowType,
				ActivityType: a.GetActivityType().GetName(), TaskQueue: a.GetTaskQueue().GetName()})
		}
		if a := e.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a != nil {
			add(converter.WorkflowSerializationContext{Namespace: ns, WorkflowID: a.GetWorkflowId()})
		}
	}
	return c
}

// runConverter reads a payload in the first of its contexts that opens it.
type runConverter struct {
	converter.DataConverter
	all []converter.DataConverter
}

func (c *runConverter) FromPayload(p *commonpb.Payload, valuePtr any) error {
	var first error
	for _, dc := range c.all {
		err := dc.FromPayload(p, valuePtr)
		if err == nil {
			return nil
		}
		first = cmp.Or(first, err)
	}
	return first
}

func (c *runConverter) FromPayloads(ps *commonpb.Payloads, valuePtrs ...any) error {
	var first error
	for _, dc := range c.all {
		err := dc.FromPayloads(ps, valuePtrs...)
		if err == nil {
			return nil
		}
		first = cmp.Or(first, err)
	}
	return first
}
