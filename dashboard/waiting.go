package dashboard

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
)

// WaitingBackend is a Backend that lists the open gates across jobs and
// resumes several at once itself. TemporalBackend is one (through package
// ops, as `overseer list --paused` and `overseer resume` with several ids
// are); for any other Backend the dashboard derives both from List,
// Status and Resume.
type WaitingBackend interface {
	Backend
	// Waiting lists the running jobs' open gates, oldest first.
	Waiting(ctx context.Context, opts ops.ListOptions) ([]ops.WaitingGate, error)
	// ResumeAll resumes each gate with req, bound to the gate's own id
	// (req.Gate is ignored), and reports each result.
	ResumeAll(ctx context.Context, gates []ops.GateRef, req overseer.ResumeRequest) []ops.ResumeResult
}

// Waiting implements WaitingBackend.
func (b TemporalBackend) Waiting(ctx context.Context, opts ops.ListOptions) ([]ops.WaitingGate, error) {
	return ops.Waiting(ctx, b.Client, b.list(opts))
}

// ResumeAll implements WaitingBackend.
func (b TemporalBackend) ResumeAll(ctx context.Context, gates []ops.GateRef, req overseer.ResumeRequest) []ops.ResumeResult {
	return ops.ResumeAll(ctx, b.Client, gates, req, 0)
}

var _ WaitingBackend = TemporalBackend{}

// maxBatch caps the gates one batch resume may name.
const maxBatch = 100

// waiting lists the open gates, oldest first.
func (s *Server) waiting(ctx context.Context) ([]ops.WaitingGate, error) {
	opts := ops.ListOptions{CallTimeout: s.opts.Timeout}
	if wb, ok := s.backend.(WaitingBackend); ok {
		return wb.Waiting(ctx, opts)
	}
	opts.Query, opts.Limit = ops.PausedQuery(""), -1
	jobs, err := s.backend.List(ctx, opts)
	if err != nil && len(jobs) == 0 {
		return nil, err
	}
	status := func(ctx context.Context, j ops.Job) (overseer.Status, error) {
		return s.backend.Status(ctx, j.ID, j.RunID)
	}
	return ops.WaitingOf(ctx, jobs, status, s.opts.Timeout, s.opts.Now()), err
}

// resumeAll resumes each gate, bound to its own id.
func (s *Server) resumeAll(ctx context.Context, refs []ops.GateRef, req overseer.ResumeRequest) []ops.ResumeResult {
	if wb, ok := s.backend.(WaitingBackend); ok {
		return wb.ResumeAll(ctx, refs, req)
	}
	out := make([]ops.ResumeResult, len(refs))
	for i, ref := range refs {
		r := req
		r.Gate = ref.GateID
		g, err := s.backend.Resume(ctx, ref.JobID, r)
		out[i] = ops.ResumeResult{JobID: ref.JobID, GateID: ref.GateID, Gate: g, Err: err}
	}
	return out
}

// waitingPage is one page of the queue of open gates with the
// batch-resume form.
type waitingPage struct {
	page
	LiveURL string
	Rows    []waitingRow
	Error   string
	// Pager places Rows in the whole queue.
	Pager pager
	Form  resumeForm
	// Results are the last batch's, one per gate.
	Results []batchResult
}

// waitingRow is one open gate.
type waitingRow struct {
	ops.WaitingGate
	URL string
	// Value names the gate in the form: job and gate id, URL-encoded.
	Value string
	// Checked keeps a gate selected when the form comes back refused.
	Checked bool
	// DeadlineIn is the time left until the deadline; Overdue when it has
	// passed (the worker acts on it any moment).
	DeadlineIn time.Duration
	Overdue    bool
	// CannotOpen is why the signed-in user may not open this gate ("" when
	// they may, or nobody is signed in): its row cannot be selected, so
	// they learn it before sending, not from the refusal.
	CannotOpen string
}

