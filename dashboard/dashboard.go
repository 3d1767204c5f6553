package dashboard

import (
	"cmp"
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
)

// Backend is what the dashboard reads from and does to Temporal.
// TemporalBackend implements it over a client; tests may fake it.
type Backend interface {
	List(ctx context.Context, opts ops.ListOptions) ([]ops.Job, error)
	Describe(ctx context.Context, id string) (ops.Job, error)
	// Status is the status of run runID of job id ("" is the latest run).
	Status(ctx context.Context, id, runID string) (overseer.Status, error)
	Resume(ctx context.Context, id string, req overseer.ResumeRequest) (overseer.Gate, error)
}

// WorkerChecker is a Backend that can say, before a job's status query,
// whether a worker polls the job's task queue: a server holds a query for
// a queue nobody polls until its own timeout (tens of seconds), far past
// a page's, so with the workers down every job page would wait for it.
// TemporalBackend is one.
type WorkerChecker interface {
	// WorkerPolls says whether a worker polled the workflow task queue
	// recently (within workerFresh).
	WorkerPolls(ctx context.Context, queue string) (bool, error)
}

// workerFresh is how recently a worker must have polled a task queue for
// the job page to ask it a status: a worker's polls last about a minute.
const workerFresh = 90 * time.Second

// TemporalBackend is the Backend over a Temporal client (package ops).
// DataConverter and Namespace read the jobs' summaries in their memos
// (ops.ListOptions).
type TemporalBackend struct {
	Client        client.Client
	DataConverter converter.DataConverter
	Namespace     string
}

// list fills in what reading the summaries takes.
func (b TemporalBackend) list(opts ops.ListOptions) ops.ListOptions {
	opts.DataConverter = cmp.Or[converter.DataConverter](opts.DataConverter, b.DataConverter)
	opts.Namespace = cmp.Or(opts.Namespace, b.Namespace)
	return opts
}

// List implements Backend.
func (b TemporalBackend) List(ctx context.Context, opts ops.ListOptions) ([]ops.Job, error) {
	return ops.List(ctx, b.Client, b.list(opts))
}

// Describe implements Backend.
func (b TemporalBackend) Describe(ctx context.Context, id string) (ops.Job, error) {
	return ops.Describe(ctx, b.Client, id)
}

// Status implements Backend.
func (b TemporalBackend) Status(ctx context.Context, id, runID string) (overseer.Status, error) {
	return ops.RunStatus(ctx, b.Client, id, runID)
}

// WorkerPolls implements WorkerChecker with DescribeTaskQueue: a poller
// seen within workerFresh.
func (b TemporalBackend) WorkerPolls(ctx context.Context, queue string) (bool, error) {
	resp, err := b.Client.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		return false, err
	}
	for _, p := range resp.GetPollers() {
		if time.Since(p.GetLastAccessTime().AsTime()) < workerFresh {
			return true, nil
		}
	}
	return false, nil
}

// Resume implements Backend.
func (b TemporalBackend) Resume(ctx context.Context, id string, req overseer.ResumeRequest) (overseer.Gate, error) {
	return ops.Resume(ctx, b.Client, id, req)
}

