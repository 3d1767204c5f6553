package overseer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer/trajectory"
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
	// GateRedone: a person resumed the gate with action redo: its phase
	// runs again, with their note as its process note.
	GateRedone GateEventKind = "redone"
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
	// WORKFLOW_ID/RUN_ID/GATE_ID/OPENED_AT/KIND, where RUN_ID is the run a
	// reset started from and OPENED_AT the gate's opening (Unix
	// milliseconds, workflow time). Receivers drop a key they have seen.
	IdempotencyKey string `json:"idempotency_key"`
	// At is when it happened (workflow time).
	At time.Time `json:"at"`

	// The job: its workflow id, run id, type, namespace and task queue.
	WorkflowID   string `json:"workflow_id"`
	RunID        string `json:"run_id"`
	WorkflowType string `json:"workflow_type"`
	Namespace    string `json:"namespace,omitempty"`
	TaskQueue    string `json:"task_queue,omitempty"`

	// The gate: its id, the phase after which it opened, what happened
	// (Evidence, in plain words, most telling first; Gate.Evidence), the
	// rule that fired (Reason), and when.
	Gate  string `json:"gate"`
	Phase string `json:"phase"`
	// Shape is ShapeAgentLoop when the job is an agent loop (Phase is then
	// the call the gate opened after); empty on a job of phases.
	Shape trajectory.Shape `json:"shape,omitempty"`
	// GateKind is what opened the gate (Gate.Kind): GateKindBudget for
	// the job's budget, empty for a verdict. RaisedBudget is the budget a
	// reviewer continued a budget gate with.
	GateKind     string    `json:"gate_kind,omitempty"`
	RaisedBudget *Budget   `json:"raised_budget,omitempty"`
	Evidence     []string  `json:"evidence,omitempty"`
	Reason       string    `json:"reason"`
	OpenedAt     time.Time `json:"opened_at"`
	// Wait is how long the gate has been open at At.
	Wait time.Duration `json:"wait_ns"`
	// Deadline is when the gate's next deadline acts, if it has one.
	Deadline *time.Time `json:"deadline,omitempty"`
	// Rule is the deadline rule that acted (escalated, expired), e.g.
	// "deadline 24h: abort".
	Rule string `json:"rule,omitempty"`
	// Action is the gate's outcome (resumed, redone, aborted, expired):
	// continue, redo or abort.
	Action Action `json:"action,omitempty"`
	// By and Note are the person's who resumed or aborted, as the resume
	// request gave them.
	By   string `json:"by,omitempty"`
	Note string `json:"note,omitempty"`
	// Needed is the closed gate's judgement of its pause (Gate.Needed) and
	// Judgement says it in words with the rule that gave it
	// (Gate.Judgement); unset while the gate is open.
	Needed    *bool  `json:"needed,omitempty"`
	Judgement string `json:"judgement,omitempty"`
	// DashboardURL is the job's page on the dashboard, when the worker
	// knows the dashboard ([Options.DashboardURL]); filled in by the worker
	// when it sends the notification, not recorded in history.
	DashboardURL string `json:"dashboard_url,omitempty"`
	// Headline says what happened in one sentence, leading with why the
	// job is paused (GateEvent.Sentence); filled in when it is sent.
	Headline string `json:"headline,omitempty"`
}

// Step is what the gate opened after, in words: "call" on an agent loop,
// "phase" on a job of phases.
func (ev GateEvent) Step() string { return stepNoun(ev.Shape) }

