package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/corohq/temporal-overseer/overseer"
)

// Headers of a webhook request.
const (
	// SignatureHeader carries "t=UNIX_SECONDS,v1=HEX": v1 is the hex
	// HMAC-SHA256, keyed with the shared secret, of the timestamp, a dot
	// and the raw body ("1767225600.{...}"), as GitHub and Stripe sign
	// their webhooks. Check it with Verify.
	SignatureHeader = "X-Overseer-Signature"
	// IdempotencyKeyHeader carries GateEvent.IdempotencyKey: the same on
	// every delivery of one event. Drop a key already seen.
	IdempotencyKeyHeader = "X-Overseer-Idempotency-Key"
	// EventHeader carries GateEvent.Kind.
	EventHeader = "X-Overseer-Event"
)

// DefaultTolerance is how far a signature's timestamp may be from the
// receiver's clock when Verify is given no tolerance.
const DefaultTolerance = 5 * time.Minute

// Webhook posts each gate event as JSON (the GateEvent) to a URL, signed
// with HMAC-SHA256 over the timestamp and the body.
type Webhook struct {
	// URL receives a POST per event.
	URL string
	// Secret keys the signature. Required: an unsigned webhook cannot be
	// told from a forged one.
	Secret []byte
	// Client sends the requests. If nil, a client with a 10 s timeout.
	Client *http.Client
	// Now is the clock of the signature's timestamp. If nil, time.Now.
	Now func() time.Time
}

// NewWebhook returns a webhook notifier. It refuses an empty URL or
// secret.
func NewWebhook(url string, secret []byte) (*Webhook, error) {
	if url == "" {
		return nil, errors.New("notify: webhook URL is empty")
	}
	if len(secret) == 0 {
		return nil, errors.New("notify: webhook secret is empty; every notification is signed")
	}
	return &Webhook{URL: url, Secret: secret}, nil
}

// String names the webhook without its secret.
func (w *Webhook) String() string { return "webhook " + redactURL(w.URL) }

// Notify posts ev. A 2xx answer delivers it; 408, 425, 429 and 5xx answers
// and transport errors are retried by the activity; any other answer is a
// refusal (overseer.ErrNotifyRejected), not retried.
func (w *Webhook) Notify(ctx context.Context, ev overseer.GateEvent) error {
	if len(w.Secret) == 0 {
		return fmt.Errorf("%w: the webhook has no secret", overseer.ErrNotifyRejected)
	}
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("%w: encode the event: %v", overseer.ErrNotifyRejected, err)
	}
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: webhook URL: %v", overseer.ErrNotifyRejected, stripURL(err))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "temporal-overseer-notify/1")
	req.Header.Set(SignatureHeader, Sign(w.Secret, now(), body))
	req.Header.Set(IdempotencyKeyHeader, ev.IdempotencyKey)
	req.Header.Set(EventHeader, string(ev.Kind))
	return send(client(w.Client), req, "webhook")
}

// Sign returns the SignatureHeader value of body sent at t.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Errors of Verify.
var (
	// ErrNoSignature: the header is missing or has no t= or v1=.
	ErrNoSignature = errors.New("notify: no valid signature header")
	// ErrBadSignature: no v1 signature matches the body and timestamp.
	ErrBadSignature = errors.New("notify: signature does not match")
	// ErrStale: the timestamp is outside the tolerance (a replay, or a
	// clock far off).
	ErrStale = errors.New("notify: signature timestamp outside the tolerance")
)

// Verify checks a webhook request's signature header against its raw body
// as received, at now: the timestamp must be within tolerance of now
// (DefaultTolerance if 0), which rejects replays of old requests, and one
// v1 signature must be the HMAC-SHA256 of "TIMESTAMP.BODY" with secret
// (compared in constant time). Several v1 values are accepted, for a
// secret rotation. Drop replays within the tolerance by the idempotency
// key.
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			ts = v
		case "v1":
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	unix, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrNoSignature
	}
	if d := now.Sub(time.Unix(unix, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: signed %s ago, tolerance %s", ErrStale, d.Round(time.Second), tolerance)
	}
	want := mac(secret, ts, body)
	for _, s := range sigs {
		if hmac.Equal(s, want) {
			return nil
		}
	}
	return ErrBadSignature
}

// ReadEvent reads and verifies a webhook request (see Verify) and decodes
// its event. A receiver answers 2xx only once it has kept the event, and
// deduplicates by the event's IdempotencyKey.
func ReadEvent(r *http.Request, secret []byte, now time.Time, tolerance time.Duration) (overseer.GateEvent, error) {
	var ev overseer.GateEvent
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return ev, fmt.Errorf("notify: read the body: %w", err)
	}
	if err := Verify(secret, r.Header.Get(SignatureHeader), body, now, tolerance); err != nil {
		return ev, err
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return ev, fmt.Errorf("notify: decode the event: %w", err)
	}
	if k := r.Header.Get(IdempotencyKeyHeader); k != ev.IdempotencyKey {
		return ev, fmt.Errorf("notify: the idempotency key header %q is not the signed event's %q", k, ev.IdempotencyKey)
	}
	return ev, nil
}

func client(c *http.Client) *http.Client {
	if c != nil {
		return c
	}
	return &http.Client{Timeout: 10 * time.Second}
}

// send does req and classifies the answer. Errors never carry the URL,
// which may hold a secret (a Slack webhook URL is one).
func send(c *http.Client, req *http.Request, what string) error {
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("notify: %s: %v", what, stripURL(err))
	}
	defer resp.Body.Close()
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	err = fmt.Errorf("notify: %s answered HTTP %d: %s", what, resp.StatusCode, strings.TrimSpace(string(snippet)))
	switch c := resp.StatusCode; {
	case c == http.StatusRequestTimeout, c == http.StatusTooEarly, c == http.StatusTooManyRequests, c >= 500:
		return err
	}
	return fmt.Errorf("%w: %v", overseer.ErrNotifyRejected, err)
}

// stripURL drops the URL from a *url.Error, keeping what went wrong.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// redactURL keeps a URL's scheme and host.
func redactURL(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return "(url)"
	}
	host, _, _ := strings.Cut(rest, "/")
	if _, h, ok := strings.Cut(host, "@"); ok {
		host = h
	}
	return scheme + "://" + host + "/…"
}
