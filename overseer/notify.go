package overseer

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// Notifier tells people about a gate: that it opened, was escalated,
// resumed, aborted or expired. It lives on the worker, with its
// credentials (a webhook secret, a Slack URL), which never enter workflow
// history or activity inputs: the overseer's notify activity
// ([NotifyActivityName]) receives the [GateEvent] only.
//
// Delivery is at least once: an attempt that fails is retried with backoff
// by the activity's retry policy, and a worker that dies mid-attempt leaves
// the attempt to be retried elsewhere. Receivers deduplicate with
// GateEvent.IdempotencyKey. Return an error wrapping [ErrNotifyRejected]
// when retrying cannot help (a 4xx answer): the notification then fails at
// once.
//
// Package github.com/corohq/temporal-overseer/notify has a signed JSON
// webhook and a Slack incoming webhook.
type Notifier interface {
	Notify(ctx context.Context, ev GateEvent) error
}

// NotifierFunc adapts a function to the Notifier interface.
type NotifierFunc func(ctx context.Context, ev GateEvent) error

// Notify calls f.
func (f NotifierFunc) Notify(ctx context.Context, ev GateEvent) error { return f(ctx, ev) }

// ErrNotifyRejected marks a notification the receiver refused for good:
// wrap it (fmt.Errorf("%w: HTTP 400", overseer.ErrNotifyRejected)) and the
// notify activity fails without retrying.
var ErrNotifyRejected = errors.New("notification rejected")

// NotifyRejectedErrorType is the application error type of a notification
// that failed with [ErrNotifyRejected].
const NotifyRejectedErrorType = "OverseerNotifyRejected"

// NotifyActivityName is the overseer activity that sends one notification.
const NotifyActivityName = "overseer.notify"

// GateEventKind is what happened to a gate.
type GateEventKind string

// The gate events.
const (
	// GateOpened: the job paused at a gate and waits for a person.
	GateOpened GateEventKind = "opened"
	// GateEscalated: nobody resumed the gate by its first deadline, whose
	// action is escalate; the gate stays open. Send it to a second
	// audience.
	GateEscalated GateEventKind = "escalated"
	// GateResumed: a person resumed the gate (action continue).
	GateResumed GateEventKind = "resumed"
	// GateAborted: a person aborted the job at the gate.
	GateAborted GateEventKind = "aborted"
	// GateExpired: nobody resumed the gate by its deadline, whose action
	// (continue or abort, in Action) was taken.
	GateExpired GateEventKind = "expired"
)

// GateEvent is one notification about a gate: the notify activity's whole
// input. It holds no secret.
type GateEvent struct {
	// Kind is what happened.
	Kind GateEventKind `json:"kind"`
	// IdempotencyKey is the same for every attempt to deliver this event,
	// on any worker, and differs between events:
	// WORKFLOW_ID/RUN_ID/GATE_ID/KIND. Receivers drop a key they have seen.
	IdempotencyKey string `json:"idempotency_key"`
	// At is when it happened (workflow time).
	At time.Time `json:"at"`

	// The job: its workflow id, run id, type, namespace and task queue.
	WorkflowID   string `json:"workflow_id"`
	RunID        string `json:"run_id"`
	WorkflowType string `json:"workflow_type"`
	Namespace    string `json:"namespace,omitempty"`
	TaskQueue    string `json:"task_queue,omitempty"`

	// The gate: its id, the phase after which it opened, why, and when.
	Gate     string    `json:"gate"`
	Phase    string    `json:"phase"`
	Reason   string    `json:"reason"`
	OpenedAt time.Time `json:"opened_at"`
	// Wait is how long the gate has been open at At.
	Wait time.Duration `json:"wait_ns"`
	// Deadline is when the gate's next deadline acts, if it has one.
	Deadline *time.Time `json:"deadline,omitempty"`
	// Rule is the deadline rule that acted (escalated, expired), e.g.
	// "deadline 24h: abort".
	Rule string `json:"rule,omitempty"`
	// Action is the gate's outcome (resumed, aborted, expired): continue
	// or abort.
	Action Action `json:"action,omitempty"`
	// By and Note are the person's who resumed or aborted, as the resume
	// request gave them.
	By   string `json:"by,omitempty"`
	Note string `json:"note,omitempty"`
	// DashboardURL is the job's page on the dashboard, when the worker
	// knows the dashboard ([Options.DashboardURL]); filled in by the worker
	// when it sends the notification, not recorded in history.
	DashboardURL string `json:"dashboard_url,omitempty"`
}

// DashboardJobURL is the page of a job, with its gate and resume form, on
// the overseer dashboard at base: BASE/job?id=WORKFLOW_ID.
func DashboardJobURL(base, workflowID string) string {
	if base == "" {
		return ""
	}
	return strings.TrimRight(base, "/") + "/job?id=" + url.QueryEscape(workflowID)
}

// The notify activity's budget: one attempt, all attempts, the retry
// backoff, and how long the end of a run waits for notifications in flight.
const (
	notifyAttemptTimeout = 30 * time.Second
	// DefaultNotifyTimeout bounds all attempts of one notification.
	DefaultNotifyTimeout = 10 * time.Minute
	notifyBackoff        = time.Second
	notifyMaxBackoff     = time.Minute
	notifyEndWait        = time.Minute
)

// notifier is the worker side of the notify activity.
type notifier struct {
	n         Notifier
	dashboard string
}