// batchResult is the outcome of one gate of a batch.
type batchResult struct {
	JobID, GateID, URL string
	OK                 bool
	Action             overseer.Action
	By                 string
	// Judgement says whether the pause was needed and which rule said so.
	Judgement string
	Message   string
}

func gateValue(ref ops.GateRef) string {
	return url.Values{"job": {ref.JobID}, "gate": {ref.GateID}}.Encode()
}

func parseGateValue(v string) (ops.GateRef, bool) {
	q, err := url.ParseQuery(v)
	if err != nil || q.Get("job") == "" {
		return ops.GateRef{}, false
	}
	return ops.GateRef{JobID: q.Get("job"), GateID: q.Get("gate")}, true
}

// pager is where one Waiting page sits in the queue: gates From to To
// (counted from 1) of Total, and the links to the pages beside it.
type pager struct {
	Page, Pages, From, To, Total int
	PrevURL, NextURL             string
}

// pageOf returns page n (from 1) of total items, size to a page; a page
// past the last is the last (the queue shrinks as gates are resumed, so
// a link may outlive its page).
func pageOf(n, total, size int) (p pager, from, to int) {
	p.Total, p.Pages = total, max(1, (total+size-1)/size)
	p.Page = min(max(n, 1), p.Pages)
	from, to = min((p.Page-1)*size, total), min(p.Page*size, total)
	p.From, p.To = from+1, to
	if p.Page > 1 {
		p.PrevURL = waitingURL(p.Page - 1)
	}
	if p.Page < p.Pages {
		p.NextURL = waitingURL(p.Page + 1)
	}
	return p, from, to
}

func waitingURL(page int) string {
	if page <= 1 {
		return "/waiting"
	}
	return "/waiting?page=" + strconv.Itoa(page)
}

// waitingPage is the page of the queue r asks for (?page=N, or the form's
// page field after a batch resume).
func (s *Server) waitingPage(r *http.Request) waitingPage {
	n, _ := strconv.Atoi(r.FormValue("page")) // not a number: the first page
	p := waitingPage{page: s.page(r, "Waiting")}
	ctx, cancel := s.viewCall(r)
	defer cancel()
	gates, err := s.queue.get(ctx, "")
	if err != nil {
		s.log.Warn("dashboard: list open gates", zap.Error(err))
		p.Error = "Temporal did not list the open gates: " + err.Error()
		if k, at, ok := s.queue.kept(""); ok && errors.Is(err, ops.ErrRateLimited) && len(gates) == 0 {
			gates = k
			p.Error += asOf(at, s.opts.Refresh)
		}
	}
	var from, to int
	p.Pager, from, to = pageOf(n, len(gates), s.opts.WaitingPage)
	p.LiveURL = "/waiting?fragment=rows&page=" + strconv.Itoa(p.Pager.Page)
	now := s.opts.Now()
	for _, g := range gates[from:to] {
		row := waitingRow{WaitingGate: g, URL: jobURL(g.JobID), Value: gateValue(ops.GateRef{JobID: g.JobID, GateID: g.GateID}),
			CannotOpen: s.cannotOpen(r, g)}
		switch {
		case g.Unreadable != "":
			row.CannotOpen = "its gate could not be read; open the job's page"
		case g.OperatorPaused:
			row.CannotOpen = "an operator holds the job with Temporal's Workflow Pause: " + ops.UnpauseCommand(g.JobID)
		}
		if g.Deadline != nil {
			row.DeadlineIn = g.Deadline.Sub(now)
			row.Overdue = row.DeadlineIn <= 0
		}
		p.Rows = append(p.Rows, row)
	}
	return p
}

// cannotOpen is cannotResume for a row of the queue. The queue does not
// read who started each job, so the four-eyes rule is left to the resume
// unless the job says nobody can be checked.
func (s *Server) cannotOpen(r *http.Request, g ops.WaitingGate) string {
	id, ok := identityOf(r.Context())
	if !s.auth.on() || !ok {
		return ""
	}
	return g.Refusal(id.Name, id.Groups)
}

