package jevopenai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/jev/jevopenai"
	"github.com/corohq/temporal-overseer/testsuite/judgetest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fakeOpenAI speaks the chat-completions API: it answers POST
// /v1/chat/completions with whatever it was scripted with.
type fakeOpenAI struct {
	mu      sync.Mutex
	reply   judgetest.Reply
	bodies  [][]byte
	headers []http.Header
	paths   []string
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	f.paths = append(f.paths, r.Method+" "+r.URL.Path)
	reply := f.reply
	f.mu.Unlock()
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	switch reply.Kind {
	case judgetest.KindAnswer:
		text, err := judgetest.MarshalLoose(judgetest.CompletionContent(reply.Response))
		if err != nil {
			panic(err)
		}
		writeCompletion(w, reply.Response.ModelVersion, string(text), reply.Response.Usage)
	case judgetest.KindEmpty:
		writeCompletion(w, "gpt-fake", "", jev.Usage{InputTokens: 10})
	case judgetest.KindHTTPStatus:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.HTTPStatus)
		fmt.Fprintf(w, `{"error":{"message":"scripted status %d","type":"server_error","param":null,"code":null}}`, reply.HTTPStatus)
	case judgetest.KindHang:
		<-r.Context().Done()
	}
}

func writeCompletion(w http.ResponseWriter, model, content string, u jev.Usage) {
	c := map[string]any{
		"id": "chatcmpl-123", "object": "chat.completion", "created": 1764460800, "model": model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "logprobs": nil,
			"message": map[string]any{"role": "assistant", "content": content, "refusal": nil}}},
		"usage":              map[string]any{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.InputTokens + u.OutputTokens},
		"system_fingerprint": "fp_test",
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(c)
}

func (f *fakeOpenAI) script(r judgetest.Reply) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reply = r
	return true
}

func (f *fakeOpenAI) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

