package e2e_test

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/oauth2-proxy/mockoidc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// startOIDCDashboard serves the dashboard signing its users in with the
// OpenID provider m, on a loopback port of its own.
func startOIDCDashboard(t *testing.T, srv server, m *mockoidc.MockOIDC) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base := "http://" + ln.Addr().String()
	cfg := m.Config()
	d, err := dashboard.New(dashboard.Options{Client: srv.Client(), Namespace: srv.Namespace(),
		// The rows do not refresh under the test's clicks (selected rows
		// never do; this keeps the first click from racing a refresh).
		Refresh: 30 * time.Second,
		OIDC: dashboard.OIDC{IssuerURL: cfg.Issuer, ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret,
			RedirectURL: base + "/auth/callback", GroupsClaim: "groups"},
	})
	require.NoError(t, err)
	hs := httptest.NewUnstartedServer(d)
	_ = hs.Listener.Close()
	hs.Listener = ln
	hs.Start()
	t.Cleanup(hs.Close)
	return base
}

// TestDashboardOIDCBatchResumeInChromium signs in to the dashboard in
// headless Chromium through a real in-process OpenID provider (discovery,
// JWKS, RS256-signed ID tokens, PKCE checked), opens the Waiting view,
// selects two paused jobs and resumes both with one note: each is resumed
// at its own gate, by the signed-in identity, never a typed name.
func TestDashboardOIDCBatchResumeInChromium(t *testing.T) {
	exe := requireChromium(t)
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{})

	m, err := mockoidc.Run()
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Shutdown() })
	const reviewer = "reviewer@example.com"
	m.QueueUser(&mockoidc.MockUser{Subject: "rev-1", Email: reviewer, EmailVerified: true, PreferredUsername: "reviewer",
		Groups: []string{"approvers"}})
	base := startOIDCDashboard(t, srv, m)

	runs := []string{}
	for _, obj := range []string{"Add CSV export", "Add PDF export"} {
		run := startJobWithMemo(t, c, tq, workflows.JobInput{Objective: obj, Scenario: activities.Looping}, "")
		runs = append(runs, run.GetID())
		t.Cleanup(func() { _, _ = finish(t, c, run, "e2e-reviewer") })
	}
	gates := map[string]string{}
	for _, id := range runs {
		eventually(t, "job "+id+" to pause", 30*time.Second, func() bool { return status(t, c, id).Paused })
		gates[id] = status(t, c, id).GateID
		require.NotEmpty(t, gates[id])
	}

	ctx := browser(t, exe)
	// Not signed in: the dashboard sends the browser to the provider,
	// which signs the queued user in and sends it back to the Waiting view.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/waiting"),
		chromedp.WaitVisible(chromedp.CSS(`[data-user]`)),
	))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	assert.Equal(t, base+"/waiting", loc, "back on the page asked for")
	user, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-user]`)))
	require.NoError(t, err)
	assert.Equal(t, "signed in as "+reviewer, user)
	// The search attributes that list the jobs become visible a moment
	// after the status query says paused.
	rows := func() int {
		n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf(`document.querySelectorAll(%q).length`,
			fmt.Sprintf(`tr[data-job=%q], tr[data-job=%q]`, runs[0], runs[1]))))
		return n
	}
	eventually(t, "both jobs in the Waiting view", 20*time.Second, func() bool {
		if rows() == 2 {
			return true
		}
		_ = chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`form.batch`)))
		return false
	})
	for _, id := range runs {
		gate, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).dataset.gate`, fmt.Sprintf(`tr[data-job=%q]`, id))))
		require.NoError(t, err)
		assert.Equal(t, gates[id], gate, "the row names the gate the job has open")
	}
	byFields, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("input[name=by]").length`))
	require.NoError(t, err)
	assert.Zero(t, byFields, "signed in, nobody types a name")
	as, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`form.batch [data-resume-as]`)))
	require.NoError(t, err)
	assert.Contains(t, as, "You resume as "+reviewer)

	// Select both, one note, one action.
	const note = "Reviewed both in the queue: find the root cause first."
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-job=%q] input[type=checkbox]`, runs[0]))),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-job=%q] input[type=checkbox]`, runs[1]))),
		chromedp.SendKeys(chromedp.CSS(`form.batch textarea[name=note]`), note),
		chromedp.Click(chromedp.CSS(`form.batch button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`section.results`)),
	))
	for _, id := range runs {
		res, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(fmt.Sprintf(`tr[data-result=%q]`, id))))
		require.NoError(t, err)
		assert.Contains(t, res, gates[id], "the result names the job's own gate")
		assert.Contains(t, res, "resumed by "+reviewer)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`document.querySelector(%q).dataset.ok`, fmt.Sprintf(`tr[data-result=%q]`, id))))
		require.NoError(t, err)
		assert.Equal(t, "true", ok, res)
	}
	_ = chromedp.Do(ctx, chromedp.Navigate("about:blank")) // stop the page's polling

	// Temporal's record: each job's own gate closed by the signed-in user
	// with the one note.
	for _, id := range runs {
		s := status(t, c, id)
		var closed *overseer.Gate
		for i := range s.Gates {
			if s.Gates[i].ID == gates[id] {
				closed = &s.Gates[i]
			}
		}
		require.NotNil(t, closed, "job %s has its gate %s", id, gates[id])
		assert.Equal(t, "resumed", closed.Outcome())
		assert.Equal(t, reviewer, closed.By)
		assert.Equal(t, note, closed.Note)
		assert.Equal(t, overseer.ActionContinue, closed.Action)
		// No other gate of the job was closed by the batch.
		for _, g := range s.Gates {
			if g.ID != gates[id] {
				assert.NotEqual(t, reviewer, g.By, "gate %s of %s", g.ID, id)
			}
		}
	}
}

