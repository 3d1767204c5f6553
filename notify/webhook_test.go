package notify_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/notify"
	"github.com/corohq/temporal-overseer/overseer"
)

var secret = []byte("whsec-test-7f3a")

// receiver is a real HTTP webhook receiver: it verifies every request's
// signature with notify.ReadEvent and keeps each event once by its
// idempotency key. failFirst makes the first attempts of each key answer
// 503.
type receiver struct {
	*httptest.Server
	mu        sync.Mutex
	events    map[string]overseer.GateEvent
	order     []string
	attempts  map[string]int
	refused   []error
	failFirst int
}

func newReceiver(t *testing.T, failFirst int) *receiver {
	t.Helper()
	r := &receiver{events: map[string]overseer.GateEvent{}, attempts: map[string]int{}, failFirst: failFirst}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ev, err := notify.ReadEvent(req, secret, time.Now(), 0)
		r.mu.Lock()
		defer r.mu.Unlock()
		if err != nil {
			r.refused = append(r.refused, err)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		r.attempts[ev.IdempotencyKey]++
		if r.attempts[ev.IdempotencyKey] <= r.failFirst {
			http.Error(w, "try later", http.StatusServiceUnavailable)
			return
		}
		if _, dup := r.events[ev.IdempotencyKey]; !dup {
			r.events[ev.IdempotencyKey] = ev
			r.order = append(r.order, ev.IdempotencyKey)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

// kinds are the kinds of the events kept, in order.
func (r *receiver) kinds() []overseer.GateEventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var k []overseer.GateEventKind
	for _, key := range r.order {
		k = append(k, r.events[key].Kind)
	}
	return k
}

func event(kind overseer.GateEventKind) overseer.GateEvent {
	return overseer.GateEvent{
		Kind: kind, IdempotencyKey: "job-1/run-1/code-1/" + string(kind), WorkflowID: "job-1", RunID: "run-1",
		WorkflowType: "CoroJob", Gate: "code-1", Phase: "code", Reason: "P(on objective) 0.10 is at or below 0.25",
		OpenedAt: time.Unix(1767225600, 0).UTC(), At: time.Unix(1767225600, 0).UTC(),
	}
}

func TestWebhookEventsAreSignedAndKeptOncePerKey(t *testing.T) {
	rcv := newReceiver(t, 0)
	hook, err := notify.NewWebhook(rcv.URL, secret)
	require.NoError(t, err)
	kinds := []overseer.GateEventKind{overseer.GateOpened, overseer.GateEscalated, overseer.GateExpired, overseer.GateResumed}
	for _, k := range kinds {
		require.NoError(t, hook.Notify(context.Background(), event(k)))
		// At-least-once delivery: a retry of the same event is dropped
		// by its key.
		require.NoError(t, hook.Notify(context.Background(), event(k)))
	}
	assert.Equal(t, kinds, rcv.kinds(), "each event kept once")
	assert.Empty(t, rcv.refused, "every signature verified")
	for key, n := range rcv.attempts {
		assert.Equal(t, 2, n, key)
	}
	assert.Equal(t, "code", rcv.events["job-1/run-1/code-1/opened"].Phase)
}

func TestWebhookAnswersDecideRetryOrRefusal(t *testing.T) {
	status := http.StatusServiceUnavailable
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
	defer srv.Close()
	hook, err := notify.NewWebhook(srv.URL+"/hooks/secret-path-token", secret)
	require.NoError(t, err)
	for code, rejected := range map[int]bool{503: false, 500: false, 429: false, 408: false, 400: true, 401: true, 404: true, 410: true} {
		status = code
		err := hook.Notify(context.Background(), event(overseer.GateOpened))
		require.Error(t, err, code)
		assert.Equal(t, rejected, errors.Is(err, overseer.ErrNotifyRejected), "HTTP %d: %v", code, err)
		assert.Contains(t, err.Error(), fmt.Sprintf("HTTP %d", code))
		assert.NotContains(t, err.Error(), "secret-path-token", "errors never show the URL")
	}
	srv.Close()
	err = hook.Notify(context.Background(), event(overseer.GateOpened))
	require.Error(t, err, "a receiver that is down is retried")
	assert.False(t, errors.Is(err, overseer.ErrNotifyRejected))
	assert.NotContains(t, err.Error(), "secret-path-token")
	assert.NotContains(t, hook.String(), "secret-path-token")

	_, err = notify.NewWebhook(srv.URL, nil)
	assert.ErrorContains(t, err, "secret is empty")
}

func TestVerifyRejectsTamperingReplaysAndForgeries(t *testing.T) {
	body := []byte(`{"kind":"opened","gate":"code-1"}`)
	now := time.Unix(1767225600, 0)
	header := notify.Sign(secret, now, body)
	require.NoError(t, notify.Verify(secret, header, body, now.Add(time.Minute), 0))

	assert.ErrorIs(t, notify.Verify(secret, header, []byte(`{"kind":"opened","gate":"code-2"}`), now, 0), notify.ErrBadSignature, "tampered body")
	assert.ErrorIs(t, notify.Verify([]byte("other secret"), header, body, now, 0), notify.ErrBadSignature, "wrong secret")
	assert.ErrorIs(t, notify.Verify(secret, header, body, now.Add(6*time.Minute), 0), notify.ErrStale, "a replay after the tolerance")
	assert.ErrorIs(t, notify.Verify(secret, header, body, now.Add(-6*time.Minute), 0), notify.ErrStale, "from the future")
	assert.NoError(t, notify.Verify(secret, header, body, now.Add(50*time.Minute), time.Hour), "a wider tolerance")
	// The timestamp is signed: moving it forward breaks the signature.
	moved := strings.Replace(header, "t=1767225600", fmt.Sprintf("t=%d", now.Add(time.Minute).Unix()), 1)
	assert.ErrorIs(t, notify.Verify(secret, moved, body, now, 0), notify.ErrBadSignature)
	for _, h := range []string{"", "v1=abc", "t=1767225600", "t=x,v1=00", "garbage"} {
		assert.ErrorIs(t, notify.Verify(secret, h, body, now, 0), notify.ErrNoSignature, "%q", h)
	}
	// Secret rotation: a header with the new and the old signature.
	rotated := header + ",v1=" + strings.Split(notify.Sign([]byte("new secret"), now, body), "v1=")[1]
	assert.NoError(t, notify.Verify([]byte("new secret"), rotated, body, now, 0))
	assert.NoError(t, notify.Verify(secret, rotated, body, now, 0))
}

func TestReceiverRefusesTamperedAndOldRequests(t *testing.T) {
	rcv := newReceiver(t, 0)
	body := `{"kind":"opened","idempotency_key":"job-1/run-1/code-1/opened","gate":"code-1"}`
	post := func(sig, b string) int {
		req, err := http.NewRequest(http.MethodPost, rcv.URL, strings.NewReader(b))
		require.NoError(t, err)
		req.Header.Set(notify.SignatureHeader, sig)
		req.Header.Set(notify.IdempotencyKeyHeader, "job-1/run-1/code-1/opened")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	now := time.Now()
	assert.Equal(t, http.StatusUnauthorized, post(notify.Sign(secret, now, []byte(body)), strings.Replace(body, "code-1", "code-9", 1)), "tampered body")
	assert.Equal(t, http.StatusUnauthorized, post(notify.Sign(secret, now.Add(-time.Hour), []byte(body)), body), "an old request replayed")
	assert.Equal(t, http.StatusUnauthorized, post("", body), "unsigned")
	assert.Equal(t, http.StatusNoContent, post(notify.Sign(secret, now, []byte(body)), body))
	assert.Len(t, rcv.refused, 3)
	assert.Equal(t, []overseer.GateEventKind{overseer.GateOpened}, rcv.kinds())
}

func TestFromEnv(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	n, err := notify.FromEnv(env(nil))
	require.NoError(t, err)
	assert.Nil(t, n, "nothing set, no notifier")

	n, err = notify.FromEnv(env(map[string]string{notify.EnvWebhookURL: "https://hooks.example.com/x", notify.EnvWebhookSecret: "s"}))
	require.NoError(t, err)
	assert.IsType(t, &notify.Webhook{}, n)

	_, err = notify.FromEnv(env(map[string]string{notify.EnvWebhookURL: "https://hooks.example.com/x"}))
	assert.ErrorContains(t, err, notify.EnvWebhookSecret)
	_, err = notify.FromEnv(env(map[string]string{notify.EnvSlackEscalationURL: "https://hooks.slack.com/services/B"}))
	assert.ErrorContains(t, err, notify.EnvSlackWebhookURL)

	n, err = notify.FromEnv(env(map[string]string{
		notify.EnvWebhookURL: "https://hooks.example.com/x", notify.EnvWebhookSecret: "s",
		notify.EnvSlackWebhookURL: "https://hooks.slack.com/services/T/B/SECRET",
	}))
	require.NoError(t, err)
	assert.Equal(t, "webhook https://hooks.example.com/… + slack incoming webhook", fmt.Sprint(n), "named without secrets")
}
