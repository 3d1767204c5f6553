package overseer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// The overseer reads and writes payloads with the worker's data converter,
// payload codec included, so that a deployment that encrypts its payloads
// (converter.NewCodecDataConverter on every client and worker) can read
// the memo fields it sets and finds none of the overseer's payloads in
// clear in its histories. A codec that binds each payload to its
// serialization context (converter.PayloadCodecWithSerializationContext,
// e.g. the workflow id as associated data) reads a payload only in the
// context it was written in, so each payload is written and read in the
// context the SDK uses for it: the workflow's for the memo and the state
// carried across continue-as-new, the phase activity's for the note's
// header, and the activity's, then the workflow's, for a phase's result
// (workerConverter.letThrough).
//
// The converter is the one the overseer was given (Options.DataConverter),
// else the one of the client the plugin configured (client.Options.Plugins),
// bound with converter.WithDataConverterSerializationContext. When it knows
// neither (the plugin given to a worker only, without
// Options.DataConverter), workflow code falls back on the two things the
// SDK does with the worker's own converter, already bound to the
// workflow's context: a continue-as-new error's input is encoded with it
// (workflow.NewContinueAsNewError only builds the error: it sends no
// command), and a workflow future set to *commonpb.Payloads decodes them
// with it on Get. Both are pure, so workflow code stays deterministic;
// TestSDKEncodesWithTheWorkflowsConverter fails if the SDK stops doing so.

// encodeConverterWorkflow names the continue-as-new error built only to
// encode a payload; the error is never returned.
const encodeConverterWorkflow = "overseer.encode"

// converterKey holds the run's *workerConverter in its workflow context.
type converterKey struct{}

// withWorkerConverter makes dc the converter the overseer's payloads in
// ctx are written and read with.
func withWorkerConverter(ctx workflow.Context, dc *workerConverter) workflow.Context {
	return workflow.WithValue(ctx, converterKey{}, dc)
}

// workflowConverter is the worker's data converter bound to the run's
// workflow serialization context, or nil when the overseer does not know
// it.
func workflowConverter(ctx workflow.Context) converter.DataConverter {
	w, _ := ctx.Value(converterKey{}).(*workerConverter)
	dc := w.get()
	if dc == nil {
		return nil
	}
	info := workflow.GetInfo(ctx)
	return converter.WithDataConverterSerializationContext(dc, converter.WorkflowSerializationContext{
		Namespace: info.Namespace, WorkflowID: info.WorkflowExecution.ID})
}

// toWorkflowPayload encodes v with the workflow's data converter (and
// codec), in the workflow's serialization context.
func toWorkflowPayload(ctx workflow.Context, v any) (p *commonpb.Payload, err error) {
	if dc := workflowConverter(ctx); dc != nil {
		p, err := dc.ToPayload(v)
		if err != nil {
			return nil, fmt.Errorf("overseer: the worker's data converter cannot encode %T: %w", v, err)
		}
		return p, nil
	}
	defer func() {
		// The SDK panics when the converter refuses the value.
		if rec := recover(); rec != nil {
			p, err = nil, fmt.Errorf("overseer: the worker's data converter cannot encode %T: %v", v, rec)
		}
	}()
	var can *workflow.ContinueAsNewError
	if e := workflow.NewContinueAsNewError(ctx, encodeConverterWorkflow, v); !errors.As(e, &can) {
		return nil, fmt.Errorf("overseer: the worker's data converter cannot encode %T: %w", v, e)
	}
	if ps := can.Input.GetPayloads(); len(ps) == 1 {
		return ps[0], nil
	}
	return nil, fmt.Errorf("overseer: the worker's data converter encoded %T as %d payloads, not one", v, len(can.Input.GetPayloads()))
}

// fromWorkflowPayload decodes p with the workflow's data converter (and
// codec), in the workflow's serialization context, into valuePtr. A
// payload its codec cannot read but the default converter can (written
// before the overseer used the worker's converter, or by a worker without
// the codec) is read with the default converter.
func fromWorkflowPayload(ctx workflow.Context, p *commonpb.Payload, valuePtr any) error {
	var err error
	if dc := workflowConverter(ctx); dc != nil {
		err = dc.FromPayload(p, valuePtr)
	} else {
		f, s := workflow.NewFuture(ctx)
		s.Set(&commonpb.Payloads{Payloads: []*commonpb.Payload{p}}, nil)
		err = f.Get(ctx, valuePtr)
	}
	if err != nil && plainJSON(p) && defaultConverter.FromPayload(p, valuePtr) == nil {
		return nil
	}
	return err
}

