// Package jev is the Jev structured-decision protocol: typed questions,
// typed answers, their validation and the [Judge] interface.
//
// # Protocol
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
// A [Response] carries one [Answer] per question plus the model version,
// token [Usage] and latency.
//
// # Validation
//
// [Validate] turns every malformed response into an error wrapping
// [ErrInvalidAnswer]: a missing or extra answer, a wrong type, a probability
// that is NaN or outside [0,1], an unknown choice option, a score outside
// the scale, negative token counts, or an empty response. A malformed answer
// is never turned into a decision.
//
// # Judges
//
// [Judge] is the one interface every backend implements. [Scripted] replays
// canned steps for tests. The deterministic heuristic judge lives in package
// overseer because it reads the overseer's trajectory. Remote backends live
// in subpackages: jevhttp (a Jev HTTP endpoint, and a server for any Judge)
// and jevopenai (any OpenAI-compatible chat-completions endpoint). Package
// testsuite/judgetest is the conformance suite every backend passes.
//
// # Errors, budgets and retries
//
// A Judge never retries: the Temporal retry policy of the Overseer activity
// is the only retry layer. Its errors say whether retrying can help: an
// error wrapping [ErrInvalidAnswer] (a malformed answer) or [ErrRejected]
// (the backend refused the request for good, e.g. an HTTP 4xx) is not
// retried; any other error is. Remote backends bound each call with a
// budget ([DefaultBudget] 3 s, at most [MaxBudget] 30 s; [CheckBudget]).
//
// This package imports no other package of the project.
package jev
