// Package jevhttp speaks the Jev structured-decision protocol (package jev)
// over HTTP, so that a fleet of workers can share one judge service, or
// use one written in another language.
//
// # Calling a judge service
//
// [Judge] is the client: a [jev.Judge] that POSTs each request to a Jev
// endpoint and validates the answer. Give it to the overseer plugin:
//
//	judge, err := jevhttp.New(jevhttp.Options{
//		URL:    "https://judge.internal.example/v1/decide",
//		APIKey: os.Getenv("JEV_API_KEY"),
//		Budget: 5 * time.Second,
//	})
//	if err != nil {
//		return err
//	}
//	plugin, err := overseer.NewPlugin(overseer.Options{Judge: judge})
//
// # Serving a judge
//
// [Handler] serves any [jev.Judge] over the same protocol; [Server] adds
// timeouts and a graceful shutdown (it is what `overseer judge serve`
// runs):
//
//	srv, err := jevhttp.NewServer(myJudge, jevhttp.ServerOptions{
//		HandlerOptions: jevhttp.HandlerOptions{APIKey: os.Getenv("JEV_API_KEY")},
//	})
//	if err != nil {
//		return err
//	}
//	ln, err := net.Listen("tcp", jevhttp.DefaultAddr)
//	if err != nil {
//		return err
//	}
//	return srv.Serve(ctx, ln) // until ctx is done
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
// The JSON Schemas of the three bodies are exported ([RequestSchema],
// [ResponseSchema], [ErrorSchema]) for implementations in other languages.
//
// # Errors and retries
//
// The client never retries and never follows redirects: the Temporal retry
// policy of the overseer's activity is the only retry layer. Its errors are
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
// # What the server answers
//
// [Handler] answers POST [DecidePath] (405 for other methods, 401 without
// the required key, 413 for a body above the limit, 400 for a body that is
// not a valid request), GET [HealthPath] (liveness) and GET [ReadyPath]
// (readiness: 503 once shutdown begins). It validates the judge's answer
// before sending it. [Server] adds read, write and idle timeouts and a
// graceful shutdown.
package jevhttp