// letThrough settles out, the future the workflow holds for a phase, with
// the phase's own outcome (f, the activity's future). The SDK decodes an
// activity's result in the activity's serialization context, and a
// workflow future in the workflow's: the result is read from f as the
// SDK reads it (a raw value, the codec undone) and written again in the
// workflow's context, so that a context-bound codec reads it on Get as it
// would the activity future itself. The copy lives in memory only.
func letThrough(ctx workflow.Context, out workflow.Settable, f workflow.Future) {
	var raw converter.RawValue
	if err := f.Get(ctx, &raw); err != nil || raw.Payload() == nil {
		out.Set(nil, err)
		return
	}
	p, err := toWorkflowPayload(ctx, raw)
	if err != nil {
		out.Set(nil, temporal.NewNonRetryableApplicationError(err.Error(), "OverseerCodec", err))
		return
	}
	out.Set(&commonpb.Payloads{Payloads: []*commonpb.Payload{p}}, nil)
}

// defaultConverter reads payloads written without a codec.
var defaultConverter = converter.GetDefaultDataConverter()

// plainJSON says p is readable without a codec.
func plainJSON(p *commonpb.Payload) bool {
	switch string(p.GetMetadata()[converter.MetadataEncoding]) {
	case converter.MetadataEncodingJSON, converter.MetadataEncodingNil, converter.MetadataEncodingBinary, converter.MetadataEncodingProtoJSON, converter.MetadataEncodingProto:
		return true
	}
	return false
}

// memoCodecChangeID versions the memo fields that decide commands when
// only the worker's data converter can read them (a memo its codec
// encrypted): runs recorded before the overseer read them so failed (the
// mode) or ignored them (the gate deadline). GetVersion is recorded only
// when such a field needs the codec, so runs without one have no marker.
// The starter is read behind it for a resume signal (signalStarter), and
// unversioned for an update's validator, which writes no history.
const memoCodecChangeID = "temporal-overseer/memo-codec"

// memoString reads the memo field key as a string: "" and false when the
// run's memo has no such field. A field the default converter cannot read
// is read with the worker's data converter, in runs that record
// memoCodecChangeID; runs before it read it as they did.
func memoString(ctx workflow.Context, key string) (string, bool, error) {
	return readMemoString(ctx, key, true)
}

// memoStringUnversioned is memoString for a read that sends no command
// (the starter as an update's validator reads it: a refused update leaves
// nothing in history): it records no marker, so a run in flight when the
// worker learned to read it gets it too.
func memoStringUnversioned(ctx workflow.Context, key string) (string, bool, error) {
	return readMemoString(ctx, key, false)
}

// memoNeedsCodec says the memo field key is one only the worker's data
// converter can read (readMemoString records memoCodecChangeID to read it).
func memoNeedsCodec(ctx workflow.Context, key string) bool {
	p, ok := workflow.GetInfo(ctx).Memo.GetFields()[key]
	if !ok {
		return false
	}
	var s string
	return defaultConverter.FromPayload(p, &s) != nil && !plainJSON(p)
}

func readMemoString(ctx workflow.Context, key string, versioned bool) (string, bool, error) {
	p, ok := workflow.GetInfo(ctx).Memo.GetFields()[key]
	if !ok {
		return "", false, nil
	}
	var s string
	plainErr := defaultConverter.FromPayload(p, &s)
	if plainErr == nil {
		return s, true, nil
	}
	if plainJSON(p) {
		return "", true, fmt.Errorf("overseer: memo %s is not a string: %w", key, plainErr)
	}
	if versioned && workflow.GetVersion(ctx, memoCodecChangeID, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return "", true, fmt.Errorf("overseer: memo %s is not a string: %w", key, plainErr)
	}
	if err := fromWorkflowPayload(ctx, p, &s); err != nil {
		return "", true, fmt.Errorf("overseer: memo %s cannot be read with the worker's data converter (encoding %s): give the worker the client's data converter and codec: %w",
			key, p.GetMetadata()[converter.MetadataEncoding], err)
	}
	return s, true, nil
}

// workerConverter is the worker's data converter as the overseer knows
// it: Options.DataConverter, else the converter of the client the plugin
// configured; nil when it knows neither.
type workerConverter struct {
	set      converter.DataConverter
	captured atomic.Pointer[converter.DataConverter]
	warned   sync.Once
}

func (a *workerConverter) get() converter.DataConverter {
	if a == nil {
		return nil
	}
	if a.set != nil {
		return a.set
	}
	if dc := a.captured.Load(); dc != nil && *dc != nil {
		return *dc
	}
	return nil
}

