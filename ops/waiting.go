package ops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/corohq/temporal-overseer/overseer"
)

// WaitingGate is one open gate in the queue of what waits for a reviewer.
type WaitingGate struct {
	JobID        string `json:"job_id"`
	RunID        string `json:"run_id"`
	WorkflowType string `json:"workflow_type"`
	GateID       string `json:"gate_id"`
	Phase        string `json:"phase"`
	// Evidence is what tripped the flag, in plain words, most telling
	// first (Gate.Evidence): what a reviewer reads first. Reason keeps the
	// rule that fired.
	Evidence []string      `json:"evidence,omitempty"`
	Reason   string        `json:"reason"`
	PausedAt time.Time     `json:"paused_at"`
	Wait     time.Duration `json:"wait_ns"`
	// Deadline is when the gate's next deadline acts; nil without one.
	Deadline *time.Time `json:"deadline,omitempty"`
	// Approvers are who may open the gate, when the job says; empty means
	// anyone who can send the update. FourEyes: not the job's starter.
	// NoStarter: nobody, as the four-eyes job does not say who started it.
	Approvers []string `json:"approvers,omitempty"`
	FourEyes  bool     `json:"four_eyes,omitempty"`
	NoStarter bool     `json:"no_starter,omitempty"`
	// Attempt is which run of its phase the gate holds (1 + its redos).
	Attempt int `json:"attempt,omitempty"`
	// Kind is what opened the gate: overseer.GateKindBudget for the job's
	// budget (continue it with a raised budget, or abort), empty for a
	// verdict.
	Kind string `json:"kind,omitempty"`
	// CanRedo says a redo of the gate would not be refused for the bound
	// or the phase.
	CanRedo bool `json:"can_redo,omitempty"`
	// OperatorPaused: an operator holds the job with Temporal's Workflow
	// Pause; nobody can open the gate until it is unpaused.
	OperatorPaused bool `json:"operator_paused,omitempty"`
	// MoreApprovers counts the approvers the job's summary left out of
	// Approvers (it keeps 8).
	MoreApprovers int `json:"more_approvers,omitempty"`
	// Unreadable says why the job's gates could not be read (its summary
	// is missing or encrypted, and its status query failed): the row
	// stands for every gate of the job, with no gate id or phase.
	Unreadable string `json:"unreadable,omitempty"`
}

// Approval is who may open the gate, as the job's status said. With
// MoreApprovers, its approvers are part of the list.
func (g WaitingGate) Approval() overseer.Approval {
	return overseer.Approval{Approvers: g.Approvers, FourEyes: g.FourEyes, NoStarter: g.NoStarter}
}

// Who says who may open the gate, for a person: the approvers the queue
// knows and how many more there are.
func (g WaitingGate) Who() string {
	who := g.Approval().String()
	if g.MoreApprovers > 0 {
		who += fmt.Sprintf(" and %d more approvers (overseer status JOB shows them all)", g.MoreApprovers)
	}
	return who
}

// Refusal is why by, who claims groups, may not open the gate as far as
// the queue can tell ("" when it may, or when only the gate can tell): the
// queue does not read who started each job, so the four-eyes rule is left
// to the resume unless the job says nobody can be checked, and an
// approvers list the summary clipped (MoreApprovers) is left to it too.
func (g WaitingGate) Refusal(by string, groups []string) string {
	a := g.Approval()
	if a.FourEyes && !a.NoStarter {
		a.FourEyes = false
	}
	if g.MoreApprovers > 0 {
		a.Approvers = nil
	}
	return a.Refusal(by, groups, "")
}

// OpenGates are the gates of a status that are still open, oldest first.
func OpenGates(s overseer.Status) []overseer.Gate {
	var open []overseer.Gate
	for _, g := range s.Gates {
		if g.Outcome() == "open" {
			open = append(open, g)
		}
	}
	slices.SortStableFunc(open, func(a, b overseer.Gate) int { return a.PausedAt.Compare(b.PausedAt) })
	return open
}

// Waiting lists every open gate of the open jobs paused at a gate that
// opts select (all of them when opts.Query is empty), oldest first, with
// its wait so far. Its rows come from the List calls alone, paged through
// (each job's summary, overseer.SummaryMemoKey), so the queue holds every
// gate however many jobs wait, costs the workers nothing, and works with
// every worker stopped. A job whose summary is missing (started before
// it existed), unreadable, or holds fewer gates than are open is read with
// its status query: at most maxStatusReads such jobs, statusReadsInFlight
// at a time, each within opts.CallTimeout. A job that still cannot be read
// is a row that says why (WaitingGate.Unreadable), first, never dropped.
// opts.Limit 0 lists every paused job.
func Waiting(ctx context.Context, c client.Client, opts ListOptions) ([]WaitingGate, error) {
	now := time.Now()
	lo := opts
	lo.Query = PausedQuery(opts.Query)
	if lo.Limit == 0 {
		lo.Limit = -1
	}
	jobs, err := List(ctx, c, lo)
	if err != nil && len(jobs) == 0 {
		return nil, err
	}
	status := func(ctx context.Context, j Job) (overseer.Status, error) { return RunStatus(ctx, c, j.ID, j.RunID) }
	return WaitingOf(ctx, jobs, status, cmp.Or(opts.CallTimeout, DefaultCallTimeout), now), err
}

