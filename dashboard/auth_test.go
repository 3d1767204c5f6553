package dashboard_test

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/oauth2-proxy/mockoidc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/corohq/temporal-overseer/dashboard"
)

var byField = regexp.MustCompile(`<input[^>]*name="by"`)

// post sends a form with the page's CSRF token and cookie (and any other
// cookies of c), as the browser does from the dashboard's own page.
func post(t *testing.T, c *http.Client, u string, form url.Values, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// pageToken reads the CSRF token of a page (the client's jar keeps the
// cookie).
func pageToken(t *testing.T, c *http.Client, u string, headers map[string]string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	m := csrfField.FindStringSubmatch(string(body))
	require.NotNil(t, m, "no CSRF field")
	return html.UnescapeString(m[1])
}

func jarClient(t *testing.T, followRedirects bool) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar}
	if !followRedirects {
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	}
	return c
}

func TestAuthOffKeepsTheNameField(t *testing.T) {
	srv := newServer(t, newBackend(), dashboard.Options{})
	_, body := get(t, srv.Client(), srv.URL+"/job?id=job-paused")
	assert.Regexp(t, byField, body, "without authentication the form asks who resumes")
	assert.NotContains(t, body, "signed in as")
	assert.NotContains(t, body, "Sign out")
}

func TestTrustedProxy(t *testing.T) {
	proxyHeaders := map[string]string{"X-Forwarded-User": "rev@example.com", "X-Forwarded-Groups": "sre, approvers,sre"}
	t.Run("identity from the proxy", func(t *testing.T) {
		b := newBackend()
		// The test's client connects from 127.0.0.1: that is the proxy.
		srv := newServer(t, b, dashboard.Options{TrustedProxy: dashboard.TrustedProxy{Addresses: []string{"127.0.0.0/8"}}})
		c := jarClient(t, false)
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/job?id=job-paused", nil)
		for k, v := range proxyHeaders {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.NotRegexp(t, byField, string(body), "with authentication the form has no name field")
		assert.Contains(t, string(body), "You resume as <b>rev@example.com</b>")
		assert.Contains(t, string(body), "signed in as <b>rev@example.com</b>")
		assert.NotContains(t, string(body), "Sign out", "signing out of a proxy is the proxy's business")

		token := pageToken(t, c, srv.URL+"/job?id=job-paused", proxyHeaders)
		// A name typed into a crafted form is ignored: by is the proxy's user.
		resp, body2 := post(t, c, srv.URL+"/job/resume", url.Values{"csrf": {token}, "id": {"job-paused"}, "by": {"mallory"},
			"note": {"checked"}, "gate": {"code-1"}}, proxyHeaders)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, body2)
		require.Len(t, b.resumed, 1)
		assert.Equal(t, "rev@example.com", b.resumed[0].By)
		assert.Equal(t, []string{"sre", "approvers"}, b.resumed[0].Groups, "the proxy's groups go with the resume")
		assert.Equal(t, "code-1", b.resumed[0].Gate)
	})
	t.Run("refused from elsewhere", func(t *testing.T) {
		b := newBackend()
		srv := newServer(t, b, dashboard.Options{TrustedProxy: dashboard.TrustedProxy{Addresses: []string{"10.20.30.40", "192.0.2.0/24"}}})
		for _, path := range []string{"/", "/job?id=job-paused", "/waiting", "/static/style.css"} {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
			for k, v := range proxyHeaders {
				req.Header.Set(k, v)
			}
			resp, err := srv.Client().Do(req)
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, http.StatusForbidden, resp.StatusCode, path)
			assert.Contains(t, string(body), "This dashboard takes its users&#39; identity from its trusted proxy only, and this request came from 127.0.0.1 instead.", path)
		}
		resp, body := post(t, srv.Client(), srv.URL+"/job/resume", url.Values{"id": {"job-paused"}, "by": {"x"}}, proxyHeaders)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, body)
		assert.Empty(t, b.resumed)
		code, _ := get(t, srv.Client(), srv.URL+"/healthz")
		assert.Equal(t, http.StatusOK, code, "health checks do not come through the proxy")
	})
	t.Run("no user header", func(t *testing.T) {
		srv := newServer(t, newBackend(), dashboard.Options{TrustedProxy: dashboard.TrustedProxy{Addresses: []string{"127.0.0.1", "::1"}}})
		code, body := get(t, srv.Client(), srv.URL+"/")
		assert.Equal(t, http.StatusUnauthorized, code)
		assert.Contains(t, body, "The proxy sent no X-Forwarded-User header")
		// The 401 page is styled: its assets need no sign-in.
		for _, asset := range regexp.MustCompile(`(?:href|src)="(/static/[^"]+)"`).FindAllStringSubmatch(body, -1) {
			code, css := get(t, srv.Client(), srv.URL+asset[1])
			assert.Equal(t, http.StatusOK, code, asset[1])
			assert.NotContains(t, css, "sent no X-Forwarded-User", asset[1])
		}
		assert.Contains(t, body, `href="/static/style.css`)
	})
	t.Run("own header names", func(t *testing.T) {
		b := newBackend()
		srv := newServer(t, b, dashboard.Options{TrustedProxy: dashboard.TrustedProxy{Addresses: []string{"127.0.0.1"},
			UserHeader: "X-Forwarded-Email", GroupsHeader: "X-Auth-Groups"}})
		h := map[string]string{"X-Forwarded-Email": "ops@example.com", "X-Forwarded-User": "ignored"}
		c := jarClient(t, false)
		token := pageToken(t, c, srv.URL+"/job?id=job-paused", h)
		resp, body := post(t, c, srv.URL+"/job/resume", url.Values{"csrf": {token}, "id": {"job-paused"}}, h)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, body)
		require.Len(t, b.resumed, 1)
		assert.Equal(t, "ops@example.com", b.resumed[0].By)
	})
}

