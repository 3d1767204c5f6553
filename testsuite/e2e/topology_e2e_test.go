package e2e_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/worker"
)

// The deployment of issue 35: a jobs fleet on its own queue runs the
// workflows and the overseer; the phases run on a fleet of their own (a
// sandbox fleet, say) that knows nothing of the overseer; every client and
// worker encrypts its payloads with a codec bound to each payload's
// serialization context.

// fleetJobName is the workflow type of these tests.
const fleetJobName = "e2e.FleetJob"

// fleetJobInput names the phases to run, in order, and the queue of the
// fleet they run on.
type fleetJobInput struct {
	Objective  string   `json:"objective"`
	PhaseQueue string   `json:"phase_queue"`
	Phases     []string `json:"phases"`
}

// fleetPhaseInput carries the previous phase's result, as the workflow
// read it, into the next phase.
type fleetPhaseInput struct {
	Phase    string `json:"phase"`
	Previous string `json:"previous"`
}

// fleetJob runs its phases on the phase fleet's queue, each given the
// result of the one before, and returns their results.
func fleetJob(ctx workflow.Context, in fleetJobInput) ([]string, error) {
	overseer.SetObjective(ctx, in.Objective)
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: in.PhaseQueue, StartToCloseTimeout: time.Minute})
	var results []string
	previous := ""
	for _, p := range in.Phases {
		var res string
		if err := workflow.ExecuteActivity(ctx, p, fleetPhaseInput{Phase: p, Previous: previous}).Get(ctx, &res); err != nil {
			return results, err
		}
		results = append(results, res)
		previous = res
	}
	return results, nil
}

// phaseResult is what phase p returns.
func phaseResult(p string) string { return "result of " + p }

// fleetPhases is the phase fleet's activities: each records its input,
// the process note it was given (ProcessNote) and its queue.
type fleetPhases struct {
	mu     sync.Mutex
	inputs map[string][]fleetPhaseInput
	notes  map[string][]*overseer.Note
	queues map[string][]string
}

func (f *fleetPhases) run(ctx context.Context, in fleetPhaseInput) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inputs[in.Phase] = append(f.inputs[in.Phase], in)
	var note *overseer.Note
	if n, ok := overseer.ProcessNote(ctx); ok {
		note = &n
	}
	f.notes[in.Phase] = append(f.notes[in.Phase], note)
	f.queues[in.Phase] = append(f.queues[in.Phase], activity.GetInfo(ctx).TaskQueue)
	return phaseResult(in.Phase), nil
}

// seen returns copies of what phase p saw, one entry per run.
func (f *fleetPhases) seen(p string) ([]fleetPhaseInput, []*overseer.Note, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fleetPhaseInput(nil), f.inputs[p]...), append([]*overseer.Note(nil), f.notes[p]...), append([]string(nil), f.queues[p]...)
}

// keyedInbox is a notifier that counts every call by idempotency key.
type keyedInbox struct {
	mu     sync.Mutex
	calls  map[string]int
	events map[string]overseer.GateEvent
}

func (k *keyedInbox) Notify(_ context.Context, ev overseer.GateEvent) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls[ev.IdempotencyKey]++
	k.events[ev.IdempotencyKey] = ev
	return nil
}

// of returns the calls per key of job id's notifications.
func (k *keyedInbox) of(id string) map[string]int {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := map[string]int{}
	for key, n := range k.calls {
		if k.events[key].WorkflowID == id {
			out[key] = n
		}
	}
	return out
}

// has says job id was sent a notification of kind.
func (k *keyedInbox) has(id string, kind overseer.GateEventKind) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, ev := range k.events {
		if ev.WorkflowID == id && ev.Kind == kind {
			return true
		}
	}
	return false
}

// fleetOptions shape a deployment.
type fleetOptions struct {
	// contextBound encrypts every payload with testsuite's context-bound
	// codec; false runs without a codec.
	contextBound bool
	judge        jev.Judge
	deadline     overseer.GateDeadline
	// pluginOnPhases gives the phase fleet the plugin too (its activity
	// interceptor makes ProcessNote work there).
	pluginOnPhases bool
}

