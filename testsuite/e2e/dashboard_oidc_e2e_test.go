package e2e_test

import (
	"fmt"
	"net"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/oauth2-proxy/mockoidc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
