package dashboard

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"go.uber.org/zap"
	"golang.org/x/oauth2"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

// OIDC turns on sign-in with OpenID Connect: the authorization-code flow
// with PKCE, state and nonce, against any OpenID provider (Google, Okta,
// Entra ID, Keycloak, Dex, …). Its zero value leaves it off.
type OIDC struct {
	// IssuerURL is the provider's issuer, e.g. https://accounts.google.com;
	// its discovery document is read on the first sign-in.
	IssuerURL string
	// ClientID is the dashboard's client id at the provider.
	ClientID string
	// ClientSecret is the client's secret. It is sent to the provider's
	// token endpoint only: never logged, never sent to Temporal. Empty for
	// a public client (PKCE alone).
	ClientSecret string
	// RedirectURL is the dashboard's callback as registered at the
	// provider: the address users reach the dashboard by followed by
	// /auth/callback, e.g. https://overseer.example.com/auth/callback.
	// Its host is answered to as if it were in AllowedHosts; an https URL
	// makes the session cookie Secure.
	RedirectURL string
	// GroupsClaim names the ID token's claim that lists the user's groups
	// (often "groups"). If not set, no groups are read.
	GroupsClaim string
	// Scopes are requested besides openid. If not set, profile and email
	// (and groups when GroupsClaim is "groups").
	Scopes []string
	// HTTPClient talks to the provider (e.g. one that trusts a private CA).
	// If not set, http.DefaultClient with a 10-second timeout per call.
	HTTPClient *http.Client
}

func (o OIDC) on() bool { return o.IssuerURL != "" }

// TrustedProxy takes the users' identity from an authenticating proxy in
// front of the dashboard (oauth2-proxy, Pomerium, an ingress with
// external auth, …). Its zero value leaves it off. The proxy must set the
// headers itself, overwriting any that the client sent.
type TrustedProxy struct {
	// Addresses are the proxy's IP addresses or CIDR ranges, e.g.
	// "10.0.3.7" or "10.0.3.0/24". A request from any other remote address
	// is refused (403).
	Addresses []string
	// UserHeader holds the user's identity. If not set, X-Forwarded-User
	// (oauth2-proxy's X-Forwarded-Email works too).
	UserHeader string
	// GroupsHeader holds the user's groups, comma-separated. If not set,
	// X-Forwarded-Groups.
	GroupsHeader string
}

func (p TrustedProxy) on() bool { return len(p.Addresses) > 0 }

// identity is who a request is from, as authentication verified it.
type identity struct {
	// Name is the resume's by: the email (or preferred_username) from
	// OIDC, the proxy's user header.
	Name   string   `json:"n"`
	Groups []string `json:"g,omitempty"`
}

type identityKey struct{}

func identityOf(ctx context.Context) (identity, bool) {
	id, ok := ctx.Value(identityKey{}).(identity)
	return id, ok
}

// Paths of the sign-in flow.
const (
	loginPath     = "/auth/login"
	callbackPath  = "/auth/callback"
	logoutPath    = "/auth/logout"
	signedOutPath = "/auth/signed-out"
)

// Cookies of the sign-in.
const (
	// SessionCookieName holds the signed-in user (encrypted and
	// authenticated with the session key).
	SessionCookieName = "overseer_session"
	// flowCookieName holds one sign-in's state, nonce and PKCE verifier
	// between the redirect to the provider and the callback.
	flowCookieName = "overseer_signin"
	flowTTL        = 10 * time.Minute
	// maxCookieBytes keeps a session cookie within what every browser
	// stores.
	maxCookieBytes = 3800
)

// auth authenticates requests: off, OIDC or a trusted proxy.
type auth struct {
	oidc    OIDC
	proxy   TrustedProxy
	trusted []netip.Prefix
	aead    cipher.AEAD
	ttl     time.Duration
	secure  bool
	scopes  []string
	log     *zap.Logger

	mu       sync.Mutex
	provider *oidc.Provider
}

