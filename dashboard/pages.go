package dashboard

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
)

// page is what every page's layout needs.
type page struct {
	Title      string
	Namespace  string
	TemporalUI string
	Refresh    int // seconds
	Updated    time.Time
	// NoAutoReload leaves out the meta refresh that reloads the page when
	// scripts are off (it would wipe a form being filled in).
	NoAutoReload bool
	// Auth is true when users sign in (OIDC or a trusted proxy); User is
	// the signed-in user, who resumes as such. SignOut offers the OIDC
	// sign-out.
	Auth    bool
	User    string
	SignOut bool
}

func (s *Server) page(r *http.Request, title string) page {
	p := page{Title: title, Namespace: s.opts.Namespace, TemporalUI: s.opts.TemporalUI,
		Refresh: max(1, int(s.opts.Refresh/time.Second)), Updated: s.opts.Now().UTC(), Auth: s.auth.on()}
	if id, ok := identityOf(r.Context()); ok {
		p.User, p.SignOut = id.Name, s.auth.oidc.on()
	}
	return p
}

type errorPage struct {
	page
	Code    int
	Message string
}

// badge is a status badge: the label a person reads and its CSS class.
type badge struct {
	Label, Class string
}

func bandBadge(b overseer.Band) badge {
	if b == overseer.BandUnknown {
		return badge{"Not assessed", "none"}
	}
	return badge{b.String(), string(b)}
}

var pausedBadge = badge{"Paused", "paused"}

// stateBadge shows Temporal's execution status.
func stateBadge(state string) badge {
	label := strings.ReplaceAll(state, "_", " ")
	if label != "" {
		label = strings.ToUpper(label[:1]) + label[1:]
	}
	return badge{label, "state-" + state}
}

// filters of the list page: name → visibility query.
var filters = []struct{ Name, Label string }{
	{"", "All"}, {"paused", "Paused"}, {"off_track", "Off track"}, {"needs_a_look", "Needs a look"},
	{"on_track", "On track"}, {"running", "Running"}, {"over_budget", "Over budget"},
}

func filterQuery(f string) (string, error) {
	switch f {
	case "":
		return "", nil
	case "paused":
		return ops.ListQuery("", true)
	case "running":
		return overseer.OpenJobsQuery, nil
	case "over_budget":
		return ops.OverBudgetQuery, nil
	}
	return ops.ListQuery(f, false)
}

type filterLink struct {
	Label, URL string
	Active     bool
}

type listPage struct {
	page
	Filters []filterLink
	LiveURL string
	Rows    []row
	Error   string
}

// row is one job in the list.
type row struct {
	Job   ops.Job
	URL   string
	Badge badge
	State badge
	HasP  bool
	P     float64
	// BandClass colours the P bar by the band of the latest assessment,
	// also when the job is paused.
	BandClass string
	// Why is, for a paused job, why it is paused in a few words (the
	// first line of its gate's evidence); Last then says the band it is
	// shown in and the latest assessment's P (overseer.PausedBand).
	Why  string
	Last string
	// NotAssessed is true when the latest assessment had no P.
	NotAssessed bool
	// Basis is what the latest assessment was based on; BasisShort its
	// first words.
	Basis, BasisShort string
	// Standing is where the job stands among its type's recent jobs at
	// this point (a recalibrated model's relative verdict), or "".
	Standing  string
	Phase     string
	Mode      string
	Age       time.Duration
	Pauses    int
	StatusErr string
	// Spend is what the job's phases reported spending, in short
	// (spendCell), SpendTitle in full against its budget (ops.Job.Spend);
	// BudgetState how near it is (near, reached).
	Spend, SpendTitle, BudgetState string
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	f := r.URL.Query().Get("filter")
	query, err := filterQuery(f)
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "Unknown filter: choose one of the links on the jobs page.")
		return
	}
	p := listPage{page: s.page(r, "Jobs")}
	for _, fl := range filters {
		u := "/"
		if fl.Name != "" {
			u = "/?filter=" + url.QueryEscape(fl.Name)
		}
		p.Filters = append(p.Filters, filterLink{Label: fl.Label, URL: u, Active: fl.Name == f})
	}
	p.LiveURL = "/?fragment=rows"
	if f != "" {
		p.LiveURL += "&filter=" + url.QueryEscape(f)
	}
	ctx, cancel := s.viewCall(r)
	defer cancel()
	v, err := s.lists.get(ctx, query)
	if err == nil {
		err = v.err
	}
	if err != nil {
		s.log.Warn("dashboard: list jobs", zap.Error(err))
		p.Error = "Temporal did not list the jobs: " + err.Error()
		if !v.keptAt.IsZero() {
			p.Error += asOf(v.keptAt, s.opts.Refresh)
		}
	}
	p.Rows = v.rows
	name := "list.html"
	if r.URL.Query().Get("fragment") == "rows" {
		name = "list_rows"
	}
	s.render(w, r, http.StatusOK, name, p)
}

