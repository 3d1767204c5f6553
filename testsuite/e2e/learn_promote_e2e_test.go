package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/learn"
	"github.com/corohq/temporal-overseer/overseer/registry"
)

// learnRecords builds labelled runs, newest first, in which a failed run
// spends many more output tokens per step — but with inverted, among the
// older runs (those a round trains on), a succeeded one does.
func learnRecords(n int, seed uint64, inverted bool) []eval.Record {
	rng := rand.New(rand.NewPCG(seed, 7))
	var out []eval.Record
	for i := range n {
		failed := i%3 == 0
		rec := eval.Record{Format: eval.RecordFormat, ID: fmt.Sprintf("fam%d-%d", i%5, i), Outcome: eval.OutcomeSucceeded}
		for s := range 8 + rng.IntN(8) {
			tokens := int64(100 + rng.IntN(50))
			if failed != (inverted && i >= n/5) {
				tokens *= 4
			}
			rec.Steps = append(rec.Steps, eval.Step{Phase: []string{"read", "edit", "test"}[(s/2)%3], OutputTokens: tokens, InputTokens: int64(1000 + rng.IntN(500))})
		}
		if failed {
			rec.Outcome = eval.OutcomeFailed
		}
		out = append(out, rec)
	}
	return out
}

// The learn workflow on the server, with the real model registry: a round
// over well-labelled runs promotes its candidate (recorded by overseer
// learn with its figures); a round whose training runs are mislabelled is
// refused with its figures and the current model stays.
func TestE2ELearnPromotesAGoodCandidateAndRefusesAWorseOne(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	ctx := context.Background()
	rw := registry.NewWorker(c, sdkworker.Options{})
	require.NoError(t, rw.Start())
	t.Cleanup(rw.Stop)

	typ := fmt.Sprintf("E2ELearn%d", time.Now().UnixNano()) // the registry outlives a run
	var inverted atomic.Bool
	tq := "e2e-learn-promote-" + fmt.Sprint(time.Now().UnixNano())
	w := sdkworker.New(c, tq, sdkworker.Options{})
	learn.RegisterActivities(w, &learn.Activities{Client: c, Records: func(context.Context, string, string, time.Time) ([]eval.Record, error) {
		return learnRecords(150, 1, inverted.Load()), nil
	}})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	round := func(prev *learn.Result) learn.Result {
		run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: fmt.Sprintf("overseer-learn-%s-run-%d", typ, time.Now().UnixNano()), TaskQueue: tq},
			learn.WorkflowName, learn.Input{Type: typ, Previous: prev})
		require.NoError(t, err)
		rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		var res learn.Result
		require.NoError(t, run.Get(rctx, &res))
		return res
	}

	first := round(nil)
	require.NotNil(t, first.Decision, first.Sentence)
	assert.True(t, first.Decision.Promote, first.Sentence)
	assert.Equal(t, 1, first.Promoted)
	assert.Equal(t, first.Decision.Version, first.Current)
	st, err := registry.Get(ctx, c, registry.Query{Types: []string{typ}})
	require.NoError(t, err)
	tm := st.Type(typ)
	require.NotNil(t, tm)
	assert.Equal(t, first.Decision.Version, tm.Current)
	v := tm.CurrentVersion()
	require.NotNil(t, v)
	assert.Equal(t, learn.PromotedBy, v.By)
	var figures learn.Figures
	require.NoError(t, json.Unmarshal(v.Figures, &figures))
	assert.Equal(t, 30, figures.HeldOut)
	require.True(t, figures.RankedOnline(), "these runs rank after 10 steps")
	assert.GreaterOrEqual(t, figures.CandidateAUROCSteps, figures.CurrentAUROCSteps)

	// Training runs that tell the outcome the other way round: the candidate
	// ranks the newest runs worse than the model just promoted, and is
	// refused with its figures.
	inverted.Store(true)
	second := round(&first)
	require.NotNil(t, second.Decision, second.Sentence)
	assert.False(t, second.Decision.Promote, second.Sentence)
	assert.Equal(t, 2, second.Rounds)
	assert.Equal(t, 1, second.Refused)
	assert.Equal(t, first.Decision.Version, second.Decision.Figures.Current)
	assert.Contains(t, second.Sentence, "refused ")
	assert.Contains(t, second.Sentence, "against the current model "+first.Decision.Version)
	require.Len(t, second.Refusals, 1)
	st, err = registry.Get(ctx, c, registry.Query{Types: []string{typ}})
	require.NoError(t, err)
	assert.Equal(t, first.Decision.Version, st.Type(typ).Current, "the refused candidate was not promoted")
	// The registry keeps the refusal with its figures, for the dashboard.
	require.Len(t, st.Refusals, 1)
	refused := st.Refusals[0]
	assert.Equal(t, registry.Refusal{At: refused.At, Type: typ, Version: second.Decision.Version, Current: first.Decision.Version,
		Reason: second.Decision.Reason, Figures: refused.Figures, By: learn.PromotedBy}, refused)
	var refusedFigures learn.Figures
	require.NoError(t, json.Unmarshal(refused.Figures, &refusedFigures))
	assert.True(t, refusedFigures.RanksWorseOnline(), "refused: it ranks worse after 10 steps")
	assert.Equal(t, first.Decision.Version, refusedFigures.Current)

	// The Models view shows the refused candidate with its figures, and
	// the gates the round measured on the closed jobs against the promise
	// of the model current then (these runs met no gate).
	require.NotNil(t, second.Rates)
	assert.Equal(t, first.Decision.Version, second.Rates.Model)
	assert.Contains(t, second.Rates.Sentence, "0 of 100 succeeded jobs had a false pause (0.0%), 0 of 50 failed jobs caught (0.0%): the promise of model "+first.Decision.Version)
	dash := startDashboard(t, srv)
	eventually(t, "the Models view to show the second round", 30*time.Second, func() bool {
		return strings.Contains(modelsSection(t, dash, typ), "Round 2, ")
	})
	section := modelsSection(t, dash, typ)
	assert.Contains(t, section, "Current: <b data-current>"+first.Decision.Version+"</b>")
	assert.Contains(t, section, `<tr data-refusal="`+second.Decision.Version+`">`)
	assert.Contains(t, section, fmt.Sprintf("<td>%.3f against %.3f (%s), 30 runs</td>", refusedFigures.CandidateAUROC, refusedFigures.CurrentAUROC, first.Decision.Version))
	assert.Contains(t, section, "False pauses and catches "+second.Rates.Sentence)
	assert.NotContains(t, section, `data-rates class="form-error"`, "no false pause: the promise is not broken")

	// overseer learn status finds the last round by its id.
	code, out, errOut := overseerCLI(srv, "learn", "status", "--type", typ)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, typ+": no schedule")
	assert.Contains(t, out, "rounds 2, promoted 1, refused 1")

	// A schedule is created, then updated.
	code, out, errOut = overseerCLI(srv, "learn", "schedule", "--type", typ, "--every", "24h", "--task-queue", tq)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "schedule overseer-learn-"+typ+" created: a learn round for "+typ+" every 24h0m0s")
	code, out, errOut = overseerCLI(srv, "learn", "schedule", "--type", typ, "--every", "12h", "--task-queue", tq)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, " updated: a learn round for "+typ+" every 12h0m0s")
	t.Cleanup(func() { _ = c.ScheduleClient().GetHandle(ctx, "overseer-learn-"+typ).Delete(ctx) })
	// The first round is --every from the command, not at the interval's
	// next multiple since the epoch, and the server agrees with what it said.
	firstRound := regexp.MustCompile(`, the first at (\S+) `).FindStringSubmatch(out)
	require.NotNil(t, firstRound, out)
	code, out, errOut = overseerCLI(srv, "learn", "status", "--type", typ)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, typ+": schedule overseer-learn-"+typ+", next round "+firstRound[1]+"\n")
}
