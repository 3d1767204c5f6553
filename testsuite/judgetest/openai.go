package judgetest

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

// ScriptedModel is an OpenAI-compatible chat-completions server in
// process, for tests of a model judge end to end: it answers every POST
// /v1/chat/completions with a valid answer to the Jev request it finds in
// the second message ([ValidResponse]), with the usage Usage says, and
// keeps what it was sent. Serve it with httptest.NewServer; the judge's
// base URL is the server's URL + "/v1".
type ScriptedModel struct {
	// Usage is each completion's token usage.
	Usage jev.Usage

	mu       sync.Mutex
	requests []ChatRequest
}

// ChatRequest is what a ScriptedModel was sent: the model asked and the
// messages, in order.
type ChatRequest struct {
	Model    string        `json:"model"`
	Messages []ChatMessage `json:"messages"`
}

// ChatMessage is one message of a ChatRequest.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Requests are the chat requests received so far, in order.
func (m *ScriptedModel) Requests() []ChatRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]ChatRequest(nil), m.requests...)
}

// ServeHTTP implements http.Handler.
func (m *ScriptedModel) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	var cr ChatRequest
	if err == nil {
		err = json.Unmarshal(body, &cr)
	}
	var req jev.Request
	if err == nil && len(cr.Messages) > 1 {
		err = json.Unmarshal([]byte(cr.Messages[1].Content), &req)
	}
	if err != nil || len(cr.Messages) < 2 {
		http.Error(w, `{"error":{"message":"not a Jev chat request","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.requests = append(m.requests, cr)
	usage := m.Usage
	m.mu.Unlock()
	text, _ := json.Marshal(CompletionContent(ValidResponse(req)))
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-scripted", "object": "chat.completion", "created": 1764460800, "model": "scripted-model",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "logprobs": nil,
			"message": map[string]any{"role": "assistant", "content": string(text), "refusal": nil}}},
		"usage": map[string]any{"prompt_tokens": usage.InputTokens, "completion_tokens": usage.OutputTokens,
			"total_tokens": usage.InputTokens + usage.OutputTokens},
	})
}

// CompletionContent is resp's answers as a model writes them in a chat
// completion's content (the structured output jevopenai's schema asks
// for): per question, only the fields of its type.
func CompletionContent(resp *jev.Response) map[string]any {
	content := map[string]any{}
	for name, a := range resp.Answers {
		s := map[string]any{}
		if a.Probability != nil {
			s["probability"] = *a.Probability
		}
		if a.Choice != "" {
			s["choice"] = a.Choice
		}
		if a.Score != nil {
			s["score"] = *a.Score
		}
		if a.Confidence != nil {
			s["confidence"] = *a.Confidence
		}
		if a.Probabilities != nil {
			s["probabilities"] = a.Probabilities
		}
		content[name] = s
	}
	return content
}