func newAuth(opts Options, log *zap.Logger) (*auth, error) {
	a := &auth{oidc: opts.OIDC, proxy: opts.TrustedProxy, ttl: opts.SessionTTL, log: log}
	if a.oidc.on() && a.proxy.on() {
		return nil, errors.New("dashboard: set OIDC or TrustedProxy, not both")
	}
	if a.ttl <= 0 {
		a.ttl = 8 * time.Hour
	}
	switch {
	case a.proxy.on():
		for _, s := range a.proxy.Addresses {
			s = strings.TrimSpace(s)
			p, err := netip.ParsePrefix(s)
			if err != nil {
				ip, ierr := netip.ParseAddr(s)
				if ierr != nil {
					return nil, fmt.Errorf("dashboard: trusted proxy %q is neither an IP address nor a CIDR range", s)
				}
				p = netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen())
			}
			a.trusted = append(a.trusted, p.Masked())
		}
		if a.proxy.UserHeader == "" {
			a.proxy.UserHeader = "X-Forwarded-User"
		}
		if a.proxy.GroupsHeader == "" {
			a.proxy.GroupsHeader = "X-Forwarded-Groups"
		}
	case a.oidc.on():
		if err := checkURL("OIDC.IssuerURL", a.oidc.IssuerURL); err != nil {
			return nil, err
		}
		if a.oidc.ClientID == "" {
			return nil, errors.New("dashboard: OIDC.ClientID is required")
		}
		if err := checkURL("OIDC.RedirectURL", a.oidc.RedirectURL); err != nil {
			return nil, err
		}
		u, _ := url.Parse(a.oidc.RedirectURL)
		if u.Path != callbackPath {
			return nil, fmt.Errorf("dashboard: OIDC.RedirectURL %q must end in %s (the dashboard's callback)", a.oidc.RedirectURL, callbackPath)
		}
		a.secure = u.Scheme == "https"
		a.scopes = a.oidc.Scopes
		if len(a.scopes) == 0 {
			a.scopes = []string{"profile", "email"}
			if a.oidc.GroupsClaim == "groups" {
				a.scopes = append(a.scopes, "groups")
			}
		}
		a.scopes = append([]string{oidc.ScopeOpenID}, slices.DeleteFunc(slices.Clone(a.scopes), func(s string) bool { return s == oidc.ScopeOpenID })...)
		if a.oidc.HTTPClient == nil {
			a.oidc.HTTPClient = &http.Client{Timeout: 10 * time.Second}
		}
		key := opts.SessionKey
		if len(key) == 0 {
			key = make([]byte, 32)
			if _, err := rand.Read(key); err != nil {
				return nil, fmt.Errorf("dashboard: make session key: %w", err)
			}
		} else if len(key) < 16 {
			return nil, errors.New("dashboard: SessionKey must have at least 16 bytes")
		}
		// The cookies' AES-256-GCM key is derived from the session key, so
		// the same key never serves two purposes.
		m := hmac.New(sha256.New, key)
		m.Write([]byte("temporal-overseer dashboard cookies v1"))
		block, err := aes.NewCipher(m.Sum(nil))
		if err != nil {
			return nil, fmt.Errorf("dashboard: session cipher: %w", err)
		}
		if a.aead, err = cipher.NewGCM(block); err != nil {
			return nil, fmt.Errorf("dashboard: session cipher: %w", err)
		}
	}
	return a, nil
}

func checkURL(field, s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("dashboard: %s %q is not an http(s) URL", field, s)
	}
	return nil
}

// on reports whether requests are authenticated at all.
func (a *auth) on() bool { return a.oidc.on() || a.proxy.on() }

// redirectHost is the host of the OIDC redirect URL, answered to besides
// the allowed hosts.
func (a *auth) redirectHost() string {
	if !a.oidc.on() {
		return ""
	}
	u, _ := url.Parse(a.oidc.RedirectURL)
	return u.Hostname()
}

// public reports whether a path is served without a signed-in user.
func (a *auth) public(path string) bool {
	if path == "/healthz" {
		return true
	}
	if a.proxy.on() {
		return false
	}
	return path == loginPath || path == callbackPath || path == logoutPath || path == signedOutPath || strings.HasPrefix(path, "/static/")
}

