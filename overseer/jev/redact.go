package jev

import (
	"errors"
	"net/url"
	"strings"
)

// The helpers below keep credentials out of errors. Backends quote parts of
// a server's answer in their errors; every such quote goes through Redact
// and Clip, and an error that may quote a body is replaced by RedactError.

// Redact returns s with every occurrence of secret replaced by [REDACTED].
func Redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[REDACTED]")
}

// Clip cuts s to at most n bytes on a UTF-8 boundary and marks the cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// RedactURL returns raw without any password in it, for errors and logs.
func RedactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(unparsable)"
}

type redacted struct {
	msg string
	err error
}

func (r redacted) Error() string { return r.msg }
func (r redacted) Unwrap() error { return r.err }

// RedactError returns an error with err's text, secret redacted, that keeps
// err's classification (ErrInvalidAnswer or ErrRejected) but not err
// itself, whose text may quote a response body.
func RedactError(err error, secret string) error {
	var sentinel error
	switch {
	case errors.Is(err, ErrInvalidAnswer):
		sentinel = ErrInvalidAnswer
	case errors.Is(err, ErrRejected):
		sentinel = ErrRejected
	}
	return redacted{msg: Redact(err.Error(), secret), err: sentinel}
}
