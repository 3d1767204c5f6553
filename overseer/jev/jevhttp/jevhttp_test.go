package jevhttp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/jev/jevhttp"
	"github.com/corohq/temporal-overseer/testsuite/judgetest"
	"github.com/corohq/temporal-overseer/testsuite/stalltest"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fakeJev is an httptest Jev endpoint that answers whatever it was
// scripted with, the way a real service written in another language might.
type fakeJev struct {
	mu      sync.Mutex
	reply   judgetest.Reply
	bodies  [][]byte
	headers []http.Header
}

func (f *fakeJev) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies = append(f.bodies, body)
	f.headers = append(f.headers, r.Header.Clone())
	reply := f.reply
	f.mu.Unlock()
	switch reply.Kind {
	case judgetest.KindAnswer:
		b, err := judgetest.MarshalLoose(reply.Response)
		if err != nil {
			panic(err)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	case judgetest.KindEmpty:
		w.WriteHeader(http.StatusOK)
	case judgetest.KindHTTPStatus:
		// A FastAPI-style error body, not ours: the client must cope.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.HTTPStatus)
		fmt.Fprintf(w, `{"detail":"scripted status %d"}`, reply.HTTPStatus)
	case judgetest.KindHang:
		<-r.Context().Done()
	}
}

func (f *fakeJev) script(r judgetest.Reply) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reply = r
	return true
}

