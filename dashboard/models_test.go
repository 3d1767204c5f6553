package dashboard_test

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/registry"
)

type modelsBackend struct {
	*fakeBackend
	state registry.State
}

func (b modelsBackend) Models(context.Context) (registry.State, error) { return b.state, nil }

// learnBackend reads learn rounds too.
type learnBackend struct {
	modelsBackend
	rounds []learn.Result
	err    error
}

func (b learnBackend) LearnRounds(context.Context) ([]learn.Result, error) { return b.rounds, b.err }

func TestModelsPage(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	promise := &overseer.Promise{MaxFalsePause: 0.05, Confidence: 0.95, SucceededRuns: 80, UpperBound: 0.037, FailedRuns: 40, Catches: 22}
	st := registry.State{
		Types: []registry.TypeModels{{Type: "CoroJob", Current: "learned-b", Versions: []registry.Version{
			{Version: "learned-a", PolicyName: "calibrated", PromotedAt: t0, By: "ana", Note: "first fit"},
			{Version: "learned-b", PolicyName: "calibrated", Promise: promise, PromotedAt: t0.Add(time.Hour), By: "overseer learn", Previous: "learned-a",
				Note: "promote learned-b: AUROC at 50% on the 30 newest runs 0.91 against the current model learned-a's 0.74"},
		}}},
		Events: []registry.Event{
			{At: t0, Action: "promote", Type: "CoroJob", Version: "learned-a", By: "ana"},
			{At: t0.Add(time.Hour), Action: "promote", Type: "CoroJob", Version: "learned-b", From: "learned-a", By: "overseer learn"},
		},
	}
	serve := func(b dashboard.Backend) *httptest.Server {
		d, err := dashboard.New(dashboard.Options{Backend: b})
		require.NoError(t, err)
		srv := httptest.NewServer(d)
		t.Cleanup(srv.Close)
		return srv
	}
	srv := serve(modelsBackend{fakeBackend: newBackend(), state: st})
	code, body := get(t, srv.Client(), srv.URL+"/models")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `<a href="/models">Models</a>`)
	assert.Contains(t, body, "Current: <b data-current>learned-b</b>, policy calibrated, promoted 2026-12-01 10:00:00 UTC by overseer learn (was learned-a).")
	assert.Contains(t, body, "Promise: "+promise.String())
	assert.Contains(t, body, "against the current model learned-a&#39;s 0.74")
	assert.Contains(t, body, "<td>learned-a</td><td>2026-12-01 09:00:00 UTC</td><td>ana</td><td>first fit</td>")
	assert.Less(t, strings.Index(body, `promote learned-b (from learned-a)`), strings.Index(body, `promote learned-a</td>`), "newest event first")

	empty := serve(modelsBackend{fakeBackend: newBackend()})
	_, body = get(t, empty.Client(), empty.URL+"/models")
	assert.Contains(t, body, "No model was promoted")

	plain := serve(newBackend())
	_, body = get(t, plain.Client(), plain.URL+"/models")
	assert.Contains(t, body, "does not read a model registry")
}

