package ops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
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
}

// Approval is who may open the gate, as the job's status said.
func (g WaitingGate) Approval() overseer.Approval {
	return overseer.Approval{Approvers: g.Approvers, FourEyes: g.FourEyes, NoStarter: g.NoStarter}
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

// Waiting lists the open gates of the running paused jobs that opts select
// (all of them when opts.Query is empty), oldest first, with their wait
// so far. A job whose status cannot be read is skipped: the queue shows
// what can be acted on.
func Waiting(ctx context.Context, c client.Client, opts ListOptions) ([]WaitingGate, error) {
	now := time.Now()
	jobs, err := List(ctx, c, ListOptions{Query: PausedQuery(opts.Query), Limit: opts.Limit})
	if err != nil {
		return nil, err
	}
	var out []WaitingGate
	for _, j := range jobs {
		s, err := RunStatus(ctx, c, j.ID, j.RunID)
		if err != nil {
			continue
		}
		out = append(out, JobWaitingGates(j, s, now)...)
	}
	slices.SortStableFunc(out, func(a, b WaitingGate) int { return a.PausedAt.Compare(b.PausedAt) })
	return out, nil
}

// JobWaitingGates are the open gates of job j, whose status is s, as the
// queue lists them at now.
func JobWaitingGates(j Job, s overseer.Status, now time.Time) []WaitingGate {
	var out []WaitingGate
	for _, g := range OpenGates(s) {
		out = append(out, WaitingGate{JobID: j.ID, RunID: j.RunID, WorkflowType: j.Type, GateID: g.ID, Phase: g.Phase,
			Evidence: g.Evidence, Reason: g.Reason, PausedAt: g.PausedAt, Wait: now.Sub(g.PausedAt), Deadline: g.Deadline,
			Approvers: s.Approval.Approvers, FourEyes: s.Approval.FourEyes, NoStarter: s.Approval.NoStarter})
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

// ResumeAll resumes each gate with the same by, note and action, one
// update per gate, each bound to its own gate id (req.Gate is ignored), and
// reports each result: one refusal never stops the others.
func ResumeAll(ctx context.Context, c client.Client, gates []GateRef, req overseer.ResumeRequest) []ResumeResult {
	out := make([]ResumeResult, len(gates))
	for i, ref := range gates {
		r := req
		r.Gate = ref.GateID
		g, err := Resume(ctx, c, ref.JobID, r)
		out[i] = ResumeResult{JobID: ref.JobID, GateID: ref.GateID, Gate: g, Err: err}
	}
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