func TestAuthOptions(t *testing.T) {
	b := newBackend()
	for name, opts := range map[string]dashboard.Options{
		"both":          {OIDC: dashboard.OIDC{IssuerURL: "http://127.0.0.1:1", ClientID: "c", RedirectURL: "http://127.0.0.1:8080/auth/callback"}, TrustedProxy: dashboard.TrustedProxy{Addresses: []string{"127.0.0.1"}}},
		"bad proxy":     {TrustedProxy: dashboard.TrustedProxy{Addresses: []string{"proxy.internal"}}},
		"no client id":  {OIDC: dashboard.OIDC{IssuerURL: "http://127.0.0.1:1", RedirectURL: "http://127.0.0.1:8080/auth/callback"}},
		"bad issuer":    {OIDC: dashboard.OIDC{IssuerURL: "127.0.0.1:1", ClientID: "c", RedirectURL: "http://127.0.0.1:8080/auth/callback"}},
		"other path":    {OIDC: dashboard.OIDC{IssuerURL: "http://127.0.0.1:1", ClientID: "c", RedirectURL: "http://127.0.0.1:8080/callback"}},
		"short session": {OIDC: dashboard.OIDC{IssuerURL: "http://127.0.0.1:1", ClientID: "c", RedirectURL: "http://127.0.0.1:8080/auth/callback"}, SessionKey: []byte("short")},
	} {
		opts.Backend = b
		_, err := dashboard.New(opts)
		assert.Error(t, err, name)
	}
}