// readList reads the list page's rows for a visibility query: the List
// call, then the rows (viewCache shares it among tabs).
func (s *Server) readList(ctx context.Context, query string) (listView, error) {
	jobs, err := s.backend.List(ctx, ops.ListOptions{Query: query, Limit: s.opts.Limit, CallTimeout: s.opts.Timeout})
	v := listView{rows: s.rows(ctx, jobs), err: err}
	if errors.Is(err, ops.ErrRateLimited) && len(jobs) == 0 {
		if k, at, ok := s.lists.kept(query); ok {
			v.rows, v.keptAt = k.rows, at
		}
	}
	return v, nil
}

// Bounds of the status queries the list falls back on for jobs without a
// summary it can read (started before the overseer kept one).
const (
	maxRowQueries      = 50
	rowQueriesInFlight = 8
)

// rows are the jobs' rows: each from its summary (read in the List call),
// else from its status query, a few at a time, each within the call
// timeout, at most maxRowQueries of them; a row not read says why.
func (s *Server) rows(ctx context.Context, jobs []ops.Job) []row {
	rows := make([]row, len(jobs))
	now := s.opts.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, rowQueriesInFlight)
	queries := 0
	for i, j := range jobs {
		rows[i] = row{Job: j, URL: jobURL(j.ID), State: stateBadge(j.State), Age: now.Sub(j.Started), Spend: spendCell(j.Summary), SpendTitle: j.Spend(now)}
		if j.Summary != nil {
			rows[i].fillSummary(j, *j.Summary)
			continue
		}
		if queries++; queries > maxRowQueries {
			rows[i].fill(j, overseer.Status{}, fmt.Errorf("not read: more than %d jobs on this page have no summary (they started before the overseer kept one); open the job's page", maxRowQueries))
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			qctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
			defer cancel()
			st, err := s.status(qctx, j)
			if err != nil && j.SummaryError != "" {
				err = fmt.Errorf("%s; and %w", j.SummaryError, err)
			}
			rows[i].fill(j, st, err)
		}()
	}
	wg.Wait()
	return rows
}

// spendCell is a job's spend as the list's narrow column says it: tokens
// and cost in short ("702k tokens · $2.22"), and how near its budget it
// is; the age is a column of its own. Empty without a summary or spend.
func spendCell(s *overseer.Summary) string {
	if s == nil {
		return ""
	}
	var parts []string
	if t := s.Spent.Tokens; t > 0 {
		parts = append(parts, shortCount(t)+" tokens")
	}
	if c := s.Spent.CostUSD; c > 0 {
		parts = append(parts, fmt.Sprintf("$%.2f", c))
	}
	if s.BudgetState != "" {
		parts = append(parts, "budget "+s.BudgetState)
	}
	return strings.Join(parts, " · ")
}

