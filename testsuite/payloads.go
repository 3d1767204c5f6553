package testsuite

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// PayloadAt is one payload of a workflow history and where it is.
type PayloadAt struct {
	// EventID and EventType name the event that holds the payload.
	EventID   int64
	EventType enumspb.EventType
	// Path is the payload's field path in the event, e.g.
	// "workflow_execution_started_event_attributes.memo.fields[overseer.mode]".
	Path    string
	Payload *commonpb.Payload
}

func (p PayloadAt) String() string {
	return fmt.Sprintf("event %d (%s) %s: encoding %q", p.EventID, p.EventType, p.Path, p.Payload.GetMetadata()["encoding"])
}

var (
	payloadName          = (&commonpb.Payload{}).ProtoReflect().Descriptor().FullName()
	searchAttributesName = (&commonpb.SearchAttributes{}).ProtoReflect().Descriptor().FullName()
)

// HistoryPayloads lists every payload in events, at any depth (memo,
// headers, inputs and results, marker details, update and signal
// arguments, failures' details), except search attributes: the server
// indexes them, so no codec ever encodes them.
func HistoryPayloads(events []*historypb.HistoryEvent) []PayloadAt {
	var out []PayloadAt
	for _, e := range events {
		walkPayloads(e.ProtoReflect(), "", func(path string, p *commonpb.Payload) {
			out = append(out, PayloadAt{EventID: e.GetEventId(), EventType: e.GetEventType(), Path: strings.TrimPrefix(path, "."), Payload: p})
		})
	}
	return out
}

func walkPayloads(m protoreflect.Message, path string, visit func(string, *commonpb.Payload)) {
	switch m.Descriptor().FullName() {
	case payloadName:
		visit(path, m.Interface().(*commonpb.Payload))
		return
	case searchAttributesName:
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := path + "." + string(fd.Name())
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				walkPayloads(l.Get(i).Message(), fmt.Sprintf("%s[%d]", name, i), visit)
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				walkPayloads(mv.Message(), fmt.Sprintf("%s[%s]", name, k.String()), visit)
				return true
			})
		case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
			walkPayloads(v.Message(), name, visit)
		}
		return true
	})
}

// FetchHistory reads every event of one run of a workflow with c (a
// client without the deployment's codec reads the payloads as the server
// stores them).
func FetchHistory(ctx context.Context, c client.Client, workflowID, runID string) ([]*historypb.HistoryEvent, error) {
	it := c.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var events []*historypb.HistoryEvent
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("history of %s/%s: %w", workflowID, runID, err)
		}
		events = append(events, proto.Clone(e).(*historypb.HistoryEvent))
	}
	return events, nil
}

// FetchChain reads the histories of a workflow's runs from runID on,
// following continue-as-new to the last run.
func FetchChain(ctx context.Context, c client.Client, workflowID, runID string) ([][]*historypb.HistoryEvent, error) {
	var runs [][]*historypb.HistoryEvent
	for runID != "" {
		events, err := FetchHistory(ctx, c, workflowID, runID)
		if err != nil {
			return nil, err
		}
		runs = append(runs, events)
		runID = ""
		if n := len(events); n > 0 {
			runID = events[n-1].GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
		}
	}
	return runs, nil
}

// WindowText is s as a content window shows it inside a JSON string
// (trajectory.PayloadText): JSON-escaped, with < > & plain.
func WindowText(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return s // a string always encodes
	}
	out := strings.TrimSuffix(b.String(), "\n")
	return out[1 : len(out)-1]
}
