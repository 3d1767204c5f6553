package dashboard_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/learn"
)

// rescueRecords are closed jobs of one type: paused ones (judged needed or
// not, then succeeded or failed) and flagged ones left alone.
func rescueRecords(needed, rescued, notNeeded, disrupted, observed, observedFailed int) []eval.Record {
	var out []eval.Record
	add := func(paused, judged, failed bool) {
		rec := eval.Record{ID: fmt.Sprintf("job-%d", len(out)), Outcome: eval.OutcomeSucceeded, Unit: eval.UnitPhase,
			Steps: []eval.Step{{Phase: "code", Assessment: &eval.RecordedAssessment{OnObjective: 0.3, Flagged: true}}}}
		if failed {
			rec.Outcome = eval.OutcomeFailed
		}
		if paused {
			rec.Gates = []eval.GateDecision{{Phase: "code", After: 1, By: "ana", Action: eval.GateContinue, Needed: &judged, WaitMS: 600000}}
		}
		out = append(out, rec)
	}
	for i := range needed {
		add(true, true, i >= rescued)
	}
	for i := range notNeeded {
		add(true, false, i < disrupted)
	}
	for i := range observed {
		add(false, false, i < observedFailed)
	}
	return out
}

// The Models page says, per type, whether pausing helps (the latest
// round's rescue against disruption; an alert when it hurts), the refusal
// below the minimum, and the catches at fixed false-pause rates.
func TestModelsPageSaysWhetherPausesShouldBeOn(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	helps := ptr(eval.EstimateRescue("CoroJob", rescueRecords(9, 5, 3, 0, 12, 6)))
	hurts := ptr(eval.EstimateRescue("AgentLoop", rescueRecords(2, 0, 8, 4, 10, 2)))
	few := ptr(eval.EstimateRescue("NewJob", rescueRecords(3, 2, 1, 0, 10, 4)))
	require.Equal(t, eval.RescueHelps, helps.Verdict)
	require.Equal(t, eval.RescueHurts, hurts.Verdict)
	require.Equal(t, eval.RescueTooFew, few.Verdict)
	catches := eval.RecordedCatches(rescueRecords(9, 5, 3, 0, 12, 6), eval.FixedFalsePauseRates)
	rounds := []learn.Result{
		{Type: "CoroJob", At: t0, Rounds: 3, Rescue: helps, Catches: catches, Readiness: learn.Readiness{Sentence: "40 labelled runs"},
			Saved:          &eval.Saved{Jobs: 24, TokenJobs: 24, Failed: 10, FailedTokens: 30600, AllTokens: 73440, Gates: 2, Waited: 20 * time.Minute, MedianWait: 10 * time.Minute},
			RelativeBudget: "relative budget the next promotion carries: 3.4× the succeeded jobs' tokens at the same phase run"},
		{Type: "AgentLoop", At: t0, Rounds: 2, Rescue: hurts, Readiness: learn.Readiness{Sentence: "20 labelled runs"}},
		{Type: "NewJob", At: t0, Rounds: 1, Rescue: few, Readiness: learn.Readiness{Sentence: "14 labelled runs"}},
		{Type: "OldJob", At: t0, Rounds: 9, Readiness: learn.Readiness{Sentence: "a round before the estimate"}},
	}
	d, err := dashboard.New(dashboard.Options{Backend: learnBackend{modelsBackend: modelsBackend{fakeBackend: newBackend()}, rounds: rounds}})
	require.NoError(t, err)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	code, body := get(t, srv.Client(), srv.URL+"/models")
	require.Equal(t, http.StatusOK, code, body)
	section := func(typ string) string {
		start := strings.Index(body, `data-type="`+typ+`"`)
		require.GreaterOrEqual(t, start, 0, typ)
		end := strings.Index(body[start:], "</section>")
		require.Greater(t, end, 0)
		return body[start : start+end]
	}
	coro := section("CoroJob")
	assert.Contains(t, coro, `<p data-rescue="helps">pauses here were needed 8 times in 10 (9 of 12 paused jobs); p 0.500 &gt; d/(r&#43;d) 0.000: pausing helps`)
	assert.Contains(t, coro, "the overseer never switches a type's mode")
	assert.Contains(t, coro, "at 1% of succeeded jobs paused, 0.0% (0 of 10; 0 of 14 paused); at 5% of succeeded jobs paused, 0.0% (0 of 10; 0 of 14 paused).", "tied P: no threshold pauses anyone")
	assert.Contains(t, coro, `<p data-saved>Spend and waits: failed jobs spent 30600 of the 24 closed jobs&#39; 73440 tokens (42%); jobs waited 20m0s at 2 gates (median 10m0s).</p>`)
	assert.Contains(t, coro, `<p data-relative-budget>relative budget the next promotion carries: 3.4× the succeeded jobs&#39; tokens at the same phase run.</p>`)
	assert.NotContains(t, section("OldJob"), "data-saved", "a round before it says nothing")
	assert.Contains(t, section("AgentLoop"), `<p data-rescue="hurts" class="form-error" role="alert">pauses here were needed 2 times in 10`)
	assert.Contains(t, section("NewJob"), `<p data-rescue="too_few">keep observing: 4 labelled gates are too few to say whether pausing NewJob helps (need 10).</p>`)
	assert.NotContains(t, section("OldJob"), "Should pauses be on?", "a round before the estimate says nothing")
}

func ptr[T any](v T) *T { return &v }
