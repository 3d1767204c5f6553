// Package dashboard serves the overseer's web dashboard: server-rendered
// HTML (html/template, assets embedded in the binary, no front-end build)
// that lists jobs with their status badge — On track, Needs a look, Off
// track, Paused — P(on objective), phase and age, and shows each job's
// timeline of assessments per phase with a chart of P(on objective) against
// the bands, the answers, the digest, notes, pauses and resumes. A paused
// job is resumed or aborted from its page through the validated
// overseer.resume update, whose refusals are shown on the form.
//
// Everything is read from Temporal: jobs with ListWorkflow and the
// overseer's search attributes, details with the overseer.status query
// (package [github.com/corohq/temporal-overseer/ops], shared with the CLI).
// Pages refresh by themselves: a small embedded script polls an HTML
// fragment of the live part of the page (a meta refresh when scripts are
// off).
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