// fleet is a deployment: the jobs fleet (the plugin on its clients) on one
// queue, the phase fleet on another, workersPerQueue workers each.
type fleet struct {
	dc             converter.DataConverter
	plugin         *temporal.SimplePlugin
	client         client.Client
	jobsQ, phasesQ string
	phases         *fleetPhases
	inbox          *keyedInbox
	stopPhases     func()
}

func newFleet(t *testing.T, srv server, o fleetOptions) *fleet {
	t.Helper()
	f := &fleet{
		phases: &fleetPhases{inputs: map[string][]fleetPhaseInput{}, notes: map[string][]*overseer.Note{}, queues: map[string][]string{}},
		inbox:  &keyedInbox{calls: map[string]int{}, events: map[string]overseer.GateEvent{}},
	}
	if o.contextBound {
		key := make([]byte, 32)
		_, err := rand.Read(key)
		require.NoError(t, err)
		cb, err := testsuite.NewContextBoundCodec(key)
		require.NoError(t, err)
		f.dc = testsuite.ContextBoundDataConverter(cb)
	}
	var err error
	// No AssessTaskQueue: the judge's activity must go to the workflow's
	// queue, not the phase's.
	f.plugin, err = overseer.NewPlugin(overseer.Options{Mode: overseer.ModeManage, Judge: o.judge, Placement: overseer.PlacementActivity,
		Notifier: f.inbox, GateDeadline: o.deadline})
	require.NoError(t, err)
	base := "e2e-" + strings.ReplaceAll(t.Name(), "/", "-")
	f.jobsQ, f.phasesQ = base+"-jobs", base+"-phases"
	withPlugin := client.Options{DataConverter: f.dc, Plugins: []client.Plugin{f.plugin}, Logger: worker.SDKLogger(zap.NewNop())}
	f.client = fleetClient(t, srv, withPlugin, "starter")

	phaseOpts := client.Options{DataConverter: f.dc, Logger: worker.SDKLogger(zap.NewNop())}
	if o.pluginOnPhases {
		phaseOpts.Plugins = []client.Plugin{f.plugin}
	}
	var phaseStops []func()
	for i := 1; i <= workersPerQueue(); i++ {
		// The jobs fleet registers only the workflow (the plugin adds its
		// own activities and notifier workflow) ...
		jc := fleetClient(t, srv, withPlugin, fmt.Sprintf("jobs-%d", i))
		jw := sdkworker.New(jc, f.jobsQ, sdkworker.Options{})
		jw.RegisterWorkflowWithOptions(fleetJob, workflow.RegisterOptions{Name: fleetJobName})
		require.NoError(t, jw.Start())
		t.Cleanup(jw.Stop)
		// ... and the phase fleet only the phases.
		pc := fleetClient(t, srv, phaseOpts, fmt.Sprintf("phases-%d", i))
		pw := sdkworker.New(pc, f.phasesQ, sdkworker.Options{})
		for _, p := range []string{"first", "second", "third"} {
			pw.RegisterActivityWithOptions(f.phases.run, activity.RegisterOptions{Name: p})
		}
		require.NoError(t, pw.Start())
		phaseStops = append(phaseStops, pw.Stop)
	}
	var once sync.Once
	f.stopPhases = func() {
		once.Do(func() {
			for _, s := range phaseStops {
				s()
			}
		})
	}
	t.Cleanup(f.stopPhases)
	return f
}

// fleetClient is a client with opts: the shared connection on the dev
// server; on a cluster a connection and identity of its own, as a separate
// process would have. It closes when the test ends, after the workers
// (cleanups run last first).
func fleetClient(t *testing.T, srv server, opts client.Options, who string) client.Client {
	t.Helper()
	var c client.Client
	var err error
	if workersPerQueue() > 1 {
		opts.HostPort, opts.Namespace = srv.FrontendHostPort(), srv.Namespace()
		opts.Identity = fmt.Sprintf("e2e-%s-%d@%s", who, time.Now().UnixNano(), t.Name())
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c, err = client.DialContext(ctx, opts)
		cancel()
	} else {
		c, err = client.NewClientFromExisting(srv.Client(), opts)
	}
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func (f *fleet) start(t *testing.T, objective string, phases ...string) client.WorkflowRun {
	t.Helper()
	id := fmt.Sprintf("e2e-fleet-%d", time.Now().UnixNano())
	run, err := f.client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: f.jobsQ}, fleetJobName,
		fleetJobInput{Objective: objective, PhaseQueue: f.phasesQ, Phases: phases})
	require.NoError(t, err)
	return run
}

