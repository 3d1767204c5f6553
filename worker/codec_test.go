package worker_test

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/corohq/temporal-overseer/codec"
	"github.com/corohq/temporal-overseer/overseer"
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

// A failure's details go through the codec too: an abort's details are its
// gate, with the reviewer's note, which the SDK's default failure
// converter writes in clear.
func TestClientOptionsEncodeFailureDetailsWithTheCodec(t *testing.T) {
	t.Setenv(codec.KeyEnv, base64.StdEncoding.EncodeToString(testKey))
	t.Setenv(worker.CodecEndpointEnv, "")
	o, err := worker.Config{}.ClientOptions()
	require.NoError(t, err)
	require.NotNil(t, o.FailureConverter, "a failure converter with the codec")
	gate := overseer.Gate{ID: "g1", By: "bob", Note: "stop: the migration drops a table"}
	f := o.FailureConverter.ErrorToFailure(temporal.NewNonRetryableApplicationError("aborted", overseer.AbortedErrorType, nil, gate))
	details := f.GetApplicationFailureInfo().GetDetails().GetPayloads()
	require.Len(t, details, 1)
	assert.True(t, codec.Encrypted(details[0]), "the gate in an abort's details is encrypted")
	var back overseer.Gate
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, o.FailureConverter.FailureToError(f), &appErr)
	require.NoError(t, appErr.Details(&back))
	assert.Equal(t, gate.Note, back.Note, "the codec's client reads it back")
}
