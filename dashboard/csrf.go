package dashboard

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
)

// CSRFCookieName is the cookie that holds the browser's CSRF secret.
const CSRFCookieName = "overseer_csrf"

// csrfField is the form field that carries the token.
const csrfField = "csrf"

// csrf implements signed double-submit tokens: the browser holds a random
// secret in a SameSite=Strict, HttpOnly cookie and the form carries an HMAC
// of it under the server's key. Another site can neither read the cookie
// nor compute the HMAC, so it cannot forge the form.
type csrf struct{ key []byte }

// token returns the form token for r's browser, setting its cookie first
// if it has none.
func (c csrf) token(w http.ResponseWriter, r *http.Request) string {
	secret := ""
	if ck, err := r.Cookie(CSRFCookieName); err == nil && len(ck.Value) >= 32 {
		secret = ck.Value
	} else {
		b := make([]byte, 32)
		_, _ = rand.Read(b) // crypto/rand never fails on supported platforms
		secret = base64.RawURLEncoding.EncodeToString(b)
		http.SetCookie(w, &http.Cookie{
			Name: CSRFCookieName, Value: secret, Path: "/",
			HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
		})
	}
	return c.sign(secret)
}

func (c csrf) sign(secret string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(secret))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// valid reports whether the request's form token matches its cookie.
func (c csrf) valid(r *http.Request) bool {
	ck, err := r.Cookie(CSRFCookieName)
	if err != nil || ck.Value == "" {
		return false
	}
	return hmac.Equal([]byte(r.PostFormValue(csrfField)), []byte(c.sign(ck.Value)))
}