func (s *Server) handleWaiting(w http.ResponseWriter, r *http.Request) {
	p := s.waitingPage(r)
	if r.URL.Query().Get("fragment") == "rows" {
		s.render(w, r, http.StatusOK, "waiting_rows", p)
		return
	}
	p.Form = resumeForm{CSRF: s.csrf.token(w, r), Action: string(overseer.ActionContinue)}
	p.NoAutoReload = true // a meta refresh would clear the selection
	s.render(w, r, http.StatusOK, "waiting.html", p)
}

func (s *Server) handleResumeAll(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 256<<10)
	if err := r.ParseForm(); err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	if !s.csrf.valid(r) {
		s.log.Warn("dashboard: refused a batch resume without a valid CSRF token")
		s.errorPage(w, r, http.StatusForbidden, "The form's security token is missing or stale: reload the Waiting page and send it again.")
		return
	}
	form := resumeForm{
		By:     strings.TrimSpace(r.PostFormValue("by")),
		Note:   strings.TrimSpace(r.PostFormValue("note")),
		Action: r.PostFormValue("action"),
	}
	var refs []ops.GateRef
	for _, v := range r.PostForm["gate"] {
		if ref, ok := parseGateValue(v); ok && !slices.Contains(refs, ref) {
			refs = append(refs, ref)
		}
	}
	req := s.resumeRequest(r, form)
	refuse := func(msg string) {
		p := s.waitingPage(r)
		form.CSRF, form.Error = s.csrf.token(w, r), msg
		for i := range p.Rows {
			p.Rows[i].Checked = slices.Contains(refs, ops.GateRef{JobID: p.Rows[i].JobID, GateID: p.Rows[i].GateID})
		}
		p.Form, p.NoAutoReload = form, true
		s.render(w, r, http.StatusUnprocessableEntity, "waiting.html", p)
	}
	switch {
	case len(refs) == 0:
		refuse("Select at least one gate to resume.")
		return
	case len(refs) > maxBatch:
		refuse("Select at most 100 gates at once.")
		return
	}
	if err := req.Validate(); err != nil {
		refuse(refusal(err)) // the same for every gate: say it once, send none
		return
	}
	// Each resume has its own time: a batch of many is not cut short, nor is
	// its answer by Serve's write timeout.
	bound := s.opts.Timeout * time.Duration(1+len(refs)/4)
	if d := bound + 30*time.Second; d > writeTimeout {
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
	}
	ctx, cancel := context.WithTimeout(r.Context(), bound)
	defer cancel()
	results := s.resumeAll(ctx, refs, req)
	s.forgetViews()
	p := s.waitingPage(r)
	for _, res := range results {
		br := batchResult{JobID: res.JobID, GateID: res.GateID, URL: jobURL(res.JobID)}
		if res.Err != nil {
			br.Message = refusal(res.Err)
			s.log.Info("dashboard: batch resume refused", zap.String("workflow_id", res.JobID), zap.String("gate", res.GateID),
				zap.String("by", req.By), zap.Error(res.Err))
		} else {
			br.OK, br.Action, br.By, br.Judgement = true, res.Gate.Action, res.Gate.By, res.Gate.Judgement()
			if res.Gate.ID != "" {
				br.GateID = res.Gate.ID
			}
			s.log.Info("dashboard: job resumed", zap.String("workflow_id", res.JobID), zap.String("gate", br.GateID),
				zap.String("phase", res.Gate.Phase), zap.String("by", res.Gate.By), zap.String("action", string(res.Gate.Action)))
		}
		p.Results = append(p.Results, br)
	}
	form.CSRF, form.Note = s.csrf.token(w, r), ""
	p.Form, p.NoAutoReload = form, true
	s.render(w, r, http.StatusOK, "waiting.html", p)
}