// oidcServer runs a real in-process OpenID provider (discovery, JWKS,
// signed ID tokens, PKCE checked) and the dashboard signing in with it.
func oidcServer(t *testing.T, b *fakeBackend, user *mockoidc.MockUser) (*httptest.Server, *mockoidc.MockOIDC) {
	t.Helper()
	m, err := mockoidc.Run()
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Shutdown() })
	// The redirect URL names the dashboard's own address: listen first.
	srv := httptest.NewUnstartedServer(nil)
	cfg := m.Config()
	d, err := dashboard.New(dashboard.Options{Backend: b, OIDC: dashboard.OIDC{
		IssuerURL: cfg.Issuer, ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret,
		RedirectURL: "http://" + srv.Listener.Addr().String() + "/auth/callback", GroupsClaim: "groups",
	}})
	require.NoError(t, err)
	srv.Config.Handler = d
	srv.Start()
	t.Cleanup(srv.Close)
	if user != nil {
		m.QueueUser(user)
	}
	return srv, m
}

func TestOIDCSignIn(t *testing.T) {
	b := newBackend()
	srv, _ := oidcServer(t, b, &mockoidc.MockUser{Subject: "u-1", Email: "rev@example.com", EmailVerified: true,
		PreferredUsername: "rev", Groups: []string{"approvers"}})

	anon := jarClient(t, false)
	resp, err := anon.Get(srv.URL + "/job?id=job-paused")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "a page redirects to sign in")
	assert.Equal(t, "/auth/login?next="+url.QueryEscape("/job?id=job-paused"), resp.Header.Get("Location"))
	code, _ := get(t, anon, srv.URL+"/job?id=job-paused&fragment=live")
	assert.Equal(t, http.StatusUnauthorized, code, "a page's live fragment is refused, not redirected")
	r, body := post(t, anon, srv.URL+"/job/resume", url.Values{"id": {"job-paused"}, "by": {"x"}}, nil)
	assert.Equal(t, http.StatusUnauthorized, r.StatusCode)
	assert.Contains(t, body, "Sign in first")
	r, _ = post(t, anon, srv.URL+"/waiting/resume", url.Values{"gate": {"job=job-paused&gate=code-1"}, "by": {"x"}}, nil)
	assert.Equal(t, http.StatusUnauthorized, r.StatusCode)
	code, _ = get(t, anon, srv.URL+"/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Empty(t, b.resumed)

	// Sign in: the provider redirects back at once with the queued user.
	c := jarClient(t, true)
	resp, err = c.Get(srv.URL + "/job?id=job-paused")
	require.NoError(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, string(page))
	assert.Equal(t, "/job", resp.Request.URL.Path, "back on the page asked for")
	assert.Contains(t, string(page), "signed in as <b>rev@example.com</b>")
	assert.NotRegexp(t, byField, string(page))
	assert.Contains(t, string(page), "Sign out")
	u, _ := url.Parse(srv.URL)
	var session *http.Cookie
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == dashboard.SessionCookieName {
			session = ck
		}
	}
	require.NotNil(t, session, "a session cookie")
	assert.NotContains(t, session.Value, "rev@example.com", "the session cookie is sealed")

	token := pageToken(t, c, srv.URL+"/job?id=job-paused", nil)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	r, body = post(t, c, srv.URL+"/job/resume", url.Values{"csrf": {token}, "id": {"job-paused"}, "by": {"mallory"}, "note": {"ok"}}, nil)
	require.Equal(t, http.StatusSeeOther, r.StatusCode, body)
	require.Len(t, b.resumed, 1)
	assert.Equal(t, "rev@example.com", b.resumed[0].By, "by is the signed-in user, not the typed name")
	assert.Equal(t, []string{"approvers"}, b.resumed[0].Groups, "the ID token's groups go with the resume")

	// A forged session cookie signs no one in.
	forged := jarClient(t, false)
	forged.Jar.SetCookies(u, []*http.Cookie{{Name: dashboard.SessionCookieName, Value: session.Value[:len(session.Value)-2] + "AA"}})
	resp, err = forged.Get(srv.URL + "/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode)

	// Sign out: the session ends.
	r, _ = post(t, c, srv.URL+"/auth/logout", url.Values{}, nil)
	require.Equal(t, http.StatusSeeOther, r.StatusCode)
	assert.Equal(t, "/auth/signed-out", r.Header.Get("Location"))
	resp, err = c.Get(srv.URL + "/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "signed out, pages redirect to sign in again")
}

func TestOIDCCallbackRefusals(t *testing.T) {
	srv, m := oidcServer(t, newBackend(), nil)
	c := jarClient(t, false)
	// A callback this browser did not start.
	code, body := get(t, c, srv.URL+"/auth/callback?code=x&state=y")
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body, "This sign-in was not started here")
	// The provider's refusal is one fixed sentence: anyone can send a
	// browser here with any text.
	code, body = get(t, c, srv.URL+"/auth/callback?"+url.Values{
		"error": {"access_denied"}, "error_description": {"Your account is locked: call +1 555 0100 to unlock it"}}.Encode())
	assert.Equal(t, http.StatusForbidden, code)
	assert.Contains(t, body, "The identity provider refused the sign-in: sign in again, or ask your administrator for access.")
	for _, chosen := range []string{"access_denied", "locked", "555"} {
		assert.NotContains(t, body, chosen, "the page shows none of the request's text")
	}

	// A state that does not match the one this browser started with.
	resp, err := c.Get(srv.URL + "/auth/login?next=/waiting")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	authz, err := url.Parse(resp.Header.Get("Location"))
	require.NoError(t, err)
	q := authz.Query()
	assert.Equal(t, "S256", q.Get("code_challenge_method"), "PKCE")
	assert.NotEmpty(t, q.Get("code_challenge"))
	assert.NotEmpty(t, q.Get("nonce"))
	assert.NotEmpty(t, q.Get("state"))
	assert.Equal(t, "openid profile email groups", q.Get("scope"))
	assert.Equal(t, m.Config().ClientID, q.Get("client_id"))
	code, body = get(t, c, srv.URL+"/auth/callback?code=x&state="+url.QueryEscape(q.Get("state")+"x"))
	assert.Equal(t, http.StatusBadRequest, code, body)

	// A user with neither a verified email nor a username is refused.
	m.QueueUser(&mockoidc.MockUser{Subject: "u-2"})
	c = jarClient(t, true)
	code, body = get(t, c, srv.URL+"/")
	assert.Equal(t, http.StatusForbidden, code, body)
	assert.Contains(t, body, "neither a verified email nor a preferred_username")
}