// Options configure the dashboard. Client (or Backend) is required; the
// zero value of every other field works.
type Options struct {
	// Client reads jobs from Temporal. Required unless Backend is set.
	Client client.Client
	// Backend replaces Client, e.g. in tests. If not set,
	// TemporalBackend{Client}.
	Backend Backend
	// Namespace is shown in the header and used in links to the Temporal
	// UI. If not set, "default".
	Namespace string
	// DataConverter is the client's data converter, payload codec
	// included: the list and the Waiting page read each job's summary from
	// its memo with it (no query per row). If not set, the default
	// converter, which cannot read a memo a codec encrypted: those rows
	// fall back on the job's status query.
	DataConverter converter.DataConverter
	// TemporalUI is the Temporal Web UI's base URL, e.g.
	// http://localhost:8233, for links to a job's history. If not set, no
	// links.
	TemporalUI string
	// Refresh is how often pages update themselves. If not set, 5 seconds.
	Refresh time.Duration
	// Limit caps the jobs listed. If not set, 50.
	Limit int
	// WaitingPage is how many gates one Waiting page shows: the queue holds
	// every open gate, oldest first, paged through, so that a page of a
	// queue of thousands costs what it shows. If not set, 200.
	WaitingPage int
	// Timeout bounds each Temporal call a page makes. If not set, 5 seconds.
	Timeout time.Duration
	// Policy draws the bands on the chart: give it the policy your workers
	// use. If not set, the policy of the default judge
	// (overseer.DefaultLearnedPolicy).
	Policy overseer.Policy
	// AllowedHosts are host names (without port) the dashboard answers to,
	// besides localhost and IP addresses. Add the name you reach it by when
	// it is behind a proxy or in a cluster. If not set, loopback names and
	// IP addresses only.
	AllowedHosts []string
	// CSRFKey signs the resume form's tokens. Give all replicas behind one
	// load balancer the same key. If not set, a random key per process.
	CSRFKey []byte
	// Logger logs requests that fail and every resume. If not set, nothing
	// is logged.
	Logger *zap.Logger

	// OIDC signs users in with OpenID Connect; TrustedProxy takes their
	// identity from an authenticating proxy's header instead (set one or
	// neither). With either, every page needs a signed-in user and a
	// resume's by is that user, never a typed name. If neither is set,
	// the dashboard has no authentication (anyone who reaches it can
	// resume jobs).
	OIDC         OIDC
	TrustedProxy TrustedProxy
	// SessionKey (16 bytes or more) encrypts and authenticates the OIDC
	// session cookies. Give all replicas behind one load balancer the same
	// key. If not set, a random key per process (a restart signs everyone
	// out).
	SessionKey []byte
	// SessionTTL is how long an OIDC sign-in lasts. If not set, 8 hours.
	SessionTTL time.Duration
	// Now is the clock the pages' ages, waits and deadlines are measured
	// by, e.g. a fixed time in tests. If not set, time.Now.
	Now func() time.Time
	// ViewFresh is how long the list and the Waiting page share one read
	// of visibility among the tabs that show them; up to Refresh, a tab
	// is shown the last read at once while one read replaces it. A
	// resume from the dashboard clears them. If not set, 1 second;
	// negative: every request reads.
	ViewFresh time.Duration
}

// Server is the dashboard's HTTP handler.
type Server struct {
	opts    Options
	backend Backend
	mux     *http.ServeMux
	tmpl    *template.Template
	csrf    csrf
	cop     *http.CrossOriginProtection
	log     *zap.Logger
	auth    *auth

	// closed caches the statuses of closed runs, which never change (a
	// query on a closed run makes a worker replay its history).
	mu     sync.Mutex
	closed map[string]overseer.Status
	// polled remembers, per task queue, whether a worker polls it
	// (WorkerChecker), for workerCheckTTL: the job pages share one call.
	polled map[string]workerCheck

	// lists and queue share the views' reads among tabs (viewCache).
	lists *viewCache[listView]
	queue *viewCache[[]ops.WaitingGate]
}