// resume sends the resume update and waits for its result.
func (f *fleet) resume(t *testing.T, id string, req overseer.ResumeRequest) {
	t.Helper()
	h, err := f.client.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: overseer.ResumeName,
		Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, h.Get(context.Background(), nil))
}

// assertQueues: every phase was scheduled on the phase fleet's queue, and
// every activity and child workflow the overseer scheduled for itself on
// the workflow's.
func (f *fleet) assertQueues(t *testing.T, events []*historypb.HistoryEvent) (assessed, notified int) {
	t.Helper()
	for _, e := range events {
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil {
			typ := a.GetActivityType().GetName()
			switch typ {
			case overseer.AssessActivityName, overseer.NotifyActivityName:
				assert.Equal(t, f.jobsQ, a.GetTaskQueue().GetName(), "event %d: %s on the workflow's queue", e.GetEventId(), typ)
				if typ == overseer.AssessActivityName {
					assessed++
				} else {
					notified++
				}
			default:
				assert.Equal(t, f.phasesQ, a.GetTaskQueue().GetName(), "event %d: phase %s on its fleet", e.GetEventId(), typ)
			}
		}
		if a := e.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a != nil {
			assert.Equal(t, f.jobsQ, a.GetTaskQueue().GetName(), "event %d: the notifier workflow on the workflow's queue", e.GetEventId())
		}
	}
	return assessed, notified
}

var (
	onTrackStep = scriptedStep(0.9, 0.2)
	flaggedStep = scriptedStep(0.1, 3)
)

// TestE2EPhasesOnTheirOwnFleetStoppedAtAnOpenGate: with the phases on a
// fleet of their own and a context-bound codec, the judge's activity and
// every notification run on the workflow's queue, so that with the phase
// fleet stopped while a gate is open the gate still escalates and expires:
// opened, escalated and expired arrive once each, none fails, the job is
// aborted, and the workflow read the first phase's result (the second
// phase got it).
func TestE2EPhasesOnTheirOwnFleetStoppedAtAnOpenGate(t *testing.T) {
	srv := e2eServer(t)
	f := newFleet(t, srv, fleetOptions{contextBound: true, judge: jev.NewScripted(onTrackStep, flaggedStep),
		deadline: overseer.GateDeadline{After: 8 * time.Second, Action: overseer.DeadlineEscalate, FinalAfter: 20 * time.Second, FinalAction: overseer.DeadlineAbort}})
	run := f.start(t, "Export the ledger as CSV", "first", "second", "third")
	id := run.GetID()
	eventually(t, "the gate after the second phase to open and be announced", 30*time.Second, func() bool {
		// An overseer activity sent to the phase fleet's queue would wait
		// there (or fail) for good: say so at once.
		if f.assertQueues(t, historyOf(t, f.client, id)); t.Failed() {
			t.FailNow()
		}
		return f.inbox.has(id, overseer.GateOpened)
	})
	open := status(t, f.client, id)
	require.True(t, open.Paused)
	require.NotEmpty(t, open.Gates)
	assert.Equal(t, "second", open.Gates[len(open.Gates)-1].Phase)

	// The phase fleet goes away; nothing the gate does needs it.
	f.stopPhases()

	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	err := run.Get(ctx, nil)
	require.Error(t, err, "aborted at the final deadline")
	assert.Equal(t, overseer.AbortedErrorType, overseer.ErrorType(err), "%v", err)
	eventually(t, "the notifier workflow to deliver the expiry", 30*time.Second, func() bool {
		return f.inbox.has(id, overseer.GateExpired)
	})

	s := status(t, f.client, id)
	require.NotEmpty(t, s.Gates)
	g := s.Gates[len(s.Gates)-1]
	assert.Equal(t, open.GateID, g.ID)
	assert.True(t, g.Expired)
	assert.Zero(t, s.Counters.NotifyFailures, "no notification failed: %s", s.NotifyError)
	assert.Equal(t, 1, s.Counters.Escalations)
	assert.Equal(t, 1, s.Counters.Expired)
	assert.Equal(t, 2, s.Counters.Phases, "the third phase never ran")
	assert.Equal(t, "overseer-notify/"+id+"/"+run.GetRunID(), s.NotifyWorkflow)

	calls := f.inbox.of(id)
	for _, kind := range []overseer.GateEventKind{overseer.GateOpened, overseer.GateEscalated, overseer.GateExpired} {
		key := fmt.Sprintf("%s/%s/%s/%d/%s", id, run.GetRunID(), g.ID, g.PausedAt.UnixMilli(), kind)
		assert.Equal(t, 1, calls[key], "%s sent exactly once: %v", kind, calls)
	}
	assert.Len(t, calls, 3, "nothing else: %v", calls)

	// The workflow read the first phase's result through the overseer, in
	// the codec's contexts, and gave it to the second.
	in, _, queues := f.phases.seen("second")
	require.Len(t, in, 1)
	assert.Equal(t, phaseResult("first"), in[0].Previous)
	assert.Equal(t, []string{f.phasesQ}, queues)
	third, _, _ := f.phases.seen("third")
	assert.Empty(t, third)

	assessed, notified := f.assertQueues(t, historyOf(t, f.client, id))
	assert.Equal(t, 2, assessed, "one assessment per boundary")
	assert.Equal(t, 2, notified, "opened and escalated, by the run")
}

