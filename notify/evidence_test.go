package notify_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/notify"
	"github.com/corohq/temporal-overseer/overseer"
)

var evidence = []string{"test ran 4 times in the last 8 phase runs, each time with failed tool calls in the category pytest",
	"test succeeded although 1 of its tool calls failed (category pytest)"}

// The webhook's JSON carries the gate's evidence as a field of its own,
// ahead of the rule, and the Slack message says it right after its
// headline, before the reason.
func TestNotificationsSayTheEvidenceFirst(t *testing.T) {
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
	}))
	defer srv.Close()
	hook, err := notify.NewWebhook(srv.URL, secret)
	require.NoError(t, err)
	ev := event(overseer.GateOpened)
	ev.Evidence = evidence
	require.NoError(t, hook.Notify(context.Background(), ev))
	var got struct {
		Evidence []string `json:"evidence"`
		Reason   string   `json:"reason"`
	}
	require.NoError(t, json.Unmarshal(body, &got))
	assert.Equal(t, evidence, got.Evidence)
	assert.Equal(t, ev.Reason, got.Reason, "the rule stays in the JSON")
	assert.Less(t, strings.Index(string(body), `"evidence"`), strings.Index(string(body), `"reason"`))

	msg := notify.SlackMessage(ev)
	lines := strings.Split(msg.Blocks[0].Text.Text, "\n")
	require.GreaterOrEqual(t, len(lines), 4)
	assert.Contains(t, lines[0], "is paused after phase *code*: "+evidence[0]+". It waits for a person at gate *code-1*.", "the headline leads with why")
	assert.Equal(t, "• "+evidence[0], lines[1])
	assert.Equal(t, "• "+evidence[1], lines[2])
	assert.Equal(t, "*Reason:* "+ev.Reason, lines[3])
	assert.Equal(t, ":double_vertical_bar: Job `job-1` is paused after phase *code*: "+evidence[0]+". It waits for a person at gate *code-1*.", msg.Text,
		"the fallback text a phone shows says why first")

	loop := ev
	loop.Phase, loop.Gate, loop.Shape = "run_tests", "run_tests-1", overseer.ShapeAgentLoop
	assert.Contains(t, notify.SlackMessage(loop).Text, "is paused after call *run_tests*: ", "an agent loop's gate opens after a call")

	ev.Evidence = []string{"code failed; the last error: x < y & z"}
	msg = notify.SlackMessage(ev)
	assert.Contains(t, msg.Blocks[0].Text.Text, "• code failed; the last error: x &lt; y &amp; z", "mrkdwn is escaped")
	assert.NotContains(t, msg.Text, "<")
}
