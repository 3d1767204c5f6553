package overseer

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// SummaryMemoKey is the memo field in which the overseer keeps a job's
// [Summary]: what a view of many jobs shows, so that it reads the List
// call alone and never queries a worker per row.
const SummaryMemoKey = "overseer.summary"

// SummaryFormat is the format of the Summary this overseer writes.
const SummaryFormat = 1

// Summary is a job's overseer state as a list shows it: small and bounded
// (a few hundred bytes however long the job runs), kept in the memo
// ([SummaryMemoKey]), upserted only when it changes, at the points that
// upsert the search attributes. The memo goes through the worker's data
// converter, so a payload codec encrypts it; unlike the search attributes
// (indexed in clear) it may say the evidence and who may open a gate.
// Runs started before it existed have none: read their status with the
// overseer.status query.
type Summary struct {
	Format int    `json:"format"`
	Mode   Mode   `json:"mode"`
	Phase  string `json:"phase,omitempty"`
	// Band and OnObjective are the latest verdict's; Assessed is false
	// before the first one. Basis is what it was based on, in short
	// (ShortBasis: "telemetry sub-model, stage 0"), and Standing the
	// relative verdict it carries (StandingOf), if any.
	Band        Band    `json:"band,omitempty"`
	OnObjective float64 `json:"on_objective,omitempty"`
	Assessed    bool    `json:"assessed,omitempty"`
	Basis       string  `json:"basis,omitempty"`
	Standing    string  `json:"standing,omitempty"`
	// Phases and Pauses count the job's boundaries and gates so far.
	Phases int `json:"phases,omitempty"`
	Pauses int `json:"pauses,omitempty"`
	// Gates are the open gates, oldest first, at most maxSummaryGates;
	// MoreGates counts those left out.
	Gates     []SummaryGate `json:"gates,omitempty"`
	MoreGates int           `json:"more_gates,omitempty"`
	// Approval is who may open the gates (approvers clipped to
	// maxSummaryApprovers); StartedBy is the starter, under the four-eyes
	// rule, clipped (the starter sets it: a long one must not push the
	// memo past the server's limit).
	Approval Approval `json:"approval,omitzero"`
	// MoreApprovers counts the approvers left out of Approval: the list
	// is then part of the rule, and only the gate itself can tell whether
	// someone may open it.
	MoreApprovers int    `json:"more_approvers,omitempty"`
	StartedBy     string `json:"started_by,omitempty"`
	// MaxRedos and RedoPhases are the status's: whether a gate may be
	// redone.
	MaxRedos   int      `json:"max_redos,omitempty"`
	RedoPhases []string `json:"redo_phases,omitempty"`
	// RunID is the run that wrote the summary. Continue-as-new copies the
	// memo into the successor: a summary of another run is its
	// predecessor's, not the successor's (a successor in mode off never
	// writes one). Summaries of earlier releases do not say.
	RunID string `json:"run_id,omitempty"`
	// Spent is what the job's phases reported spending so far (tokens,
	// cost, turns) and its phase runs; its elapsed time is the list's to
	// work out from the start time. Budget is its budget, if it has one,
	// and BudgetState how near it is to it (BudgetNear, BudgetReached).
	Spent       Budget  `json:"spent,omitzero"`
	Budget      *Budget `json:"budget,omitempty"`
	BudgetState string  `json:"budget_state,omitempty"`
	// Started is when the job's first run started, carried across
	// continue-as-new: a time budget counts from it, and so does the
	// list's elapsed time. Zero when this run is the job's first (its
	// start time is the job's), or its predecessor did not say.
	Started time.Time `json:"started,omitzero"`
}

// Of says the summary describes run runID: it was written by that run, or
// by a release that did not say which run wrote it.
func (s Summary) Of(runID string) bool {
	return s.RunID == "" || runID == "" || s.RunID == runID
}