// shortCount says n in three significant digits: 950, 9.5k, 702k, 1.93M.
func shortCount(n int64) string {
	switch v := float64(n); {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 1_000_000:
		return strconv.FormatFloat(v/1e3, 'g', 3, 64) + "k"
	default:
		return strconv.FormatFloat(v/1e6, 'g', 3, 64) + "M"
	}
}

// fillSummary sets a row from the job's summary.
func (r *row) fillSummary(j ops.Job, sum overseer.Summary) {
	r.Phase, r.Mode, r.Pauses, r.BudgetState = sum.Phase, string(sum.Mode), sum.Pauses, sum.BudgetState
	r.Badge, r.P, r.BandClass = bandBadge(sum.Band), sum.OnObjective, string(sum.Band)
	r.HasP = sum.Assessed && sum.Band != overseer.BandUnknown
	r.NotAssessed = sum.Assessed && !r.HasP
	r.Basis, r.BasisShort, r.Standing = sum.Basis, sum.Basis, sum.Standing
	switch {
	case sum.Paused() && j.State == "paused":
		r.Badge, r.StatusErr = operatorPausedBadge, "paused by an operator with Temporal's Workflow Pause while at a gate: "+ops.UnpauseCommand(j.ID)
	case sum.Paused() && j.Running():
		r.setPaused(sum.PauseWhy(), sum.Assessed, sum.Band, sum.OnObjective)
	}
}

// setPaused shows a job paused at a gate as one a person must look at:
// why first, the band overseer.PausedBand gives (never On track), the
// last P beside it.
func (r *row) setPaused(why string, assessed bool, band overseer.Band, p float64) {
	r.Badge, r.Why = pausedBadge, why
	shown := overseer.PausedBand(band)
	r.BandClass = string(shown)
	switch {
	case assessed && band != overseer.BandUnknown:
		r.Last = fmt.Sprintf("%s; the last assessment said %.0f%%", shown, p*100)
	default:
		r.Last = shown.String()
	}
}

// fill sets a row's status from the overseer.status query, or from the
// search attributes when the query failed.
func (r *row) fill(j ops.Job, st overseer.Status, err error) {
	if err == nil {
		r.Phase, r.Mode, r.Pauses = st.Phase, string(st.Mode), st.Counters.Pauses
		r.Badge, r.HasP, r.P, r.BandClass = bandBadge(st.Band), statusHasP(st), st.OnObjective, string(st.Band)
		r.NotAssessed = st.Assessed && !r.HasP
		r.Basis, r.BasisShort, r.Standing = st.Basis, shortBasis(st.Basis), overseer.StandingOf(st.Basis)
		// A job terminated or timed out at a gate still replays as paused.
		if st.Paused && j.Running() {
			r.setPaused(st.PauseWhy(), st.Assessed, st.Band, st.OnObjective)
		}
		return
	}
	if errors.Is(err, ops.ErrNotOverseen) {
		r.Badge, r.StatusErr = badge{"Not overseen", "none"}, "this workflow has no overseer.status query"
		return
	}
	var paused *ops.OperatorPausedError
	if errors.As(err, &paused) {
		r.Badge, r.StatusErr = operatorPausedBadge, paused.Pause.Sentence()
		return
	}
	r.StatusErr = "status query failed: " + err.Error()
	switch {
	case j.Paused:
		r.Badge = pausedBadge
	case j.Band != "" && j.Band != "not_assessed":
		r.Badge, r.HasP, r.P, r.BandClass = bandBadge(overseer.Band(j.Band)), true, j.OnObjective, j.Band
	default:
		r.Badge = badge{"Unknown", "none"}
	}
}

// statusHasP reports whether the latest assessment gave a P(on objective):
// false before the first and after one whose judge abstained.
func statusHasP(st overseer.Status) bool {
	return st.Assessed && st.Band != overseer.BandUnknown
}

