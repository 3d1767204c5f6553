// Package dashboard serves the overseer's web dashboard: server-rendered
// HTML (html/template, assets embedded in the binary, no front-end build)
// that lists jobs with their status badge — On track, Needs a look, Off
// track, Not assessed, Paused (with the last assessment's verdict) —
// P(on objective), what the verdict was based on, phase and age, and shows
// each job's timeline of assessments per phase with a chart of
// P(on objective) against the policy's bands (the axis scaled to where
// the scores live; an assessment the judge abstained from is a marker on
// the axis, never a 0), the policy's false-pause promise, each verdict's
// basis, the answers, the digest, notes, and each gate by its outcome:
// opened, escalated (when, by which deadline rule), resumed or aborted by
// whom, expired (when, by which rule, and what it did: nobody resumed it)
// or cancelled with the run. A paused job is resumed or aborted from its
// page through the validated overseer.resume update; the form shows the
// open gate's deadline with the time left and who may resume it
// (overseer.Approval), and the update's refusals, including the approval's
// (OverseerNotAuthorized).
//
// The Waiting view (/waiting) is the queue of open gates across the
// namespace's running jobs, oldest first, with phase, reason, wait,
// deadline and who may open each. Several are resumed at once with one
// note and one action: one update per gate, each bound to the gate id the
// row showed, each result reported per job on the page ([WaitingBackend];
// TemporalBackend uses ops.Waiting and ops.ResumeAll).
//
// The Models view (/models) shows, per workflow type, the current model of
// the namespace's model registry with its policy's false-pause promise,
// who promoted it (overseer learn, with the figures in its note, or a
// person) and the earlier versions, the candidates overseer learn refused
// (when, the held-out AUROC of candidate and current model, the false
// pauses with their bound, why), and the latest promotions and rollbacks
// ([ModelsBackend]; TemporalBackend queries the registry). Beside the
// promise it shows the false-pause and catch rates the latest learn round
// measured on the newest closed jobs, with an alert when they are above
// the promise or break it, and the sentence that says how many more labelled runs a
// deployment needs ([LearnBackend]; TemporalBackend reads the rounds'
// memos, learn.LatestRounds).
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
//   - Without [Options].OIDC or [Options].TrustedProxy it has no
//     authentication: anyone who can reach it can resume jobs under any
//     name. Turn one on before exposing it past loopback.
//
// # Sign-in
//
// [OIDC] signs users in with OpenID Connect (github.com/coreos/go-oidc and
// golang.org/x/oauth2): the authorization-code flow with PKCE (S256), a
// random state and nonce kept in a short-lived sealed cookie, the ID
// token verified against the provider's keys, its nonce checked. The
// session is a cookie sealed with AES-GCM under [Options].SessionKey
// (HttpOnly, SameSite=Lax, Secure when the redirect URL is https), valid
// for [Options].SessionTTL; POST /auth/logout ends it. The identity is the
// ID token's email (unless email_verified is false), else its
// preferred_username; the groups are the [OIDC].GroupsClaim claim. The
// client secret goes to the provider's token endpoint only: it is never
// logged and never sent to Temporal.
//
//	d, err := dashboard.New(dashboard.Options{
//		Client: c,
//		OIDC: dashboard.OIDC{
//			IssuerURL:    "https://idp.example.com",
//			ClientID:     "overseer-dashboard",
//			ClientSecret: os.Getenv("OVERSEER_OIDC_CLIENT_SECRET"),
//			RedirectURL:  "https://overseer.example.com/auth/callback",
//			GroupsClaim:  "groups",
//		},
//		SessionKey: sessionKey, // the same on every replica
//	})
//
// [TrustedProxy] takes the identity from the header an authenticating
// proxy sets (X-Forwarded-User and X-Forwarded-Groups unless named
// otherwise) and refuses, with 403, every request whose remote address is
// not one of the proxy's.
//
// With either, every page needs a signed-in user (a page redirects to sign
// in, a form post or live fragment gets 401), the resume forms have no
// name field, and each resume's by is the verified identity, with its
// groups in ResumeRequest.Groups; a typed by is ignored. /healthz stays
// open.
//
// Inside the workflow an identity is what the caller claims: who may send
// the overseer.resume update at all is decided by the Temporal server (its
// authorizer and claim mapper, or Temporal Cloud's namespace permissions).
// Give write access on the namespace to the dashboard's client only, and
// read access to people, so that every resume carries a verified identity.
package dashboard
