package jevhttp

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

// Where the protocol is served.
const (
	// DefaultAddr is the address `overseer judge serve` listens on.
	DefaultAddr = "127.0.0.1:8700"
	// DecidePath is the path of the decide endpoint.
	DecidePath = "/v1/decide"
	// DefaultURL is the endpoint a Judge calls when no URL is configured:
	// a judge service on this machine.
	DefaultURL = "http://" + DefaultAddr + DecidePath
	// HealthPath answers 200 while the process serves (liveness).
	HealthPath = "/healthz"
	// ReadyPath answers 200 while the server accepts decisions and 503 once
	// it is shutting down (readiness).
	ReadyPath = "/readyz"
)

// DefaultMaxBodyBytes bounds a request body (server side) and a response
// body (client side) when no limit is configured.
const DefaultMaxBodyBytes int64 = 1 << 20

// The JSON Schemas (draft 2020-12) of the wire format: a request, a 200
// response and an error body. They are the reference for implementations
// in other languages.
var (
	//go:embed schema/request.schema.json
	RequestSchema []byte
	//go:embed schema/response.schema.json
	ResponseSchema []byte
	//go:embed schema/error.schema.json
	ErrorSchema []byte
)

// Error codes of an error body. A client maps invalid_answer to
// jev.ErrInvalidAnswer and rejected to jev.ErrRejected whatever the status;
// other codes are classified by the HTTP status.
const (
	CodeInvalidRequest   = "invalid_request"
	CodeUnauthorized     = "unauthorized"
	CodeRequestTooLarge  = "request_too_large"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeNotFound         = "not_found"
	CodeInvalidAnswer    = "invalid_answer"
	CodeRejected         = "rejected"
	CodeJudgeFailed      = "judge_failed"
	CodeTimeout          = "timeout"
	CodeUnavailable      = "unavailable"
)

// ErrorBody is the body of every non-200 answer of the decide endpoint.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// StatusError is a non-2xx answer of the decide endpoint. It wraps
// jev.ErrInvalidAnswer or jev.ErrRejected when the answer means that
// retrying cannot help; any other StatusError (408, 429, 5xx) is worth
// retrying.
type StatusError struct {
	// URL of the endpoint, without user information.
	URL        string
	StatusCode int
	// Code and Message come from the error body, when it had one.
	Code    string
	Message string
}

func (e *StatusError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "jevhttp: POST %s: %d %s", e.URL, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Unwrap returns the sentinel that classifies the error, if any.
func (e *StatusError) Unwrap() error {
	switch {
	case e.Code == CodeInvalidAnswer:
		return jev.ErrInvalidAnswer
	case e.Code == CodeRejected:
		return jev.ErrRejected
	case e.StatusCode == http.StatusRequestTimeout, e.StatusCode == http.StatusTooManyRequests, e.StatusCode >= 500:
		return nil
	default:
		return jev.ErrRejected
	}
}

// Retryable reports whether the same request may succeed later.
func (e *StatusError) Retryable() bool { return e.Unwrap() == nil }

// maxMessage bounds the message copied from an error body into an error.
const maxMessage = 300

// newStatusError reads what it can from an error body. Every string taken
// from the body is cut to maxMessage bytes and scrubbed of secret.
func newStatusError(url string, status int, body []byte, secret string) *StatusError {
	e := &StatusError{URL: url, StatusCode: status}
	var eb ErrorBody
	if json.Unmarshal(body, &eb) == nil && eb.Error.Code != "" {
		e.Code = jev.Redact(jev.Clip(eb.Error.Code, 64), secret)
		e.Message = jev.Redact(jev.Clip(eb.Error.Message, maxMessage), secret)
	} else if text := strings.TrimSpace(string(body)); text != "" {
		e.Message = jev.Redact(jev.Clip(text, maxMessage), secret)
	}
	return e
}

// ParseResponse decodes and validates a decide endpoint's 200 body against
// the questions of req. A body that is empty, not one JSON object, not of
// the response's shape (a string where a number belongs, a bare NaN), or
// whose answers do not fit the questions is an error wrapping
// jev.ErrInvalidAnswer. Unknown top-level fields are ignored.
func ParseResponse(req jev.Request, body []byte) (*jev.Response, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, fmt.Errorf("%w: empty body", jev.ErrInvalidAnswer)
	}
	if body[0] != '{' {
		return nil, fmt.Errorf("%w: body is not a JSON object", jev.ErrInvalidAnswer)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	var resp jev.Response
	if err := dec.Decode(&resp); err != nil {
		return nil, fmt.Errorf("%w: body is not a response: %s", jev.ErrInvalidAnswer, jev.Clip(err.Error(), maxMessage))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: data after the response object", jev.ErrInvalidAnswer)
	}
	if resp.Latency < 0 {
		return nil, fmt.Errorf("%w: negative latency_ns", jev.ErrInvalidAnswer)
	}
	if err := jev.Validate(req, &resp); err != nil {
		return nil, err
	}
	for name, a := range resp.Answers {
		a.Type = req.Questions[name].Type
		resp.Answers[name] = a
	}
	return &resp, nil
}