// pausedVerdict is what a paused job's page says beside the Paused badge:
// the band it is shown in (overseer.PausedBand, never On track) and the
// latest assessment's P.
func pausedVerdict(st overseer.Status) string {
	shown := overseer.PausedBand(st.Band)
	if st.Assessed && st.Band != overseer.BandUnknown {
		return fmt.Sprintf("%s; the last assessment said %.0f%%", shown, st.OnObjective*100)
	}
	return shown.String()
}

// shortBasis is a basis's first words: up to its first colon
// ("telemetry sub-model: log_input_tokens_per_step, …" → "telemetry
// sub-model").
func shortBasis(b string) string { return overseer.ShortBasis(b) }

func jobURL(id string) string { return "/job?id=" + url.QueryEscape(id) }

// jobPage is the page of one job.
type jobPage struct {
	page
	ID        string
	Job       ops.Job
	JobErr    string
	Found     bool
	Status    overseer.Status
	HasStatus bool
	StatusErr string
	Badge     badge
	// HasP is true when the latest assessment gave a P(on objective).
	HasP bool
	// LastVerdict is the latest assessment's verdict when the badge says
	// Paused: the band is that assessment's, not the job's state.
	LastVerdict string
	// Why is, while paused, why in a few words (overseer.Status.PauseWhy).
	Why       string
	State     badge
	Age       time.Duration
	PausedFor time.Duration
	Chart     chart
	Phases    []phaseGroup
	Gates     []overseer.Gate
	// OpenGate is the gate the panel shows (Status.GateID) while the job
	// is paused; DeadlineIn is the time left until its next deadline acts,
	// Overdue when it has passed (the worker acts on it any moment).
	OpenGate   *overseer.Gate
	Deadline   *time.Time
	DeadlineIn time.Duration
	Overdue    bool
	// DeadlineDoes says what the open gate's next deadline will do, with
	// its rule; empty when the gate does not record it (older runs).
	DeadlineDoes string
	// RedosLeft is how many more times the open gate's phase may be
	// redone (Status.CanRedo); 0 offers no redo.
	RedosLeft  int
	LiveURL    string
	HistoryURL string
	Form       resumeForm
	// CannotResume says, to a signed-in user the gate's approval refuses,
	// why (the resume's refusal), in place of the form.
	CannotResume string
	// OperatorPause is set when an operator paused the job with Temporal's
	// Workflow Pause (the job answers no status query, takes no resume);
	// OperatorPaused is the sentence that says so and how to unpause it.
	OperatorPause  *ops.OperatorPause
	OperatorPaused string
	Flash          string
	Policy         overseer.Policy
}

// resumeForm is the resume / abort form with what was typed and the
// refusal, if any.
type resumeForm struct {
	CSRF   string
	By     string
	Note   string
	Action string
	// Gate is the gate the page showed: a resume posted after the job
	// paused again elsewhere is refused instead of closing the new gate.
	Gate  string
	Error string
	// Budget is the raised budget typed at a budget's gate, as typed.
	Budget budgetForm
}

// budgetForm is the raised budget a reviewer types at a budget's gate.
type budgetForm struct{ Tokens, CostUSD, Hours, Turns, PhaseRuns string }

// formInputError is a form field that could not be read; nothing was
// sent to Temporal.
type formInputError string

func (e formInputError) Error() string { return string(e) }