// The provider's error code is logged, clipped; its description is not.
func TestOIDCCallbackLogsTheErrorCodeClipped(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	d, err := dashboard.New(dashboard.Options{Backend: newBackend(), Logger: zap.New(core),
		OIDC: dashboard.OIDC{IssuerURL: "http://127.0.0.1:1", ClientID: "c", RedirectURL: "http://127.0.0.1:8080/auth/callback"}})
	require.NoError(t, err)
	srv := newServerFor(t, d)
	code, _ := get(t, srv.Client(), srv.URL+"/auth/callback?"+url.Values{
		"error": {strings.Repeat("e", 500)}, "error_description": {"chosen text"}}.Encode())
	assert.Equal(t, http.StatusForbidden, code)
	entries := logs.FilterMessage("dashboard: the identity provider refused a sign-in").All()
	require.Len(t, entries, 1)
	logged := fmt.Sprint(entries[0].ContextMap())
	assert.Contains(t, logged, strings.Repeat("e", 64)+"…")
	assert.NotContains(t, logged, strings.Repeat("e", 65))
	assert.NotContains(t, logged, "chosen text")
}

func TestOIDCNextStaysOnTheDashboard(t *testing.T) {
	srv, _ := oidcServer(t, newBackend(), nil)
	for _, next := range []string{"//evil.example/x", "https://evil.example/", "/\\evil.example", "evil"} {
		c := jarClient(t, true)
		resp, err := c.Get(srv.URL + "/auth/login?next=" + url.QueryEscape(next))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, next)
		assert.Equal(t, strings.TrimPrefix(srv.URL, "http://"), resp.Request.URL.Host, next)
		assert.Equal(t, "/", resp.Request.URL.Path, next)
	}
}