// StatusReader reads one job's status (RunStatus, or a dashboard's
// backend).
type StatusReader func(ctx context.Context, j Job) (overseer.Status, error)

// WaitingOf is the queue of jobs, paused jobs as List returned them: each
// job's gates from its summary, else from status (bounded, as Waiting
// says), oldest first, the rows that could not be read first.
func WaitingOf(ctx context.Context, jobs []Job, status StatusReader, timeout time.Duration, now time.Time) []WaitingGate {
	var out []WaitingGate
	var toRead []Job
	for _, j := range jobs {
		if sum := j.Summary; sum != nil && sum.MoreGates == 0 && len(sum.Gates) > 0 {
			out = append(out, SummaryWaitingGates(j, *sum, now)...)
			continue
		}
		toRead = append(toRead, j)
	}
	out = append(out, readWaiting(ctx, toRead, status, timeout, now)...)
	sortWaiting(out)
	return out
}

// Bounds of the status queries a view of many jobs falls back on.
const (
	maxStatusReads      = 100
	statusReadsInFlight = 8
)

// readWaiting reads the gates of jobs with their status queries, bounded.
func readWaiting(ctx context.Context, jobs []Job, status StatusReader, timeout time.Duration, now time.Time) []WaitingGate {
	rows := make([][]WaitingGate, len(jobs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, statusReadsInFlight)
	for i, j := range jobs {
		if i >= maxStatusReads {
			rows[i] = []WaitingGate{unreadable(j, fmt.Sprintf("not read: more than %d paused jobs have no summary this client can read (they started before the overseer kept one, or their memo is encrypted); open the job's page or run overseer status %s", maxStatusReads, j.ID))}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			qctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			s, err := status(qctx, j)
			switch {
			case err == nil && !s.Paused:
				// Resumed since the List call: nothing waits.
			case err != nil:
				why := err.Error()
				if j.SummaryError != "" {
					why = j.SummaryError + "; and " + why
				}
				rows[i] = []WaitingGate{unreadable(j, why)}
			default:
				rows[i] = JobWaitingGates(j, s, now)
			}
		}()
	}
	wg.Wait()
	var out []WaitingGate
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

// unreadable is the row of a paused job whose gates could not be read.
func unreadable(j Job, why string) WaitingGate {
	return WaitingGate{JobID: j.ID, RunID: j.RunID, WorkflowType: j.Type, Unreadable: why, OperatorPaused: j.State == "paused"}
}

// sortWaiting orders the queue: the rows that could not be read first (by
// job id), then the gates oldest first.
func sortWaiting(gates []WaitingGate) {
	slices.SortStableFunc(gates, func(a, b WaitingGate) int {
		switch {
		case a.Unreadable != "" && b.Unreadable != "":
			return strings.Compare(a.JobID, b.JobID)
		case a.Unreadable != "":
			return -1
		case b.Unreadable != "":
			return 1
		}
		return a.PausedAt.Compare(b.PausedAt)
	})
}

// SummaryWaitingGates are the open gates of job j as its summary says,
// as the queue lists them at now.
func SummaryWaitingGates(j Job, s overseer.Summary, now time.Time) []WaitingGate {
	var out []WaitingGate
	for _, g := range s.Gates {
		out = append(out, WaitingGate{JobID: j.ID, RunID: j.RunID, WorkflowType: j.Type, GateID: g.ID, Phase: g.Phase,
			Evidence: []string{g.Why}, Reason: cmp.Or(g.Reason, g.Why), PausedAt: g.PausedAt, Wait: now.Sub(g.PausedAt), Deadline: g.Deadline,
			Approvers: s.Approval.Approvers, MoreApprovers: s.MoreApprovers, FourEyes: s.Approval.FourEyes, NoStarter: s.Approval.NoStarter,
			Attempt: g.Attempt, CanRedo: s.CanRedo(g), OperatorPaused: j.State == "paused", Kind: g.Kind})
	}
	return out
}

// JobWaitingGates are the open gates of job j, whose status is s, as the
// queue lists them at now.
func JobWaitingGates(j Job, s overseer.Status, now time.Time) []WaitingGate {
	var out []WaitingGate
	for _, g := range OpenGates(s) {
		out = append(out, WaitingGate{JobID: j.ID, RunID: j.RunID, WorkflowType: j.Type, GateID: g.ID, Phase: g.Phase,
			Evidence: g.Evidence, Reason: g.Reason, PausedAt: g.PausedAt, Wait: now.Sub(g.PausedAt), Deadline: g.Deadline,
			Approvers: s.Approval.Approvers, FourEyes: s.Approval.FourEyes, NoStarter: s.Approval.NoStarter,
			Attempt: g.Attempt, CanRedo: s.CanRedo(g), OperatorPaused: j.State == "paused", Kind: g.Kind})
	}
	return out
}

// PausedQuery narrows a visibility query (empty: every job) to the
// running jobs at a gate.
func PausedQuery(q string) string {
	paused, _ := ListQuery("", true)
	if q == "" {
		return paused
	}
	return "(" + q + ") AND " + paused
}

// GateRef names one gate of one job.
type GateRef struct {
	JobID  string `json:"job_id"`
	GateID string `json:"gate_id"`
}

// ResumeResult is the outcome of one resume of a batch.
type ResumeResult struct {
	JobID  string
	GateID string
	Gate   overseer.Gate
	Err    error
}

// The outcomes of one resume of a batch (ResumeResult.Outcome).
const (
	// ResumeApplied: the job took the resume.
	ResumeApplied = "applied"
	// ResumeRefused: the job, or the server, refused it, and said why.
	ResumeRefused = "refused"
	// ResumeUnknown: no answer in time, or no gate could be read: the
	// resume may still be applied; look before retrying.
	ResumeUnknown = "unknown"
)

// Outcome says whether the resume was applied, refused or is unknown.
func (r ResumeResult) Outcome() string {
	switch {
	case r.Err == nil:
		return ResumeApplied
	case errors.Is(r.Err, ErrMayStillApply), TimedOut(r.Err), errors.Is(r.Err, ErrNotRead):
		return ResumeUnknown
	}
	return ResumeRefused
}

// ErrNotRead: the job's open gate could not be read, so nothing was sent.
var ErrNotRead = errors.New("its gate could not be read")

// Bounds of a batch of resumes.
const (
	// DefaultResumeTimeout bounds one resume of a batch.
	DefaultResumeTimeout = 10 * time.Second
	// resumesInFlight: each resume waits for a worker to run its update,
	// so a batch of a thousand gates needs many at once (on the stock
	// cluster, 1,000 gates took 2 min 32 s at 16, 57 s, 73 s and 49 s in
	// three runs at 64 with the worker's autoscaling pollers:
	// docs/performance.md).
	resumesInFlight = 64
)

// ResumeAll resumes each gate with the same by, note and action, one
// update per gate, each bound to its own gate id (req.Gate is ignored), at
// most resumesInFlight at a time, each within timeout
// (DefaultResumeTimeout if 0), and reports each result in the order given:
// one refusal or timeout never stops the others.
func ResumeAll(ctx context.Context, c client.Client, gates []GateRef, req overseer.ResumeRequest, timeout time.Duration) []ResumeResult {
	timeout = cmp.Or(timeout, DefaultResumeTimeout)
	out := make([]ResumeResult, len(gates))
	var wg sync.WaitGroup
	sem := make(chan struct{}, resumesInFlight)
	for i, ref := range gates {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r := req
			r.Gate = ref.GateID
			rctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			g, err := Resume(rctx, c, ref.JobID, r)
			out[i] = ResumeResult{JobID: ref.JobID, GateID: ref.GateID, Gate: g, Err: err}
		}()
	}
	wg.Wait()
	return out
}

// ErrAmbiguousGate is returned for a resume without a gate id while more
// than one gate of the job is open.
var ErrAmbiguousGate = errors.New("more than one gate is open")

// GateToResume is the gate a resume without an explicit gate id would
// close: the job's only open gate; with several open, an error wrapping
// ErrAmbiguousGate that names them, unless oldest says to take the oldest.
func GateToResume(ctx context.Context, c client.Client, id string, oldest bool) (string, error) {
	s, err := Status(ctx, c, id)
	if err != nil {
		var pe *OperatorPausedError
		if errors.As(err, &pe) {
			pe.Resume = true // what was asked for is a resume
		}
		return "", err
	}
	return ChooseGate(id, s, oldest)
}

// ChooseGate is GateToResume's choice from a status already read.
func ChooseGate(id string, s overseer.Status, oldest bool) (string, error) {
	open := OpenGates(s)
	switch {
	case len(open) == 0:
		return "", nil // the update says "not paused"
	case len(open) > 1 && !oldest:
		ids := make([]string, len(open))
		for i, g := range open {
			ids[i] = g.ID
		}
		return "", fmt.Errorf("%w: job %q has %d open gates (%s): name one with --gate, or pass --oldest to resume %s",
			ErrAmbiguousGate, id, len(open), strings.Join(ids, ", "), open[0].ID)
	}
	return open[0].ID, nil
}