// readBudgetForm reads the raised budget of a resume form: nil when no
// field is filled in; an error, in one sentence, when one is not a
// positive number.
func readBudgetForm(r *http.Request) (budgetForm, *overseer.Budget, error) {
	f := budgetForm{Tokens: strings.TrimSpace(r.PostFormValue("budget_tokens")), CostUSD: strings.TrimSpace(r.PostFormValue("budget_cost_usd")),
		Hours: strings.TrimSpace(r.PostFormValue("budget_hours")), Turns: strings.TrimSpace(r.PostFormValue("budget_turns")),
		PhaseRuns: strings.TrimSpace(r.PostFormValue("budget_phase_runs"))}
	if f == (budgetForm{}) {
		return f, nil, nil
	}
	var b overseer.Budget
	for _, fld := range []struct {
		name, v string
		set     func(float64)
	}{
		{"tokens", f.Tokens, func(x float64) { b.Tokens = int64(x) }},
		{"cost (US dollars)", f.CostUSD, func(x float64) { b.CostUSD = x }},
		{"hours", f.Hours, func(x float64) { b.Elapsed = time.Duration(x * float64(time.Hour)) }},
		{"turns", f.Turns, func(x float64) { b.Turns = int(x) }},
		{"phase runs", f.PhaseRuns, func(x float64) { b.PhaseRuns = int(x) }},
	} {
		if fld.v == "" {
			continue
		}
		x, err := strconv.ParseFloat(fld.v, 64)
		if err != nil || x <= 0 || math.IsInf(x, 0) {
			return f, nil, formInputError(fmt.Sprintf("the raised budget's %s is %q: give a positive number, or leave it empty", fld.name, fld.v))
		}
		fld.set(x)
	}
	return f, &b, nil
}

// phaseGroup is a run of consecutive timeline events of one phase.
type phaseGroup struct {
	Phase  string
	Events []event
}

// event is an assessment, a pause, an escalation or the gate's closing
// (a resume, an expiry) on the timeline.
type event struct {
	At         time.Time
	Assessment *overseer.Assessment
	Pause      *overseer.Gate
	Escalation *overseer.Gate
	Resume     *overseer.Gate
	Waited     time.Duration
	// DeadlineIn is, on the pause of a gate still open, the time left
	// until its deadline; Overdue when it has passed.
	DeadlineIn time.Duration
	Overdue    bool
	order      int
}

func (s *Server) handleJob(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		s.errorPage(w, r, http.StatusBadRequest, "Which job? The address needs ?id=JOB_ID.")
		return
	}
	p := s.jobPage(r, id)
	if r.URL.Query().Get("fragment") == "live" {
		s.render(w, r, http.StatusOK, "job_live", p)
		return
	}
	p.Form = resumeForm{CSRF: s.csrf.token(w, r), Action: string(overseer.ActionContinue), Gate: p.Status.GateID}
	p.NoAutoReload = p.Status.Paused
	switch r.URL.Query().Get("done") {
	case "continue":
		p.Flash = "The job was resumed."
	case "abort":
		p.Flash = "The job was aborted."
	case "redo":
		p.Flash = "The phase is being redone with your note: its new result is assessed in turn."
	}
	code := http.StatusOK
	if !p.Found {
		code = http.StatusNotFound
	}
	s.render(w, r, code, "job.html", p)
}