// SummaryGate is one open gate in a [Summary].
type SummaryGate struct {
	ID       string     `json:"id"`
	Phase    string     `json:"phase"`
	PausedAt time.Time  `json:"paused_at"`
	Deadline *time.Time `json:"deadline,omitempty"`
	// DeadlineBy names the rule the deadline acts by.
	DeadlineBy string `json:"deadline_by,omitempty"`
	// Why is the gate's first line of evidence (what tripped the flag, in
	// plain words), else its rule; Reason is the rule. Both clipped.
	Why     string `json:"why"`
	Reason  string `json:"reason,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	// AtBoundary: opened at a declared Boundary, which no redo can run
	// again (Gate.AtBoundary).
	AtBoundary bool `json:"at_boundary,omitempty"`
	// Kind is Gate.Kind: GateKindBudget for a gate a budget opened.
	Kind string `json:"kind,omitempty"`
}

// Limits that keep a Summary small.
const (
	maxSummaryGates     = 3
	maxSummaryApprovers = 8
	maxSummaryText      = 120
	maxSummaryBasis     = 80
)

// Gate is the gate as a Status holds it, as far as the summary says.
func (g SummaryGate) Gate() Gate {
	return Gate{ID: g.ID, Phase: g.Phase, PausedAt: g.PausedAt, Deadline: g.Deadline, DeadlineBy: g.DeadlineBy,
		Evidence: []string{g.Why}, Reason: g.Reason, Attempt: g.Attempt, AtBoundary: g.AtBoundary, Kind: g.Kind}
}

// Paused says a gate of the job is open.
func (s Summary) Paused() bool { return len(s.Gates) > 0 || s.MoreGates > 0 }

// PauseWhy is why the job is paused, as Status.PauseWhy says it.
func (s Summary) PauseWhy() string {
	if len(s.Gates) == 0 {
		return ""
	}
	return trajectory.Clip(s.Gates[0].Why, maxPauseWhy)
}

// Headline is the job's status as Status.Headline says it.
func (s Summary) Headline() string {
	if !s.Paused() {
		return s.Label()
	}
	return pausedHeadline(s.PauseWhy(), s.Assessed, s.Band, s.OnObjective)
}

// Label is the job's status in a word or two, as Status.Label says it.
func (s Summary) Label() string {
	return Status{Paused: s.Paused(), Assessed: s.Assessed, Band: s.Band, OnObjective: s.OnObjective}.Label()
}

// CanRedo says a redo of the open gate g would not be refused for the
// bound or the phase, as Status.CanRedo does.
func (s Summary) CanRedo(g SummaryGate) bool {
	return Status{MaxRedos: s.MaxRedos, RedoPhases: s.RedoPhases}.CanRedo(g.Gate())
}

// summary is the run's Summary now, from its state directly: r.status()
// would clone the assessments and build the digest at every boundary.
func (r *run) summary() Summary {
	st := r.st
	maxRedos, redoPhases := r.redoBounds()
	s := Summary{Format: SummaryFormat, Mode: st.Mode, Phase: st.Phase, Band: st.Band, OnObjective: st.OnObjective, Assessed: st.Assessed,
		Basis: trajectory.Clip(ShortBasis(st.Basis), maxSummaryBasis), Standing: trajectory.Clip(StandingOf(st.Basis), maxSummaryBasis), Phases: st.Counters.Phases, Pauses: st.Counters.Pauses,
		Approval: st.Approval, StartedBy: trajectory.Clip(st.StartedBy, maxSummaryText), MaxRedos: maxRedos, RedoPhases: redoPhases, RunID: r.runID,
		Spent: spendOf(r.traj, 0), Budget: r.cfg.Budget, BudgetState: st.Budget.State(), Started: r.jobStarted}
	if len(s.Approval.Approvers) > maxSummaryApprovers {
		s.MoreApprovers = len(s.Approval.Approvers) - maxSummaryApprovers
		s.Approval.Approvers = s.Approval.Approvers[:maxSummaryApprovers]
	}
	open := slices.Clone(r.open)
	slices.SortStableFunc(open, func(a, b *Gate) int { return a.PausedAt.Compare(b.PausedAt) })
	for i, g := range open {
		if i == maxSummaryGates {
			s.MoreGates = len(open) - i
			break
		}
		why := g.Reason
		if len(g.Evidence) > 0 {
			why = g.Evidence[0]
		}
		s.Gates = append(s.Gates, SummaryGate{ID: g.ID, Phase: g.Phase, PausedAt: g.PausedAt, Deadline: g.Deadline,
			DeadlineBy: g.DeadlineBy, Why: trajectory.Clip(why, maxSummaryText), Reason: trajectory.Clip(g.Reason, maxSummaryText), Attempt: g.Attempt, AtBoundary: g.AtBoundary, Kind: g.Kind})
	}
	return s
}

// publish writes what views read in visibility: the search attributes
// (Options.SearchAttributes) and the summary in the memo, each only when
// it changed.
func (r *run) publish(ctx workflow.Context) {
	r.upsertSearchAttributes(ctx)
	r.publishSummary(ctx)
}

// publishSummary writes the summary in the memo (runs pinned since it
// existed) when it changed.
func (r *run) publishSummary(ctx workflow.Context) {
	if !r.cfg.Summary || r.summaryMocked {
		return
	}
	s := r.summary()
	if r.published != nil && summariesEqual(*r.published, s) {
		return
	}
	if r.invisible() && r.published != nil && !r.ended && volatileOnly(s, *r.published) &&
		workflow.Now(ctx).Sub(r.summaryAt) < summaryRefresh {
		return
	}
	err := upsertSummary(ctx, s)
	if errors.Is(err, errSummaryMocked) {
		r.summaryMocked = true
		r.logger.Warn("overseer: the test environment's UpsertMemo mock does not expect the overseer's summary, so this run writes none; " +
			"set Options.NoSummaryMemo in tests that mock UpsertMemo to say so")
		return
	}
	if err != nil {
		r.logger.Warn("overseer: upsert the job's summary in its memo failed", "error", err.Error())
		return
	}
	r.published, r.summaryAt = &s, workflow.Now(ctx)
}

// errSummaryMocked is a summary the SDK's test environment refused: the
// workflow's UpsertMemo mock did not expect it.
var errSummaryMocked = errors.New("overseer: the UpsertMemo mock refused the summary")

// upsertSummary writes s in the memo. The SDK's test environment hands
// every UpsertMemo to the workflow's UpsertMemo mock, if the test set one
// (TestWorkflowEnvironment.OnUpsertMemo), and testify panics at a call it
// does not expect: a unit test that mocks the workflow's own memo writes
// strictly must not fail for the overseer's. That panic is taken as
// errSummaryMocked, and the run writes no summary (the test environment
// has no visibility to read it anyway). Any other panic is not the
// overseer's to swallow. A real worker never panics here.
func upsertSummary(ctx workflow.Context, s Summary) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if !strings.Contains(fmt.Sprint(p), "mock: ") {
				panic(p)
			}
			err = errSummaryMocked
		}
	}()
	return workflow.UpsertMemo(ctx, map[string]any{SummaryMemoKey: s})
}

func summariesEqual(a, b Summary) bool { return reflect.DeepEqual(a, b) }