func newFake(t *testing.T) (*fakeJev, *httptest.Server) {
	f := &fakeJev{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func newJudge(t *testing.T, opts jevhttp.Options) *jevhttp.Judge {
	t.Helper()
	j, err := jevhttp.New(opts)
	require.NoError(t, err)
	return j
}

func TestConformanceAgainstHTTPTestServer(t *testing.T) {
	judgetest.Run(t, func(t *testing.T) *judgetest.Harness {
		f, srv := newFake(t)
		return &judgetest.Harness{
			Judge:            newJudge(t, jevhttp.Options{URL: srv.URL, APIKey: "k"}),
			Script:           f.script,
			ValidatesAnswers: true,
			ReportsUsage:     true,
		}
	})
}

// scriptedBackend is a judge whose next answer the suite scripts; served
// by a jevhttp.Server it stands for any backend of `overseer judge serve`.
type scriptedBackend struct {
	mu    sync.Mutex
	reply judgetest.Reply
}

func (b *scriptedBackend) Decide(ctx context.Context, req jev.Request) (*jev.Response, error) {
	b.mu.Lock()
	r := b.reply
	b.mu.Unlock()
	switch r.Kind {
	case judgetest.KindAnswer:
		resp := *r.Response
		return &resp, nil
	case judgetest.KindEmpty:
		return &jev.Response{ModelVersion: "backend"}, nil
	case judgetest.KindHTTPStatus:
		// The served judge's backend answered with this status: a 4xx is
		// a rejection, anything else a failure worth retrying.
		if r.HTTPStatus >= 400 && r.HTTPStatus < 500 && r.HTTPStatus != 408 && r.HTTPStatus != 429 {
			return nil, fmt.Errorf("backend: status %d: %w", r.HTTPStatus, jev.ErrRejected)
		}
		return nil, fmt.Errorf("backend: status %d", r.HTTPStatus)
	default:
		<-ctx.Done()
		return nil, ctx.Err()
	}
}

func (b *scriptedBackend) script(r judgetest.Reply) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reply = r
	return true
}

// serve runs judge behind a jevhttp.Server on 127.0.0.1, as
// `overseer judge serve` does, and returns its decide URL.
func serve(t *testing.T, judge jev.Judge, opts jevhttp.ServerOptions) string {
	t.Helper()
	srv, err := jevhttp.NewServer(judge, opts)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return "http://" + ln.Addr().String() + jevhttp.DecidePath
}

func TestConformanceAgainstServedScriptedJudge(t *testing.T) {
	judgetest.Run(t, func(t *testing.T) *judgetest.Harness {
		b := &scriptedBackend{}
		url := serve(t, b, jevhttp.ServerOptions{HandlerOptions: jevhttp.HandlerOptions{APIKey: "served-key"}})
		return &judgetest.Harness{
			Judge:            newJudge(t, jevhttp.Options{URL: url, APIKey: "served-key"}),
			Script:           b.script,
			ValidatesAnswers: true,
			ReportsUsage:     true,
		}
	})
}

func TestConformanceAgainstServedHeuristicJudge(t *testing.T) {
	judgetest.Run(t, func(t *testing.T) *judgetest.Harness {
		url := serve(t, overseer.HeuristicJudge{}, jevhttp.ServerOptions{})
		return &judgetest.Harness{Judge: newJudge(t, jevhttp.Options{URL: url}), ValidatesAnswers: true}
	})
}

func TestRealisticBodies(t *testing.T) {
	req := judgetest.BoundaryRequest()
	for _, tc := range []struct {
		name, body string
		check      func(t *testing.T, r *jev.Response)
	}{
		{"answers without types, extra fields, no latency", `{
			"answers": {
				"breach":    {"choice": "obligation[2]", "confidence": 0.64, "probabilities": {"none": 0.2, "obligation[2]": 0.64}},
				"off_track": {"probability": 0.41},
				"severity":  {"score": 1.7, "confidence": 0.55},
				"blocked":   {"probability": 0.05, "rationale": "ignored"}
			},
			"model_version": "jev-2026-03-01", "usage": {"input_tokens": 812, "output_tokens": 64},
			"request_id": "req_8f2", "cached": false
		}`, func(t *testing.T, r *jev.Response) {
			assert.Equal(t, "jev-2026-03-01", r.ModelVersion)
			assert.Equal(t, jev.Usage{InputTokens: 812, OutputTokens: 64}, r.Usage)
			assert.Equal(t, jev.Choice, r.Answers["breach"].Type, "types are filled in from the questions")
			assert.InDelta(t, 0.41, *r.Answers["off_track"].Probability, 1e-12)
		}},
		{"integers and exponents", `{"answers": {
				"breach": {"type": "choice", "choice": "none", "confidence": 1},
				"off_track": {"type": "noul", "probability": 1},
				"severity": {"type": "score", "score": 0, "confidence": 5e-1},
				"blocked": {"type": "noul", "probability": 0}}, "model_version": "m"}`,
			func(t *testing.T, r *jev.Response) { assert.Equal(t, 0.5, *r.Answers["severity"].Confidence) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/json; charset=utf-8")
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			resp, err := newJudge(t, jevhttp.Options{URL: srv.URL}).Decide(context.Background(), req)
			require.NoError(t, err)
			require.NoError(t, jev.Validate(req, resp))
			assert.Positive(t, resp.Latency, "the client measures the round trip")
			tc.check(t, resp)
		})
	}
}

func TestMalformedBodies(t *testing.T) {
	valid, err := json.Marshal(judgetest.ValidResponse(judgetest.BoundaryRequest()))
	require.NoError(t, err)
	for _, tc := range []struct{ name, body, want string }{
		{"empty", ``, "empty body"},
		{"whitespace", " \n", "empty body"},
		{"null", `null`, "not a JSON object"},
		{"array", `[]`, "not a JSON object"},
		{"html error page with 200", `<html><body>Bad gateway</body></html>`, "not a JSON object"},
		{"truncated", string(valid[:len(valid)/2]), "not a response"},
		{"bare NaN", strings.Replace(string(valid), `"probability":0.8`, `"probability":NaN`, 1), "not a response"},
		{"probability as a string", strings.Replace(string(valid), `"probability":0.8`, `"probability":"0.8"`, 1), "not a response"},
		{"trailing data", string(valid) + `{}`, "data after the response"},
		{"no answers", `{"answers":{},"model_version":"m"}`, "empty response"},
		{"answers not an object", `{"answers":[1,2]}`, "not a response"},
		{"negative tokens", strings.Replace(string(valid), `"input_tokens":321`, `"input_tokens":-5`, 1), "negative token count"},
		{"negative latency", strings.Replace(string(valid), `"latency_ns":0`, `"latency_ns":-1`, 1), "negative latency"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, tc.body) }))
			defer srv.Close()
			resp, err := newJudge(t, jevhttp.Options{URL: srv.URL}).Decide(context.Background(), judgetest.BoundaryRequest())
			require.ErrorIs(t, err, jev.ErrInvalidAnswer)
			assert.Nil(t, resp)
			assert.ErrorContains(t, err, tc.want)
			assert.ErrorContains(t, err, srv.URL, "the error names the endpoint")
		})
	}
}

