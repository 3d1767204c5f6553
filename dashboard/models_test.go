package dashboard_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/registry"
)

type modelsBackend struct {
	*fakeBackend
	state registry.State
}

func (b modelsBackend) Models(context.Context) (registry.State, error) { return b.state, nil }

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
