package dashboard_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/overseer"
)

// budgetBackend is newBackend with job-paused stopped by its budget.
func budgetBackend() *fakeBackend {
	b := newBackend()
	st := b.statuses["job-paused"]
	st.PauseReason = "budget: the job spent 2400 tokens of its budget of 2000 tokens (120%)"
	st.Gates = []overseer.Gate{{ID: "code-1", Phase: "code", Kind: overseer.GateKindBudget, Reason: st.PauseReason,
		Evidence: []string{"the job spent 2400 tokens of its budget of 2000 tokens (120%)"}, PausedAt: *st.PausedSince}}
	st.MaxRedos = 2 // a verdict's gate could be redone; a budget's never
	st.Budget = &overseer.BudgetStatus{Limit: overseer.Budget{Tokens: 2000}, Spent: overseer.Budget{Tokens: 2400, PhaseRuns: 4},
		Exceeded: "spent 2400 tokens of its budget of 2000 tokens (120%)", Unchecked: []string{"cost"}}
	b.statuses["job-paused"] = st
	b.jobs[0].Summary = &overseer.Summary{Mode: overseer.ModeManage, Phase: "code", Spent: overseer.Budget{Tokens: 2400, Turns: 4},
		Budget: &overseer.Budget{Tokens: 2000}, BudgetState: overseer.BudgetReached,
		Gates: []overseer.SummaryGate{{ID: "code-1", Phase: "code", PausedAt: *st.PausedSince, Why: "the job spent 2400 tokens of its budget of 2000 tokens (120%)", Kind: overseer.GateKindBudget}}}
	return b
}

// A job stopped by its budget: its page shows the spend against the
// budget and asks for a raised budget, offering no redo; the raise is
// sent with the resume, a raise that is not a number is refused in one
// sentence and nothing is sent.
func TestABudgetGateIsResumedWithARaisedBudgetFromTheJobPage(t *testing.T) {
	b := budgetBackend()
	srv := newServer(t, b, dashboard.Options{Now: func() time.Time { return t0.Add(time.Hour) }})
	code, page := get(t, srv.Client(), srv.URL+"/job?id=job-paused")
	require.Equal(t, http.StatusOK, code, page)
	text := pageText(page)
	assert.Contains(t, text, "Spent2400 tokens, 4 phase runsof 2000 tokens · reached · unchecked: cost")
	assert.Contains(t, page, "data-budget-form")
	assert.NotContains(t, page, "data-redo", "a budget's gate is never redone")

	token, cookie := formToken(t, srv, "job-paused")
	code, body := postResume(t, srv, srv.URL, token, cookie, url.Values{"by": {"alice"}, "action": {"continue"}, "budget_tokens": {"lots"}})
	require.Equal(t, http.StatusUnprocessableEntity, code, body)
	assert.Contains(t, pageText(body), `The raised budget's tokens is "lots": give a positive number, or leave it empty.`)
	assert.Contains(t, body, `name="budget_tokens" inputmode="numeric" size="12" value="lots"`, "what was typed is kept")
	assert.Empty(t, b.resumed)

	code, body = postResume(t, srv, srv.URL, token, cookie, url.Values{"by": {"alice"}, "action": {"continue"}, "budget_tokens": {"5000"}, "budget_hours": {"1.5"}})
	require.Less(t, code, 400, body)
	require.Len(t, b.resumed, 1)
	require.NotNil(t, b.resumed[0].Budget)
	assert.Equal(t, overseer.Budget{Tokens: 5000, Elapsed: 90 * time.Minute}, *b.resumed[0].Budget)
}

// The list shows each job's spend against its budget and filters the jobs
// over budget with one visibility query; the Waiting page names a
// budget's gate.
func TestTheListAndTheQueueShowBudgets(t *testing.T) {
	b := budgetBackend()
	srv := newServer(t, b, dashboard.Options{Now: func() time.Time { return t0.Add(time.Hour) }})
	code, page := get(t, srv.Client(), srv.URL+"/?filter=over_budget")
	require.Equal(t, http.StatusOK, code, page)
	assert.Contains(t, page, `data-spend data-budget-state="reached" title="2400 tokens, 4 turns, 1h0m0s of 2000 tokens (reached)">2.4k tokens · budget reached</td>`)
	assert.Equal(t, "OverseerBudget IN ('near', 'reached')", b.lastQuery())

	code, page = get(t, srv.Client(), srv.URL+"/waiting")
	require.Equal(t, http.StatusOK, code, page)
	assert.Contains(t, pageText(page), "the job's budget: continue it from the job's page with a raised budget, or abort")
}
