// Package notify sends the overseer's gate notifications where reviewers
// are: a signed JSON webhook ([Webhook], checked on the receiving side with
// [Verify] or [ReadEvent]) and a Slack incoming webhook ([Slack]) whose
// message links to the job's page on the dashboard. Each implements
// overseer.Notifier: give it to the plugin in overseer.Options.Notifier.
//
//	hook, err := notify.NewWebhook(os.Getenv(notify.EnvWebhookURL), []byte(os.Getenv(notify.EnvWebhookSecret)))
//	…
//	plugin, err := overseer.NewPlugin(overseer.Options{
//		Mode:         overseer.ModeManage,
//		GateDeadline: overseer.GateDeadline{After: 24 * time.Hour, Action: overseer.DeadlineEscalate, FinalAfter: 72 * time.Hour, FinalAction: overseer.DeadlineAbort},
//		Notifier:     hook,
//		DashboardURL: "https://overseer.example.com",
//	})
//
// [FromEnv] builds the notifier the environment describes
// (OVERSEER_WEBHOOK_URL and OVERSEER_WEBHOOK_SECRET,
// OVERSEER_SLACK_WEBHOOK_URL, OVERSEER_SLACK_ESCALATION_URL).
//
// Secrets (the webhook secret, the Slack URLs) stay on the worker: the
// overseer's notify activity receives the GateEvent only, and the errors
// of this package never print a URL's path or a secret.
//
// Delivery is at least once; every event carries an idempotency key
// (X-Overseer-Idempotency-Key on the webhook), the same on every retry
// and on any worker, for the receiver to drop duplicates. The package
// imports only the standard library and the overseer.
package notify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/corohq/temporal-overseer/overseer"
)

// Environment variables FromEnv reads. They hold secrets: set them in the
// worker's environment, never on a command line.
const (
	EnvWebhookURL         = "OVERSEER_WEBHOOK_URL"
	EnvWebhookSecret      = "OVERSEER_WEBHOOK_SECRET"
	EnvSlackWebhookURL    = "OVERSEER_SLACK_WEBHOOK_URL"
	EnvSlackEscalationURL = "OVERSEER_SLACK_ESCALATION_URL"
)

// FromEnv returns the notifier the environment configures: a webhook, a
// Slack webhook, both (Multi), or nil when none is set. A webhook URL
// without its secret is refused.
func FromEnv(getenv func(string) string) (overseer.Notifier, error) {
	var ns []overseer.Notifier
	if u := strings.TrimSpace(getenv(EnvWebhookURL)); u != "" {
		w, err := NewWebhook(u, []byte(getenv(EnvWebhookSecret)))
		if err != nil {
			return nil, fmt.Errorf("%w (set %s)", err, EnvWebhookSecret)
		}
		ns = append(ns, w)
	} else if getenv(EnvWebhookSecret) != "" {
		return nil, fmt.Errorf("notify: %s is set but %s is not", EnvWebhookSecret, EnvWebhookURL)
	}
	if u := strings.TrimSpace(getenv(EnvSlackWebhookURL)); u != "" {
		s, err := NewSlack(u, strings.TrimSpace(getenv(EnvSlackEscalationURL)))
		if err != nil {
			return nil, err
		}
		ns = append(ns, s)
	} else if getenv(EnvSlackEscalationURL) != "" {
		return nil, fmt.Errorf("notify: %s is set but %s is not", EnvSlackEscalationURL, EnvSlackWebhookURL)
	}
	switch len(ns) {
	case 0:
		return nil, nil
	case 1:
		return ns[0], nil
	}
	return Multi(ns...), nil
}

// Multi sends each event to every notifier. When some fail, the event is
// retried, but only to those that have not taken it yet (on this worker:
// the record is in memory; receivers deduplicate by idempotency key in any
// case). It fails only if one of them fails, and is a refusal only if
// every failure is.
func Multi(ns ...overseer.Notifier) overseer.Notifier {
	return &multi{ns: ns, done: make([]seen, len(ns))}
}

type multi struct {
	ns   []overseer.Notifier
	done []seen
}

func (m *multi) String() string {
	var names []string
	for _, n := range m.ns {
		names = append(names, fmt.Sprint(n))
	}
	return strings.Join(names, " + ")
}

func (m *multi) Notify(ctx context.Context, ev overseer.GateEvent) error {
	var errs []error
	rejected := true
	for i, n := range m.ns {
		if m.done[i].has(ev.IdempotencyKey) {
			continue
		}
		if err := n.Notify(ctx, ev); err != nil {
			errs = append(errs, err)
			rejected = rejected && errors.Is(err, overseer.ErrNotifyRejected)
			continue
		}
		m.done[i].add(ev.IdempotencyKey)
	}
	if len(errs) == 0 {
		return nil
	}
	err := errors.Join(errs...)
	if rejected {
		return err // already wraps ErrNotifyRejected
	}
	// One may succeed on a retry: do not let another's refusal stop it.
	return fmt.Errorf("notify: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
}

// seen remembers recently delivered idempotency keys (for a day, at most
// 10 000), so that a retry does not deliver to a target twice.
type seen struct {
	mu   sync.Mutex
	keys map[string]time.Time
}

const (
	seenFor = 24 * time.Hour
	seenMax = 10000
)

func (s *seen) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.keys[key]
	return ok && time.Since(at) < seenFor
}

func (s *seen) add(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keys == nil {
		s.keys = map[string]time.Time{}
	}
	if len(s.keys) >= seenMax {
		for k, at := range s.keys {
			if time.Since(at) >= seenFor || len(s.keys) >= seenMax {
				delete(s.keys, k)
			}
		}
	}
	s.keys[key] = time.Now()
}
