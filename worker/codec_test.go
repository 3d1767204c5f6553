package worker_test

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"

	"github.com/corohq/temporal-overseer/codec"
	"github.com/corohq/temporal-overseer/worker"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

func TestClientOptionsTakeTheCodecKeyFromTheEnvironment(t *testing.T) {
	t.Setenv(codec.KeyEnv, base64.StdEncoding.EncodeToString(testKey))
	t.Setenv(worker.CodecEndpointEnv, "")
	o, err := worker.Config{}.ClientOptions()
	require.NoError(t, err)
	require.NotNil(t, o.DataConverter)
	p, err := o.DataConverter.ToPayload("secret note")
	require.NoError(t, err)
	assert.True(t, codec.Encrypted(p))
}

func TestClientOptionsRefuseABadKey(t *testing.T) {
	t.Setenv(codec.KeyEnv, "short")
	_, err := worker.Config{}.ClientOptions()
	assert.EqualError(t, err, "codec: OVERSEER_CODEC_KEY must be a 16, 24 or 32-byte key in base64 or hex")
}

func TestClientOptionsCallTheCodecServerWithItsAuthorization(t *testing.T) {
	aes, err := codec.NewAESGCM(testKey)
	require.NoError(t, err)
	var auth []string
	h := converter.NewPayloadCodecHTTPHandler(aes)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	t.Setenv(codec.KeyEnv, "")
	t.Setenv(worker.CodecAuthEnv, "Bearer team-token")
	o, err := worker.Config{CodecEndpoint: srv.URL}.ClientOptions()
	require.NoError(t, err)
	p, err := o.DataConverter.ToPayload("through the codec server")
	require.NoError(t, err)
	assert.True(t, codec.Encrypted(p))
	assert.Equal(t, []string{"Bearer team-token"}, auth)
}

func TestClientOptionsWithoutACodec(t *testing.T) {
	t.Setenv(codec.KeyEnv, "")
	t.Setenv(worker.CodecEndpointEnv, "")
	o, err := worker.Config{}.ClientOptions()
	require.NoError(t, err)
	assert.Nil(t, o.DataConverter, "the SDK's default")
}