// listView is what the list page read: its rows, or why it could not.
// keptAt is set when the rows are the last good read's, kept because the
// server refused this one as over the namespace's rate limit.
type listView struct {
	rows   []row
	err    error
	keptAt time.Time
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// maxClosedCache bounds the cache of closed runs' statuses.
const maxClosedCache = 500

// workerCheck is a WorkerChecker's answer and when it was given.
type workerCheck struct {
	at     time.Time
	polled bool
}

// workerCheckTTL is how long the job pages reuse a task queue's check.
const workerCheckTTL = 5 * time.Second

// ErrNoWorker: no worker polls the job's task queue, so nothing can answer
// its status query; the page shows what the job's memo holds.
var ErrNoWorker = errors.New("no worker polls the job's task queue")

// workerPolls says whether a worker polls queue, from the backend's
// WorkerChecker (true when it has none, or the check itself fails: the
// query then says what is wrong).
func (s *Server) workerPolls(ctx context.Context, queue string) bool {
	wc, ok := s.backend.(WorkerChecker)
	if !ok || queue == "" {
		return true
	}
	now := time.Now()
	s.mu.Lock()
	c, ok := s.polled[queue]
	s.mu.Unlock()
	if ok && now.Sub(c.at) < workerCheckTTL {
		return c.polled
	}
	cctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	polled, err := wc.WorkerPolls(cctx, queue)
	if err != nil {
		return true
	}
	s.mu.Lock()
	if s.polled == nil || len(s.polled) >= maxClosedCache {
		s.polled = map[string]workerCheck{}
	}
	s.polled[queue] = workerCheck{at: now, polled: polled}
	s.mu.Unlock()
	return polled
}

// New returns the dashboard for opts.
func New(opts Options) (*Server, error) {
	backend := opts.Backend
	if backend == nil {
		if opts.Client == nil {
			return nil, errors.New("dashboard: Options.Client (or Backend) is required")
		}
		backend = TemporalBackend{Client: opts.Client, DataConverter: opts.DataConverter, Namespace: opts.Namespace}
	}
	if opts.Namespace == "" {
		opts.Namespace = client.DefaultNamespace
	}
	if opts.Refresh <= 0 {
		opts.Refresh = 5 * time.Second
	}
	if opts.Limit <= 0 {
		opts.Limit = 50
	}
	if opts.WaitingPage <= 0 {
		opts.WaitingPage = 200
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Policy == (overseer.Policy{}) {
		opts.Policy = overseer.DefaultLearnedPolicy()
	}
	if err := opts.Policy.Validate(); err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	if opts.TemporalUI != "" {
		u, err := url.Parse(opts.TemporalUI)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("dashboard: TemporalUI %q is not an http(s) URL", opts.TemporalUI)
		}
		opts.TemporalUI = strings.TrimRight(opts.TemporalUI, "/")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	key := opts.CSRFKey
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("dashboard: make CSRF key: %w", err)
		}
	}
	a, err := newAuth(opts, opts.Logger)
	if err != nil {
		return nil, err
	}
	if h := a.redirectHost(); h != "" {
		opts.AllowedHosts = append(slices.Clone(opts.AllowedHosts), h)
	}
	tmpl, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("dashboard: parse templates: %w", err)
	}
	s := &Server{
		opts: opts, backend: backend, tmpl: tmpl, csrf: csrf{key: key},
		cop: http.NewCrossOriginProtection(), log: opts.Logger, auth: a, closed: map[string]overseer.Status{},
	}
	fresh := opts.ViewFresh
	if fresh == 0 {
		fresh = time.Second
	}
	stale := max(opts.Refresh, fresh)
	if fresh < 0 {
		fresh, stale = 0, 0
	}
	// A view's read has a context of its own: three call timeouts, as a
	// page has; a request that gives up does not cancel the others' read.
	s.lists = newViewCache(fresh, stale, 3*opts.Timeout, time.Now, s.readList)
	s.lists.good = func(v listView, _ error) bool { return v.err == nil } // the list's read says its error in the view
	s.queue = newViewCache(fresh, stale, 3*opts.Timeout, time.Now, func(ctx context.Context, _ string) ([]ops.WaitingGate, error) {
		return s.waiting(ctx)
	})
	s.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.log.Warn("dashboard: refused a cross-origin request", zap.String("path", r.URL.Path),
			zap.String("origin", r.Header.Get("Origin")), zap.String("sec_fetch_site", r.Header.Get("Sec-Fetch-Site")))
		s.errorPage(w, r, http.StatusForbidden, "This form can only be sent from the dashboard's own pages (cross-origin request refused).")
	}))
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("dashboard: static assets: %w", err)
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("GET /{$}", s.handleList)
	s.mux.HandleFunc("GET /job", s.handleJob)
	s.mux.Handle("POST /job/resume", s.cop.Handler(http.HandlerFunc(s.handleResume)))
	s.mux.HandleFunc("GET /waiting", s.handleWaiting)
	s.mux.HandleFunc("GET /models", s.handleModels)
	s.mux.Handle("POST /waiting/resume", s.cop.Handler(http.HandlerFunc(s.handleResumeAll)))
	if a.oidc.on() {
		s.mux.HandleFunc("GET "+loginPath, s.handleLogin)
		s.mux.HandleFunc("GET "+callbackPath, s.handleCallback)
		s.mux.Handle("POST "+logoutPath, s.cop.Handler(http.HandlerFunc(s.handleLogout)))
		s.mux.HandleFunc("GET "+signedOutPath, s.handleSignedOut)
	}
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	return s, nil
}

