// Package jev is Jev, a small structured-decision protocol: a caller asks
// typed questions about some state and a judge (a model, a service, a set
// of rules) gives typed answers that are validated before anyone acts on
// them. The overseer asks its phase-boundary questions in Jev; this
// package holds the protocol's types, their validation and the [Judge]
// interface every backend implements. It depends on the standard library
// only.
//
// # Questions and answers
//
// A [Request] carries some state (any JSON) and named questions. Each
// [Question] has one of three shapes:
//
//   - [Noul]: the probability that a statement is true.
//   - [Choice]: one option from caller-defined criteria, with confidence and
//     per-option probabilities.
//   - [Score]: a position on a caller-defined ordered scale (0…len-1,
//     fractional), with confidence and per-level probabilities.
//
// For example:
//
//	req := jev.Request{
//		State: json.RawMessage(`{"phase": "test", "failed_runs": 3}`),
//		Questions: map[string]jev.Question{
//			"blocked":  {Type: jev.Noul, Instructions: "The agent is blocked."},
//			"severity": {Type: jev.Score, Levels: []string{"Cosmetic", "Review", "Stop"}},
//		},
//	}
//
// A [Response] carries one [Answer] per question plus the model version,
// token [Usage] and latency. Probabilities, scores and confidences are
// pointers, so that a missing number is told apart from zero; [Prob]
// makes one.
//
// # Validation
//
// [Validate] turns every malformed response into an error wrapping
// [ErrInvalidAnswer]: a missing or extra answer, a wrong type, a probability
// that is NaN or outside [0,1], an unknown choice option, a score outside
// the scale, negative token counts, or an empty response. A malformed answer
// is never turned into a decision:
//
//	if err := jev.Validate(req, resp); err != nil {
//		return err // errors.Is(err, jev.ErrInvalidAnswer)
//	}
//
// [ValidateRequest] checks the other side: that a request can be answered
// at all (known question types, uniquely named options and levels).
//
// # Judges
//
// [Judge] is the one interface every backend implements; [JudgeFunc] turns
// a function into one. [Scripted] replays canned answers and errors for
// tests. The overseer's own judges (a learned model and fixed rules) live
// in package overseer because they read its trajectory. Remote backends
// live in subpackages: jevhttp (a Jev HTTP endpoint, and a server for any
// Judge) and jevopenai (any OpenAI-compatible chat-completions endpoint).
// Package testsuite/judgetest is a conformance suite for a backend of your
// own.
//
// # Errors, budgets and retries
//
// A Judge never retries: the Temporal retry policy of the activity that
// calls it is the only retry layer. Its errors say whether retrying can
// help: an error wrapping [ErrInvalidAnswer] (a malformed answer) or
// [ErrRejected] (the backend refused the request for good, e.g. an HTTP
// 4xx) is not retried; any other error is. Remote backends bound each call
// with a budget: [CheckBudget] turns a configured duration into one
// ([DefaultBudget] 3 s when unset, at most [MaxBudget] 30 s).
//
// Backends quote parts of a server's answers in their errors: [Redact],
// [Clip], [RedactURL] and [RedactError] keep credentials out of them.
package jev