// authenticate returns r with the verified identity in its context, or
// answers the request itself (a redirect to sign in, 401 or 403) and
// returns false.
func (s *Server) authenticate(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	a := s.auth
	if !a.on() || a.public(r.URL.Path) {
		return r, true
	}
	if a.proxy.on() {
		remote := remoteAddr(r)
		if !a.fromProxy(remote) {
			s.log.Warn("dashboard: refused a request that did not come through the trusted proxy", zap.String("remote", r.RemoteAddr), zap.String("path", r.URL.Path))
			s.errorPage(w, r, http.StatusForbidden, fmt.Sprintf("This dashboard takes its users' identity from its trusted proxy only, and this request came from %s instead.", remote))
			return r, false
		}
		user := strings.TrimSpace(r.Header.Get(a.proxy.UserHeader))
		if user == "" && strings.HasPrefix(r.URL.Path, "/static/") {
			// The stylesheet and script hold no data: serve them without a
			// user, so that the 401 page the proxy shows is styled.
			return r, true
		}
		if user == "" {
			s.unauthenticated(w, r, fmt.Sprintf("The proxy sent no %s header, so the request is not signed in.", a.proxy.UserHeader))
			return r, false
		}
		id := identity{Name: user, Groups: splitGroups(r.Header.Values(a.proxy.GroupsHeader))}
		return r.WithContext(context.WithValue(r.Context(), identityKey{}, id)), true
	}
	if id, ok := a.session(r); ok {
		return r.WithContext(context.WithValue(r.Context(), identityKey{}, id)), true
	}
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && !r.URL.Query().Has("fragment") {
		http.Redirect(w, r, loginPath+"?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return r, false
	}
	s.unauthenticated(w, r, "Sign in first: your session is missing or has expired.")
	return r, false
}

func (s *Server) unauthenticated(w http.ResponseWriter, r *http.Request, msg string) {
	if s.auth.oidc.on() {
		w.Header().Set("WWW-Authenticate", `Bearer realm="overseer dashboard"`)
	}
	s.errorPage(w, r, http.StatusUnauthorized, msg)
}

// remoteAddr is the request's remote IP address (never a header).
func remoteAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (a *auth) fromProxy(remote string) bool {
	ip, err := netip.ParseAddr(remote)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	for _, p := range a.trusted {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// splitGroups reads a comma-separated groups header (given once or more).
func splitGroups(values []string) []string {
	var out []string
	for _, v := range values {
		for g := range strings.SplitSeq(v, ",") {
			if g = strings.TrimSpace(g); g != "" && !slices.Contains(out, g) {
				out = append(out, g)
			}
		}
	}
	return out
}

// session reads the signed-in user from the session cookie.
func (a *auth) session(r *http.Request) (identity, bool) {
	var sc struct {
		identity
		Exp int64 `json:"x"`
	}
	if !a.open(r, SessionCookieName, &sc) || time.Now().Unix() >= sc.Exp || sc.Name == "" {
		return identity{}, false
	}
	return sc.identity, true
}

// seal encrypts v into the cookie name (AES-GCM, the name as additional
// data, so one cookie cannot stand in for another).
func (a *auth) seal(name string, v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, a.aead.NonceSize())
	_, _ = rand.Read(nonce) // crypto/rand never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(a.aead.Seal(nonce, nonce, b, []byte(name))), nil
}

// open decrypts the cookie name into v; false when it is missing, forged or
// sealed under another key.
func (a *auth) open(r *http.Request, name string, v any) bool {
	ck, err := r.Cookie(name)
	if err != nil {
		return false
	}
	b, err := base64.RawURLEncoding.DecodeString(ck.Value)
	if err != nil || len(b) < a.aead.NonceSize() {
		return false
	}
	plain, err := a.aead.Open(nil, b[:a.aead.NonceSize()], b[a.aead.NonceSize():], []byte(name))
	return err == nil && json.Unmarshal(plain, v) == nil
}

func (a *auth) setCookie(w http.ResponseWriter, r *http.Request, name, value, path string, ttl time.Duration) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: path, MaxAge: int(ttl / time.Second),
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: a.secure || r.TLS != nil,
	})
}