func newFake(t *testing.T) (*fakeOpenAI, *httptest.Server) {
	f := &fakeOpenAI{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func newJudge(t *testing.T, opts jevopenai.Options) *jevopenai.Judge {
	t.Helper()
	j, err := jevopenai.New(opts)
	require.NoError(t, err)
	return j
}

func TestConformance(t *testing.T) {
	judgetest.Run(t, func(t *testing.T) *judgetest.Harness {
		f, srv := newFake(t)
		return &judgetest.Harness{
			Judge:            newJudge(t, jevopenai.Options{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "gpt-test"}),
			Script:           f.script,
			ValidatesAnswers: true,
			ReportsUsage:     true,
		}
	})
}

// TestGoldenRequest pins the chat-completions request derived from the
// overseer's boundary request: messages, model and the json_schema format.
func TestGoldenRequest(t *testing.T) {
	f, srv := newFake(t)
	req := judgetest.BoundaryRequest()
	f.script(judgetest.Reply{Kind: judgetest.KindAnswer, Response: judgetest.ValidResponse(req)})
	const key = "sk-DISTINCTIVE-openai-key"
	resp, err := newJudge(t, jevopenai.Options{BaseURL: srv.URL + "/v1", APIKey: key, Model: "gpt-test", MaxCompletionTokens: 400}).Decide(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, "judgetest-model-1", resp.ModelVersion, "the model the server names")
	assert.Equal(t, jev.Usage{InputTokens: 321, OutputTokens: 45}, resp.Usage)
	require.Len(t, f.bodies, 1)
	assert.Equal(t, "POST /v1/chat/completions", f.paths[0])
	assert.Equal(t, "Bearer "+key, f.headers[0].Get("Authorization"))
	assert.NotContains(t, string(f.bodies[0]), key)

	var buf bytes.Buffer
	require.NoError(t, json.Indent(&buf, f.bodies[0], "", "  "))
	buf.WriteByte('\n')
	path := filepath.Join("testdata", "chat_request.golden.json")
	if *update {
		require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create it")
	assert.Equal(t, string(want), buf.String(), "run go test -update if the change is intended")

	var sent struct {
		Model          string `json:"model"`
		ResponseFormat struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string         `json:"name"`
				Strict bool           `json:"strict"`
				Schema map[string]any `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
		Messages []struct{ Role, Content string } `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(f.bodies[0], &sent))
	assert.Equal(t, "json_schema", sent.ResponseFormat.Type)
	assert.True(t, sent.ResponseFormat.JSONSchema.Strict)
	assert.Equal(t, jevopenai.SchemaName, sent.ResponseFormat.JSONSchema.Name)
	user, err := json.Marshal(req)
	require.NoError(t, err)
	require.Len(t, sent.Messages, 2)
	assert.Equal(t, "user", sent.Messages[1].Role)
	assert.JSONEq(t, string(user), sent.Messages[1].Content, "the user message is the Jev request itself")
}

func TestSchemaFollowsTheQuestions(t *testing.T) {
	s := jevopenai.Schema(judgetest.GenericRequest())
	b, err := json.Marshal(s)
	require.NoError(t, err)
	var got struct {
		Required             []string `json:"required"`
		AdditionalProperties bool     `json:"additionalProperties"`
		Properties           map[string]struct {
			Required   []string                  `json:"required"`
			Properties map[string]map[string]any `json:"properties"`
		} `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, []string{"is_bug", "team", "urgency"}, got.Required)
	assert.False(t, got.AdditionalProperties)
	assert.Equal(t, []string{"probability"}, got.Properties["is_bug"].Required)
	assert.Equal(t, []any{"payments", "platform", "support"}, got.Properties["team"].Properties["choice"]["enum"])
	assert.Equal(t, []string{"choice", "confidence", "probabilities"}, got.Properties["team"].Required)
	assert.EqualValues(t, 4, got.Properties["urgency"].Properties["score"]["maximum"])
	assert.EqualValues(t, 1, got.Properties["is_bug"].Properties["probability"]["maximum"])
	assert.Contains(t, got.Properties["team"].Properties["probabilities"]["required"], "platform")
}

func TestCompletionBodies(t *testing.T) {
	req := judgetest.BoundaryRequest()
	valid := `{"breach":{"choice":"obligation[2]","confidence":0.6,"probabilities":{"none":0.2,"obligation[0]":0.05,"obligation[1]":0.05,"obligation[2]":0.6,"obligation[3]":0.1}},` +
		`"off_track":{"probability":0.55},"severity":{"score":1.8,"confidence":0.5,"probabilities":{"Cosmetic":0.1,"Worth a look":0.2,"Review":0.5,"Stop":0.2}},"blocked":{"probability":0.1}}`
	envelope := func(content any, finish string, refusal any) string {
		b, _ := json.Marshal(map[string]any{"model": "llama3.1:8b", "choices": []any{map[string]any{"finish_reason": finish,
			"message": map[string]any{"role": "assistant", "content": content, "refusal": refusal}}},
			"usage": map[string]any{"prompt_tokens": 900, "completion_tokens": 80}})
		return string(b)
	}
	for _, tc := range []struct{ name, body, wantErr string }{
		{"strict output", envelope(valid, "stop", nil), ""},
		{"in a code fence (a server without grammar)", envelope("```json\n"+valid+"\n```", "stop", nil), ""},
		{"empty body", "", "empty body"},
		{"not JSON", "<html>502 Bad Gateway</html>", "not a chat completion"},
		{"no choices", `{"model":"m","choices":[]}`, "without choices"},
		{"refusal", envelope(nil, "stop", "I can't help with that."), "the model refused"},
		{"cut off", envelope(valid[:40], "length", nil), "cut off at the token limit"},
		{"filtered", envelope(nil, "content_filter", nil), "content filter"},
		{"null content", envelope(nil, "stop", nil), "empty content"},
		{"prose", envelope("The work looks on track.", "stop", nil), "not a JSON object of answers"},
		{"bare NaN", envelope(strings.Replace(valid, "0.55", "NaN", 1), "stop", nil), "not a JSON object of answers"},
		{"string number", envelope(strings.Replace(valid, "0.55", `"0.55"`, 1), "stop", nil), `answer "off_track"`},
		{"above one", envelope(strings.Replace(valid, "0.55", "1.1", 1), "stop", nil), "1.1 outside [0,1]"},
		{"unknown option", envelope(strings.Replace(valid, `"choice":"obligation[2]"`, `"choice":"obligation[7]"`, 1), "stop", nil), "unknown choice option"},
		{"missing question", envelope(strings.Replace(valid, `,"blocked":{"probability":0.1}`, "", 1), "stop", nil), `"blocked": missing answer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := jevopenai.ParseCompletion(req, []byte(tc.body))
			if tc.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, "llama3.1:8b", resp.ModelVersion)
				assert.Equal(t, jev.Usage{InputTokens: 900, OutputTokens: 80}, resp.Usage)
				assert.Equal(t, "obligation[2]", resp.Answers["breach"].Choice)
				assert.Equal(t, jev.Score, resp.Answers["severity"].Type)
				return
			}
			require.ErrorIs(t, err, jev.ErrInvalidAnswer)
			assert.ErrorContains(t, err, tc.wantErr)
			assert.Nil(t, resp)
		})
	}
}