// Notify is the notify activity: it sends one event through the worker's
// Notifier.
func (a *notifier) Notify(ctx context.Context, ev GateEvent) error {
	if a.n == nil {
		return temporal.NewNonRetryableApplicationError(
			"overseer.notify: this worker has no notifier (Options.Notifier), but the run was started on a worker that had one",
			"OverseerNoNotifier", nil)
	}
	ev.DashboardURL = DashboardJobURL(a.dashboard, ev.WorkflowID)
	err := a.n.Notify(ctx, ev)
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrNotifyRejected) {
		return temporal.NewNonRetryableApplicationError(err.Error(), NotifyRejectedErrorType, nil)
	}
	activity.GetLogger(ctx).Warn("overseer: notification failed; it will be retried", "kind", string(ev.Kind), "gate", ev.Gate, "error", err.Error())
	return err
}

func registerNotify(r interface {
	RegisterActivityWithOptions(any, activity.RegisterOptions)
}, opts Options) {
	a := &notifier{n: opts.Notifier, dashboard: opts.DashboardURL}
	r.RegisterActivityWithOptions(a.Notify, activity.RegisterOptions{Name: NotifyActivityName})
}

// event builds the notification of kind about gate g.
func (r *run) event(ctx workflow.Context, kind GateEventKind, g Gate) GateEvent {
	info := workflow.GetInfo(ctx)
	now := workflow.Now(ctx)
	ev := GateEvent{
		Kind:           kind,
		IdempotencyKey: strings.Join([]string{info.WorkflowExecution.ID, info.WorkflowExecution.RunID, g.ID, string(kind)}, "/"),
		At:             now,
		WorkflowID:     info.WorkflowExecution.ID,
		RunID:          info.WorkflowExecution.RunID,
		WorkflowType:   r.wfType,
		Namespace:      info.Namespace,
		TaskQueue:      info.TaskQueueName,
		Gate:           g.ID,
		Phase:          g.Phase,
		Reason:         g.Reason,
		OpenedAt:       g.PausedAt,
		Wait:           now.Sub(g.PausedAt),
		Deadline:       g.Deadline,
		Action:         g.Action,
		By:             g.By,
		Note:           g.Note,
	}
	switch kind {
	case GateEscalated:
		ev.Rule = g.EscalatedBy
	case GateExpired:
		ev.Rule = g.ExpiredBy
	}
	return ev
}

// notify sends a notification about g, if the run was started with a
// notifier, without waiting for it: it never holds the gate or the job. A
// notification that fails for good (after its retries) is counted in the
// status and in overseer_notifications_failed.
func (r *run) notify(ctx workflow.Context, kind GateEventKind, g Gate) {
	if !r.cfg.Notify {
		return
	}
	ev := r.event(ctx, kind, g)
	// Disconnected: a run cancelled at the gate still sends what it owes.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	dctx = workflow.WithActivityOptions(dctx, workflow.ActivityOptions{
		StartToCloseTimeout:    notifyAttemptTimeout,
		ScheduleToCloseTimeout: r.cfg.notifyTimeout(),
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        notifyBackoff,
			BackoffCoefficient:     2,
			MaximumInterval:        notifyMaxBackoff,
			NonRetryableErrorTypes: []string{NotifyRejectedErrorType},
		},
	})
	f := workflow.ExecuteActivity(dctx, NotifyActivityName, ev)
	r.st.Notifying = append(r.st.Notifying, ev.IdempotencyKey)
	workflow.Go(dctx, func(ctx workflow.Context) {
		err := f.Get(ctx, nil)
		i := slices.Index(r.st.Notifying, ev.IdempotencyKey)
		if i < 0 {
			return // recorded as not delivered when the run ended
		}
		r.st.Notifying = slices.Delete(r.st.Notifying, i, i+1)
		if err != nil {
			r.notifyFailed(ctx, ev.IdempotencyKey, describeError(err))
			return
		}
		r.st.Counters.Notifications++
	})
}

// notifyFailed records a notification that failed for good; key is its
// idempotency key (.../GATE_ID/KIND).
func (r *run) notifyFailed(ctx workflow.Context, key, msg string) {
	parts := strings.Split(key, "/")
	gate, kind := parts[len(parts)-2], GateEventKind(parts[len(parts)-1])
	r.st.Counters.NotifyFailures++
	r.st.NotifyError = fmt.Sprintf("the %s notification of gate %s failed: %s", kind, gate, clip(msg, 300))
	metricNotifyFailure(ctx, kind)
	r.logger.Warn("overseer: notification failed for good", "kind", string(kind), "gate", gate, "error", clip(msg, 300))
}

// awaitNotifications runs when the run ends: it gives the notifications
// still being sent (or retried) up to a minute to finish, so that an abort
// or an expiry that ends the job is still told. Those still in flight
// after that are recorded as failed, never dropped silently. It does
// nothing (and records nothing in history) when no notification is in
// flight.
func (r *run) awaitNotifications(ctx workflow.Context) {
	if len(r.st.Notifying) == 0 {
		return
	}
	if ok, _ := workflow.AwaitWithTimeout(ctx, notifyEndWait, func() bool { return len(r.st.Notifying) == 0 }); ok {
		return
	}
	msg := fmt.Sprintf("not delivered: the run ended after waiting %s for it", shortDuration(notifyEndWait))
	for _, key := range r.st.Notifying {
		r.notifyFailed(ctx, key, msg)
	}
	r.st.Notifying = nil
}

// notifyTimeout bounds all attempts of one notification.
func (c runConfig) notifyTimeout() time.Duration {
	if c.NotifyTimeout > 0 {
		return c.NotifyTimeout
	}
	return DefaultNotifyTimeout
}
