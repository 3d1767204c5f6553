// Package judgetest is a conformance suite for [jev.Judge] implementations,
// in the manner of testing/slogtest: a backend's test builds a [Harness]
// and calls [Run], and the suite checks what every judge the overseer uses
// must do.
//
// # What it checks
//
//   - Valid answers come back valid, with the model version and the token
//     usage the backend reported, for the overseer's phase-boundary request
//     and for a generic request (other names, described options, a longer
//     scale).
//   - Each kind of invalid answer — NaN (written as a bare NaN where the
//     transport is JSON), -1, 1.1, an unknown option, a missing question, an
//     empty body, a score off the scale, a wrong answer type, an extra
//     answer — is an error wrapping [jev.ErrInvalidAnswer] (from Decide
//     itself when [Harness].ValidatesAnswers, else from [jev.Validate] on
//     what Decide returned): never something a caller could turn into a
//     verdict.
//   - HTTP statuses, where the backend has them: 5xx, 408 and 429 are
//     retryable errors (neither ErrInvalidAnswer nor [jev.ErrRejected]);
//     other 4xx wrap jev.ErrRejected.
//   - Context cancellation and deadlines, before and during a call, end the
//     call with an error wrapping [context.Canceled] or
//     [context.DeadlineExceeded].
//   - Concurrent calls, and the request is left unchanged.
//
// A backend that cannot be scripted (the heuristic judge) leaves
// [Harness].Script nil: the suite then asks it the phase-boundary request
// only and runs the cases that need no script.
package judgetest