// TestE2EContextBoundCodecEndToEnd: under a codec that binds each payload
// to its serialization context, a job whose phases run on their own fleet
// pauses, is resumed with a note, and completes with every phase's
// result; the next phase reads the note with ProcessNote; and no payload
// of its history is in clear.
func TestE2EContextBoundCodecEndToEnd(t *testing.T) {
	srv := e2eServer(t)
	f := newFleet(t, srv, fleetOptions{contextBound: true, judge: jev.NewScripted(flaggedStep, onTrackStep), pluginOnPhases: true})
	const objective = "Reconcile the quarterly ledgers"
	const note = "keep the ledger columns in their order"
	run := f.start(t, objective, "first", "second")
	eventually(t, "the job to pause after its first phase", 30*time.Second, func() bool { return status(t, f.client, run.GetID()).Paused })
	f.resume(t, run.GetID(), overseer.ResumeRequest{By: "bob", Note: note})
	var results []string
	require.NoError(t, run.Get(context.Background(), &results))
	assert.Equal(t, []string{phaseResult("first"), phaseResult("second")}, results, "every phase's result read by the workflow")

	_, firstNotes, _ := f.phases.seen("first")
	require.Len(t, firstNotes, 1)
	assert.Nil(t, firstNotes[0], "no note before the gate")
	in, notes, _ := f.phases.seen("second")
	require.Len(t, notes, 1)
	require.NotNil(t, notes[0], "ProcessNote read the header in the phase activity's context, on the phase fleet")
	assert.Equal(t, note, notes[0].ReviewerNote)
	assert.Equal(t, phaseResult("first"), in[0].Previous)
	s := status(t, f.client, run.GetID())
	assert.Equal(t, 2, s.Counters.Phases)
	require.Len(t, s.Gates, 1)
	assert.Equal(t, note, s.Gates[0].Note)
	assert.Zero(t, s.Counters.NotifyFailures, "%s", s.NotifyError)

	// The readers of histories (an audit, an export and so every learn
	// round) read each payload in the context it was sealed in: the gate
	// the reviewer opened is in both (issue 45: the audit had 0 records,
	// the export no gate decision).
	audit, err := ops.Audit(context.Background(), f.client, ops.AuditOptions{Query: fmt.Sprintf("WorkflowId = '%s'", run.GetID()),
		DataConverter: f.dc, Namespace: srv.Namespace()})
	require.NoError(t, err)
	var resumed []string
	for _, r := range audit.Records {
		if r.Kind == "resumed" {
			resumed = append(resumed, r.By)
		}
	}
	assert.Equal(t, []string{"bob"}, resumed, "the audit has the resume: %+v", audit.Records)
	rec, err := ops.RecordOfJobWith(context.Background(), f.client, srv.Namespace(), run.GetID(), run.GetRunID(), f.dc)
	require.NoError(t, err)
	require.Len(t, rec.Gates, 1, "the export has the gate decision")
	assert.Equal(t, 2, len(rec.Steps), "and both phases")

	// A client without the codec reads the history as the server stores
	// it: every payload is the codec's.
	events := historyOf(t, srv.Client(), run.GetID())
	f.assertQueues(t, events)
	seen := map[string]int{}
	for _, p := range testsuite.HistoryPayloads(events) {
		assert.Equal(t, testsuite.EncodingContextBound, string(p.Payload.GetMetadata()[converter.MetadataEncoding]), "payload in clear: %s", p)
		seen[payloadKind(p)]++
	}
	for _, kind := range []string{"header overseer-note", "activity input", "activity result", "update input", "update result"} {
		assert.Positive(t, seen[kind], "the scan saw a %s: %v", kind, seen)
	}
	assertNoClearText(t, [][]*historypb.HistoryEvent{events}, note, objective, phaseResult("first"), "Process note")
}

