package dashboard_test

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/learn"
	"github.com/corohq/temporal-overseer/overseer/registry"
)

// A refusal whose candidate's AUROC its runs could not measure (recorded
// as null) shows it as not measurable, not NaN nor 0.000.
func TestModelsPageSaysAFigureWasNotMeasurable(t *testing.T) {
	figures, err := json.Marshal(learn.Figures{Trained: 38, HeldOut: 10, CandidateAUROC: math.NaN(), CurrentAUROC: 0.61, Current: "learned-b"})
	require.NoError(t, err)
	state := registry.State{Refusals: []registry.Refusal{{At: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), Type: "CoroJob", Version: "learned-c",
		Current: "learned-b", By: "overseer learn", Figures: figures, Reason: "refused learned-c: it ranks worse"}}}
	d, err := dashboard.New(dashboard.Options{Backend: modelsBackend{fakeBackend: newBackend(), state: state}})
	require.NoError(t, err)
	srv := httptest.NewServer(d)
	defer srv.Close()
	code, body := get(t, srv.Client(), srv.URL+"/models")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "<td>not measurable against 0.610 (learned-b), 10 runs</td>")
	assert.NotContains(t, body, "NaN")
}

// A refusal recorded before the ranking after 10 steps was measured says
// so, not 0.000; one recorded since shows it first.
func TestModelsPageSaysTheOnlineRankingOfOlderRefusalsWasNotMeasured(t *testing.T) {
	measured, err := json.Marshal(learn.Figures{Trained: 38, HeldOut: 10, CandidateAUROCSteps: 0.55, CurrentAUROCSteps: math.NaN(), CandidateAUROC: 0.7, CurrentAUROC: 0.61, Current: "learned-b"})
	require.NoError(t, err)
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	state := registry.State{Refusals: []registry.Refusal{
		{At: at, Type: "CoroJob", Version: "learned-c", Current: "learned-b", By: "overseer learn", Reason: "refused learned-c: it ranks worse",
			Figures: json.RawMessage(`{"trained": 38, "held_out": 10, "candidate_auroc_50": 0.6, "current_auroc_50": 0.7, "current": "learned-b"}`)},
		{At: at.Add(time.Hour), Type: "CoroJob", Version: "learned-d", Current: "learned-b", By: "overseer learn", Reason: "refused learned-d: it ranks worse", Figures: measured},
	}}
	d, err := dashboard.New(dashboard.Options{Backend: modelsBackend{fakeBackend: newBackend(), state: state}})
	require.NoError(t, err)
	srv := httptest.NewServer(d)
	defer srv.Close()
	code, body := get(t, srv.Client(), srv.URL+"/models")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "<td data-online>not measured (a round before this figure)</td><td>0.600 against 0.700 (learned-b), 10 runs</td>")
	assert.Contains(t, body, "<td data-online>0.550 against not measurable (learned-b)</td><td>0.700 against 0.610 (learned-b), 10 runs</td>")
	assert.NotContains(t, body, "NaN")
}
