// Package jevhttp speaks the Jev structured-decision protocol over HTTP:
// [Judge] is the client a worker uses to ask a Jev endpoint, and [Handler]
// and [Server] serve any [jev.Judge] over the same protocol (what
// `overseer judge serve` runs), so a fleet of workers can share one judge
// service.
//
// # Wire format
//
// The client POSTs the request to the decide endpoint ([DecidePath]) as
// JSON, exactly as [jev.Request] marshals it:
//
//	POST /v1/decide
//	Content-Type: application/json
//	Authorization: Bearer <key>          (only when a key is configured)
//
//	{"state": {...}, "questions": {"off_track": {"type": "noul", "instructions": "..."}, ...}}
//
// A 200 answer carries one typed answer per question, the model version and
// the token usage, as [jev.Response] marshals it:
//
//	{"answers": {"off_track": {"type": "noul", "probability": 0.82}, ...},
//	 "model_version": "...", "usage": {"input_tokens": 812, "output_tokens": 64}, "latency_ns": 1200000}
//
// Every other answer has an [ErrorBody]: {"error": {"code": "...", "message": "..."}}.
// JSON Schemas of the three bodies are in the schema directory
// ([RequestSchema], [ResponseSchema], [ErrorSchema]); testdata holds golden
// request and response bodies (go test ./overseer/jev/jevhttp -update
// rewrites them).
//
// # Errors and retries
//
// The client never retries and never follows redirects: the Temporal retry
// policy of the Overseer activity is the only retry layer. Its errors are
// classified for that policy:
//
//   - An answer that does not fit the questions, a body that is not a
//     response (empty, truncated, a bare NaN, a string for a number) or is
//     too large, or the error code invalid_answer: wraps
//     [jev.ErrInvalidAnswer], never retried.
//   - A 4xx other than 408 and 429, a redirect, or the error code rejected:
//     wraps [jev.ErrRejected], never retried.
//   - Transport errors, 408, 429, 5xx, and no answer within the budget:
//     retried.
//
// Each call is bounded by the judge's budget ([Options].Budget; 3 s by
// default, at most 30 s).
//
// # Secrets
//
// The API key is read by the worker from its environment and lives in the
// [Judge]: it is sent only in the Authorization header, and every string the
// client puts in an error (including messages quoted from the service) is
// scrubbed of it. It never reaches the request body, so it never enters
// workflow history, activity inputs or logs.
//
// # Serving
//
// [Handler] answers POST [DecidePath] (405 for other methods, 401 without
// the required key, 413 for a body above the limit, 400 for a body that is
// not a valid request), GET [HealthPath] (liveness) and GET [ReadyPath]
// (readiness: 503 once shutdown begins). It validates the judge's answer
// before sending it. [Server] adds read, write and idle timeouts and a
// graceful shutdown.
package jevhttp