// The page shows, per workflow type, what the latest learn round measured
// on closed jobs next to the promise (an alert when the measured false
// pauses break it), the candidates refused with their figures, and for a
// type with too few labelled runs how many more it needs.
func TestModelsPageShowsRoundsAndRefusals(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	promise := overseer.Promise{MaxFalsePause: 0.05, Confidence: 0.95, SucceededRuns: 80, UpperBound: 0.037, FailedRuns: 40, Catches: 22}
	figures, err := json.Marshal(learn.Figures{Trained: 120, HeldOut: 30, CandidateAUROCSteps: 0.531, CurrentAUROCSteps: 0.507, CandidateAUROC: 0.612, CurrentAUROC: 0.744, Current: "learned-b",
		Promise: &eval.PromiseCheck{Verdict: eval.PromiseAbove, MaxFalsePause: 0.05, Succeeded: 20, FalsePauses: 2, LowerBound: 0.018}})
	require.NoError(t, err)
	state := registry.State{
		Types: []registry.TypeModels{{Type: "CoroJob", Current: "learned-b", Versions: []registry.Version{
			{Version: "learned-b", PolicyName: "calibrated", Promise: &promise, PromotedAt: t0, By: "overseer learn"},
		}}},
		Refusals: []registry.Refusal{
			{At: t0.Add(time.Hour), Type: "CoroJob", Current: "learned-b", By: "overseer learn",
				Reason: "refused: no candidate could be fitted on the 120 older runs: a fold without a failed run"},
			{At: t0.Add(2 * time.Hour), Type: "CoroJob", Version: "learned-c", Current: "learned-b", By: "overseer learn", Figures: figures,
				Reason: "refused learned-c: it ranks worse: AUROC at 50% on the 30 newest runs 0.612 against the current model learned-b's 0.744"},
		},
	}
	broken := learn.MeasureRates(nil, 0, "learned-b", promise)
	broken.Jobs, broken.Succeeded, broken.FalsePauses, broken.Failed, broken.Caught = 70, 60, 12, 10, 8
	broken.Check = &eval.PromiseCheck{Verdict: eval.PromiseBroken, MaxFalsePause: 0.05, Succeeded: 60, FalsePauses: 12, LowerBound: 0.12}
	broken.Sentence = "on the newest closed 70 jobs, 12 of 60 succeeded jobs had a false pause (20.0%), 8 of 10 failed jobs caught (80.0%): these false pauses BREAK the promise"
	shipped := overseer.DefaultLearnedPolicy().Promise
	young := learn.MeasureRates(nil, 0, "learned-mini-swe-v2", shipped)
	young.Jobs, young.Succeeded, young.FalsePauses, young.Failed, young.Caught = 3, 2, 1, 1, 1
	young.Sentence = "on the newest closed 3 jobs, 1 of 2 succeeded jobs had a false pause (50.0%), 1 of 1 failed jobs caught (100.0%)"
	rounds := []learn.Result{
		{Type: "CoroJob", At: t0.Add(2 * time.Hour), Rounds: 7, Promoted: 1, Refused: 2, Rates: &broken,
			Readiness: learn.Readiness{Ready: true, Runs: 150, Sentence: "150 labelled runs (100 succeeded, 50 failed, 5 task families): enough to refit"},
			Sentence:  "round 7 for CoroJob: refused learned-c: it ranks worse"},
		{Type: "NewJob", At: t0, Rounds: 1, Rates: &young,
			Readiness: learn.Readiness{Runs: 3, Sentence: "3 labelled runs (2 succeeded, 1 failed, 1 task families): a 5% false-pause promise at 95% confidence takes 59 succeeded runs to train on and 3 task families; needs about 72 more succeeded runs",
				Next: "NewJob is at stage 0, not calibrated for the type: stage 1 (recalibration) needs 30 closed jobs of both outcomes; 3 have closed; a refit (stage 3) needs about 72 more succeeded runs"},
			Sentence: "round 1 for NewJob: no candidate: 3 labelled runs …"},
	}
	tests := []struct {
		name    string
		backend dashboard.Backend
		want    []string
		notWant []string
		order   []string
	}{{
		name:    "rounds and refusals",
		backend: learnBackend{modelsBackend: modelsBackend{fakeBackend: newBackend(), state: state}, rounds: rounds},
		want: []string{
			`<section class="panel" data-type="CoroJob">`,
			`<p data-rates class="form-error" role="alert">False pauses and catches ` + broken.Sentence + `.</p>`,
			`<p data-readiness>150 labelled runs (100 succeeded, 50 failed, 5 task families): enough to refit.</p>`,
			`Round 7, 2026-12-01 11:00:00 UTC (1 promoted, 2 refused so far): round 7 for CoroJob: refused learned-c: it ranks worse.`,
			`<tr data-refusal="learned-c"><td>2026-12-01 11:00:00 UTC</td><td>learned-c</td>`,
			`<td data-online>0.531 against 0.507 (learned-b)</td><td>0.612 against 0.744 (learned-b), 30 runs</td>`,
			`<th>AUROC after 10 steps, held out (the runs still running then)</th><th>AUROC at 50%, held out (knows each run's length)</th>`,
			`<td>above the promise of at most 5.0% false pauses but within sampling error: 2 of 20 succeeded runs paused (10.0%; 95% lower bound 1.8%)</td>`,
			`<td>refused learned-c: it ranks worse: AUROC at 50% on the 30 newest runs 0.612 against the current model learned-b&#39;s 0.744</td>`,
			`<tr data-refusal=""><td>2026-12-01 10:00:00 UTC</td><td>none fitted</td>`,
			`<section class="panel" data-type="NewJob">`,
			`No model promoted for this type`,
			`<p data-promise>Promise of learned-mini-swe-v2: ` + shipped.String() + `</p>`,
			`<p data-rates>False pauses and catches ` + young.Sentence + `.</p>`,
			`needs about 72 more succeeded runs.</p>`,
			`<p data-next>Calibration stage: NewJob is at stage 0, not calibrated for the type: stage 1 (recalibration) needs 30 closed jobs of both outcomes; 3 have closed; a refit (stage 3) needs about 72 more succeeded runs.</p>`,
			`Round 1, 2026-12-01 09:00:00 UTC (0 promoted, 0 refused so far).</p>`,
		},
		notWant: []string{"round 1 for NewJob: no candidate", "data-learn-error"},
		order:   []string{`data-refusal="learned-c"`, `data-refusal=""`, `data-type="NewJob"`},
	}, {
		name:    "rounds not readable",
		backend: learnBackend{modelsBackend: modelsBackend{fakeBackend: newBackend(), state: state}, err: errors.New("visibility is down")},
		want:    []string{`<p class="form-error" role="alert" data-learn-error>Temporal did not list the learn rounds: visibility is down</p>`, `data-refusal="learned-c"`},
		notWant: []string{"data-rates", `data-type="NewJob"`},
	}, {
		name:    "a backend without learn rounds",
		backend: modelsBackend{fakeBackend: newBackend(), state: state},
		want:    []string{`data-refusal="learned-c"`, "Current: <b data-current>learned-b</b>"},
		notWant: []string{"data-rates", "data-learn-error", "Measured on closed jobs"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := dashboard.New(dashboard.Options{Backend: tt.backend})
			require.NoError(t, err)
			srv := httptest.NewServer(d)
			defer srv.Close()
			code, body := get(t, srv.Client(), srv.URL+"/models")
			require.Equal(t, http.StatusOK, code, body)
			for _, w := range tt.want {
				assert.Contains(t, body, w)
			}
			for _, w := range tt.notWant {
				assert.NotContains(t, body, w)
			}
			for i := 1; i < len(tt.order); i++ {
				assert.Less(t, strings.Index(body, tt.order[i-1]), strings.Index(body, tt.order[i]), "%s before %s", tt.order[i-1], tt.order[i])
			}
		})
	}
}