// ServeHTTP implements http.Handler: it checks the Host, sets the security
// headers, authenticates (when OIDC or a trusted proxy is configured) and
// routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if !s.hostAllowed(r.Host) {
		s.log.Warn("dashboard: refused a request for an unknown host", zap.String("host", r.Host))
		http.Error(w, "unknown host: add it to the dashboard's allowed hosts (--allowed-hosts)", http.StatusMisdirectedRequest)
		return
	}
	r, ok := s.authenticate(w, r)
	if !ok {
		return
	}
	s.mux.ServeHTTP(w, r)
}

// hostAllowed guards against DNS rebinding: a page on another site whose
// name resolves to this machine must not be able to read the dashboard.
func (s *Server) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") || net.ParseIP(host) != nil {
		return true
	}
	for _, a := range s.opts.AllowedHosts {
		if strings.EqualFold(strings.TrimSuffix(a, "."), host) {
			return true
		}
	}
	return false
}

// viewCall bounds a view of many jobs: each of its calls has its own
// timeout (ops.ListOptions.CallTimeout, a row's status query), and the
// page as a whole three of them.
func (s *Server) viewCall(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 3*s.opts.Timeout)
}

// call bounds one Temporal call.
func (s *Server) call(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.opts.Timeout)
}

// status returns the status of the job's run j.RunID, from the cache when
// the run is closed. It queries that run, not the latest run of the id:
// after continue-as-new the latest run is the successor.
func (s *Server) status(ctx context.Context, j ops.Job) (overseer.Status, error) {
	if !j.Running() && j.RunID != "" {
		s.mu.Lock()
		st, ok := s.closed[j.RunID]
		s.mu.Unlock()
		if ok {
			return st, nil
		}
	}
	if !s.workerPolls(ctx, j.TaskQueue) {
		return overseer.Status{}, fmt.Errorf("%w (%s): its overseer status comes from a worker; start one, or read what its memo holds above", ErrNoWorker, j.TaskQueue)
	}
	st, err := s.backend.Status(ctx, j.ID, j.RunID)
	if err != nil || j.Running() || j.RunID == "" {
		return st, err
	}
	s.mu.Lock()
	if len(s.closed) >= maxClosedCache {
		clear(s.closed)
	}
	s.closed[j.RunID] = st
	s.mu.Unlock()
	return st, nil
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, data any) {
	var buf strings.Builder
	if err := s.tmpl.ExecuteTemplate(&buf, name, data); err != nil {
		s.log.Error("dashboard: render page", zap.String("template", name), zap.String("path", r.URL.Path), zap.Error(err))
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(buf.String()))
}

func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, code int, msg string) {
	s.render(w, r, code, "error.html", errorPage{page: s.page(r, "Error"), Code: code, Message: msg})
}

// The timeouts of Serve. A request's headers and body (a form of a few
// KiB at most) must arrive within readTimeout, so a client that stalls
// cannot hold connections; a page has writeTimeout from its headers to the
// end of its answer, well above its Temporal calls (Options.Timeout each;
// the batch resume, bounded by its size, extends its own). Variables, so
// that a test can shorten them.
var (
	readTimeout  = 10 * time.Second
	writeTimeout = 2 * time.Minute
	idleTimeout  = 2 * time.Minute
)

// Serve serves the dashboard on ln until ctx is done, then shuts down,
// waiting up to 5 seconds for requests in flight. A request's headers and
// body must arrive within 10 seconds and its answer be written within 2
// minutes; an idle connection is closed after 2 minutes.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: readTimeout, ReadTimeout: readTimeout, WriteTimeout: writeTimeout, IdleTimeout: idleTimeout}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("dashboard: serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("dashboard: shut down: %w", err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("dashboard: serve: %w", err)
	}
	return nil
}

// IsLoopback reports whether a listen address (host:port) binds to
// loopback only.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