// Sentence says what happened at the gate in one sentence; while the gate
// is open (opened, escalated) it leads with why the job is paused, from
// the evidence.
func (ev GateEvent) Sentence() string {
	why := ev.Reason
	if len(ev.Evidence) > 0 {
		why = ev.Evidence[0]
	}
	why = trajectory.Clip(why, maxPauseWhy)
	budget := ev.GateKind == GateKindBudget
	switch {
	case ev.Kind == GateOpened && budget:
		return fmt.Sprintf("Job %s reached its budget after %s %s: %s; it waits at gate %s for a raised budget or an abort.", ev.WorkflowID, ev.Step(), ev.Phase, why, ev.Gate)
	case ev.Kind == GateResumed && budget && ev.RaisedBudget != nil:
		return fmt.Sprintf("Job %s was resumed at gate %s by %s with a raised budget (%s) after %s.", ev.WorkflowID, ev.Gate, ev.By, *ev.RaisedBudget, ev.Wait.Round(time.Second))
	}
	switch ev.Kind {
	case GateOpened:
		return fmt.Sprintf("Job %s is paused after %s %s: %s; it waits for a person at gate %s.", ev.WorkflowID, ev.Step(), ev.Phase, why, ev.Gate)
	case GateEscalated:
		return fmt.Sprintf("Escalated: job %s is still paused after %s %s (%s) and has waited %s at gate %s (%s).", ev.WorkflowID, ev.Step(), ev.Phase, why, ev.Wait.Round(time.Second), ev.Gate, ev.Rule)
	case GateResumed:
		return fmt.Sprintf("Job %s was resumed at gate %s by %s after %s.", ev.WorkflowID, ev.Gate, ev.By, ev.Wait.Round(time.Second))
	case GateRedone:
		return fmt.Sprintf("Job %s: %s %s is being redone: %s rejected its result at gate %s.", ev.WorkflowID, ev.Step(), ev.Phase, ev.By, ev.Gate)
	case GateAborted:
		return fmt.Sprintf("Job %s was aborted at gate %s by %s after %s.", ev.WorkflowID, ev.Gate, ev.By, ev.Wait.Round(time.Second))
	case GateExpired:
		return fmt.Sprintf("Gate %s of job %s expired after %s (%s): the job was told to %s.", ev.Gate, ev.WorkflowID, ev.Wait.Round(time.Second), ev.Rule, ev.Action)
	}
	return fmt.Sprintf("Gate %s of job %s: %s.", ev.Gate, ev.WorkflowID, ev.Kind)
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
// backoff, and how long the end of a run from before notifyChangeID waits
// for notifications in flight.
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
	ev.Headline = ev.Sentence()
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
		IdempotencyKey: idempotencyKey(info, g, kind, r.notifyKeyVersion(ctx)),
		At:             now,
		WorkflowID:     info.WorkflowExecution.ID,
		RunID:          info.WorkflowExecution.RunID,
		WorkflowType:   r.wfType,
		Namespace:      info.Namespace,
		TaskQueue:      info.TaskQueueName,
		Gate:           g.ID,
		Phase:          g.Phase,
		Shape:          loopShape(ShapeOf(r.traj)),
		GateKind:       g.Kind,
		RaisedBudget:   g.RaisedBudget,
		Evidence:       g.Evidence,
		Reason:         g.Reason,
		OpenedAt:       g.PausedAt,
		Wait:           now.Sub(g.PausedAt),
		Deadline:       g.Deadline,
		Action:         g.Action,
		By:             g.By,
		Note:           g.Note,
		Needed:         g.Needed,
		Judgement:      g.Judgement(),
	}
	switch kind {
	case GateEscalated:
		ev.Rule = g.EscalatedBy
	case GateExpired:
		ev.Rule = g.ExpiredBy
	}
	return ev
}

// notifyChangeID versions how a run delivers its notifications: runs that
// recorded it (version 1) try each attempt on their own, record a failed
// one at once, retry while they run, and hand what is left at their end to
// the notifier workflow (handOff) instead of waiting for it. Older
// histories replay with the activity's own retries and the end's wait
// (awaitNotifications). It is recorded at a run's first notification.
const notifyChangeID = "temporal-overseer/notify-handoff"

// notice is a notification a run of notifyChangeID's version 1 delivers.
type notice struct {
	ev GateEvent
	// failed is set once an attempt has failed (and was counted).
	failed bool
	// cancel cancels the attempt in flight; handedOff is set when the
	// run's end handed the notice to the notifier workflow.
	cancel    workflow.CancelFunc
	handedOff bool
}

// detachedNotify says the run delivers its notifications as
// notifyChangeID's version 1 does.
func (r *run) detachedNotify(ctx workflow.Context) bool {
	if r.notifyVersion == nil {
		v := workflow.GetVersion(ctx, notifyChangeID, workflow.DefaultVersion, 1)
		r.notifyVersion = &v
	}
	return *r.notifyVersion != workflow.DefaultVersion
}

// notify sends a notification about g, if the run was started with a
// notifier, without waiting for it: it never holds the gate or the job.
func (r *run) notify(ctx workflow.Context, kind GateEventKind, g Gate) {
	if !r.cfg.Notify {
		return
	}
	ev := r.event(ctx, kind, g)
	r.st.Notifying = append(r.st.Notifying, ev.IdempotencyKey)
	if !r.detachedNotify(ctx) {
		r.notifyWithRetries(ctx, ev)
		return
	}
	n := &notice{ev: ev}
	r.notices = append(r.notices, n)
	if r.aborted != nil {
		// The abort ends the run in this workflow task: the notifier
		// workflow sends it (handOff), so that it is sent once.
		return
	}
	// Disconnected: a run cancelled at the gate still sends what it owes.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	workflow.Go(dctx, func(ctx workflow.Context) { r.deliver(ctx, n) })
}

