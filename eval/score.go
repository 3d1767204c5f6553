package eval

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// Point is one assessment of a replayed run.
type Point struct {
	// Steps is the number of agent steps done at this boundary.
	Steps   int              `json:"steps"`
	Answers overseer.Answers `json:"answers"`
	// Model is the model version the judge reported.
	Model string `json:"model,omitempty"`
	// Err is the judge's error, when it failed at this boundary; the point
	// then has no answers and counts in no measure.
	Err string `json:"error,omitempty"`
	// InputTokens and OutputTokens are the judge's call's token usage, as
	// its answer reported it (jev.Response.Usage; a model judge's does,
	// the learned judge's is none).
	InputTokens  int64 `json:"input_tokens,omitempty"`
	OutputTokens int64 `json:"output_tokens,omitempty"`
	// Spent is what the run had spent at this boundary, as the plugin's
	// budget check reads it live: the model tokens, cost, turns and phase
	// runs (calls, for an agent loop) of the trajectory so far, and as
	// Elapsed its time in phases (Trajectory.PhaseTime: the sum of the
	// recorded calls' or phase runs' durations; a live job's workflow time
	// also counts what passed between them).
	// Score fills it in; what the gates in force stop ([InForceOf]) and
	// the ranking at fixed spend ([CheckpointsAtSpend]) read it.
	Spent overseer.Budget `json:"spent,omitzero"`
}

// OnObjective is the point's P(on objective).
func (p Point) OnObjective() float64 { return p.Answers.OnObjective }

// HasP reports whether the point carries a P(on objective): the judge
// answered, and did not abstain from the question.
func (p Point) HasP() bool { return p.Err == "" && !p.Answers.OnObjectiveUnknown }

// ScoredRun is a run with the judge's answers at each of its boundaries.
type ScoredRun struct {
	ID      string  `json:"id"`
	Family  string  `json:"family"`
	Outcome Outcome `json:"outcome"`
	// Steps is the run's number of agent steps.
	Steps  int     `json:"steps"`
	Points []Point `json:"points"`
}

// Failed reports whether the run did not succeed: the positive class.
func (r ScoredRun) Failed() bool { return r.Outcome.Failed() }

// ScoreOptions configure [Score].
type ScoreOptions struct {
	// Judge answers at every boundary. Required.
	Judge jev.Judge
	// Obligations of the questions. Default overseer.DefaultObligations().
	Obligations []string
	// Concurrency bounds the runs judged at once. Default 4.
	Concurrency int
	// Budget bounds one judge call. Default jev.DefaultBudget.
	Budget time.Duration
	// ContentWindow is the content window the judge reads at every
	// boundary, built from the records' texts as the plugin builds it
	// live (ReplayContent); the zero window is off. Only a model judge
	// reads it; it costs the learned judge nothing but the replay.
	ContentWindow trajectory.ContentWindow
}

// Score replays every record through the judge, one boundary at a time,
// with the request the plugin would send. Runs are judged concurrently (at
// most Concurrency at once), each within its own call budget; a judge
// error at a boundary is kept on its point. The result is in input order.
func Score(ctx context.Context, records []Record, opts ScoreOptions) ([]ScoredRun, error) {
	if opts.Judge == nil {
		return nil, errors.New("score: no judge")
	}
	if opts.Obligations == nil {
		opts.Obligations = overseer.DefaultObligations()
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.Budget <= 0 {
		opts.Budget = jev.DefaultBudget
	}
	if err := opts.ContentWindow.Validate(); err != nil {
		return nil, fmt.Errorf("score: %w", err)
	}
	out := make([]ScoredRun, len(records))
	errs := make([]error, len(records))
	sem := make(chan struct{}, opts.Concurrency)
	var wg sync.WaitGroup
	for i, rec := range records {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			out[i], errs[i] = scoreRun(ctx, rec, opts)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// Sample is n of the records, so that a trial of a costly judge judges
// few: as many failed as succeeded runs where the records allow (the
// failed or the succeeded runs alone tell a ranking nothing), each the
// ones whose ids hash lowest ([Digest]), kept in their input order. It is
// deterministic (the same runs whatever order they were read in) and
// mixes task families, where the first n in name order would be one
// repository's. n ≤ 0, or n ≥ len(records), is all of them.
func Sample(records []Record, n int) []Record {
	if n <= 0 || n >= len(records) {
		return records
	}
	key := func(i int) string { return Digest(records[i].ID) + "\x00" + records[i].ID }
	var failed, succeeded []int
	for i, r := range records {
		if r.Outcome.Failed() {
			failed = append(failed, i)
		} else {
			succeeded = append(succeeded, i)
		}
	}
	byKey := func(a, b int) int { return strings.Compare(key(a), key(b)) }
	slices.SortStableFunc(failed, byKey)
	slices.SortStableFunc(succeeded, byKey)
	idx := make([]int, 0, n)
	for len(idx) < n {
		if len(failed) > 0 && (len(idx)%2 == 0 || len(succeeded) == 0) {
			idx, failed = append(idx, failed[0]), failed[1:]
		} else {
			idx, succeeded = append(idx, succeeded[0]), succeeded[1:]
		}
	}
	slices.Sort(idx)
	out := make([]Record, 0, n)
	for _, i := range idx {
		out = append(out, records[i])
	}
	return out
}

func scoreRun(ctx context.Context, rec Record, opts ScoreOptions) (ScoredRun, error) {
	run := ScoredRun{ID: rec.ID, Family: rec.FamilyName(), Outcome: rec.Outcome, Steps: rec.NumSteps()}
	for _, b := range ReplayContent(rec, opts.ContentWindow) {
		t := b.Trajectory
		req, err := overseer.NewRequest("", opts.Obligations, b.Trajectory)
		if err != nil {
			return run, fmt.Errorf("run %s: %w", rec.ID, err)
		}
		callCtx, cancel := context.WithTimeout(ctx, opts.Budget)
		resp, err := opts.Judge.Decide(callCtx, req)
		cancel()
		if ctx.Err() != nil {
			return run, ctx.Err()
		}
		p := Point{Steps: b.Steps, Spent: overseer.Budget{Tokens: t.InputTokens + t.OutputTokens, CostUSD: t.CostUSD, Elapsed: t.PhaseTime,
			Turns: t.Turns, PhaseRuns: t.PhaseRuns}}
		if err == nil {
			p.Answers, err = overseer.ParseAnswers(req, resp, opts.Obligations)
			p.Model = resp.ModelVersion
			p.InputTokens, p.OutputTokens = resp.Usage.InputTokens, resp.Usage.OutputTokens
		}
		if err != nil {
			p.Err = err.Error()
		}
		run.Points = append(run.Points, p)
	}
	return run, nil
}
