package testsuite

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"fmt"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// EncodingContextBound is the metadata encoding of a payload a
// [ContextBoundCodec] sealed.
const EncodingContextBound = "binary/encrypted-context-bound"

// metadataSealedIn names, in clear, the context a payload was sealed in,
// so that a refusal says which two contexts disagree.
const metadataSealedIn = "sealed-in"

// ContextBoundCodec is an AES-GCM payload codec that binds every payload
// to the serialization context it is encoded in
// (converter.PayloadCodecWithSerializationContext): the context is the
// associated data, so a payload opens only in the context it was sealed
// in, as with the SDK's own example that uses the workflow id. Workflow
// payloads are bound to the namespace and workflow id; activity payloads
// to the namespace, workflow id and type, activity type and task queue.
// It refuses to open a payload in another context, with an error that
// names both, so tests of code that writes or reads payloads for Temporal
// see every payload handled in the wrong context. Payloads of another
// encoding pass through.
type ContextBoundCodec struct {
	aead    cipher.AEAD
	context string
}

var (
	_ converter.PayloadCodec                         = (*ContextBoundCodec)(nil)
	_ converter.PayloadCodecWithSerializationContext = (*ContextBoundCodec)(nil)
)

// NewContextBoundCodec returns the codec with a 16, 24 or 32-byte key,
// unbound (the context "none").
func NewContextBoundCodec(key []byte) (*ContextBoundCodec, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("testsuite: the codec's key must be 16, 24 or 32 bytes, not %d", len(key))
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("testsuite: %w", err)
	}
	return &ContextBoundCodec{aead: aead, context: "none"}, nil
}

// ContextBoundDataConverter is the default data converter with c as its
// codec, as every client and worker of a deployment would set it.
func ContextBoundDataConverter(c *ContextBoundCodec) converter.DataConverter {
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
}

// WithSerializationContext returns the codec bound to sc.
func (c *ContextBoundCodec) WithSerializationContext(sc converter.SerializationContext) converter.PayloadCodec {
	return &ContextBoundCodec{aead: c.aead, context: contextName(sc)}
}

// contextName is the associated data of a serialization context.
func contextName(sc converter.SerializationContext) string {
	switch sc := sc.(type) {
	case converter.WorkflowSerializationContext:
		return strings.Join([]string{"workflow", sc.Namespace, sc.WorkflowID}, "|")
	case converter.ActivitySerializationContext:
		return strings.Join([]string{"activity", sc.Namespace, sc.WorkflowID, sc.WorkflowType, sc.ActivityType, sc.TaskQueue, fmt.Sprint(sc.IsLocal)}, "|")
	case converter.NexusSerializationContext:
		return strings.Join([]string{"nexus", sc.Endpoint, sc.Service, sc.Operation}, "|")
	case nil:
		return "none"
	default:
		return fmt.Sprintf("%T", sc)
	}
}

// Encode seals each payload in the codec's context.
func (c *ContextBoundCodec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("testsuite: encode payload: %w", err)
		}
		nonce := make([]byte, c.aead.NonceSize())
		if _, err := rand.Read(nonce); err != nil {
			return nil, fmt.Errorf("testsuite: nonce: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{converter.MetadataEncoding: []byte(EncodingContextBound), metadataSealedIn: []byte(c.context)},
			Data:     c.aead.Seal(nonce, nonce, plain, []byte(c.context)),
		}
	}
	return out, nil
}

// Decode opens each sealed payload in the codec's context, and refuses
// one sealed in another.
func (c *ContextBoundCodec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != EncodingContextBound {
			out[i] = p
			continue
		}
		n := c.aead.NonceSize()
		if len(p.GetData()) < n {
			return nil, fmt.Errorf("testsuite: a sealed payload is too short")
		}
		plain, err := c.aead.Open(nil, p.GetData()[:n], p.GetData()[n:], []byte(c.context))
		if err != nil {
			return nil, fmt.Errorf("testsuite: a payload sealed in context %q does not open in context %q", p.GetMetadata()[metadataSealedIn], c.context)
		}
		var d commonpb.Payload
		if err := proto.Unmarshal(plain, &d); err != nil {
			return nil, fmt.Errorf("testsuite: opened payload: %w", err)
		}
		out[i] = &d
	}
	return out, nil
}
