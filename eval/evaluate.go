package eval

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/supervision"
)

// Options configure an evaluation. The zero value evaluates the heuristic
// judges with the default policy and obligations.
type Options struct {
	// Judge answers the phase-boundary questions. Default
	// overseer.HeuristicJudge.
	Judge jev.Judge
	// Policy turns answers into verdicts. Default overseer.DefaultPolicy().
	Policy overseer.Policy
	// Obligations are checked at every boundary. Default
	// overseer.DefaultObligations.
	Obligations []string
	// Supervisor judges the finished run (the completion signal). Default:
	// SHADOW mode, supervision.HeuristicJudge, thresholds 0.2 / 0.8.
	Supervisor *supervision.Supervisor
	// Limit evaluates only the first Limit traces (by name) when positive.
	Limit int
}

func (o Options) withDefaults() (Options, error) {
	if o.Judge == nil {
		o.Judge = overseer.HeuristicJudge{}
	}
	if o.Policy == (overseer.Policy{}) {
		o.Policy = overseer.DefaultPolicy()
	}
	if o.Obligations == nil {
		o.Obligations = overseer.DefaultObligations
	}
	if o.Supervisor == nil {
		sup, err := supervision.New(supervision.Options{Mode: supervision.Shadow, Judge: supervision.HeuristicJudge{},
			Thresholds: supervision.Thresholds{No: 0.2, Yes: 0.8}})
		if err != nil {
			return o, err
		}
		o.Supervisor = sup
	}
	return o, nil
}

// Boundary is one phase-boundary assessment of a replayed run.
type Boundary struct {
	Phase Class
	// Actions is the number of actions done at this boundary.
	Actions int
	Answers overseer.Answers
	Verdict overseer.Verdict
}

// Result is what the two signals said about one run.
type Result struct {
	ID       string
	Resolved bool
	Actions  int
	// FailedTools, Rework and Loops total the phases' failed tool calls,
	// rework runs and looping runs.
	FailedTools, Rework, Loops int
	Phases                     []Phase
	Boundaries                 []Boundary
	// MinOnObjective is the lowest P(on objective) over the boundaries.
	MinOnObjective float64
	// FirstFlag is the index of the first flagged boundary, -1 when none.
	FirstFlag int
	// FirstFlagFraction is the fraction of the run's actions done at the
	// first flag (0 when none).
	FirstFlagFraction float64
	// FirstFlagCause names the rule behind the first flag: "low P(on
	// objective)" or the breached obligation's key ("obligation[2]").
	FirstFlagCause string
	// Completion is the in-phase supervisor's decision on the finished run.
	Completion supervision.Decision
	// Receipt is true when the completion snapshot carried a verification
	// receipt. A trace has none.
	Receipt bool
}

// Flagged reports whether any boundary was flagged.
func (r Result) Flagged() bool { return r.FirstFlag >= 0 }

// Advice is the completion advice, or the decision's status and reason
// when it has no report (an abstention or an error).
func (r Result) Advice() string {
	if a, ok := r.Completion.Advice(); ok {
		return string(a)
	}
	return string(r.Completion.Status) + "/" + r.Completion.Reason
}

// Evaluate replays one run: its phases through the phase-boundary judge,
// one boundary at a time, and its end through the in-phase supervisor.
func Evaluate(ctx context.Context, tr *Trace, resolved bool, opts Options) (Result, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return Result{}, err
	}
	res := Result{ID: tr.ID, Resolved: resolved, Actions: len(tr.Actions), FirstFlag: -1, MinOnObjective: 1}
	res.Phases = Phases(tr.Actions)
	if len(res.Phases) == 0 {
		return Result{}, fmt.Errorf("%s: no phases (no action ran)", tr.ID)
	}
	var rec overseer.TrajectoryRecorder
	rec.SetObjective(tr.Task)
	for i, p := range res.Phases {
		res.FailedTools += len(p.FailedTools)
		if p.Rework {
			res.Rework++
		}
		if p.Looping {
			res.Loops++
		}
		rec.RecordPhase(PhaseRun(p), Report(p, tr))
		req, err := overseer.NewRequest(opts.Obligations, rec.Trajectory())
		if err != nil {
			return Result{}, err
		}
		resp, err := opts.Judge.Decide(ctx, req)
		if err != nil {
			return Result{}, fmt.Errorf("%s: boundary %d: judge: %w", tr.ID, i, err)
		}
		answers, err := overseer.ParseAnswers(req, resp, opts.Obligations)
		if err != nil {
			return Result{}, fmt.Errorf("%s: boundary %d: %w", tr.ID, i, err)
		}
		v := opts.Policy.Evaluate(answers)
		res.Boundaries = append(res.Boundaries, Boundary{Phase: p.Class, Actions: p.End, Answers: answers, Verdict: v})
		res.MinOnObjective = math.Min(res.MinOnObjective, answers.OnObjective)
		if v.Flagged && res.FirstFlag < 0 {
			res.FirstFlag = i
			res.FirstFlagFraction = float64(p.End) / float64(len(tr.Actions))
			res.FirstFlagCause = flagCause(answers, opts.Policy)
		}
	}
	snap := CompletionSnapshot(tr)
	res.Receipt = snap.Evidence != nil && snap.Evidence.Verification != nil
	res.Completion = opts.Supervisor.ObserveSnapshot(ctx, snap)
	if res.Completion.Status == supervision.Error || res.Completion.Status == supervision.Cancelled {
		return Result{}, fmt.Errorf("%s: supervisor: %s %s %s", tr.ID, res.Completion.Status, res.Completion.Reason, res.Completion.Err)
	}
	return res, nil
}

