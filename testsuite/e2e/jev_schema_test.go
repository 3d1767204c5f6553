package e2e_test

import (
	"bytes"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/jev/jevhttp"
)

// The Jev HTTP protocol's published JSON Schemas describe what the client
// and the server really send: the golden bodies and the server's error
// bodies validate, and bad bodies do not. (The schema validator is a
// dependency of this module only, not of the plugin's.)
func TestJevHTTPBodiesMatchTheirSchemas(t *testing.T) {
	golden := filepath.Join("..", "..", "overseer", "jev", "jevhttp", "testdata")
	for file, schema := range map[string]string{"request.golden.json": "request.schema.json", "response.golden.json": "response.schema.json"} {
		data, err := os.ReadFile(filepath.Join(golden, file))
		require.NoError(t, err)
		assert.NoError(t, compileSchema(t, schema).Validate(unmarshalJSON(t, data)), file)
	}

	h, err := jevhttp.NewHandler(jev.NewScripted(), jevhttp.HandlerOptions{APIKey: "secret", MaxRequestBytes: 64, Budget: time.Second})
	require.NoError(t, err)
	errSchema := compileSchema(t, "error.schema.json")
	for _, tc := range []struct{ name, method, path, key, body string }{
		{"wrong key", "POST", jevhttp.DecidePath, "wrong", "{}"},
		{"too large", "POST", jevhttp.DecidePath, "secret", strings.Repeat(" ", 100)},
		{"not JSON", "POST", jevhttp.DecidePath, "secret", "{"},
		{"wrong method", "POST", jevhttp.HealthPath, "", ""},
	} {
		r := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
		if tc.key != "" {
			r.Header.Set("Authorization", "Bearer "+tc.key)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		assert.GreaterOrEqual(t, w.Code, 400, tc.name)
		assert.NoError(t, errSchema.Validate(unmarshalJSON(t, w.Body.Bytes())), "%s: %s", tc.name, w.Body.String())
	}

	resp, reqs := compileSchema(t, "response.schema.json"), compileSchema(t, "request.schema.json")
	for _, tc := range []struct {
		name string
		s    *jsonschema.Schema
		body string
	}{
		{"probability above one", resp, `{"answers":{"q":{"type":"noul","probability":1.1}}}`},
		{"negative probability", resp, `{"answers":{"q":{"probability":-1}}}`},
		{"choice without confidence", resp, `{"answers":{"q":{"type":"choice","choice":"a"}}}`},
		{"no answers", resp, `{"answers":{}}`},
		{"negative tokens", resp, `{"answers":{"q":{"probability":0.1}},"usage":{"input_tokens":-1}}`},
		{"request without questions", reqs, `{"state":{},"questions":{}}`},
		{"score with one level", reqs, `{"state":{},"questions":{"q":{"type":"score","criteria":["only"]}}}`},
		{"unknown type", reqs, `{"state":{},"questions":{"q":{"type":"rank","criteria":["a","b"]}}}`},
	} {
		assert.Error(t, tc.s.Validate(unmarshalJSON(t, []byte(tc.body))), tc.name)
	}
}

func unmarshalJSON(t *testing.T, data []byte) any {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	require.NoError(t, err)
	return v
}

func compileSchema(t *testing.T, name string) *jsonschema.Schema {
	t.Helper()
	data := map[string][]byte{"request.schema.json": jevhttp.RequestSchema, "response.schema.json": jevhttp.ResponseSchema, "error.schema.json": jevhttp.ErrorSchema}[name]
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(name, unmarshalJSON(t, data)))
	s, err := c.Compile(name)
	require.NoError(t, err)
	return s
}