// TestE2EReplayAndResetPastAHandOff: a job aborted at its gate hands the
// abort's notification to the notifier workflow; its history replays in
// the SDK's replayer under the replayer's own execution id, and a reset
// to after the hand-off runs to the same end without a nondeterminism
// error. The replayer's default execution (namespace ReplayNamespace,
// workflow id ReplayId) is not the one a context-bound codec sealed the
// payloads in, so that replay runs on a job without a codec; with the
// codec, the job is reset and replayed in its own namespace and ids.
func TestE2EReplayAndResetPastAHandOff(t *testing.T) {
	for _, tc := range []struct {
		name         string
		contextBound bool
	}{{"no codec", false}, {"context-bound codec", true}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := e2eServer(t)
			// The plugin on the phase fleet too: this test is about the
			// hand-off, not where the overseer's activities run.
			f := newFleet(t, srv, fleetOptions{contextBound: tc.contextBound, judge: jev.NewScripted(flaggedStep), pluginOnPhases: true})
			run := f.start(t, "Migrate the billing tables", "first", "second")
			id := run.GetID()
			eventually(t, "the job to pause after its first phase", 30*time.Second, func() bool { return status(t, f.client, id).Paused })
			f.resume(t, id, overseer.ResumeRequest{By: "carol", Action: overseer.ActionAbort})
			err := run.Get(context.Background(), nil)
			require.Error(t, err)
			require.Equal(t, overseer.AbortedErrorType, overseer.ErrorType(err), "%v", err)
			s := status(t, f.client, id)
			require.Equal(t, "overseer-notify/"+id+"/"+run.GetRunID(), s.NotifyWorkflow, "the abort's notification handed off")
			eventually(t, "the opening and the abort to be delivered", 30*time.Second, func() bool {
				return f.inbox.has(id, overseer.GateOpened) && f.inbox.has(id, overseer.GateAborted)
			})
			keys := f.inbox.of(id)

			events := historyOf(t, f.client, id)
			rp, err := sdkworker.NewWorkflowReplayerWithOptions(sdkworker.WorkflowReplayerOptions{Plugins: []sdkworker.Plugin{f.plugin}, DataConverter: f.dc})
			require.NoError(t, err)
			rp.RegisterWorkflowWithOptions(fleetJob, workflow.RegisterOptions{Name: fleetJobName})
			quiet := worker.SDKLogger(zap.NewNop())
			if tc.contextBound {
				assert.NoError(t, rp.ReplayWorkflowExecution(context.Background(), f.client.WorkflowService(), quiet, srv.Namespace(),
					workflow.Execution{ID: id, RunID: run.GetRunID()}), "replayed in its own namespace and ids")
			} else {
				assert.NoError(t, rp.ReplayWorkflowHistory(quiet, &historypb.History{Events: events}), "replayed under the replayer's execution id")
			}

			// Reset to the last completed workflow task after the hand-off.
			child, reset := int64(0), int64(0)
			for _, e := range events {
				switch {
				case e.GetEventType() == enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED:
					child = e.GetEventId()
				case e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED && child != 0:
					reset = e.GetEventId()
				}
			}
			require.NotZero(t, reset, "a completed workflow task after the hand-off")
			newRun := resetTo(t, f.client, srv.Namespace(), id, run.GetRunID(), reset, "e2e: reset past the hand-off")
			eventually(t, "the reset run to finish", 30*time.Second, func() bool {
				d, err := f.client.DescribeWorkflow(context.Background(), id, newRun)
				require.NoError(t, err)
				requireNoNondeterminism(t, historyOfRun(t, f.client, id, newRun))
				return d.RawResponse.GetWorkflowExecutionInfo().GetCloseTime() != nil
			})
			after := historyOfRun(t, f.client, id, newRun)
			requireNoNondeterminism(t, after)
			var replayedChild, resetTask bool
			for _, e := range after {
				if a := e.GetStartChildWorkflowExecutionInitiatedEventAttributes(); a != nil {
					replayedChild = a.GetWorkflowId() == s.NotifyWorkflow
				}
				if a := e.GetWorkflowTaskFailedEventAttributes(); a != nil && a.GetCause() == enumspb.WORKFLOW_TASK_FAILED_CAUSE_RESET_WORKFLOW {
					resetTask = replayedChild
				}
			}
			require.True(t, resetTask, "the reset run's history holds the hand-off before the reset point")
			assert.Equal(t, s.NotifyWorkflow, status(t, f.client, id).NotifyWorkflow, "the reset run reads the recorded notifier id back")
			err = f.client.GetWorkflow(context.Background(), id, newRun).Get(context.Background(), nil)
			require.Error(t, err, "the reset run ends as the first did")
			assert.Equal(t, overseer.AbortedErrorType, overseer.ErrorType(err), "%v", err)
			for key := range f.inbox.of(id) {
				assert.NotContains(t, key, newRun, "idempotency keys name the original run")
			}
			assert.Len(t, f.inbox.of(id), len(keys), "no notification of another key after the reset")
		})
	}
}

