package codec_test

import (
	"encoding/base64"
	"encoding/hex"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/corohq/temporal-overseer/codec"
)

var key = []byte("0123456789abcdef0123456789abcdef")

func TestAESGCMEncryptsAndDecrypts(t *testing.T) {
	c, err := codec.NewAESGCM(key)
	require.NoError(t, err)
	dc := codec.DataConverter(c)
	p, err := dc.ToPayload(map[string]string{"note": "keep the CSV columns stable"})
	require.NoError(t, err)
	assert.True(t, codec.Encrypted(p))
	assert.NotContains(t, string(p.GetData()), "CSV", "the data is sealed")
	var back map[string]string
	require.NoError(t, dc.FromPayload(p, &back))
	assert.Equal(t, "keep the CSV columns stable", back["note"])

	// Two encodings of one value differ (a fresh nonce each).
	q, err := dc.ToPayload(map[string]string{"note": "keep the CSV columns stable"})
	require.NoError(t, err)
	assert.NotEqual(t, p.GetData(), q.GetData())

	// The default converter cannot read it, and says so.
	assert.ErrorIs(t, converter.GetDefaultDataConverter().FromPayload(p, &back), converter.ErrEncodingIsNotSupported)
	assert.True(t, codec.Unreadable(p))
}

func TestAESGCMPassesPlainPayloadsThroughAndRefusesAnotherKey(t *testing.T) {
	c, err := codec.NewAESGCM(key)
	require.NoError(t, err)
	plain, err := converter.GetDefaultDataConverter().ToPayload("written before the codec")
	require.NoError(t, err)
	out, err := c.Decode([]*commonpb.Payload{plain})
	require.NoError(t, err)
	assert.Equal(t, plain, out[0])
	assert.False(t, codec.Unreadable(plain))

	enc, err := c.Encode([]*commonpb.Payload{plain})
	require.NoError(t, err)
	other, err := codec.NewAESGCM([]byte("fedcba9876543210fedcba9876543210"))
	require.NoError(t, err)
	_, err = other.Decode(enc)
	assert.EqualError(t, err, "codec: an encrypted payload does not open with this key")

	_, err = codec.NewAESGCM([]byte("short"))
	assert.EqualError(t, err, "codec: the key must be 16, 24 or 32 bytes, not 5")
}

func TestKeyFromTheEnvironment(t *testing.T) {
	for _, s := range []string{base64.StdEncoding.EncodeToString(key), base64.RawURLEncoding.EncodeToString(key), hex.EncodeToString(key)} {
		k, err := codec.ParseKey(s)
		require.NoError(t, err, s)
		assert.Equal(t, key, k)
	}
	_, err := codec.ParseKey("not a key")
	assert.EqualError(t, err, "codec: OVERSEER_CODEC_KEY must be a 16, 24 or 32-byte key in base64 or hex")

	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	c, err := codec.FromConfig(codec.Config{Getenv: getenv})
	require.NoError(t, err)
	assert.Nil(t, c, "no key, no codec")
	env[codec.KeyEnv] = base64.StdEncoding.EncodeToString(key)
	c, err = codec.FromConfig(codec.Config{Getenv: getenv})
	require.NoError(t, err)
	require.IsType(t, &codec.AESGCM{}, c)
	env[codec.KeyEnv] = "short"
	_, err = codec.FromConfig(codec.Config{Getenv: getenv})
	assert.ErrorContains(t, err, "OVERSEER_CODEC_KEY must be")
}

func TestCodecServerEndpoint(t *testing.T) {
	aes, err := codec.NewAESGCM(key)
	require.NoError(t, err)
	srv := httptest.NewServer(converter.NewPayloadCodecHTTPHandler(aes))
	defer srv.Close()
	remote, err := codec.FromConfig(codec.Config{Endpoint: srv.URL + "/"})
	require.NoError(t, err)
	dc := codec.DataConverter(remote)
	p, err := dc.ToPayload("through the codec server")
	require.NoError(t, err)
	assert.True(t, codec.Encrypted(p))
	var s string
	require.NoError(t, codec.DataConverter(aes).FromPayload(p, &s), "the server encrypted with the key")
	assert.Equal(t, "through the codec server", s)

	_, err = codec.FromConfig(codec.Config{Endpoint: "localhost:8081"})
	assert.EqualError(t, err, `codec: the codec endpoint "localhost:8081" must be an http:// or https:// URL`)
}
