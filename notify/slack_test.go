package notify_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/notify"
	"github.com/corohq/temporal-overseer/overseer"
)

// slackServer is an in-process Slack incoming webhook: it keeps the
// messages posted to each path.
type slackServer struct {
	*httptest.Server
	mu     sync.Mutex
	posted map[string][]notify.SlackPayload
	status int
}

func newSlackServer(t *testing.T) *slackServer {
	t.Helper()
	s := &slackServer{posted: map[string][]notify.SlackPayload{}, status: http.StatusOK}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p notify.SlackPayload
		if r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&p) != nil || p.Text == "" {
			http.Error(w, "invalid_payload", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.status != http.StatusOK {
			http.Error(w, "no_service", s.status)
			return
		}
		s.posted[r.URL.Path] = append(s.posted[r.URL.Path], p)
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *slackServer) messages(path string) []notify.SlackPayload {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]notify.SlackPayload(nil), s.posted[path]...)
}

func TestSlackMessageLinksToTheGateOnTheDashboard(t *testing.T) {
	srv := newSlackServer(t)
	sl, err := notify.NewSlack(srv.URL+"/services/T0/B0/team", srv.URL+"/services/T0/B1/oncall")
	require.NoError(t, err)
	ev := event(overseer.GateOpened)
	ev.DashboardURL = overseer.DashboardJobURL("https://overseer.example.com/", "job-1")
	deadline := ev.OpenedAt.Add(24 * time.Hour)
	ev.Deadline = &deadline
	ev.Reason = "P(on objective) 0.10 <= 0.25 & looping"
	require.NoError(t, sl.Notify(context.Background(), ev))
	require.NoError(t, sl.Notify(context.Background(), ev), "a retry of a delivered event")

	team := srv.messages("/services/T0/B0/team")
	require.Len(t, team, 1, "posted once: Slack cannot deduplicate")
	text := team[0].Blocks[0].Text.Text
	assert.Contains(t, text, "<https://overseer.example.com/job?id=job-1|job-1>")
	assert.Contains(t, text, "<https://overseer.example.com/job?id=job-1|Review and resume on the dashboard>")
	assert.Contains(t, text, "paused after phase *code*: ")
	assert.Contains(t, text, "waits for a person at gate *code-1*")
	assert.Contains(t, text, "0.10 &lt;= 0.25 &amp; looping", "mrkdwn is escaped")
	assert.Contains(t, text, "*Deadline:* 2026-01-02 00:00 UTC")
	assert.NotContains(t, team[0].Text, "<", "the fallback text has no link markup")
	assert.Contains(t, team[0].Text, "Job job-1 is paused after phase *code*: ")

	esc := event(overseer.GateEscalated)
	esc.Wait, esc.Rule = 24*time.Hour, "deadline 24h: escalate"
	require.NoError(t, sl.Notify(context.Background(), esc))
	exp := event(overseer.GateExpired)
	exp.Wait, exp.Rule, exp.Action = 72*time.Hour, "deadline 72h: abort", overseer.ActionAbort
	require.NoError(t, sl.Notify(context.Background(), exp))
	oncall := srv.messages("/services/T0/B1/oncall")
	require.Len(t, oncall, 2, "escalated and expired go to the second audience")
	assert.Contains(t, oncall[0].Text, "Escalated: job `job-1` is still paused after phase *code* (")
	assert.Contains(t, oncall[0].Text, "has waited 24h at gate *code-1* (deadline 24h: escalate)")
	assert.Contains(t, oncall[1].Text, "expired after 3 days (deadline 72h: abort): the job was told to abort")

	res := event(overseer.GateResumed)
	res.By, res.Note, res.Wait = "alice", "go on", 2*time.Hour
	res.Judgement = "pause needed: a continue with a note counts as needed"
	require.NoError(t, sl.Notify(context.Background(), res))
	team = srv.messages("/services/T0/B0/team")
	require.Len(t, team, 2)
	assert.Contains(t, team[1].Text, "resumed at gate *code-1* by alice after 2h")
	assert.Contains(t, team[1].Blocks[0].Text.Text, "*Note:* go on")
	assert.Contains(t, team[1].Blocks[0].Text.Text, "*Judged:* pause needed: a continue with a note counts as needed", "the resume says whether the pause was needed")
	assert.NotContains(t, team[0].Blocks[0].Text.Text, "*Judged:*", "an open gate is not judged yet")

	// A budget's gate is its own kind in the message.
	budget := event(overseer.GateOpened)
	budget.Gate, budget.GateKind, budget.IdempotencyKey = "code-2", overseer.GateKindBudget, "job-1/run-1/code-2/opened"
	budget.Evidence = []string{"the job spent 2400 tokens of its budget of 2000 tokens (120%)"}
	require.NoError(t, sl.Notify(context.Background(), budget))
	budget.Kind, budget.By, budget.Wait, budget.RaisedBudget = overseer.GateResumed, "alice", time.Hour, &overseer.Budget{Tokens: 5000}
	budget.IdempotencyKey = "job-1/run-1/code-2/resumed"
	require.NoError(t, sl.Notify(context.Background(), budget))
	team = srv.messages("/services/T0/B0/team")
	require.Len(t, team, 4)
	assert.Contains(t, team[2].Text, "reached its budget after phase *code*: the job spent 2400 tokens of its budget of 2000 tokens (120%). It waits at gate *code-2* for a raised budget or an abort.")
	assert.Contains(t, team[3].Text, "resumed at gate *code-2* by alice with a raised budget (5000 tokens) after 1h")
}

func TestSlackErrorsNeverShowTheWebhookURL(t *testing.T) {
	srv := newSlackServer(t)
	sl, err := notify.NewSlack(srv.URL+"/services/T0/B0/XOXSECRET", "")
	require.NoError(t, err)
	srv.status = http.StatusNotFound // a revoked webhook
	err = sl.Notify(context.Background(), event(overseer.GateOpened))
	require.Error(t, err)
	assert.True(t, errors.Is(err, overseer.ErrNotifyRejected), "a revoked webhook is not retried: %v", err)
	assert.NotContains(t, err.Error(), "XOXSECRET")
	srv.status = http.StatusInternalServerError
	err = sl.Notify(context.Background(), event(overseer.GateOpened))
	assert.False(t, errors.Is(err, overseer.ErrNotifyRejected), "a 5xx is retried: %v", err)
	srv.Close()
	err = sl.Notify(context.Background(), event(overseer.GateOpened))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "XOXSECRET")
}

func TestMultiRetriesOnlyTheTargetsThatFailed(t *testing.T) {
	slackSrv := newSlackServer(t)
	sl, err := notify.NewSlack(slackSrv.URL+"/s", "")
	require.NoError(t, err)
	rcv := newReceiver(t, 1) // the webhook fails its first attempt
	hook, err := notify.NewWebhook(rcv.URL, secret)
	require.NoError(t, err)
	m := notify.Multi(sl, hook)

	err = m.Notify(context.Background(), event(overseer.GateOpened))
	require.Error(t, err, "the webhook failed")
	assert.False(t, errors.Is(err, overseer.ErrNotifyRejected), "retryable: %v", err)
	require.NoError(t, m.Notify(context.Background(), event(overseer.GateOpened)), "the retry")
	assert.Len(t, slackSrv.messages("/s"), 1, "Slack got it once")
	assert.Equal(t, []overseer.GateEventKind{overseer.GateOpened}, rcv.kinds())
	assert.Equal(t, 2, rcv.attempts["job-1/run-1/code-1/opened"])
}
