package jevhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

// Options configure a Judge. The zero value works: it calls a judge service
// on this machine (DefaultURL) with no key and the default budget.
type Options struct {
	// URL of the decide endpoint. A URL without a path gets DecidePath. If
	// not set, DefaultURL.
	URL string
	// APIKey is sent as "Authorization: Bearer <key>". It never appears in
	// an error or a log line. If not set, no Authorization header is sent.
	APIKey string
	// Budget bounds one Decide call, connection included. If not set,
	// jev.DefaultBudget; more than jev.MaxBudget is an error.
	Budget time.Duration
	// MaxResponseBytes bounds the response body; a larger body is an
	// invalid answer. If not set, DefaultMaxBodyBytes.
	MaxResponseBytes int64
	// Transport sends the requests. If not set, a clone of
	// http.DefaultTransport. Whatever it is, the Judge never follows
	// redirects and never retries: the Temporal retry policy is the only
	// retry layer.
	Transport http.RoundTripper
	// UserAgent is sent in the User-Agent header. If not set,
	// "temporal-overseer-jevhttp".
	UserAgent string
}

// Judge is a jev.Judge that asks a Jev endpoint over HTTP: it POSTs the
// request as JSON and parses the typed answers, model version and token
// usage. It is safe for concurrent use.
type Judge struct {
	url      string // as configured, used for requests
	safeURL  string // without user information, used in errors
	key      string
	budget   time.Duration
	maxBytes int64
	agent    string
	client   *http.Client
}

var _ jev.Judge = (*Judge)(nil)

// New returns a Judge for opts, or an error naming the first bad option.
func New(opts Options) (*Judge, error) {
	raw := opts.URL
	if raw == "" {
		raw = DefaultURL
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("jevhttp: endpoint URL %q is not an absolute http or https URL", jev.RedactURL(raw))
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = DecidePath
	}
	budget, err := jev.CheckBudget(opts.Budget)
	if err != nil {
		return nil, fmt.Errorf("jevhttp: budget: %w", err)
	}
	if opts.MaxResponseBytes < 0 {
		return nil, fmt.Errorf("jevhttp: MaxResponseBytes %d is negative", opts.MaxResponseBytes)
	}
	maxBytes := opts.MaxResponseBytes
	if maxBytes == 0 {
		maxBytes = DefaultMaxBodyBytes
	}
	transport := opts.Transport
	if transport == nil {
		transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	agent := opts.UserAgent
	if agent == "" {
		agent = "temporal-overseer-jevhttp"
	}
	return &Judge{
		url:      u.String(),
		safeURL:  u.Redacted(),
		key:      opts.APIKey,
		budget:   budget,
		maxBytes: maxBytes,
		agent:    agent,
		client: &http.Client{
			Transport: transport,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		},
	}, nil
}

// URL returns the endpoint without user information, for logs.
func (j *Judge) URL() string { return j.safeURL }

// Budget returns the budget of one call.
func (j *Judge) Budget() time.Duration { return j.budget }

// Decide implements jev.Judge. Errors name the endpoint and never contain
// the API key. An answer that does not fit the questions, or a body that is
// not a response, wraps jev.ErrInvalidAnswer; a 4xx other than 408 and 429
// wraps jev.ErrRejected (see StatusError); transport errors, 408, 429 and
// 5xx wrap neither and are worth retrying. The response's Latency is the
// round trip measured here.
func (j *Judge) Decide(ctx context.Context, req jev.Request) (*jev.Response, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, j.budget,
		fmt.Errorf("no answer within the budget of %v: %w", j.budget, context.DeadlineExceeded))
	defer cancel()
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("jevhttp: encode request: %w", err)
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, j.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("jevhttp: POST %s: %w", j.safeURL, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", j.agent)
	if j.key != "" {
		hreq.Header.Set("Authorization", "Bearer "+j.key)
	}
	start := time.Now()
	hresp, err := j.client.Do(hreq)
	if err != nil {
		return nil, j.transportError(ctx, err)
	}
	defer hresp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(hresp.Body, j.maxBytes+1))
	if err != nil {
		return nil, j.transportError(ctx, err)
	}
	latency := time.Since(start)
	if int64(len(data)) > j.maxBytes {
		return nil, fmt.Errorf("jevhttp: POST %s: %w: response body larger than %d bytes", j.safeURL, jev.ErrInvalidAnswer, j.maxBytes)
	}
	if hresp.StatusCode < 200 || hresp.StatusCode > 299 {
		return nil, newStatusError(j.safeURL, hresp.StatusCode, data, j.key)
	}
	resp, err := ParseResponse(req, data)
	if err != nil {
		return nil, fmt.Errorf("jevhttp: POST %s: %w", j.safeURL, jev.RedactError(err, j.key))
	}
	resp.Latency = latency
	return resp, nil
}

// transportError describes a failure to get a response. The context's
// cause (cancellation, the caller's deadline or the budget) wins over the
// transport's own words; url.Error's copy of the URL is dropped.
func (j *Judge) transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("jevhttp: POST %s: %w", j.safeURL, context.Cause(ctx))
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	var nerr net.Error
	if errors.As(err, &nerr) {
		return fmt.Errorf("jevhttp: POST %s: %w", j.safeURL, nerr)
	}
	return fmt.Errorf("jevhttp: POST %s: %s", j.safeURL, jev.Redact(err.Error(), j.key))
}