// deliver sends n one attempt at a time, for as long as the run lives and
// its budget (notifyTimeout from the event) lasts: an attempt that fails
// is recorded at once, then retried after a backoff (1 s doubling up to a
// minute); a refusal (ErrNotifyRejected) is not retried.
func (r *run) deliver(ctx workflow.Context, n *notice) {
	backoff := notifyBackoff
	until := n.ev.At.Add(r.cfg.notifyTimeout())
	for {
		actx, cancel := workflow.WithCancel(ctx)
		n.cancel = cancel
		actx = workflow.WithActivityOptions(actx, workflow.ActivityOptions{
			TaskQueue:           ownTaskQueue(ctx),
			StartToCloseTimeout: notifyAttemptTimeout,
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
		})
		err := workflow.ExecuteActivity(actx, NotifyActivityName, n.ev).Get(actx, nil)
		cancel()
		if n.handedOff {
			return
		}
		if err == nil {
			r.delivered(n)
			return
		}
		msg := trajectory.DescribeError(err)
		retry := ErrorType(err) != NotifyRejectedErrorType && workflow.Now(ctx).Add(backoff).Before(until)
		r.attemptFailed(ctx, n, msg, retry)
		if !retry {
			r.dropNotice(n)
			return
		}
		if workflow.Sleep(ctx, backoff) != nil || n.handedOff {
			return
		}
		backoff = min(2*backoff, notifyMaxBackoff)
	}
}

// delivered records n as delivered: a notice that had failed is no longer
// counted as not delivered.
func (r *run) delivered(n *notice) {
	r.st.Counters.Notifications++
	if n.failed {
		r.st.Counters.NotifyFailures--
	}
	r.dropNotice(n)
}

// attemptFailed records a failed attempt of n; its first failure is
// counted in the status and the metric at once.
func (r *run) attemptFailed(ctx workflow.Context, n *notice, msg string, retry bool) {
	what := "not retried"
	if retry {
		what = "retried while the job runs, then by its notifier workflow"
	}
	r.st.NotifyError = fmt.Sprintf("the %s notification of gate %s failed (%s): %s", n.ev.Kind, n.ev.Gate, what, trajectory.Clip(msg, 300))
	if !n.failed {
		n.failed = true
		r.st.Counters.NotifyFailures++
		metricNotifyFailure(ctx, n.ev.Kind)
	}
	r.logger.Warn("overseer: notification failed", "kind", string(n.ev.Kind), "gate", n.ev.Gate, "retried", retry, "error", trajectory.Clip(msg, 300))
}

func (r *run) dropNotice(n *notice) {
	r.notices = slices.DeleteFunc(r.notices, func(o *notice) bool { return o == n })
	if i := slices.Index(r.st.Notifying, n.ev.IdempotencyKey); i >= 0 {
		r.st.Notifying = slices.Delete(r.st.Notifying, i, i+1)
	}
}

// NotifyWorkflowName is the overseer's notifier workflow: a run that ends
// with notifications not yet delivered (the abort that ends it, or one
// still failing) starts it as an abandoned child, waits only for it to
// start, and ends; it goes on retrying them, for what is left of their
// budget ([Options.NotifyTimeout] from each event). The plugin registers
// it; a worker that wires the bare interceptor registers it with
// [RegisterNotifyWorkflow].
const NotifyWorkflowName = "overseer.Notify"

// NotifyWorkflowInput is the notifier workflow's input.
type NotifyWorkflowInput struct {
	Events []GateEvent `json:"events"`
	// Timeout bounds all attempts of each event, counted from its At.
	Timeout time.Duration `json:"timeout"`
}

// NotifyWorkflowResult is what the notifier workflow delivered (idempotency
// keys) and what it could not (key: error).
type NotifyWorkflowResult struct {
	Delivered []string          `json:"delivered,omitempty"`
	Failed    map[string]string `json:"failed,omitempty"`
}

