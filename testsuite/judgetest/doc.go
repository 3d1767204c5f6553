// Package judgetest is a conformance suite for [jev.Judge] implementations,
// in the manner of testing/slogtest: a backend's test describes the judge
// under test in a [Harness] and calls [Run], and the suite checks what
// every judge the overseer uses must do.
//
// # Writing a harness
//
// A [Harness] holds the judge and, when the backend behind it can be
// scripted (a fake HTTP server, a fake chat completion service, an
// in-process backend), a Script function. The suite calls Script with a
// [Reply] before each case, and the backend answers every following call
// with it: [KindAnswer] sends Reply.Response however invalid it is,
// [KindEmpty] an empty answer, [KindHTTPStatus] an HTTP error status and
// [KindHang] nothing at all, until the caller gives up. Script reports
// false for a reply the backend cannot express (an in-process backend has
// no HTTP status), and the case is skipped. [MarshalLoose] writes an answer
// the way a careless service does, with bare NaN tokens.
//
//	func TestConformance(t *testing.T) {
//		judgetest.Run(t, func(t *testing.T) *judgetest.Harness {
//			fake := newFakeServer(t) // answers what its Script says
//			return &judgetest.Harness{Judge: myjudge.New(fake.URL), Script: fake.Script,
//				ValidatesAnswers: true, ReportsUsage: true}
//		})
//	}
//
// A backend that cannot be scripted (a rules-based judge) leaves Script
// nil: the suite then asks it the phase-boundary request only and runs the
// cases that need no script.
//
// # What it checks
//
//   - Valid answers come back valid, with the model version and the token
//     usage the backend reported, for the overseer's phase-boundary request
//     ([BoundaryRequest]) and for a generic request ([GenericRequest]: other
//     names, described options, a longer scale).
//   - Each kind of invalid answer — NaN, -1, 1.1, an unknown option, a
//     missing question, an empty body, a score off the scale, a wrong
//     answer type, an extra answer — is an error wrapping
//     [jev.ErrInvalidAnswer] (from Decide itself when
//     Harness.ValidatesAnswers, else from [jev.Validate] on what Decide
//     returned): never something a caller could turn into a verdict.
//   - HTTP statuses, where the backend has them: 5xx, 408 and 429 are
//     retryable errors (neither jev.ErrInvalidAnswer nor [jev.ErrRejected]);
//     other 4xx wrap jev.ErrRejected.
//   - Context cancellation and deadlines, before and during a call, end the
//     call with an error wrapping [context.Canceled] or
//     [context.DeadlineExceeded].
//   - Concurrent calls, and the request is left unchanged.
//
// # Fuzzing parsers
//
// [CheckParsed] asserts the contract of a response parser on one input,
// for fuzz targets: it fails only with jev.ErrInvalidAnswer, and what it
// accepts validates, with every probability finite and in [0,1].
package judgetest
