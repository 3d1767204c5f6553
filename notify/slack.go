package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/corohq/temporal-overseer/overseer"
)

// Slack posts each gate event to a Slack incoming webhook, as a message
// that links to the job's page on the dashboard (GateEvent.DashboardURL,
// from the worker's overseer.Options.DashboardURL).
//
// The webhook URL is a secret (anyone who has it can post to the
// channel): keep it on the worker, e.g. in $OVERSEER_SLACK_WEBHOOK_URL.
// Errors never show it.
//
// Slack incoming webhooks cannot deduplicate: a retried attempt whose
// first try reached Slack but whose answer was lost posts twice. The
// notifier remembers, in memory, the events it delivered, so that a
// retry on the same worker is not posted again.
type Slack struct {
	// URL is the incoming webhook (https://hooks.slack.com/services/…).
	URL string
	// EscalationURL, if set, receives escalated (and expired) events
	// instead of URL: the second audience.
	EscalationURL string
	// Client sends the requests. If nil, a client with a 10 s timeout.
	Client *http.Client

	seen seen
}

// NewSlack returns a Slack notifier; escalationURL may be empty.
func NewSlack(url, escalationURL string) (*Slack, error) {
	if url == "" {
		return nil, errors.New("notify: Slack webhook URL is empty")
	}
	return &Slack{URL: url, EscalationURL: escalationURL}, nil
}

// String names the notifier without its URLs.
func (s *Slack) String() string { return "slack incoming webhook" }

