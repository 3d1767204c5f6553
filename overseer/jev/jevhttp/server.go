package jevhttp

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

// HandlerOptions configure a Handler. The zero value works: no key is
// required, bodies up to DefaultMaxBodyBytes are read and one decision may
// take up to jev.MaxBudget.
type HandlerOptions struct {
	// APIKey, when set, is required as "Authorization: Bearer <key>" on the
	// decide endpoint (compared in constant time). If not set, no key is
	// required: bind to a loopback address or put a proxy in front.
	APIKey string
	// MaxRequestBytes bounds a request body; a larger one gets 413. If not
	// set, DefaultMaxBodyBytes.
	MaxRequestBytes int64
	// Budget bounds one call of the judge; past it the answer is 504. The
	// caller's own budget usually ends the call first (its disconnect
	// cancels the judge's context). If not set, jev.MaxBudget; more than
	// jev.MaxBudget is an error.
	Budget time.Duration
	// Logger logs one line per decision (status, model, latency; never a
	// header or a body). If not set, nothing is logged.
	Logger *zap.Logger
}

// Handler serves a jev.Judge over the Jev HTTP protocol: POST DecidePath,
// GET HealthPath and GET ReadyPath. Every answer is validated before it is
// sent: a judge that answers badly gets the client a 502 with the code
// invalid_answer, never a 200.
type Handler struct {
	judge    jev.Judge
	key      string
	maxBytes int64
	budget   time.Duration
	log      *zap.Logger
	mux      *http.ServeMux
	draining atomic.Bool
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns a Handler serving judge.
func NewHandler(judge jev.Judge, opts HandlerOptions) (*Handler, error) {
	if judge == nil {
		return nil, errors.New("jevhttp: NewHandler needs a judge")
	}
	if opts.MaxRequestBytes < 0 {
		return nil, fmt.Errorf("jevhttp: MaxRequestBytes %d is negative", opts.MaxRequestBytes)
	}
	budget := opts.Budget
	if budget == 0 {
		budget = jev.MaxBudget
	}
	budget, err := jev.CheckBudget(budget)
	if err != nil {
		return nil, fmt.Errorf("jevhttp: budget: %w", err)
	}
	h := &Handler{judge: judge, key: opts.APIKey, maxBytes: opts.MaxRequestBytes, budget: budget, log: opts.Logger, mux: http.NewServeMux()}
	if h.maxBytes == 0 {
		h.maxBytes = DefaultMaxBodyBytes
	}
	if h.log == nil {
		h.log = zap.NewNop()
	}
	h.mux.HandleFunc(DecidePath, h.decide)
	h.mux.HandleFunc(HealthPath, h.health)
	h.mux.HandleFunc(ReadyPath, h.ready)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, CodeNotFound, "no such endpoint; POST "+DecidePath)
	})
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// SetDraining makes ReadyPath answer 503 (and the decide endpoint refuse
// new work with 503) from now on; Server.Serve calls it when it begins to
// shut down.
func (h *Handler) SetDraining() { h.draining.Store(true) }

func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "use GET")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (h *Handler) ready(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "use GET")
		return
	}
	if h.draining.Load() {
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "shutting down")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

func (h *Handler) decide(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	status, model := h.serveDecide(w, r)
	h.log.Info("jev decision", zap.Int("status", status), zap.String("model", model),
		zap.Duration("latency", time.Since(start)), zap.String("remote", r.RemoteAddr))
}