// notifyWorkflow delivers in.Events, each with the notify activity's
// retries, in parallel.
func notifyWorkflow(ctx workflow.Context, in NotifyWorkflowInput) (NotifyWorkflowResult, error) {
	var res NotifyWorkflowResult
	fs := make([]workflow.Future, len(in.Events))
	for i, ev := range in.Events {
		// At least one attempt, however late the handoff.
		budget := max(ev.At.Add(in.Timeout).Sub(workflow.Now(ctx)), notifyAttemptTimeout)
		fs[i] = workflow.ExecuteActivity(notifyOptions(ctx, budget), NotifyActivityName, ev)
	}
	for i, f := range fs {
		key := in.Events[i].IdempotencyKey
		if err := f.Get(ctx, nil); err != nil {
			if res.Failed == nil {
				res.Failed = map[string]string{}
			}
			res.Failed[key] = trajectory.Clip(trajectory.DescribeError(err), 300)
			workflow.GetLogger(ctx).Warn("overseer: notification failed for good", "key", key, "error", res.Failed[key])
			continue
		}
		res.Delivered = append(res.Delivered, key)
	}
	return res, nil
}

// RegisterNotifyWorkflow registers the notifier workflow
// ([NotifyWorkflowName]) on a worker that uses the bare interceptor from
// NewWorkerInterceptor; [NewPlugin] does it.
//
// It is registered auto-upgrade for Worker Deployment Versioning: a worker
// whose workflows each name their behavior (no DefaultVersioningBehavior)
// refuses a registration without one, and a notifier that retries for
// hours should not keep an old version's workers alive. Its code changes
// only behind version markers, as the overseer's do. A worker without
// versioning ignores the behavior.
func RegisterNotifyWorkflow(r interface {
	RegisterWorkflowWithOptions(any, workflow.RegisterOptions)
}) {
	r.RegisterWorkflowWithOptions(notifyWorkflow, workflow.RegisterOptions{Name: NotifyWorkflowName,
		VersioningBehavior: workflow.VersioningBehaviorAutoUpgrade})
}

// notifyOptions are the notify activity's options with retries within
// budget.
func notifyOptions(ctx workflow.Context, budget time.Duration) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:              ownTaskQueue(ctx),
		StartToCloseTimeout:    notifyAttemptTimeout,
		ScheduleToCloseTimeout: budget,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:        notifyBackoff,
			BackoffCoefficient:     2,
			MaximumInterval:        notifyMaxBackoff,
			NonRetryableErrorTypes: []string{NotifyRejectedErrorType},
		},
	})
}

// handOff runs when the run ends (notifyChangeID's version 1): the
// notifications not yet delivered go to a notifier workflow, started as
// an abandoned child; the run waits for its start only, never for a
// receiver. Those that had failed stay counted as failed here. Nothing is
// recorded when every notification was delivered.
func (r *run) handOff(ctx workflow.Context) {
	if len(r.notices) == 0 {
		return
	}
	events := make([]GateEvent, len(r.notices))
	for i, n := range r.notices {
		events[i] = n.ev
		n.handedOff = true
		if n.cancel != nil {
			n.cancel() // an attempt not yet started is never sent
		}
	}
	r.notices, r.st.Notifying = nil, nil
	id := notifyWorkflowID(ctx)
	cctx := workflow.WithChildOptions(ctx, workflow.ChildWorkflowOptions{
		WorkflowID:        id,
		TaskQueue:         ownTaskQueue(ctx),
		ParentClosePolicy: enumspb.PARENT_CLOSE_POLICY_ABANDON,
	})
	f := workflow.ExecuteChildWorkflow(cctx, NotifyWorkflowName, NotifyWorkflowInput{Events: events, Timeout: r.cfg.notifyTimeout()})
	// An abandoned child the server has not started when its parent
	// closes is never started.
	if err := f.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		msg := "not delivered: the run could not start its notifier workflow: " + trajectory.Clip(trajectory.DescribeError(err), 200)
		for _, ev := range events {
			r.notifyFailed(ctx, ev.IdempotencyKey, msg)
		}
		return
	}
	r.st.NotifyWorkflow = id
}

// notifyChildIDChangeID versions how the notifier workflow's id is made.
// Runs before it built the id from the run's workflow and run ids at the
// hand-off; the SDK matches a recorded child start by its id, so a history
// with a hand-off replayed under another execution (the SDK replayer's
// default, overseer replay) or reset past it (a new run id) built another
// and failed with TMPRL1100. From version 1 the id is built once and
// recorded in a side effect, and replay reads it back.
const notifyChildIDChangeID = "temporal-overseer/notify-child-id"

// notifyWorkflowID is the id of the run's notifier workflow:
// overseer-notify/<workflow id>/<run id> of the run that first handed off.
func notifyWorkflowID(ctx workflow.Context) string {
	info := workflow.GetInfo(ctx)
	built := "overseer-notify/" + info.WorkflowExecution.ID + "/" + info.WorkflowExecution.RunID
	if workflow.GetVersion(ctx, notifyChildIDChangeID, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return built
	}
	var id string
	if err := workflow.SideEffect(ctx, func(workflow.Context) any { return built }).Get(&id); err != nil || id == "" {
		return built
	}
	return id
}