func (a *auth) clearCookie(w http.ResponseWriter, r *http.Request, name, path string) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: "", Path: path, MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: a.secure || r.TLS != nil,
	})
}

// discover returns the provider, reading its discovery document on first
// use (the dashboard starts while the provider is down, and signs in once
// it is up).
func (a *auth) discover(ctx context.Context) (*oidc.Provider, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.provider != nil {
		return a.provider, nil
	}
	p, err := oidc.NewProvider(a.clientContext(ctx), a.oidc.IssuerURL)
	if err != nil {
		return nil, err
	}
	a.provider = p
	return p, nil
}

func (a *auth) clientContext(ctx context.Context) context.Context {
	return oidc.ClientContext(ctx, a.oidc.HTTPClient)
}

func (a *auth) config(p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{
		ClientID: a.oidc.ClientID, ClientSecret: a.oidc.ClientSecret, RedirectURL: a.oidc.RedirectURL,
		Endpoint: p.Endpoint(), Scopes: a.scopes,
	}
}

// signIn is one sign-in in flight, kept in the flow cookie.
type signIn struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Next     string `json:"r"`
	Exp      int64  `json:"x"`
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
	return base64.RawURLEncoding.EncodeToString(b)
}

// localPath keeps a post-sign-in destination on the dashboard: a path of
// its own, never another site ("//evil.example", "/\evil.example").
func localPath(next string) string {
	if next == "" || next[0] != '/' || strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || strings.HasPrefix(next, "/auth/") {
		return "/"
	}
	if u, err := url.Parse(next); err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return next
}

func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	a := s.auth
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	p, err := a.discover(ctx)
	if err != nil {
		s.log.Warn("dashboard: OpenID provider discovery failed", zap.String("issuer", a.oidc.IssuerURL), zap.Error(err))
		s.errorPage(w, r, http.StatusBadGateway, fmt.Sprintf("The identity provider at %s did not answer (%v), so nobody can sign in until it does.", a.oidc.IssuerURL, err))
		return
	}
	in := signIn{State: randomToken(), Nonce: randomToken(), Verifier: oauth2.GenerateVerifier(),
		Next: localPath(r.URL.Query().Get("next")), Exp: time.Now().Add(flowTTL).Unix()}
	v, err := a.seal(flowCookieName, in)
	if err != nil {
		s.errorPage(w, r, http.StatusInternalServerError, "The sign-in could not be started.")
		return
	}
	a.setCookie(w, r, flowCookieName, v, "/auth/", flowTTL)
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, a.config(p).AuthCodeURL(in.State, oidc.Nonce(in.Nonce), oauth2.S256ChallengeOption(in.Verifier)), http.StatusFound)
}