func (s *Server) jobPage(r *http.Request, id string) jobPage {
	p := jobPage{page: s.page(r, "Job "+id), ID: id, LiveURL: jobURL(id) + "&fragment=live", Policy: s.opts.Policy}
	ctx, cancel := s.call(r)
	defer cancel()
	j, err := s.backend.Describe(ctx, id)
	if err != nil {
		p.JobErr = err.Error()
		return p
	}
	p.Found, p.Job, p.State = true, j, stateBadge(j.State)
	p.Age = s.opts.Now().Sub(j.Started)
	if j.Closed != nil {
		p.Age = j.Closed.Sub(j.Started)
	}
	if s.opts.TemporalUI != "" {
		p.HistoryURL = fmt.Sprintf("%s/namespaces/%s/workflows/%s/%s/history", s.opts.TemporalUI,
			url.PathEscape(s.opts.Namespace), url.PathEscape(j.ID), url.PathEscape(j.RunID))
	}
	st, err := s.status(ctx, j)
	var paused *ops.OperatorPausedError
	if errors.As(err, &paused) {
		// Workflow Pause: no query is answered until it is unpaused.
		p.OperatorPause, p.OperatorPaused = &paused.Pause, upperFirst(paused.Pause.Sentence())+"."
		p.Badge = operatorPausedBadge
		return p
	}
	if err != nil {
		p.StatusErr = err.Error()
		var rw row
		rw.fill(j, st, err)
		p.Badge = rw.Badge
		return p
	}
	st.Paused = st.Paused && j.Running() // terminated or timed out at a gate: closed, not paused
	p.Status, p.HasStatus = st, true
	// An agent loop is judged by the policy's loop section: its bands and
	// pause threshold are the ones to draw.
	p.Policy = s.opts.Policy.ForShape(st.Shape)
	p.Badge, p.HasP = bandBadge(st.Band), statusHasP(st)
	if st.Paused {
		p.Badge, p.LastVerdict, p.Why = pausedBadge, pausedVerdict(st), st.PauseWhy()
		if st.PausedSince != nil {
			p.PausedFor = s.opts.Now().Sub(*st.PausedSince)
		}
		for i := range st.Gates {
			if g := &st.Gates[i]; g.ID == st.GateID && g.Outcome() == "open" {
				p.OpenGate = g
			}
		}
		p.CannotResume = s.cannotResume(r, st)
		if p.OpenGate != nil && st.CanRedo(*p.OpenGate) {
			p.RedosLeft = st.MaxRedos - max(p.OpenGate.Attempt, 1) + 1
		}
		p.Deadline = st.GateDeadline
		if p.Deadline == nil && p.OpenGate != nil {
			p.Deadline = p.OpenGate.Deadline
		}
		if p.Deadline != nil {
			p.DeadlineIn = p.Deadline.Sub(s.opts.Now())
			p.Overdue = p.DeadlineIn <= 0
			p.DeadlineDoes = deadlineDoes(p.OpenGate)
		}
	}
	p.Chart = newChart(p.Policy, st.Assessments, st.Gates, st.Counters.Assessments)
	p.Phases = timeline(st, s.opts.Now())
	p.Gates = st.Gates
	return p
}

// timeline merges assessments, pauses, escalations and the gates' closings
// in time order and groups consecutive events by phase.
func timeline(st overseer.Status, now time.Time) []phaseGroup {
	var evs []event
	for i := range st.Assessments {
		a := &st.Assessments[i]
		evs = append(evs, event{At: a.At, Assessment: a, order: 0})
	}
	for i := range st.Gates {
		g := &st.Gates[i]
		pause := event{At: g.PausedAt, Pause: g, order: 1}
		if g.Deadline != nil && g.Outcome() == "open" {
			pause.DeadlineIn = g.Deadline.Sub(now)
			pause.Overdue = pause.DeadlineIn <= 0
		}
		evs = append(evs, pause)
		if g.EscalatedAt != nil {
			evs = append(evs, event{At: *g.EscalatedAt, Escalation: g, Waited: g.EscalatedAt.Sub(g.PausedAt), order: 2})
		}
		if g.ResumedAt != nil {
			evs = append(evs, event{At: *g.ResumedAt, Resume: g, Waited: g.ResumedAt.Sub(g.PausedAt), order: 3})
		}
	}
	slices.SortStableFunc(evs, func(a, b event) int {
		if c := a.At.Compare(b.At); c != 0 {
			return c
		}
		return a.order - b.order
	})
	var groups []phaseGroup
	for _, e := range evs {
		phase := e.phase()
		if len(groups) == 0 || groups[len(groups)-1].Phase != phase {
			groups = append(groups, phaseGroup{Phase: phase})
		}
		g := &groups[len(groups)-1]
		g.Events = append(g.Events, e)
	}
	return groups
}

func (e event) phase() string {
	switch {
	case e.Assessment != nil:
		return e.Assessment.Phase
	case e.Pause != nil:
		return e.Pause.Phase
	case e.Escalation != nil:
		return e.Escalation.Phase
	}
	return e.Resume.Phase
}

