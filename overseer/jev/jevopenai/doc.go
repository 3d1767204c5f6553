// Package jevopenai is a [jev.Judge] backed by any OpenAI-compatible
// chat-completions endpoint (a hosted API, vLLM, llama.cpp, Ollama…),
// through the official client library github.com/openai/openai-go/v3. It
// is a Go module of its own, so that the overseer plugin's module does not
// depend on that library.
//
// # Using it
//
// Give the judge to the overseer plugin; it asks the model the overseer's
// questions at every phase boundary, in the overseer's activity:
//
//	judge, err := jevopenai.New(jevopenai.Options{
//		BaseURL: "http://127.0.0.1:11434/v1", // Ollama; the OpenAI API if not set
//		Model:   "llama3.1:8b",
//		Budget:  10 * time.Second,
//	})
//	if err != nil {
//		return err
//	}
//	plugin, err := overseer.NewPlugin(overseer.Options{Judge: judge})
//
// The zero [Options] call the OpenAI API with [DefaultModel] and the key in
// $OPENAI_API_KEY. A model answers far more slowly than the overseer's
// built-in judges and its signal depends on the model: calibrate a policy
// for it (`overseer calibrate`) rather than keep the default thresholds.
//
// # How a request becomes a completion
//
// The system message explains the three answer types; the user message is
// the Jev request itself, as JSON ({state, questions}). The answer shape is
// enforced with a structured-output response format (json_schema, strict)
// derived from the questions by [Schema]: one required property per
// question —
//
//   - noul: {probability: number in [0,1]}
//   - choice: {choice: one of the options (enum), confidence: number in
//     [0,1], probabilities: {option: number in [0,1]} over every option}
//   - score: {score: number in [0, levels-1], confidence, probabilities
//     over every level}
//
// The completion's content is parsed by [ParseCompletion] and validated
// with [jev.Validate]; the model the server names and its prompt and
// completion token counts are recorded with the answers.
//
// # Errors and retries
//
// The client library's own retries are off (option.WithMaxRetries(0)): the
// Temporal retry policy is the only retry layer. An answer that does not
// fit the questions, empty or non-JSON content, a refusal, a completion cut
// off at its token limit or a body that is not a chat completion wraps
// [jev.ErrInvalidAnswer] (not retried); a 4xx other than 408 and 429 wraps
// [jev.ErrRejected] (not retried); transport errors, 408, 429, 5xx and an
// exhausted budget are retried. Every call is bounded by the budget (3 s by
// default, at most 30 s). The API key is sent only as a bearer header and is
// scrubbed from every error.
package jevopenai
