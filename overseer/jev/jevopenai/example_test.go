package jevopenai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/jev/jevopenai"
)

var request = jev.Request{
	State: json.RawMessage(`{"phase": "test", "failed_runs": 3}`),
	Questions: map[string]jev.Question{
		"blocked": {Type: jev.Noul, Instructions: "The agent is blocked."},
	},
}

// completion is a chat completion whose content is the answers' JSON.
const completion = `{
  "id": "chatcmpl-1", "object": "chat.completion", "created": 1764460800, "model": "llama3.1:8b",
  "choices": [{"index": 0, "finish_reason": "stop",
    "message": {"role": "assistant", "content": "{\"blocked\": {\"probability\": 0.8}}"}}],
  "usage": {"prompt_tokens": 412, "completion_tokens": 9, "total_tokens": 421}
}`

// Ask a model served behind an OpenAI-compatible API: here a stand-in
// server that always answers with the same completion.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, completion)
	}))
	defer srv.Close()

	judge, err := jevopenai.New(jevopenai.Options{BaseURL: srv.URL + "/v1", APIKey: "unused", Model: "llama3.1:8b"})
	if err != nil {
		log.Fatal(err)
	}
	resp, err := judge.Decide(context.Background(), request)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: P(blocked) %.2f, %d tokens in, %d out\n",
		resp.ModelVersion, *resp.Answers["blocked"].Probability, resp.Usage.InputTokens, resp.Usage.OutputTokens)
	// Output:
	// llama3.1:8b: P(blocked) 0.80, 412 tokens in, 9 out
}

// The structured-output schema the judge sends with a request: one
// required property per question, in the answer's shape.
func ExampleSchema() {
	b, err := json.MarshalIndent(jevopenai.Schema(request), "", "  ")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(b))
	// Output:
	// {
	//   "additionalProperties": false,
	//   "description": "One answer per question, under the question's name.",
	//   "properties": {
	//     "blocked": {
	//       "additionalProperties": false,
	//       "description": "noul: The agent is blocked.",
	//       "properties": {
	//         "probability": {
	//           "description": "Probability that the statement is true: The agent is blocked.",
	//           "maximum": 1,
	//           "minimum": 0,
	//           "type": "number"
	//         }
	//       },
	//       "required": [
	//         "probability"
	//       ],
	//       "type": "object"
	//     }
	//   },
	//   "required": [
	//     "blocked"
	//   ],
	//   "type": "object"
	// }
}