// resetTo resets the run to the end of the workflow task that completed
// at event, and returns the new run's id.
func resetTo(t *testing.T, c client.Client, namespace, id, runID string, event int64, reason string) string {
	t.Helper()
	resp, err := c.ResetWorkflowExecution(context.Background(), &workflowservice.ResetWorkflowExecutionRequest{
		Namespace:                 namespace,
		WorkflowExecution:         &commonpb.WorkflowExecution{WorkflowId: id, RunId: runID},
		Reason:                    reason,
		WorkflowTaskFinishEventId: event,
		RequestId:                 fmt.Sprintf("reset-%s-%d", id, time.Now().UnixNano()),
	})
	require.NoError(t, err)
	return resp.GetRunId()
}

// historyOfRun is the history of one run of job id.
func historyOfRun(t *testing.T, c client.Client, id, runID string) []*historypb.HistoryEvent {
	t.Helper()
	var evs []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		evs = append(evs, e)
	}
	return evs
}

// requireNoNondeterminism fails at once on a workflow task that failed
// with a nondeterminism error (TMPRL1100): the SDK retries such a task
// for ever, so the run would never finish.
func requireNoNondeterminism(t *testing.T, events []*historypb.HistoryEvent) {
	t.Helper()
	for _, e := range events {
		a := e.GetWorkflowTaskFailedEventAttributes()
		if a == nil {
			continue
		}
		msg := a.GetFailure().GetMessage()
		if a.GetCause() == enumspb.WORKFLOW_TASK_FAILED_CAUSE_NON_DETERMINISTIC_ERROR || strings.Contains(msg, "TMPRL1100") {
			require.FailNow(t, "the reset run failed a workflow task with a nondeterminism error", "event %d: %s", e.GetEventId(), msg)
		}
	}
}
