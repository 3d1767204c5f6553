package notify_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/notify"
	"github.com/corohq/temporal-overseer/overseer"
)

// A redo is told as such: Slack says the phase is being redone, by whom,
// with the note; the webhook's event header and JSON say "redone".
func TestARedoIsToldAsRedone(t *testing.T) {
	ev := event(overseer.GateRedone)
	ev.By, ev.Note, ev.Action, ev.Wait = "alice", "write the tests first", overseer.ActionRedo, time.Hour
	msg := notify.SlackMessage(ev)
	assert.Contains(t, msg.Text, "phase *code* is being redone: alice rejected its result at gate *code-1* after 1h")
	assert.Contains(t, msg.Blocks[0].Text.Text, "*Note:* write the tests first")

	got := make(chan *http.Request, 1)
	body := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		body <- b
	}))
	defer srv.Close()
	hook, err := notify.NewWebhook(srv.URL, secret)
	require.NoError(t, err)
	require.NoError(t, hook.Notify(context.Background(), ev))
	r := <-got
	assert.Equal(t, "redone", r.Header.Get(notify.EventHeader))
	assert.Contains(t, string(<-body), `"kind":"redone"`)
}
