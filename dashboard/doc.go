// Package dashboard serves the overseer's web dashboard: server-rendered
// HTML (html/template, assets embedded in the binary, no front-end build)
// that lists jobs with their status badge — On track, Needs a look, Off
// track, Not assessed, Paused (with the last assessment's verdict) —
// P(on objective), what the verdict was based on, phase and age, and shows
// each job's timeline of assessments per phase with a chart of
// P(on objective) against the policy's bands (the axis scaled to where
// the scores live; an assessment the judge abstained from is a marker on
// the axis, never a 0), the policy's false-pause promise, each verdict's
// basis, the answers, the digest, notes, pauses and resumes. A paused
// job is resumed or aborted from its page through the validated
// overseer.resume update, whose refusals are shown on the form.
//
// Everything is read from Temporal: jobs with ListWorkflow and the
// overseer's search attributes, details with the overseer.status query
// (through package ops, as the CLI does).
// Pages refresh by themselves: a small embedded script polls an HTML
// fragment of the live part of the page (a meta refresh when scripts are
// off).
//
// # Serving it
//
// `overseer dashboard` runs it; to embed it in a program of your own:
//
//	d, err := dashboard.New(dashboard.Options{
//		Client:     c,
//		TemporalUI: "http://localhost:8233", // links to each job's history
//		Policy:     policy,                  // the bands the chart draws: your worker's policy
//	})
//	if err != nil {
//		return err
//	}
//	ln, err := net.Listen("tcp", "127.0.0.1:8080")
//	if err != nil {
//		return err
//	}
//	return dashboard.Serve(ctx, ln, d) // until ctx is done
//
// A [Backend] other than Temporal (a fake in tests) can stand in for the
// client. The dashboard is a Go module of its own.
//
// # Safe by default
//
//   - The CLI binds it to 127.0.0.1 unless told otherwise; the server
//     answers only to loopback host names and IP addresses unless
//     [Options.AllowedHosts] names more (a guard against DNS rebinding).
//   - html/template escapes everything rendered, including the chart's SVG;
//     a Content-Security-Policy allows only the dashboard's own script and
//     style sheet.
//   - The resume form is protected against cross-site requests three ways:
//     net/http's CrossOriginProtection (Sec-Fetch-Site and Origin against
//     Host), a signed double-submit token (an HMAC of a random SameSite=Strict,
//     HttpOnly cookie) and POST only.
//   - It has no authentication of its own: anyone who can reach it can
//     resume jobs. Put it behind your proxy's authentication before exposing
//     it past loopback.
package dashboard