func flagCause(a overseer.Answers, p overseer.Policy) string {
	if a.OnObjective <= p.PauseAtOrBelow {
		return "low P(on objective)"
	}
	return a.Breach
}

// PhaseRun is what the interceptor observes of a phase: its name and
// duration. A phase run never fails as an activity would: a trace has no
// activity errors, its failed tool calls go in the [Report].
func PhaseRun(p Phase) overseer.PhaseRun {
	return overseer.PhaseRun{Phase: string(p.Class), Duration: p.Duration}
}

// Report is what the phase would tell the overseer about itself: turns,
// cost, rework, failed tool calls by category, and a missing output when
// the submission is empty.
func Report(p Phase, tr *Trace) *overseer.PhaseReport {
	r := &overseer.PhaseReport{Turns: p.Turns(), CostUSD: p.CostUSD, FailedToolCategories: p.FailedTools}
	if p.Rework {
		r.Rework = 1
	}
	if p.Class == Submit && strings.TrimSpace(tr.Submission) == "" {
		r.OutputMissing = true
	}
	return r
}

// CompletionSnapshot is the in-phase supervisor's view of a finished run:
// the task, the last assistant text as the output tail, the latest action
// classes as events (TOOL_<CLASS>, at most the 32 the capture keeps), the
// worker idle, and no evidence — a trace has no host receipt.
func CompletionSnapshot(tr *Trace) supervision.Snapshot {
	events := make([]string, 0, len(tr.Actions))
	for _, a := range tr.Actions {
		label := "TOOL_" + strings.ToUpper(string(a.Class))
		if a.FormatError {
			label = "TOOL_FORMAT_ERROR"
		}
		events = append(events, label)
	}
	if len(events) > supervision.MaxRecentEvents {
		events = events[len(events)-supervision.MaxRecentEvents:]
	}
	snap := supervision.Snapshot{
		Scope:        supervision.Scope{UserID: "eval-traces", SessionID: tr.ID, RunID: "replay"},
		Sequence:     int64(len(tr.Actions)),
		Task:         tr.Task,
		Output:       tr.LastOutput,
		RecentEvents: events,
		WorkerActive: false,
	}
	if first, last := tr.Actions[0].At, tr.Actions[len(tr.Actions)-1].At; !first.IsZero() && last.After(first) {
		snap.Elapsed = last.Sub(first)
	}
	return snap
}

// Run evaluates the labelled traces of a data directory (labels.json and
// trajs/), in name order. Traces without a label are skipped and counted.
func Run(ctx context.Context, dir string, opts Options) (results []Result, unlabelled int, err error) {
	labels, err := LoadLabels(filepath.Join(dir, "labels.json"))
	if err != nil {
		return nil, 0, err
	}
	paths, err := TracePaths(dir)
	if err != nil {
		return nil, 0, err
	}
	if len(paths) == 0 {
		return nil, 0, errors.New("no trajectories under " + filepath.Join(dir, "trajs"))
	}
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, 0, err
	}
	for _, p := range paths {
		if opts.Limit > 0 && len(results) >= opts.Limit {
			break
		}
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		tr, err := LoadTrace(p)
		if err != nil {
			return nil, 0, err
		}
		resolved, ok := labels[tr.ID]
		if !ok {
			unlabelled++
			continue
		}
		r, err := Evaluate(ctx, tr, resolved, opts)
		if err != nil {
			return nil, 0, err
		}
		results = append(results, r)
	}
	return results, unlabelled, nil
}