// TestDashboardOIDCApproversAndFourEyesInChromium resumes a gate from the
// dashboard's job page, signed in through a real in-process OpenID
// provider, under an approvers list (a user and a group from the groups
// claim) and the four-eyes rule: a user outside the list and the job's own
// starter see why they may not open the gate instead of the form, a resume
// they post all the same is refused with the typed error (the page's "You
// may not open this gate" sentence is the dashboard's wording of
// OverseerNotAuthorized) and the gate stays open; an approver who did not
// start the job resumes it, as the signed-in identity.
func TestDashboardOIDCApproversAndFourEyesInChromium(t *testing.T) {
	exe := requireChromium(t)
	srv := e2eServer(t)
	c := srv.Client()
	const (
		starter  = "alice@example.com" // an approver, and the job's starter
		outsider = "mallory@example.com"
		reviewer = "bob@example.com" // an approver through group:sre
	)
	tq := startWorker(t, srv, worker.Config{Approval: overseer.Approval{Approvers: []string{starter, "group:sre"}, FourEyes: true}})

	m, err := mockoidc.Run()
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Shutdown() })
	base := startOIDCDashboard(t, srv, m)

	id := fmt.Sprintf("e2e-dash-approvers-%d", time.Now().UnixNano())
	_, err = c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: tq,
		Memo: map[string]any{overseer.StartedByMemoKey: starter}},
		workflows.JobWorkflowName, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	require.NoError(t, err)
	// The looping job pauses at every gate and the approval refuses the
	// helpers' resumes: end it through Temporal.
	t.Cleanup(func() { _ = c.TerminateWorkflow(context.Background(), id, "", "e2e: test over") })
	eventually(t, "the job to pause", 30*time.Second, func() bool { return status(t, c, id).Paused })
	gate := status(t, c, id).GateID
	require.NotEmpty(t, gate)
	gateOf := func(s overseer.Status) *overseer.Gate {
		for i := range s.Gates {
			if s.Gates[i].ID == gate {
				return &s.Gates[i]
			}
		}
		return nil
	}

	ctx := browser(t, exe)
	signedIn := false
	noForm := false // the last resumeAs found no form, only why
	// resumeAs signs user in (signing the previous one out), sends the
	// job page's resume form and returns the page's refusal, if any. A
	// user the approval refuses gets no form: the page says why, and a
	// resume posted all the same (with the session's CSRF token) is
	// refused with the same sentence.
	resumeAs := func(user *mockoidc.MockUser) (refusal string) {
		t.Helper()
		if signedIn {
			require.NoError(t, chromedp.Do(ctx,
				chromedp.Click(chromedp.CSS(`form.signout button[type=submit]`)),
				chromedp.WaitVisible(chromedp.CSS(`a[href="/auth/login"]`)),
			), "sign out")
		}
		// The provider signs in the user queued next.
		m.QueueUser(user)
		require.NoError(t, chromedp.Do(ctx,
			chromedp.Navigate(base+"/job?id="+id),
			chromedp.WaitVisible(chromedp.CSS(`form.resume button[type=submit], [data-cannot-resume]`)),
		), "sign in as %s", user.Email)
		signedIn, noForm = true, false
		who, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-user]`)))
		require.NoError(t, err)
		require.Equal(t, "signed in as "+user.Email, who)
		approval, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-approval]`)))
		require.NoError(t, err)
		assert.Equal(t, "Who may resume: "+starter+", group:sre (not the job's starter)", approval)
		if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("[data-cannot-resume]").length`)); err == nil && n > 0 {
			shown, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-cannot-resume]`)))
			require.NoError(t, err)
			forms, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("form.resume").length`))
			require.NoError(t, err)
			assert.Zero(t, forms, "no resume form for %s, who would only be refused", user.Email)
			// The session's CSRF token is on the Waiting page's form.
			require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/waiting"), chromedp.WaitReady(chromedp.CSS(`input[name=csrf]`))))
			posted, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(async () => {
				const body = new URLSearchParams({id: %q, gate: %q, note: "crafted", csrf: document.querySelector("input[name=csrf]").value});
				const r = await fetch("/job/resume", {method: "POST", body, redirect: "manual"});
				const doc = new DOMParser().parseFromString(await r.text(), "text/html");
				const e = doc.querySelector("[data-form-error], [data-cannot-resume]");
				return r.status + " " + (e ? e.textContent : "");
			})()`, id, gate), chromedp.EvalAwaitPromise))
			require.NoError(t, err)
			assert.Equal(t, "422 "+shown, posted, "a resume posted all the same is refused with the sentence the page showed")
			noForm = true
			return shown
		}
		formGate, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("form.resume input[name=gate]").value`))
		require.NoError(t, err)
		require.Equal(t, gate, formGate, "the form resumes the gate the test watches")
		require.NoError(t, chromedp.Do(ctx,
			chromedp.SendKeys(chromedp.CSS(`form.resume textarea[name=note]`), "Reviewed by "+user.Email),
			chromedp.Click(chromedp.CSS(`form.resume button[type=submit]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-form-error], p.flash`)),
		), "send the form as %s", user.Email)
		n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("[data-form-error]").length`))
		require.NoError(t, err)
		if n == 0 {
			return ""
		}
		msg, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`[data-form-error]`)))
		require.NoError(t, err)
		return msg
	}
	stillOpen := func(who string) {
		t.Helper()
		s := status(t, c, id)
		assert.True(t, s.Paused, "refused %s: the job stays paused", who)
		assert.Equal(t, gate, s.GateID, "refused %s: at the same gate", who)
		g := gateOf(s)
		require.NotNil(t, g)
		assert.Equal(t, "open", g.Outcome(), "refused %s: the gate stays open", who)
		assert.Empty(t, g.By)
	}

	// Not on the list.
	msg := resumeAs(&mockoidc.MockUser{Subject: "u-mallory", Email: outsider, EmailVerified: true, PreferredUsername: "mallory",
		Groups: []string{"dev"}})
	assert.Equal(t, fmt.Sprintf("You may not open this gate: %q may not resume this job: its approvers are %s, group:sre.", outsider, starter), msg)
	assert.True(t, noForm, "the page told %s why instead of showing the form", outsider)
	stillOpen(outsider)

	// The job's starter, an approver: refused by the four-eyes rule.
	msg = resumeAs(&mockoidc.MockUser{Subject: "u-alice", Email: starter, EmailVerified: true, PreferredUsername: "alice",
		Groups: []string{"sre"}})
	assert.Equal(t, fmt.Sprintf("You may not open this gate: %q started this job and may not resume its own gate (four-eyes rule): ask another approver.", starter), msg)
	assert.True(t, noForm, "the page told %s why instead of showing the form", starter)
	stillOpen(starter)

	// An approver (through the groups claim) who did not start the job.
	msg = resumeAs(&mockoidc.MockUser{Subject: "u-bob", Email: reviewer, EmailVerified: true, PreferredUsername: "bob",
		Groups: []string{"sre"}})
	assert.Empty(t, msg, "the approver resumes")
	flash, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`p.flash`)))
	require.NoError(t, err)
	assert.Equal(t, "The job was resumed.", flash)
	resumed, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(fmt.Sprintf(`li[data-gate-event="resumed"][data-gate=%q]`, gate))))
	require.NoError(t, err)
	assert.Contains(t, resumed, "resumed by "+reviewer, "the timeline names the signed-in approver")
	_ = chromedp.Do(ctx, chromedp.Navigate("about:blank")) // stop the page's polling

	// Temporal's record: the gate closed by the approver, with the note
	// sent from the page; neither refused user closed any gate.
	s := status(t, c, id)
	g := gateOf(s)
	require.NotNil(t, g)
	assert.Equal(t, "resumed", g.Outcome())
	assert.Equal(t, reviewer, g.By)
	assert.Equal(t, "Reviewed by "+reviewer, g.Note)
	assert.Equal(t, overseer.ActionContinue, g.Action)
	for _, g := range s.Gates {
		assert.NotContains(t, []string{outsider, starter}, g.By, "gate %s", g.ID)
	}
}