func TestTooLargeResponseIsInvalid(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write(bytes.Repeat([]byte(" "), 2048))
	}))
	defer srv.Close()
	_, err := newJudge(t, jevhttp.Options{URL: srv.URL, MaxResponseBytes: 1024}).Decide(context.Background(), judgetest.BoundaryRequest())
	require.ErrorIs(t, err, jev.ErrInvalidAnswer)
	assert.ErrorContains(t, err, "larger than 1024 bytes")
}

func TestBudgetEndsASlowCall(t *testing.T) {
	f, srv := newFake(t)
	f.script(judgetest.Reply{Kind: judgetest.KindHang})
	j := newJudge(t, jevhttp.Options{URL: srv.URL, Budget: 200 * time.Millisecond})
	_, err := j.Decide(context.Background(), judgetest.BoundaryRequest())
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorContains(t, err, "no answer within the budget of 200ms")
	assert.NotErrorIs(t, err, jev.ErrInvalidAnswer)
	assert.NotErrorIs(t, err, jev.ErrRejected)
}

func TestAPIKeyIsABearerHeaderAndNeverInErrors(t *testing.T) {
	const key = "sk-jev-DISTINCTIVE-0123456789"
	f, srv := newFake(t)
	j := newJudge(t, jevhttp.Options{URL: srv.URL, APIKey: key})
	req := judgetest.BoundaryRequest()
	f.script(judgetest.Reply{Kind: judgetest.KindAnswer, Response: judgetest.ValidResponse(req)})
	_, err := j.Decide(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, "Bearer "+key, f.headers[0].Get("Authorization"))
	assert.Equal(t, "application/json", f.headers[0].Get("Content-Type"))
	assert.NotContains(t, string(f.bodies[0]), key)

	// A service that echoes the key in its errors or answers must not get
	// it into ours.
	for _, tc := range []struct {
		name   string
		status int
		body   string
	}{
		{"error body", 401, `{"error":{"code":"unauthorized","message":"bad key ` + key + `"}}`},
		{"plain text error", 500, "upstream said: Authorization: Bearer " + key},
		{"answer", 200, `{"answers":{"off_track":{"probability":0.5},"` + key + `":{"probability":0.1}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			_, err := newJudge(t, jevhttp.Options{URL: srv.URL, APIKey: key}).Decide(context.Background(), req)
			require.Error(t, err)
			for e := err; e != nil; e = errors.Unwrap(e) {
				assert.NotContains(t, e.Error(), key, "every error in the chain is scrubbed")
			}
			assert.Contains(t, err.Error(), "[REDACTED]")
		})
	}
}

func TestRedirectsAreNotFollowed(t *testing.T) {
	var hits int
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits++ }))
	defer target.Close()
	srv := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	defer srv.Close()
	_, err := newJudge(t, jevhttp.Options{URL: srv.URL, APIKey: "k"}).Decide(context.Background(), judgetest.BoundaryRequest())
	require.ErrorIs(t, err, jev.ErrRejected)
	assert.Zero(t, hits, "the key is never carried to another host")
}

func TestNoRetries(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		calls++
		mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	_, err := newJudge(t, jevhttp.Options{URL: srv.URL}).Decide(context.Background(), judgetest.BoundaryRequest())
	var se *jevhttp.StatusError
	require.ErrorAs(t, err, &se)
	assert.True(t, se.Retryable())
	assert.Equal(t, 1, calls, "the Temporal retry policy is the only retry layer")
}

func TestTransportErrorIsRetryable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	_, err = newJudge(t, jevhttp.Options{URL: "http://" + addr}).Decide(context.Background(), judgetest.BoundaryRequest())
	require.Error(t, err)
	assert.NotErrorIs(t, err, jev.ErrInvalidAnswer)
	assert.NotErrorIs(t, err, jev.ErrRejected)
	assert.ErrorContains(t, err, "jevhttp: POST http://"+addr+jevhttp.DecidePath)
}

func TestNewOptions(t *testing.T) {
	j, err := jevhttp.New(jevhttp.Options{})
	require.NoError(t, err)
	assert.Equal(t, jevhttp.DefaultURL, j.URL())
	assert.Equal(t, jev.DefaultBudget, j.Budget())

	j, err = jevhttp.New(jevhttp.Options{URL: "https://user:secret@jev.example.com"})
	require.NoError(t, err)
	assert.Equal(t, "https://user:xxxxx@jev.example.com/v1/decide", j.URL(), "no path gets the decide path; no password in logs")

	for _, tc := range []struct {
		name string
		opts jevhttp.Options
		want string
	}{
		{"relative URL", jevhttp.Options{URL: "jev.example.com/v1/decide"}, "not an absolute http or https URL"},
		{"other scheme", jevhttp.Options{URL: "ftp://jev.example.com"}, "not an absolute http or https URL"},
		{"budget above 30s", jevhttp.Options{Budget: 31 * time.Second}, "31s is more than the maximum of 30s"},
		{"negative budget", jevhttp.Options{Budget: -time.Second}, "negative"},
		{"negative body limit", jevhttp.Options{MaxResponseBytes: -1}, "negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := jevhttp.New(tc.opts)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestHandler(t *testing.T) {
	req := judgetest.BoundaryRequest()
	body, err := json.Marshal(req)
	require.NoError(t, err)
	b := &scriptedBackend{}
	b.script(judgetest.Reply{Kind: judgetest.KindAnswer, Response: judgetest.ValidResponse(req)})
	h, err := jevhttp.NewHandler(b, jevhttp.HandlerOptions{APIKey: "secret", MaxRequestBytes: 4096, Budget: 300 * time.Millisecond})
	require.NoError(t, err)

	do := func(method, path, key, ctype string, body []byte) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, bytes.NewReader(body))
		if key != "" {
			r.Header.Set("Authorization", "Bearer "+key)
		}
		if ctype != "" {
			r.Header.Set("Content-Type", ctype)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, tc := range []struct {
		name              string
		method, path, key string
		ctype             string
		body              []byte
		script            *judgetest.Reply
		status            int
		code              string
	}{
		{name: "ok", method: "POST", path: jevhttp.DecidePath, key: "secret", ctype: "application/json", body: body, status: 200},
		{name: "no content type is fine", method: "POST", path: jevhttp.DecidePath, key: "secret", body: body, status: 200},
		{name: "no key", method: "POST", path: jevhttp.DecidePath, body: body, status: 401, code: jevhttp.CodeUnauthorized},
		{name: "wrong key", method: "POST", path: jevhttp.DecidePath, key: "secreT", body: body, status: 401, code: jevhttp.CodeUnauthorized},
		{name: "GET decide", method: "GET", path: jevhttp.DecidePath, key: "secret", status: 405, code: jevhttp.CodeMethodNotAllowed},
		{name: "text body", method: "POST", path: jevhttp.DecidePath, key: "secret", ctype: "text/plain", body: body, status: 415, code: jevhttp.CodeInvalidRequest},
		{name: "too large", method: "POST", path: jevhttp.DecidePath, key: "secret", body: append(bytes.Repeat([]byte(" "), 4096), body...), status: 413, code: jevhttp.CodeRequestTooLarge},
		{name: "not JSON", method: "POST", path: jevhttp.DecidePath, key: "secret", body: []byte("state=1"), status: 400, code: jevhttp.CodeInvalidRequest},
		{name: "no questions", method: "POST", path: jevhttp.DecidePath, key: "secret", body: []byte(`{"state":{},"questions":{}}`), status: 400, code: jevhttp.CodeInvalidRequest},
		{name: "no state", method: "POST", path: jevhttp.DecidePath, key: "secret", body: []byte(`{"questions":{"q":{"type":"noul","instructions":"x"}}}`), status: 400, code: jevhttp.CodeInvalidRequest},
		{name: "choice without options", method: "POST", path: jevhttp.DecidePath, key: "secret", body: []byte(`{"state":{},"questions":{"q":{"type":"choice","criteria":{}}}}`), status: 400, code: jevhttp.CodeInvalidRequest},
		{name: "unknown path", method: "POST", path: "/v2/decide", key: "secret", body: body, status: 404, code: jevhttp.CodeNotFound},
		{name: "backend answers badly", method: "POST", path: jevhttp.DecidePath, key: "secret", body: body,
			script: &judgetest.Reply{Kind: judgetest.KindAnswer, Response: &jev.Response{Answers: map[string]jev.Answer{"off_track": {Probability: jev.Prob(2)}}}},
			status: 502, code: jevhttp.CodeInvalidAnswer},
		{name: "backend fails", method: "POST", path: jevhttp.DecidePath, key: "secret", body: body,
			script: &judgetest.Reply{Kind: judgetest.KindHTTPStatus, HTTPStatus: 500}, status: 502, code: jevhttp.CodeJudgeFailed},
		{name: "backend rejects", method: "POST", path: jevhttp.DecidePath, key: "secret", body: body,
			script: &judgetest.Reply{Kind: judgetest.KindHTTPStatus, HTTPStatus: 401}, status: 502, code: jevhttp.CodeRejected},
		{name: "backend too slow", method: "POST", path: jevhttp.DecidePath, key: "secret", body: body,
			script: &judgetest.Reply{Kind: judgetest.KindHang}, status: 504, code: jevhttp.CodeTimeout},
		{name: "healthz", method: "GET", path: jevhttp.HealthPath, status: 200},
		{name: "readyz", method: "GET", path: jevhttp.ReadyPath, status: 200},
		{name: "POST healthz", method: "POST", path: jevhttp.HealthPath, status: 405, code: jevhttp.CodeMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.script != nil {
				b.script(*tc.script)
				defer b.script(judgetest.Reply{Kind: judgetest.KindAnswer, Response: judgetest.ValidResponse(req)})
			}
			w := do(tc.method, tc.path, tc.key, tc.ctype, tc.body)
			assert.Equal(t, tc.status, w.Code, w.Body.String())
			assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
			if tc.code == "" {
				return
			}
			var eb jevhttp.ErrorBody
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &eb))
			assert.Equal(t, tc.code, eb.Error.Code)
			assert.NotEmpty(t, eb.Error.Message)
			assert.NotContains(t, w.Body.String(), "secret", "the required key is never echoed")
		})
	}

	h.SetDraining()
	assert.Equal(t, 503, do("GET", jevhttp.ReadyPath, "", "", nil).Code)
	assert.Equal(t, 200, do("GET", jevhttp.HealthPath, "", "", nil).Code, "still alive while draining")
	assert.Equal(t, 503, do("POST", jevhttp.DecidePath, "secret", "", body).Code)
}

// A decide call whose body stalls is cut by the read timeout, not kept
// for ever.
func TestServerCutsAStalledBody(t *testing.T) {
	u := serve(t, overseer.HeuristicJudge{}, jevhttp.ServerOptions{ReadTimeout: 100 * time.Millisecond})
	addr := strings.TrimSuffix(strings.TrimPrefix(u, "http://"), jevhttp.DecidePath)
	assert.True(t, stalltest.BodyCut(t, addr, http.MethodPost, jevhttp.DecidePath, 10*time.Second), "the server closed the stalled connection")
}

func TestServerShutsDownWhenItsContextEnds(t *testing.T) {
	srv, err := jevhttp.NewServer(overseer.HeuristicJudge{}, jevhttp.ServerOptions{})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + jevhttp.ReadyPath)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	cancel()
	require.NoError(t, <-done)
	_, err = http.Get("http://" + ln.Addr().String() + jevhttp.HealthPath)
	assert.Error(t, err, "no longer listening")

	_, err = jevhttp.NewServer(overseer.HeuristicJudge{}, jevhttp.ServerOptions{ReadTimeout: -1})
	assert.ErrorContains(t, err, "ReadTimeout -1ns is negative")
	_, err = jevhttp.NewServer(overseer.HeuristicJudge{}, jevhttp.ServerOptions{HandlerOptions: jevhttp.HandlerOptions{Budget: time.Minute}})
	assert.ErrorContains(t, err, "more than the maximum of 30s")
}

// TestGolden pins the wire format: the request body the client sends for
// the overseer's boundary request and the response body the server sends
// (the end-to-end module checks both against the JSON Schemas).
func TestGolden(t *testing.T) {
	req := judgetest.BoundaryRequest()
	f, srv := newFake(t)
	want := judgetest.ValidResponse(req)
	f.script(judgetest.Reply{Kind: judgetest.KindAnswer, Response: want})
	_, err := newJudge(t, jevhttp.Options{URL: srv.URL, APIKey: "not-in-the-body"}).Decide(context.Background(), req)
	require.NoError(t, err)
	golden(t, "request.golden.json", f.bodies[0])
	assert.NotContains(t, string(f.bodies[0]), "not-in-the-body")

	backend := jev.JudgeFunc(func(context.Context, jev.Request) (*jev.Response, error) {
		r := *want
		r.Latency = 1500 * time.Microsecond
		return &r, nil
	})
	h, err := jevhttp.NewHandler(backend, jevhttp.HandlerOptions{})
	require.NoError(t, err)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("POST", jevhttp.DecidePath, bytes.NewReader(f.bodies[0])))
	require.Equal(t, 200, w.Code, w.Body.String())
	golden(t, "response.golden.json", w.Body.Bytes())

	// The client parses the golden response back into the response served.
	data, err := os.ReadFile(filepath.Join("testdata", "response.golden.json"))
	require.NoError(t, err)
	got, err := jevhttp.ParseResponse(req, data)
	require.NoError(t, err)
	assert.Equal(t, want.Answers, got.Answers)
	assert.Equal(t, want.ModelVersion, got.ModelVersion)
	assert.Equal(t, 1500*time.Microsecond, got.Latency)
}

// golden compares got, indented, with testdata/name; -update rewrites it.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, json.Indent(&buf, bytes.TrimSpace(got), "", "  "))
	buf.WriteByte('\n')
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create %s", path)
	assert.Equal(t, string(want), buf.String(), "%s changed; run go test -update if that is intended", path)
}

// TestServedJudgeIsCancelledWhenTheCallerHangsUp: a caller whose budget
// runs out hangs up, and the server cancels its judge's context instead of
// letting it run to the server's own budget, whatever the body's size.
func TestServedJudgeIsCancelledWhenTheCallerHangsUp(t *testing.T) {
	cancelled := make(chan struct{})
	backend := jev.JudgeFunc(func(ctx context.Context, _ jev.Request) (*jev.Response, error) {
		<-ctx.Done()
		close(cancelled)
		return nil, ctx.Err()
	})
	url := serve(t, backend, jevhttp.ServerOptions{})
	req := judgetest.BoundaryRequest()
	req.State = json.RawMessage(`{"padding":"` + strings.Repeat("x", 200_000) + `"}`)
	_, err := newJudge(t, jevhttp.Options{URL: url, Budget: 200 * time.Millisecond}).Decide(context.Background(), req)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	select {
	case <-cancelled:
	case <-time.After(10 * time.Second): // far below the server's own 30 s budget
		t.Fatal("the served judge was not cancelled when its caller hung up")
	}
}
