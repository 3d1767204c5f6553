package overseer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// The overseer reads and writes payloads with the worker's data converter,
// payload codec included, so that a deployment that encrypts its payloads
// (converter.NewCodecDataConverter on every client and worker) can read
// the memo fields it sets and finds none of the overseer's payloads in
// clear in its histories.
//
// The SDK gives workflow code no accessor for its data converter, but it
// uses it for two things this file relies on: a continue-as-new error's
// input is encoded with it (workflow.NewContinueAsNewError only builds the
// error: it sends no command), and a workflow future set to
// *commonpb.Payloads decodes them with it on Get. Both are pure, so
// workflow code stays deterministic. Activities have no such path: they
// decode the note's header with Options.DataConverter, else the converter
// of the client the plugin was given to (client.Options.Plugins).

// encodeConverterWorkflow names the continue-as-new error built only to
// encode a payload; the error is never returned.
const encodeConverterWorkflow = "overseer.encode"

// toWorkflowPayload encodes v with the workflow's data converter (and
// codec).
func toWorkflowPayload(ctx workflow.Context, v any) (p *commonpb.Payload, err error) {
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
// codec) into valuePtr. A payload its codec cannot read but the default
// converter can (written before the overseer used the worker's converter,
// or by a worker without the codec) is read with the default converter.
func fromWorkflowPayload(ctx workflow.Context, p *commonpb.Payload, valuePtr any) error {
	f, s := workflow.NewFuture(ctx)
	s.Set(&commonpb.Payloads{Payloads: []*commonpb.Payload{p}}, nil)
	err := f.Get(ctx, valuePtr)
	if err != nil && plainJSON(p) && defaultConverter.FromPayload(p, valuePtr) == nil {
		return nil
	}
	return err
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
// The starter decides no command and is read unversioned.
const memoCodecChangeID = "temporal-overseer/memo-codec"

// memoString reads the memo field key as a string: "" and false when the
// run's memo has no such field. A field the default converter cannot read
// is read with the worker's data converter, in runs that record
// memoCodecChangeID; runs before it read it as they did.
func memoString(ctx workflow.Context, key string) (string, bool, error) {
	return readMemoString(ctx, key, true)
}

// memoStringUnversioned is memoString for a field whose value sends no
// command (the starter, which only the resume's validator reads, and a
// refused update leaves nothing in history): it records no marker, so a
// run in flight when the worker learned to read it gets it too.
func memoStringUnversioned(ctx workflow.Context, key string) (string, bool, error) {
	return readMemoString(ctx, key, false)
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

// activityConverter is the data converter activities decode the note's
// header with: Options.DataConverter, else the converter of the client
// the plugin configured, else the default converter.
type activityConverter struct {
	set      converter.DataConverter
	captured atomic.Pointer[converter.DataConverter]
	warned   sync.Once
}

func (a *activityConverter) get() converter.DataConverter {
	if a.set != nil {
		return a.set
	}
	if dc := a.captured.Load(); dc != nil && *dc != nil {
		return *dc
	}
	return nil
}

// capture records the data converter of a client the plugin configures.
func (a *activityConverter) capture(dc converter.DataConverter) {
	if dc != nil {
		a.captured.Store(&dc)
	}
}

// readNote decodes the note's header in an activity.
func (a *activityConverter) readNote(ctx context.Context, p *commonpb.Payload) (Note, bool) {
	var n Note
	if dc := a.get(); dc != nil {
		if err := dc.FromPayload(p, &n); err == nil {
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
		activity.GetLogger(ctx).Warn("overseer: the process note's header is encoded with a payload codec this worker's overseer was not given: set overseer.Options.DataConverter to the client's data converter (or give the plugin to client.Options.Plugins) so that ProcessNote works in activities",
			"encoding", string(p.GetMetadata()[converter.MetadataEncoding]))
	})
	return Note{}, false
}
