// Package codec gives the overseer's clients (the CLI, the dashboard, the
// worker) the payload codec of a deployment that encrypts its payloads:
// a codec server per Temporal's convention (POST {endpoint}/encode and
// /decode with the JSON payloads format, as `temporal --codec-endpoint`
// calls it), or the built-in AES-GCM codec with its key from the
// environment (OVERSEER_CODEC_KEY), never from a flag.
//
// The built-in codec encrypts every payload with AES-GCM: the payload's
// protobuf encoding is sealed with a random nonce and the result carries
// the metadata encoding "binary/encrypted" (EncodingEncrypted). Payloads
// with another encoding pass through Decode unchanged, so histories written
// before the codec was set stay readable.
package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

// EncodingEncrypted is the metadata encoding of a payload the built-in
// codec encrypted (the encoding Temporal's samples use).
const EncodingEncrypted = "binary/encrypted"

// KeyEnv names the environment variable that holds the built-in codec's
// key: 16, 24 or 32 bytes, in base64 or hex.
const KeyEnv = "OVERSEER_CODEC_KEY"

// AESGCM is the built-in payload codec.
type AESGCM struct {
	aead cipher.AEAD
}

var _ converter.PayloadCodec = (*AESGCM)(nil)

// NewAESGCM returns the codec with key (16, 24 or 32 bytes: AES-128, -192
// or -256).
func NewAESGCM(key []byte) (*AESGCM, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("codec: the key must be 16, 24 or 32 bytes, not %d", len(key))
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("codec: %w", err)
	}
	return &AESGCM{aead: aead}, nil
}

// Encode encrypts each payload.
func (c *AESGCM) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return nil, fmt.Errorf("codec: encode payload: %w", err)
		}
		nonce := make([]byte, c.aead.NonceSize())
		if _, err := rand.Read(nonce); err != nil {
			return nil, fmt.Errorf("codec: nonce: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{converter.MetadataEncoding: []byte(EncodingEncrypted)},
			Data:     c.aead.Seal(nonce, nonce, plain, nil),
		}
	}
	return out, nil
}

// Decode decrypts each encrypted payload; others pass through.
func (c *AESGCM) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if !Encrypted(p) {
			out[i] = p
			continue
		}
		n := c.aead.NonceSize()
		if len(p.GetData()) < n {
			return nil, errors.New("codec: an encrypted payload is too short")
		}
		plain, err := c.aead.Open(nil, p.GetData()[:n], p.GetData()[n:], nil)
		if err != nil {
			return nil, errors.New("codec: an encrypted payload does not open with this key")
		}
		var d commonpb.Payload
		if err := proto.Unmarshal(plain, &d); err != nil {
			return nil, fmt.Errorf("codec: decrypted payload: %w", err)
		}
		out[i] = &d
	}
	return out, nil
}

// Encrypted says p carries the built-in codec's encoding.
func Encrypted(p *commonpb.Payload) bool {
	return string(p.GetMetadata()[converter.MetadataEncoding]) == EncodingEncrypted
}

// ParseKey reads a key in base64 (standard or URL, padded or not) or hex.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, dec := range []func(string) ([]byte, error){
		hex.DecodeString, base64.StdEncoding.DecodeString, base64.RawStdEncoding.DecodeString,
		base64.URLEncoding.DecodeString, base64.RawURLEncoding.DecodeString,
	} {
		if k, err := dec(s); err == nil && validKeyLen(len(k)) {
			return k, nil
		}
	}
	return nil, fmt.Errorf("codec: %s must be a 16, 24 or 32-byte key in base64 or hex", KeyEnv)
}

func validKeyLen(n int) bool { return n == 16 || n == 24 || n == 32 }

// Config selects a codec: a codec server's endpoint, else the built-in
// codec with the key in the environment.
type Config struct {
	// Endpoint is a codec server's URL (its /encode and /decode are
	// called).
	Endpoint string
	// Header is sent with every codec server request (e.g.
	// Authorization), as `temporal --codec-header` does.
	Header http.Header
	// Getenv reads the environment; os.Getenv if not set.
	Getenv func(string) string
}

// FromConfig returns the codec cfg selects, nil when it selects none.
func FromConfig(cfg Config) (converter.PayloadCodec, error) {
	if cfg.Endpoint != "" {
		if !strings.HasPrefix(cfg.Endpoint, "http://") && !strings.HasPrefix(cfg.Endpoint, "https://") {
			return nil, fmt.Errorf("codec: the codec endpoint %q must be an http:// or https:// URL", cfg.Endpoint)
		}
		header := cfg.Header
		return converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{
			Endpoint: strings.TrimSuffix(cfg.Endpoint, "/"),
			Client:   http.Client{Timeout: 30 * time.Second},
			ModifyRequest: func(r *http.Request) error {
				for k, vs := range header {
					for _, v := range vs {
						r.Header.Add(k, v)
					}
				}
				return nil
			},
		}), nil
	}
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	s := getenv(KeyEnv)
	if s == "" {
		return nil, nil
	}
	key, err := ParseKey(s)
	if err != nil {
		return nil, err
	}
	return NewAESGCM(key)
}

// DataConverter is the default data converter with c applied, the
// converter a client of an encrypting deployment needs; the default
// converter when c is nil.
func DataConverter(c converter.PayloadCodec) converter.DataConverter {
	if c == nil {
		return converter.GetDefaultDataConverter()
	}
	return converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
}

// Advice is the sentence a tool says when it meets payloads it cannot read
// without a codec.
const Advice = "the job's payloads are encrypted with a payload codec: give the codec with --codec-endpoint URL (a codec server) or set " + KeyEnv + " to the AES-GCM key"

// Unreadable says p is encoded with a codec the default converter cannot
// read (its encoding is not one of the default converter's).
func Unreadable(p *commonpb.Payload) bool {
	switch string(p.GetMetadata()[converter.MetadataEncoding]) {
	case converter.MetadataEncodingJSON, converter.MetadataEncodingNil, converter.MetadataEncodingBinary,
		converter.MetadataEncodingProtoJSON, converter.MetadataEncodingProto:
		return false
	}
	return true
}
