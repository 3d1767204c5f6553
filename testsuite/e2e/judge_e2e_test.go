package e2e_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/cmd/overseer/cli/clitest"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// base64Field matches the bytes fields of a protojson event (payload data
// and metadata values), which protojson writes in base64.
var base64Field = regexp.MustCompile(`"(?:data|encoding|[A-Za-z]+)"\s*:\s*"([A-Za-z0-9+/]{4,}={0,2})"`)

// historyJSON returns every event of the workflow's history as JSON,
// followed by the decoded text of every base64 field in it (payloads are
// bytes, so a key inside one would be invisible in the JSON itself).
func historyJSON(t *testing.T, srv server, id string) []string {
	t.Helper()
	it := srv.Client().GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var events []string
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		b, err := protojson.Marshal(ev)
		require.NoError(t, err)
		text := string(b)
		for _, m := range base64Field.FindAllStringSubmatch(text, -1) {
			if raw, err := base64.StdEncoding.DecodeString(m[1]); err == nil {
				text += "\n" + string(raw)
			}
		}
		events = append(events, text)
	}
	require.NotEmpty(t, events)
	return events
}

// logLines renders every captured log entry with its fields.
func logLines(logs *observer.ObservedLogs) []string {
	var lines []string
	for _, e := range logs.All() {
		lines = append(lines, fmt.Sprintf("%s %v", e.Message, e.ContextMap()))
	}
	return lines
}

func TestE2EJudgeJevHTTPAgainstJudgeServe(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	const key = "jev-e2e-KEY-7f3c9a1b5d-DISTINCTIVE"
	t.Setenv(worker.EnvServeAPIKey, key)
	url, served := clitest.ServeJudge(t, "-v")

	// The worker is configured the way an operator configures it: from the
	// environment, the key in OVERSEER_JEV_API_KEY only.
	t.Setenv(worker.EnvJudge, worker.JudgeJev)
	t.Setenv(worker.EnvJevURL, url)
	t.Setenv(worker.EnvJevAPIKey, key)
	jc, err := worker.JudgeConfigFromEnv(os.Getenv)
	require.NoError(t, err)
	core, logs := observer.New(zap.DebugLevel)
	tq := startWorker(t, srv, worker.Config{JudgeConfig: jc, Logger: zap.New(core)})

	run := startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	res, err := finish(t, c, run, "e2e-reviewer")
	require.NoError(t, err)
	assert.Equal(t, "delivered", res.Outcome)

	s := status(t, c, run.GetID())
	require.NotEmpty(t, s.Assessments)
	assert.Positive(t, s.Counters.Pauses, "the looping job still pauses: the served judge's answers drive the verdicts")
	for _, a := range s.Assessments {
		assert.Empty(t, a.Error)
		assert.Equal(t, overseer.DefaultLearnedModel().Version+"/telemetry", a.Model, "the model is the served judge's, and the reference job's telemetry selects its telemetry sub-model")
		assert.Contains(t, a.Answers.Basis, "telemetry sub-model: ", "the basis crosses the HTTP judge")
		assert.NotNil(t, a.Verdict)
		assert.Positive(t, a.Latency)
	}
	assert.GreaterOrEqual(t, strings.Count(served.String(), "jev decision"), len(s.Assessments), "every assessment went over HTTP")

	assertNoKey(t, srv, run.GetID(), logs, served, key)
	lines := strings.Join(logLines(logs), "\n")
	assert.Contains(t, lines, "Jev judge at "+url+" (API key set)", "the worker logs its judge, without the key")
}

func TestE2EJudgeWrongKeyIsRecordedNeverAVerdict(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	const key = "jev-e2e-RIGHT-KEY-0c1d2e3f"
	const wrong = "jev-e2e-WRONG-KEY-9a8b7c6d"
	t.Setenv(worker.EnvServeAPIKey, key)
	url, served := clitest.ServeJudge(t, "-v")
	core, logs := observer.New(zap.DebugLevel)
	tq := startWorker(t, srv, worker.Config{Mode: overseer.ModeObserve, Logger: zap.New(core),
		JudgeConfig: worker.JudgeConfig{Kind: worker.JudgeJev, JevURL: url, JevAPIKey: wrong}})

	run := startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.OnTrack})
	res, err := finish(t, c, run, "e2e-reviewer")
	require.NoError(t, err)
	assert.Equal(t, "delivered", res.Outcome, "observe mode: a failing judge changes nothing")
	s := status(t, c, run.GetID())
	require.NotEmpty(t, s.Assessments)
	assert.False(t, s.Assessed)
	abandoned := 0
	for _, a := range s.Assessments {
		assert.Nil(t, a.Verdict)
		if strings.HasPrefix(a.Error, "not assessed: the run ended without waiting for the judge") {
			abandoned++ // a judge that keeps failing is not waited for at the run's end
			continue
		}
		assert.Contains(t, a.Error, "401 Unauthorized")
	}
	assert.LessOrEqual(t, abandoned, 1, "only boundaries still in flight at the end are abandoned")
	calls := strings.Count(served.String(), "jev decision")
	assert.LessOrEqual(t, calls, len(s.Assessments), "a rejection is not retried")
	assert.GreaterOrEqual(t, calls, len(s.Assessments)-abandoned)
	assertNoKey(t, srv, run.GetID(), logs, served, key)
	assertNoKey(t, srv, run.GetID(), logs, served, wrong)
}

// assertNoKey checks that key appears in no event of the workflow's
// history, no worker log entry and no line the judge service printed.
func assertNoKey(t *testing.T, srv server, id string, logs *observer.ObservedLogs, served *clitest.SyncBuffer, key string) {
	t.Helper()
	events := historyJSON(t, srv, id)
	assert.Contains(t, strings.Join(events, "\n"), "Add CSV export", "the scan reads the decoded payloads (the objective is only in them)")
	for i, ev := range events {
		assert.NotContains(t, ev, key, "history event %d", i+1)
	}
	lines := logLines(logs)
	require.NotEmpty(t, lines)
	for _, l := range lines {
		assert.NotContains(t, l, key)
	}
	assert.NotContains(t, served.String(), key)
}