// Notify posts ev's message. Slack answers 2xx when it took the message,
// 4xx when it never will (a revoked webhook: overseer.ErrNotifyRejected),
// 429 or 5xx when it may later.
func (s *Slack) Notify(ctx context.Context, ev overseer.GateEvent) error {
	if s.seen.has(ev.IdempotencyKey) {
		return nil
	}
	target := s.URL
	if s.EscalationURL != "" && (ev.Kind == overseer.GateEscalated || ev.Kind == overseer.GateExpired) {
		target = s.EscalationURL
	}
	body, err := json.Marshal(SlackMessage(ev))
	if err != nil {
		return fmt.Errorf("%w: encode the message: %v", overseer.ErrNotifyRejected, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: Slack webhook URL: %v", overseer.ErrNotifyRejected, stripURL(err))
	}
	req.Header.Set("Content-Type", "application/json")
	if err := send(client(s.Client), req, "Slack"); err != nil {
		return err
	}
	s.seen.add(ev.IdempotencyKey)
	return nil
}

// SlackPayload is an incoming-webhook message: a fallback text and blocks.
type SlackPayload struct {
	Text   string       `json:"text"`
	Blocks []SlackBlock `json:"blocks,omitempty"`
}

// SlackBlock is a section or context block of mrkdwn text.
type SlackBlock struct {
	Type     string      `json:"type"`
	Text     *SlackText  `json:"text,omitempty"`
	Elements []SlackText `json:"elements,omitempty"`
}

// SlackText is a mrkdwn text object.
type SlackText struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// SlackMessage is the message Slack shows for ev.
func SlackMessage(ev overseer.GateEvent) SlackPayload {
	job := "`" + esc(ev.WorkflowID) + "`"
	if ev.DashboardURL != "" {
		job = "<" + ev.DashboardURL + "|" + esc(ev.WorkflowID) + ">"
	}
	// While the gate is open the headline leads with why the job is
	// paused, in a few words (the first line of evidence).
	why := ev.Reason
	if len(ev.Evidence) > 0 {
		why = ev.Evidence[0]
	}
	why = esc(clip(why, 120))
	var head string
	budget := ev.GateKind == overseer.GateKindBudget
	switch {
	case ev.Kind == overseer.GateOpened && budget:
		head = fmt.Sprintf(":moneybag: Job %s reached its budget after %s *%s*: %s. It waits at gate *%s* for a raised budget or an abort.", job, ev.Step(), esc(ev.Phase), why, esc(ev.Gate))
	case ev.Kind == overseer.GateResumed && budget && ev.RaisedBudget != nil:
		head = fmt.Sprintf(":arrow_forward: Job %s was resumed at gate *%s* by %s with a raised budget (%s) after %s.", job, esc(ev.Gate), esc(ev.By), esc(ev.RaisedBudget.String()), wait(ev.Wait))
	}
	switch {
	case head != "":
	case ev.Kind == overseer.GateOpened:
		head = fmt.Sprintf(":double_vertical_bar: Job %s is paused after %s *%s*: %s. It waits for a person at gate *%s*.", job, ev.Step(), esc(ev.Phase), why, esc(ev.Gate))
	case ev.Kind == overseer.GateEscalated:
		head = fmt.Sprintf(":rotating_light: Escalated: job %s is still paused after %s *%s* (%s) and has waited %s at gate *%s* (%s); nobody has resumed it.", job, ev.Step(), esc(ev.Phase), why, wait(ev.Wait), esc(ev.Gate), esc(ev.Rule))
	case ev.Kind == overseer.GateResumed:
		head = fmt.Sprintf(":arrow_forward: Job %s was resumed at gate *%s* by %s after %s.", job, esc(ev.Gate), esc(ev.By), wait(ev.Wait))
	case ev.Kind == overseer.GateRedone:
		head = fmt.Sprintf(":repeat: Job %s: %s *%s* is being redone: %s rejected its result at gate *%s* after %s.", job, ev.Step(), esc(ev.Phase), esc(ev.By), esc(ev.Gate), wait(ev.Wait))
	case ev.Kind == overseer.GateAborted:
		head = fmt.Sprintf(":octagonal_sign: Job %s was aborted at gate *%s* by %s after %s.", job, esc(ev.Gate), esc(ev.By), wait(ev.Wait))
	case ev.Kind == overseer.GateExpired:
		head = fmt.Sprintf(":hourglass: Gate *%s* of job %s expired after %s (%s): the job was told to %s.", esc(ev.Gate), job, wait(ev.Wait), esc(ev.Rule), esc(string(ev.Action)))
	default:
		head = fmt.Sprintf("Gate *%s* of job %s: %s.", esc(ev.Gate), job, esc(string(ev.Kind)))
	}
	// What happened comes first, in plain words; the rule that fired after.
	lines := []string{head}
	for _, e := range ev.Evidence {
		lines = append(lines, "• "+esc(clip(e, 500)))
	}
	if ev.Reason != "" {
		lines = append(lines, "*Reason:* "+esc(clip(ev.Reason, 1500)))
	}
	if ev.Note != "" {
		lines = append(lines, "*Note:* "+esc(clip(ev.Note, 1500)))
	}
	if ev.Judgement != "" {
		lines = append(lines, "*Judged:* "+esc(ev.Judgement))
	}
	if ev.Deadline != nil && (ev.Kind == overseer.GateOpened || ev.Kind == overseer.GateEscalated) {
		lines = append(lines, "*Deadline:* "+ev.Deadline.UTC().Format("2006-01-02 15:04 UTC"))
	}
	if ev.DashboardURL != "" && (ev.Kind == overseer.GateOpened || ev.Kind == overseer.GateEscalated) {
		lines = append(lines, "<"+ev.DashboardURL+"|Review and resume on the dashboard>")
	}
	ctx := fmt.Sprintf("%s · %s · run %s", esc(ev.WorkflowType), esc(ev.Namespace), esc(ev.RunID))
	// The fallback text is what a phone's notification shows: the
	// headline, which already says why.
	text := plain(head)
	return SlackPayload{
		Text: text,
		Blocks: []SlackBlock{
			{Type: "section", Text: &SlackText{Type: "mrkdwn", Text: strings.Join(lines, "\n")}},
			{Type: "context", Elements: []SlackText{{Type: "mrkdwn", Text: ctx}}},
		},
	}
}

// esc escapes the three characters Slack's mrkdwn reserves.
func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// plain is a notification's fallback text: the headline without links.
func plain(s string) string {
	for {
		i := strings.Index(s, "<")
		j := strings.Index(s, "|")
		k := strings.Index(s, ">")
		if i < 0 || j < i || k < j {
			return s
		}
		s = s[:i] + s[j+1:k] + s[k+1:]
	}
}

func wait(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%.0f days", d.Hours()/24)
	case d >= time.Hour:
		return fmt.Sprintf("%.0fh", d.Hours())
	case d >= time.Minute:
		return fmt.Sprintf("%.0f min", d.Minutes())
	}
	return d.Round(time.Second).String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