func (s *Server) handleCallback(w http.ResponseWriter, r *http.Request) {
	a := s.auth
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		// Anyone can send a browser here with any error text: the page
		// shows none of it, the log a clipped copy of the code.
		s.log.Info("dashboard: the identity provider refused a sign-in", zap.String("error", jev.Clip(e, 64)))
		s.errorPage(w, r, http.StatusForbidden, "The identity provider refused the sign-in: sign in again, or ask your administrator for access.")
		return
	}
	var in signIn
	ok := a.open(r, flowCookieName, &in)
	a.clearCookie(w, r, flowCookieName, "/auth/")
	if !ok || time.Now().Unix() >= in.Exp || subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(in.State)) != 1 || in.State == "" {
		s.log.Warn("dashboard: refused a sign-in callback whose state does not match", zap.Bool("cookie", ok))
		s.errorPage(w, r, http.StatusBadRequest, "This sign-in was not started here, or took longer than 10 minutes: sign in again from the dashboard.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	p, err := a.discover(ctx)
	if err != nil {
		s.errorPage(w, r, http.StatusBadGateway, fmt.Sprintf("The identity provider at %s did not answer (%v).", a.oidc.IssuerURL, err))
		return
	}
	tok, err := a.config(p).Exchange(a.clientContext(ctx), q.Get("code"), oauth2.VerifierOption(in.Verifier))
	if err != nil {
		s.log.Warn("dashboard: the identity provider did not exchange the sign-in code", zap.Error(err))
		s.errorPage(w, r, http.StatusBadGateway, "The identity provider did not accept the sign-in code: sign in again.")
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		s.errorPage(w, r, http.StatusBadGateway, "The identity provider answered without an ID token, so the sign-in cannot be verified.")
		return
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: a.oidc.ClientID}).Verify(a.clientContext(ctx), raw)
	if err != nil {
		s.log.Warn("dashboard: an ID token did not verify", zap.Error(err))
		s.errorPage(w, r, http.StatusUnauthorized, "The identity provider's ID token did not verify: sign in again.")
		return
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(in.Nonce)) != 1 {
		s.log.Warn("dashboard: an ID token's nonce does not match its sign-in")
		s.errorPage(w, r, http.StatusUnauthorized, "The ID token was not issued for this sign-in (nonce mismatch): sign in again.")
		return
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		s.errorPage(w, r, http.StatusBadGateway, "The ID token's claims could not be read.")
		return
	}
	id, err := claimedIdentity(claims, a.oidc.GroupsClaim)
	if err != nil {
		s.log.Warn("dashboard: a sign-in had no usable identity", zap.String("sub", idt.Subject), zap.Error(err))
		s.errorPage(w, r, http.StatusForbidden, err.Error())
		return
	}
	if err := s.startSession(w, r, id); err != nil {
		s.errorPage(w, r, http.StatusInternalServerError, "The session could not be started.")
		return
	}
	s.log.Info("dashboard: signed in", zap.String("user", id.Name), zap.Strings("groups", id.Groups))
	http.Redirect(w, r, in.Next, http.StatusSeeOther)
}

// startSession sets the session cookie, leaving out groups that would make
// it too large for a browser to keep.
func (s *Server) startSession(w http.ResponseWriter, r *http.Request, id identity) error {
	a := s.auth
	exp := time.Now().Add(a.ttl).Unix()
	for {
		v, err := a.seal(SessionCookieName, struct {
			identity
			Exp int64 `json:"x"`
		}{id, exp})
		if err != nil {
			return err
		}
		if len(v) <= maxCookieBytes || len(id.Groups) == 0 {
			a.setCookie(w, r, SessionCookieName, v, "/", a.ttl)
			return nil
		}
		s.log.Warn("dashboard: too many groups for the session cookie; leaving some out", zap.String("user", id.Name), zap.Int("groups", len(id.Groups)))
		id.Groups = id.Groups[:len(id.Groups)*3/4]
	}
}

// claimedIdentity is the resume's by from the ID token's claims: the email
// (unless the provider marks it unverified), else preferred_username.
func claimedIdentity(claims map[string]any, groupsClaim string) (identity, error) {
	var id identity
	email, _ := claims["email"].(string)
	verified, stated := claims["email_verified"].(bool)
	if email != "" && (verified || !stated) {
		id.Name = email
	} else if u, _ := claims["preferred_username"].(string); u != "" {
		id.Name = u
	}
	if id.Name == "" {
		return id, errors.New("the identity provider gave neither a verified email nor a preferred_username for this account, so the dashboard cannot name who resumes")
	}
	if groupsClaim != "" {
		switch g := claims[groupsClaim].(type) {
		case []any:
			for _, v := range g {
				if s, ok := v.(string); ok && s != "" && !slices.Contains(id.Groups, s) {
					id.Groups = append(id.Groups, s)
				}
			}
		case string:
			id.Groups = splitGroups([]string{g})
		}
	}
	return id, nil
}

func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	if id, ok := identityOf(r.Context()); ok {
		s.log.Info("dashboard: signed out", zap.String("user", id.Name))
	}
	s.auth.clearCookie(w, r, SessionCookieName, "/")
	http.Redirect(w, r, signedOutPath, http.StatusSeeOther)
}

func (s *Server) handleSignedOut(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "signed_out.html", s.page(r, "Signed out"))
}
