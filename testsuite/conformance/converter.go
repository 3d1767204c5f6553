package conformance

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/corohq/temporal-overseer/testsuite"
)

// encodingHandWritten is HandWrittenConverter's metadata encoding.
const encodingHandWritten = "json/hand-written"

// HandWrittenConverter is a data converter as a team writes one by hand:
// JSON under an encoding of its own, and nothing special for the SDK's
// converter.RawValue (which it can neither read nor write).
type HandWrittenConverter struct{}

var _ converter.DataConverter = HandWrittenConverter{}

// ToPayload encodes v as JSON.
func (HandWrittenConverter) ToPayload(v any) (*commonpb.Payload, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("hand-written converter: %w", err)
	}
	return &commonpb.Payload{Metadata: map[string][]byte{converter.MetadataEncoding: []byte(encodingHandWritten)}, Data: b}, nil
}

// FromPayload decodes p into ptr.
func (HandWrittenConverter) FromPayload(p *commonpb.Payload, ptr any) error {
	if enc := string(p.GetMetadata()[converter.MetadataEncoding]); enc != encodingHandWritten {
		return fmt.Errorf("hand-written converter: unknown encoding %q", enc)
	}
	if err := json.Unmarshal(p.GetData(), ptr); err != nil {
		return fmt.Errorf("hand-written converter: %w", err)
	}
	return nil
}

// ToPayloads encodes each value.
func (c HandWrittenConverter) ToPayloads(values ...any) (*commonpb.Payloads, error) {
	ps := &commonpb.Payloads{}
	for _, v := range values {
		p, err := c.ToPayload(v)
		if err != nil {
			return nil, err
		}
		ps.Payloads = append(ps.Payloads, p)
	}
	return ps, nil
}

// FromPayloads decodes the payloads into ptrs, as many as both have.
func (c HandWrittenConverter) FromPayloads(ps *commonpb.Payloads, ptrs ...any) error {
	for i, p := range ps.GetPayloads() {
		if i >= len(ptrs) {
			break
		}
		if err := c.FromPayload(p, ptrs[i]); err != nil {
			return err
		}
	}
	return nil
}

// ToString is the payload's JSON.
func (HandWrittenConverter) ToString(p *commonpb.Payload) string { return string(p.GetData()) }

// ToStrings is each payload's JSON.
func (c HandWrittenConverter) ToStrings(ps *commonpb.Payloads) []string {
	var out []string
	for _, p := range ps.GetPayloads() {
		out = append(out, c.ToString(p))
	}
	return out
}

// contextBoundConverter is the default converter with a codec that binds
// each payload to its serialization context (testsuite.ContextBoundCodec).
func contextBoundConverter() converter.DataConverter {
	key := sha256.Sum256([]byte("conformance"))
	c, err := testsuite.NewContextBoundCodec(key[:])
	if err != nil {
		panic(err) // a 32-byte key always makes a codec
	}
	return testsuite.ContextBoundDataConverter(c)
}