// serveDecide answers one decide call and returns the status and model,
// for the log line.
func (h *Handler) serveDecide(w http.ResponseWriter, r *http.Request) (int, string) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, "use POST"), ""
	}
	if h.key != "" && !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="jev"`)
		return writeError(w, http.StatusUnauthorized, CodeUnauthorized, "missing or wrong API key"), ""
	}
	if h.draining.Load() {
		return writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "shutting down"), ""
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		return writeError(w, http.StatusUnsupportedMediaType, CodeInvalidRequest, "Content-Type must be application/json"), ""
	}
	// The whole body is read, up to the limit, before the judge is asked:
	// only then does the server notice a caller that hangs up (its budget
	// ran out) and cancel the judge's context.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return writeError(w, http.StatusRequestEntityTooLarge, CodeRequestTooLarge, fmt.Sprintf("request body larger than %d bytes", h.maxBytes)), ""
		}
		return writeError(w, http.StatusBadRequest, CodeInvalidRequest, "cannot read the body: "+jev.Clip(err.Error(), maxMessage)), ""
	}
	var req jev.Request
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&req); err != nil {
		return writeError(w, http.StatusBadRequest, CodeInvalidRequest, "body is not a Jev request: "+jev.Clip(err.Error(), maxMessage)), ""
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return writeError(w, http.StatusBadRequest, CodeInvalidRequest, "data after the request object"), ""
	}
	if len(req.State) == 0 || string(req.State) == "null" {
		return writeError(w, http.StatusBadRequest, CodeInvalidRequest, "missing state"), ""
	}
	if err := jev.ValidateRequest(req); err != nil {
		return writeError(w, http.StatusBadRequest, CodeInvalidRequest, err.Error()), ""
	}

	ctx, cancel := context.WithTimeoutCause(r.Context(), h.budget,
		fmt.Errorf("the judge did not answer within %v: %w", h.budget, context.DeadlineExceeded))
	defer cancel()
	start := time.Now()
	resp, err := h.judge.Decide(ctx, req)
	latency := time.Since(start)
	if err == nil {
		err = jev.Validate(req, resp)
	}
	switch {
	case err == nil:
	case r.Context().Err() != nil:
		// The caller is gone (its own budget or cancellation): nobody reads
		// this answer.
		return 499, ""
	case ctx.Err() != nil:
		return writeError(w, http.StatusGatewayTimeout, CodeTimeout, context.Cause(ctx).Error()), ""
	case errors.Is(err, jev.ErrInvalidAnswer):
		return writeError(w, http.StatusBadGateway, CodeInvalidAnswer, err.Error()), ""
	case errors.Is(err, jev.ErrRejected):
		return writeError(w, http.StatusBadGateway, CodeRejected, err.Error()), ""
	default:
		return writeError(w, http.StatusBadGateway, CodeJudgeFailed, err.Error()), ""
	}
	out := *resp
	if out.Latency <= 0 {
		out.Latency = latency
	}
	return writeJSON(w, http.StatusOK, &out), out.ModelVersion
}

func (h *Handler) authorized(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(h.key)) == 1
}

func writeJSON(w http.ResponseWriter, status int, v any) int {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body, _ = json.Marshal(ErrorBody{ErrorDetail{Code: CodeJudgeFailed, Message: "cannot encode the answer: " + err.Error()}})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
	return status
}

func writeError(w http.ResponseWriter, status int, code, msg string) int {
	return writeJSON(w, status, ErrorBody{ErrorDetail{Code: code, Message: jev.Clip(msg, 2*maxMessage)}})
}

// ServerOptions configure a Server. The zero value works: see
// HandlerOptions, and the timeouts below.
type ServerOptions struct {
	HandlerOptions
	// ReadHeaderTimeout bounds reading a request's headers. If not set, 5 s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request. If not set, 10 s.
	ReadTimeout time.Duration
	// WriteTimeout bounds a request from the end of its headers to the end
	// of the answer. If not set, the handler's budget plus 5 s.
	WriteTimeout time.Duration
	// IdleTimeout bounds an idle keep-alive connection. If not set, 60 s.
	IdleTimeout time.Duration
	// ShutdownTimeout bounds the graceful shutdown once the context of
	// Serve is done. If not set, 10 s.
	ShutdownTimeout time.Duration
}

// Server serves a judge over HTTP with timeouts, a body limit and graceful
// shutdown. It is what `overseer judge serve` runs.
type Server struct {
	handler  *Handler
	srv      *http.Server
	shutdown time.Duration
}

// NewServer returns a Server for judge.
func NewServer(judge jev.Judge, opts ServerOptions) (*Server, error) {
	h, err := NewHandler(judge, opts.HandlerOptions)
	if err != nil {
		return nil, err
	}
	for name, d := range map[string]time.Duration{"ReadHeaderTimeout": opts.ReadHeaderTimeout, "ReadTimeout": opts.ReadTimeout,
		"WriteTimeout": opts.WriteTimeout, "IdleTimeout": opts.IdleTimeout, "ShutdownTimeout": opts.ShutdownTimeout} {
		if d < 0 {
			return nil, fmt.Errorf("jevhttp: %s %v is negative", name, d)
		}
	}
	orDefault := func(d, def time.Duration) time.Duration {
		if d == 0 {
			return def
		}
		return d
	}
	return &Server{
		handler: h,
		srv: &http.Server{
			Handler:           h,
			ReadHeaderTimeout: orDefault(opts.ReadHeaderTimeout, 5*time.Second),
			ReadTimeout:       orDefault(opts.ReadTimeout, 10*time.Second),
			WriteTimeout:      orDefault(opts.WriteTimeout, h.budget+5*time.Second),
			IdleTimeout:       orDefault(opts.IdleTimeout, 60*time.Second),
			MaxHeaderBytes:    64 << 10,
			ErrorLog:          zap.NewStdLog(h.log),
		},
		shutdown: orDefault(opts.ShutdownTimeout, 10*time.Second),
	}, nil
}

// Handler returns the server's handler.
func (s *Server) Handler() *Handler { return s.handler }

// Serve serves on ln until ctx is done, then stops accepting work
// (ReadyPath answers 503), waits up to the shutdown timeout for decisions
// in flight and returns nil. It returns an error if serving fails.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("jevhttp: serve on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	s.handler.SetDraining()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.shutdown)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	<-errc // http.ErrServerClosed
	if err != nil {
		return fmt.Errorf("jevhttp: shut down: %w", err)
	}
	return nil
}