func TestClientRetriesAreOff(t *testing.T) {
	for _, status := range []int{429, 500, 503} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			f, srv := newFake(t)
			f.script(judgetest.Reply{Kind: judgetest.KindHTTPStatus, HTTPStatus: status})
			_, err := newJudge(t, jevopenai.Options{BaseURL: srv.URL + "/v1"}).Decide(context.Background(), judgetest.BoundaryRequest())
			require.Error(t, err)
			assert.NotErrorIs(t, err, jev.ErrRejected)
			assert.ErrorContains(t, err, fmt.Sprintf("%d %s: scripted status %d", status, http.StatusText(status), status))
			assert.Equal(t, 1, f.calls(), "the Temporal retry policy is the only retry layer")
		})
	}
}

func TestKeyNeverInErrors(t *testing.T) {
	const key = "sk-DISTINCTIVE-openai-key"
	for _, tc := range []struct {
		name   string
		status int
		body   string
	}{
		{"401 echoing the key", 401, `{"error":{"message":"Incorrect API key provided: ` + key + `","type":"invalid_request_error","code":"invalid_api_key"}}`},
		{"refusal quoting it", 200, `{"model":"m","choices":[{"finish_reason":"stop","message":{"content":null,"refusal":"no, ` + key + `"}}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			_, err := newJudge(t, jevopenai.Options{BaseURL: srv.URL + "/v1", APIKey: key}).Decide(context.Background(), judgetest.BoundaryRequest())
			require.Error(t, err)
			for e := err; e != nil; e = errors.Unwrap(e) {
				assert.NotContains(t, e.Error(), key)
			}
			assert.Contains(t, err.Error(), "[REDACTED]")
		})
	}
}

func TestBudget(t *testing.T) {
	f, srv := newFake(t)
	f.script(judgetest.Reply{Kind: judgetest.KindHang})
	_, err := newJudge(t, jevopenai.Options{BaseURL: srv.URL + "/v1", Budget: 200 * time.Millisecond}).Decide(context.Background(), judgetest.BoundaryRequest())
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "no answer within the budget of 200ms")
}

func TestNewOptions(t *testing.T) {
	j := newJudge(t, jevopenai.Options{})
	assert.Equal(t, jevopenai.DefaultModel, j.Model())
	assert.Equal(t, jev.DefaultBudget, j.Budget())
	for _, tc := range []struct {
		name string
		opts jevopenai.Options
		want string
	}{
		{"bad base URL", jevopenai.Options{BaseURL: "localhost:11434"}, "not an absolute http or https URL"},
		{"budget above 30s", jevopenai.Options{Budget: time.Minute}, "more than the maximum of 30s"},
		{"negative token cap", jevopenai.Options{MaxCompletionTokens: -1}, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := jevopenai.New(tc.opts)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	_, err := newJudge(t, jevopenai.Options{BaseURL: "http://127.0.0.1:1/v1"}).Decide(context.Background(), jev.Request{State: json.RawMessage(`{}`)})
	require.ErrorIs(t, err, jev.ErrRejected, "a request without questions can never be answered")
}