// The four demo scenarios after `overseer dev` and one learn round: the
// three that paused were resumed with a note and then delivered, so their
// pauses were needed and the page shows no false pause and no alert; the
// same jobs continued and marked not needed break the promise.
func TestModelsPageCountsOnlyPausesJudgedNotNeeded(t *testing.T) {
	shipped := overseer.DefaultLearnedPolicy().Promise
	demo := func(needed bool, by overseer.NeededBy) []eval.Record {
		var recs []eval.Record
		for _, scenario := range []string{"on_track", "drifting", "looping", "blocked"} {
			r := eval.Record{Format: eval.RecordFormat, ID: "demo-" + scenario, Outcome: eval.OutcomeSucceeded, Unit: eval.UnitPhase,
				Steps: []eval.Step{{Phase: "plan"}, {Phase: "code"}, {Phase: "test"}}}
			if scenario != "on_track" {
				r.Gates = []eval.GateDecision{{Gate: "code-1", Phase: "code", After: 2, By: "demo-reviewer", Action: eval.GateContinue,
					Note: "Stop patching the same tests; find the root cause first.", Needed: new(needed), NeededBy: string(by)}}
			}
			recs = append(recs, r)
		}
		eval.UseGateLabels(recs)
		return recs
	}
	page := func(recs []eval.Record) string {
		rates := learn.MeasureRates(recs, 0, "learned-mini-swe-v2", shipped)
		d, err := dashboard.New(dashboard.Options{Backend: learnBackend{modelsBackend: modelsBackend{fakeBackend: newBackend()},
			rounds: []learn.Result{{Type: "CoroJob", At: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), Rounds: 1, Rates: &rates}}}})
		require.NoError(t, err)
		srv := httptest.NewServer(d)
		defer srv.Close()
		code, body := get(t, srv.Client(), srv.URL+"/models")
		require.Equal(t, http.StatusOK, code, body)
		return body
	}

	body := page(demo(true, overseer.NeededByNote))
	assert.Contains(t, body, "<p data-rates>False pauses and catches on the newest closed 4 jobs, 0 of 4 succeeded jobs had a false pause (0.0%; 3 more paused only where it was needed)")
	assert.NotContains(t, body, "BREAK")
	assert.NotContains(t, body, `<p data-rates class="form-error" role="alert">`)

	body = page(demo(false, overseer.NeededByReviewer))
	assert.Contains(t, body, `<p data-rates class="form-error" role="alert">False pauses and catches on the newest closed 4 jobs, 3 of 4 succeeded jobs had a false pause (75.0%)`)
	assert.Contains(t, body, "these false pauses BREAK the promise")
}