func (s *Server) handleResume(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	if !s.csrf.valid(r) {
		s.log.Warn("dashboard: refused a resume without a valid CSRF token", zap.String("workflow_id", r.PostFormValue("id")))
		s.errorPage(w, r, http.StatusForbidden, "The form's security token is missing or stale: reload the job's page and send it again.")
		return
	}
	id := r.PostFormValue("id")
	if id == "" {
		s.errorPage(w, r, http.StatusBadRequest, "Which job? The form has no job id.")
		return
	}
	form := resumeForm{
		By:     strings.TrimSpace(r.PostFormValue("by")),
		Note:   strings.TrimSpace(r.PostFormValue("note")),
		Action: r.PostFormValue("action"),
	}
	req := s.resumeRequest(r, form)
	req.Gate = r.PostFormValue("gate")
	var budgetErr error
	form.Budget, req.Budget, budgetErr = readBudgetForm(r)
	ctx, cancel := s.call(r)
	defer cancel()
	var g overseer.Gate
	err := budgetErr
	if err == nil {
		g, err = s.backend.Resume(ctx, id, req)
	}
	s.forgetViews()
	if err != nil {
		// Who tried: the signed-in user when users sign in. The worker
		// counts the refusal by reason (overseer_resumes_refused).
		s.log.Info("dashboard: resume refused", zap.String("workflow_id", id), zap.String("gate", req.Gate), zap.String("by", req.By),
			zap.String("action", string(req.Action)), zap.String("reason", overseer.ErrorType(err)), zap.Error(err))
		p := s.jobPage(r, id)
		form.CSRF = s.csrf.token(w, r)
		form.Error = refusal(err)
		form.Gate = p.Status.GateID // the gate the page now shows
		p.Form, p.NoAutoReload = form, true
		s.render(w, r, http.StatusUnprocessableEntity, "job.html", p)
		return
	}
	s.log.Info("dashboard: job resumed", zap.String("workflow_id", id), zap.String("phase", g.Phase),
		zap.String("by", g.By), zap.String("action", string(g.Action)))
	http.Redirect(w, r, jobURL(id)+"&done="+url.QueryEscape(string(g.Action)), http.StatusSeeOther)
}

// resumeRequest is the request a form sends: by the signed-in user when
// users sign in (a typed name is ignored), else by the name typed.
// deadlineDoes says what gate g's next deadline will do, "" when g does
// not record it.
func deadlineDoes(g *overseer.Gate) string {
	if g == nil {
		return ""
	}
	var does string
	switch g.DeadlineAction {
	case overseer.DeadlineEscalate:
		does = "the gate is escalated and stays open"
	case overseer.DeadlineContinue:
		does = "the job goes on without a reviewer"
	case overseer.DeadlineAbort:
		does = "the job is aborted"
	default:
		return ""
	}
	return does + " (" + g.DeadlineBy + ")"
}

// cannotResume is why the signed-in user may not open the job's gates, ""
// when they may (or nobody is signed in: the form asks who resumes).
func (s *Server) cannotResume(r *http.Request, st overseer.Status) string {
	id, ok := identityOf(r.Context())
	if !s.auth.on() || !ok {
		return ""
	}
	a := st.Approval
	if a.FourEyes && !a.NoStarter && st.StartedBy == "" {
		// A status from before the starter was recorded: leave the
		// four-eyes rule to the resume.
		a.FourEyes = false
	}
	return a.Refusal(id.Name, id.Groups, st.StartedBy)
}