// capture records the data converter of a client the plugin configures.
func (a *workerConverter) capture(dc converter.DataConverter) {
	if dc != nil {
		a.captured.Store(&dc)
	}
}

// noteContext is the serialization context of the phase activity that
// ctx schedules as activityType: the one the SDK encodes its input in.
func noteContext(ctx workflow.Context, activityType string) converter.ActivitySerializationContext {
	info := workflow.GetInfo(ctx)
	return converter.ActivitySerializationContext{
		Namespace:    info.Namespace,
		WorkflowID:   info.WorkflowExecution.ID,
		WorkflowType: info.WorkflowType.Name,
		ActivityType: activityType,
		TaskQueue:    cmp.Or(workflow.GetActivityOptions(ctx).TaskQueue, info.TaskQueueName),
	}
}

// activityContext is the serialization context the SDK decodes the
// running activity's input in.
func activityContext(ctx context.Context) converter.ActivitySerializationContext {
	info := activity.GetInfo(ctx)
	sc := converter.ActivitySerializationContext{
		Namespace:    info.Namespace,
		WorkflowID:   info.WorkflowExecution.ID,
		ActivityType: info.ActivityType.Name,
		TaskQueue:    info.TaskQueue,
		IsLocal:      info.IsLocalActivity,
	}
	if info.WorkflowType != nil {
		sc.WorkflowType = info.WorkflowType.Name
	}
	return sc
}

// inputPayloads is args as the SDK sends them for the phase activity ctx
// schedules as activityType: encoded with the worker's data converter in
// the activity's serialization context, then decoded to the payloads its
// codec wrapped (a context-bound codec reads them only there). Nil when
// the overseer does not know the converter (the default converter's
// encoding of args stands for them) or it cannot encode them.
func (a *workerConverter) inputPayloads(ctx workflow.Context, activityType string, args []any) []*commonpb.Payload {
	dc := a.get()
	if dc == nil || len(args) == 0 {
		return nil
	}
	bound := converter.WithDataConverterSerializationContext(dc, noteContext(ctx, activityType))
	ps, err := bound.ToPayloads(args...)
	if err != nil {
		return nil
	}
	out := make([]*commonpb.Payload, 0, len(ps.GetPayloads()))
	for _, p := range ps.GetPayloads() {
		var raw converter.RawValue
		if err := bound.FromPayload(p, &raw); err != nil {
			return nil
		}
		out = append(out, raw.Payload())
	}
	return out
}

// writeNote encodes the note's header for the phase activity ctx
// schedules as activityType, in that activity's serialization context.
// Without the worker's converter it is encoded in the workflow's
// (toWorkflowPayload): an activity reads it only when no codec is set.
func (a *workerConverter) writeNote(ctx workflow.Context, activityType string, n Note) (*commonpb.Payload, error) {
	dc := a.get()
	if dc == nil {
		return toWorkflowPayload(ctx, n)
	}
	p, err := converter.WithDataConverterSerializationContext(dc, noteContext(ctx, activityType)).ToPayload(n)
	if err != nil {
		return nil, fmt.Errorf("overseer: the worker's data converter cannot encode the process note: %w", err)
	}
	return p, nil
}

// readNote decodes the note's header in an activity, in its serialization
// context.
func (a *workerConverter) readNote(ctx context.Context, p *commonpb.Payload) (Note, bool) {
	var n Note
	dc := a.get()
	var err error
	if dc != nil {
		if err = converter.WithDataConverterSerializationContext(dc, activityContext(ctx)).FromPayload(p, &n); err == nil {
			return n, true
		}
	}
	if plainJSON(p) {
		if defaultConverter.FromPayload(p, &n) == nil {
			return n, true
		}
		return Note{}, false
	}
	a.warned.Do(func() {
		encoding := string(p.GetMetadata()[converter.MetadataEncoding])
		if dc == nil {
			activity.GetLogger(ctx).Warn("overseer: the process note's header is encoded with a payload codec this worker's overseer was not given: set overseer.Options.DataConverter to the client's data converter (or give the plugin to client.Options.Plugins) so that ProcessNote works in activities",
				"encoding", encoding)
			return
		}
		activity.GetLogger(ctx).Warn("overseer: the worker's data converter cannot decode the process note's header in this activity's serialization context: the workflow's worker and this activity's worker must have the same converter and codec",
			"encoding", encoding, "error", err.Error())
	})
	return Note{}, false
}
