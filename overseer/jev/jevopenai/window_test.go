package jevopenai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev/jevopenai"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
	"github.com/corohq/temporal-overseer/testsuite/judgetest"
)

// A request whose trajectory carries a content window is sent as the
// state without it, then a message of its own that shows the calls, oldest
// first, with their input, output and error, and the objective; the
// golden file holds the whole request.
func TestAContentWindowIsShownAsTheLatestCalls(t *testing.T) {
	traj := overseer.Trajectory{Objective: "Add CSV export", Phase: "bash", Shape: overseer.ShapeAgentLoop, PhaseRuns: 7,
		Content: []trajectory.CallContent{
			{Run: 6, Call: "model", Input: `{"turn":3}`, Output: `{"command":"pytest -x tests/test_export.py"}`},
			{Run: 7, Call: "bash", Input: `{"command":"pytest -x tests/test_export.py"}`, Error: "exit status 1: TestExport: want 3 rows, got 0", Cut: true},
		}}
	req, err := overseer.NewRequest("CoroAgentLoop", overseer.DefaultObligations(), traj)
	require.NoError(t, err)
	model := &judgetest.ScriptedModel{}
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	_, err = newJudge(t, jevopenai.Options{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "gpt-test"}).Decide(context.Background(), req)
	require.NoError(t, err)
	sent := model.Requests()
	require.Len(t, sent, 1)
	msgs := sent[0].Messages
	require.Len(t, msgs, 3, "system, the state, the calls")
	assert.NotContains(t, msgs[1].Content, `"content"`, "the window is not sent twice")
	assert.Contains(t, msgs[1].Content, `"phase_runs":7`, "the counters stay in the state")
	calls := msgs[2].Content
	assert.True(t, strings.HasPrefix(calls, jevopenai.WindowPreamble))
	first, second := strings.Index(calls, "## Call 6: model"), strings.Index(calls, "## Call 7: bash")
	require.Positive(t, first)
	assert.Greater(t, second, first, "oldest first")
	assert.Contains(t, calls, "<error>\nexit status 1: TestExport: want 3 rows, got 0\n</error>")
	assert.Contains(t, calls, "(cut to fit the budget)")
	assert.Contains(t, calls, "The objective these calls serve: Add CSV export")

	body, err := json.Marshal(sent[0])
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, json.Indent(&buf, body, "", "  "))
	buf.WriteByte('\n')
	path := filepath.Join("testdata", "chat_request_window.golden.json")
	if *update {
		require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create it")
	assert.Equal(t, string(want), buf.String(), "run go test -update if the change is intended")
}

// Without a window the request is sent as it always was: two messages.
func TestNoWindowNoCallsMessage(t *testing.T) {
	model := &judgetest.ScriptedModel{}
	srv := httptest.NewServer(model)
	t.Cleanup(srv.Close)
	_, err := newJudge(t, jevopenai.Options{BaseURL: srv.URL + "/v1", APIKey: "k"}).Decide(context.Background(), judgetest.BoundaryRequest())
	require.NoError(t, err)
	require.Len(t, model.Requests(), 1)
	assert.Len(t, model.Requests()[0].Messages, 2)
}