func (s *Server) resumeRequest(r *http.Request, form resumeForm) overseer.ResumeRequest {
	req := overseer.ResumeRequest{By: form.By, Note: form.Note, Action: overseer.Action(form.Action)}
	// The button the reviewer clicked says whether the pause was needed;
	// plain Send lets the overseer's rule decide (Gate.NeededBy).
	switch r.PostFormValue("needed") {
	case "yes":
		req.Needed = new(true)
	case "no":
		req.Needed = new(false)
	}
	if s.auth.on() {
		id, _ := identityOf(r.Context()) // authenticate let the request through: it has one
		req.By, req.Groups = id.Name, id.Groups
	}
	return req
}

// refusal words a resume error for the form.
func refusal(err error) string {
	var app *temporal.ApplicationError
	var input formInputError
	switch {
	case errors.As(err, &input):
		return upperFirst(input.Error()) + "."
	case overseer.ErrorType(err) == overseer.InvalidResumeErrorType && errors.As(err, &app):
		return "The request was refused: " + strings.TrimPrefix(app.Message(), "overseer: ") + "."
	case overseer.ErrorType(err) == overseer.NotPausedErrorType:
		return "The job is not paused (any more): there is nothing to resume."
	case overseer.ErrorType(err) == overseer.WrongGateErrorType:
		return "The job was resumed from this gate already and is now paused at another one: read its reason above, then send the form again."
	case overseer.ErrorType(err) == overseer.RedoRefusedErrorType && errors.As(err, &app):
		return "The redo was refused: " + strings.TrimPrefix(app.Message(), "overseer: ") + "."
	case overseer.ErrorType(err) == overseer.NotAuthorizedErrorType && errors.As(err, &app):
		return "You may not open this gate: " + strings.TrimPrefix(app.Message(), "overseer: ") + "."
	case errors.Is(err, ops.ErrFinished):
		return "The job has already finished."
	case errors.Is(err, ops.ErrOperatorPaused):
		return upperFirst(err.Error()) + "."
	}
	return "Temporal refused the resume: " + err.Error()
}

// auc formats an AUROC; NaN is a learn round's figure its runs could not
// measure.
func auc(v float64) string {
	if math.IsNaN(v) {
		return "not measurable"
	}
	return fmt.Sprintf("%.3f", v)
}

var funcs = template.FuncMap{
	"pct":         func(v float64) string { return fmt.Sprintf("%.0f%%", v*100) },
	"standing":    overseer.StandingOf,
	"pausedBand":  overseer.PausedBand, // a flagged verdict never reads On track
	"prob":        func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"auc":         auc,
	"num":         func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"coord":       func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"pct100":      func(v float64) string { return fmt.Sprintf("%.1f", clamp01(v)*100) },
	"age":         humanDuration,
	"latency":     func(d time.Duration) string { return d.Round(time.Microsecond).String() },
	"ts":          func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
	"clock":       func(t time.Time) string { return t.UTC().Format("15:04:05") },
	"iso":         func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"band":        func(b overseer.Band) badge { return bandBadge(b) },
	"hasP":        func(a *overseer.Assessment) bool { return a != nil && hasP(*a) },
	"pausedBadge": func() badge { return pausedBadge },
	"plus":        func(a, b float64) float64 { return a + b },
	"join":        strings.Join,
	// count says n things: "1 pause", "2 pauses".
	"count": func(n int, thing string) string {
		if n == 1 {
			return "1 " + thing
		}
		return fmt.Sprintf("%d %ss", n, thing)
	},
	"half": func(a float64) float64 { return a / 2 },
	"severity": func(v float64) string {
		labels := []string{"Cosmetic", "Worth a look", "Review", "Stop"}
		i := min(max(int(v+0.5), 0), len(labels)-1)
		return fmt.Sprintf("%.1f ≈ %s", v, labels[i])
	},
}

// operatorPausedBadge is the badge of a job an operator paused with
// Temporal's Workflow Pause.
var operatorPausedBadge = badge{"Paused by an operator", "paused"}

// upperFirst is s with its first letter in upper case.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// humanDuration says how long, to two units: "45s", "3m 12s", "2h 5m",
// "3d 4h".
func humanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm %ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh %dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd %dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}
