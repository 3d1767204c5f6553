package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/worker"
)

// scriptedModel speaks the chat-completions API: it answers every call
// on track, reporting a fixed usage, and keeps the messages it was sent.
type scriptedModel struct {
	mu       sync.Mutex
	messages [][]string // each call's messages' contents
}

func (m *scriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var contents []string
	for _, msg := range req.Messages {
		contents = append(contents, msg.Content)
	}
	m.mu.Lock()
	m.messages = append(m.messages, contents)
	m.mu.Unlock()
	answers := `{"breach":{"choice":"none","confidence":0.9},"off_track":{"probability":0.2},` +
		`"severity":{"score":0,"confidence":0.8},"blocked":{"probability":0.1}}`
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1764460800, "model": "gpt-scripted",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "logprobs": nil,
			"message": map[string]any{"role": "assistant", "content": answers, "refusal": nil}}},
		"usage": map[string]any{"prompt_tokens": 1200, "completion_tokens": 30, "total_tokens": 1230},
	})
}

// calls are the messages of every call so far, each call's joined.
func (m *scriptedModel) calls() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.messages))
	for _, c := range m.messages {
		out = append(out, strings.Join(c, "\n"))
	}
	return out
}

// jsonEscaped is s as a content window shows it inside a JSON string.
func jsonEscaped(_ *testing.T, s string) string { return testsuite.WindowText(s) }

// overseer eval with a model judge on recorded runs sends the model the
// runs' own commands and what they printed, in a content window, on a
// sample of the runs (--limit), and reports the judge's tokens and cost
// per assessment; with the window off, no command reaches the model.
func TestEvalWithAModelJudgeReadsTheRecordedRuns(t *testing.T) {
	dir := testsuite.SharedTraces(t, "mini-swe-agent-gemini-3-pro")
	model := &scriptedModel{}
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	for _, k := range []string{worker.EnvJudge, worker.EnvModel, worker.EnvJevURL, worker.EnvOpenAIModel, worker.EnvJudgeBudget} {
		t.Setenv(k, "")
	}
	t.Setenv(worker.EnvOpenAIBaseURL, srv.URL+"/v1")
	t.Setenv(worker.EnvOpenAIAPIKey, "sk-test-key")

	// The runs --limit 2 judges, and a command of each with what it
	// printed (the first short one that succeeded and printed something).
	recs, err := eval.LoadRuns(dir, "")
	require.NoError(t, err)
	sample := eval.Sample(recs, 2)
	require.Len(t, sample, 2)
	var commands, printed []string
	for _, r := range sample {
		for _, s := range r.Steps {
			if !s.Failed && s.Command != "" && len(s.Command) < 200 && len(s.Printed) > 40 && !strings.ContainsAny(s.Command, "=:") {
				commands = append(commands, `"text":"`+jsonEscaped(t, s.Command)+`"`)
				printed = append(printed, jsonEscaped(t, s.Printed[:40]))
				break
			}
		}
	}
	require.Len(t, commands, 2)

	code, out, errOut := runCLI("eval", "--traces", dir, "--judge", "openai", "--openai-model", "gpt-scripted", "--limit", "2",
		"--judge-input-price", "0.15", "--judge-output-price", "0.6")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "content window: the latest 8 calls of each run, 2048 bytes each and 12288 in all at most, redacted")
	assert.Contains(t, out, "judged 2 of the 261 runs read: a deterministic sample (--limit 2)")
	assert.Contains(t, out, "judge usage: 1200 input and 30 output tokens per assessment on average")
	assert.Contains(t, out, "at $0.15 and $0.6 per million input and output tokens, $0.00020 per assessment")
	calls := model.calls()
	boundaries := 0
	for _, r := range sample {
		boundaries += len(eval.Replay(r))
	}
	require.Len(t, calls, boundaries, "one call per boundary of the sampled runs")
	for i := range commands {
		assert.True(t, anyContains(calls, commands[i]), "run %s: its command %s reached the model", sample[i].ID, commands[i])
		assert.True(t, anyContains(calls, printed[i]), "run %s: what it printed %s reached the model", sample[i].ID, printed[i])
	}
	assert.False(t, anyContains(calls, "sk-test-key"))

	code, out, errOut = runCLI("eval", "--traces", dir, "--judge", "openai", "--openai-model", "gpt-scripted", "--limit", "2", "--json")
	require.Equal(t, 0, code, errOut)
	var rep eval.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, 2, rep.Runs)
	assert.Equal(t, 261, rep.RunsRead)
	require.NotNil(t, rep.ContentWindow)
	assert.Equal(t, 8, rep.ContentWindow.Calls)
	require.NotNil(t, rep.JudgeUsage)
	assert.Equal(t, boundaries, rep.JudgeUsage.Assessments)
	assert.InDelta(t, 1200, float64(rep.JudgeUsage.MeanInputTokens), 1e-9)
	assert.InDelta(t, 30, float64(rep.JudgeUsage.MeanOutputTokens), 1e-9)
	assert.Zero(t, rep.JudgeErrors)

	// Off: the model reads the counters only.
	before := len(model.calls())
	code, out, errOut = runCLI("eval", "--traces", dir, "--judge", "openai", "--openai-model", "gpt-scripted", "--limit", "2", "--content-window", "0")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "content window: off")
	off := model.calls()[before:]
	require.Len(t, off, boundaries)
	for i := range commands {
		assert.False(t, anyContains(off, commands[i]), "run %s: no command reaches the model", sample[i].ID)
	}

	// The learned judge never reads a window, and reports no usage.
	code, out, errOut = runCLI("eval", "--traces", dir, "--judge", "learned", "--limit", "2")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "content window")
	assert.NotContains(t, out, "judge usage")

	code, _, errOut = runCLI("eval", "--traces", dir, "--judge", "openai", "--limit", "2", "--content-window", "100")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--content-window 100")
	code, _, errOut = runCLI("eval", "--traces", dir, "--limit", "-1")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--limit -1")
}

func anyContains(texts []string, s string) bool {
	for _, x := range texts {
		if strings.Contains(x, s) {
			return true
		}
	}
	return false
}