// notifyWithRetries is how runs before notifyChangeID notify: one
// activity with its own retries, awaited at the run's end
// (awaitNotifications). A notification that fails for good (after its
// retries) is counted in the status and in overseer_notifications_failed.
func (r *run) notifyWithRetries(ctx workflow.Context, ev GateEvent) {
	// Disconnected: a run cancelled at the gate still sends what it owes.
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	f := workflow.ExecuteActivity(notifyOptions(dctx, r.cfg.notifyTimeout()), NotifyActivityName, ev)
	workflow.Go(dctx, func(ctx workflow.Context) {
		err := f.Get(ctx, nil)
		i := slices.Index(r.st.Notifying, ev.IdempotencyKey)
		if i < 0 {
			return // recorded as not delivered when the run ended
		}
		r.st.Notifying = slices.Delete(r.st.Notifying, i, i+1)
		if err != nil {
			r.notifyFailed(ctx, ev.IdempotencyKey, trajectory.DescribeError(err))
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
	r.st.NotifyError = fmt.Sprintf("the %s notification of gate %s failed: %s", kind, gate, trajectory.Clip(msg, 300))
	metricNotifyFailure(ctx, kind)
	r.logger.Warn("overseer: notification failed for good", "kind", string(kind), "gate", gate, "error", trajectory.Clip(msg, 300))
}

// endNotifications runs when the run ends: runs of notifyChangeID's
// version 1 hand what is left to the notifier workflow (handOff); older
// ones wait for it (awaitNotifications).
func (r *run) endNotifications(ctx workflow.Context) {
	if r.notifyVersion != nil && *r.notifyVersion != workflow.DefaultVersion {
		r.handOff(ctx)
		return
	}
	r.awaitNotifications(ctx)
}

// awaitNotifications runs when a run from before notifyChangeID ends: it
// gives the notifications still being sent (or retried) up to a minute to
// finish. Those still in flight after that are recorded as failed. It
// does nothing (and records nothing in history) when no notification is
// in flight.
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

// idempotencyKey names one notification of a gate: the same across a
// replay and a reset that keeps the gate (OriginalRunID is the run a reset
// started from, and the gate's opening time is read back from history), so
// a receiver that keeps one event per key keeps a notice sent again after
// such a reset once; and different for a gate that opened anew after a
// reset, whose id (phase and count of pauses) may be an earlier gate's
// but whose opening time is not, so that the receiver does not drop it.
//
// Runs that built a notification before the opening time was part of the
// key (notifyKeyChangeID, DefaultVersion) keep the four-part key
// WORKFLOW_ID/RUN_ID/GATE_ID/KIND, so that a notice in retry across the
// upgrade goes out again under the key it first went out under.
func idempotencyKey(info *workflow.Info, g Gate, kind GateEventKind, version workflow.Version) string {
	run := cmp.Or(info.OriginalRunID, info.WorkflowExecution.RunID)
	if version == workflow.DefaultVersion {
		return strings.Join([]string{info.WorkflowExecution.ID, run, g.ID, string(kind)}, "/")
	}
	return strings.Join([]string{info.WorkflowExecution.ID, run, g.ID, strconv.FormatInt(g.PausedAt.UnixMilli(), 10), string(kind)}, "/")
}

// notifyKeyChangeID versions the notification key's format: version 1
// names the gate's opening time too (idempotencyKey).
const notifyKeyChangeID = "temporal-overseer/notify-key-opened-at"

// notifyKeyVersion is notifyKeyChangeID's version for the run, read (and,
// in a new run, recorded) when it builds its first notification.
func (r *run) notifyKeyVersion(ctx workflow.Context) workflow.Version {
	if r.notifyKey == nil {
		v := workflow.GetVersion(ctx, notifyKeyChangeID, workflow.DefaultVersion, 1)
		r.notifyKey = &v
	}
	return *r.notifyKey
}

// ownTaskQueue is the task queue of the run's workflow. Every activity the
// overseer schedules for itself names its queue: left unset, an activity
// takes the queue of the context it is scheduled from, and a gate's or a
// boundary's context is the phase's, whose queue (a sandbox fleet, say)
// may have no worker that runs the overseer's activities.
func ownTaskQueue(ctx workflow.Context) string { return workflow.GetInfo(ctx).TaskQueueName }
