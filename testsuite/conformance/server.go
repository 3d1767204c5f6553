package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
)

// Outcome is what a run of a pattern did, as its users could see it.
type Outcome struct {
	Result  string
	Err     string
	Updates []string
	Calls   []string
}

// UpdateOutcome says how an update ended: "completed", or why it failed.
func UpdateOutcome(err error) string {
	if err != nil {
		return "failed: " + err.Error()
	}
	return "completed"
}

// ServerRun is what a run of a pattern on a real server did.
type ServerRun struct {
	Outcome
	// Commands are the workflow's commands, in order, over all its runs,
	// without the overseer's own (overseerEvent).
	Commands []string
}

// RunOnServer runs p in mode m on the server c is connected to and says
// what it did, with the run (its first, when it continued as new). The
// workflow runs on a worker of its own and the activities on another
// (without the plugin: the patterns' judges answer in workflow code), so
// that a race's steps (Pattern.Race) are taken with the workflow's worker
// stopped and land in one workflow task, which it checks in the history.
// In manage mode it checks that no gate opened.
func RunOnServer(t testing.TB, c client.Client, p Pattern, m Mode) (ServerRun, workflow.Execution) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if p.DataConverter != nil {
		var err error
		c, err = client.NewClientFromExisting(c, client.Options{DataConverter: p.DataConverter()})
		require.NoError(t, err)
		defer c.Close()
	}
	tq := fmt.Sprintf("conformance-%s-%s-%d", p.Name, m.Name, time.Now().UnixNano())
	acts := NewActivities()
	acts.HoldAll = len(p.Race) > 0
	options := func(wo worker.Options) worker.Options {
		if m.Plugin {
			plugin, err := overseer.NewPlugin(m.Options)
			require.NoError(t, err)
			wo.Plugins = []worker.Plugin{plugin}
		}
		return wo
	}
	// Activities on a worker of their own, so that the workflow's worker
	// can be stopped while they complete.
	aw := worker.New(c, tq, worker.Options{DisableWorkflowWorker: true, EnableSessionWorker: p.SessionWorker})
	acts.Register(aw)
	require.NoError(t, aw.Start())
	defer aw.Stop()
	startWorkflows := func() worker.Worker {
		w := worker.New(c, tq, options(worker.Options{LocalActivityWorkerOnly: true}))
		p.Register(w)
		require.NoError(t, w.Start())
		return w
	}
	ww := startWorkflows()
	defer func() { ww.Stop() }()

	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: tq, TaskQueue: tq, WorkflowExecutionTimeout: 2 * time.Minute}, p.Name, p.Input)
	require.NoError(t, err)
	first := run.GetRunID() // Get follows a continue-as-new and moves the run's id on
	var o ServerRun
	var updates sync.WaitGroup
	results := make([]string, len(p.Drive)+len(p.Race))
	if len(p.Race) > 0 {
		// Hold the workflow's worker once every held phase has started.
		var held []string
		for _, s := range p.Race {
			if s.Kind == StepRelease {
				held = append(held, ActivityHeld+" "+s.Name)
			}
		}
		require.Eventually(t, func() bool {
			calls := acts.Calls()
			return !slices.ContainsFunc(held, func(h string) bool { return !slices.Contains(calls, h) })
		}, time.Minute, 20*time.Millisecond, "the held phases start")
		ww.Stop()
		for i, s := range p.Race {
			drive(ctx, t, c, acts, tq, s, &updates, &results[i])
		}
		ww = startWorkflows()
	} else {
		for i, s := range p.Drive {
			drive(ctx, t, c, acts, tq, s, nil, &results[i])
		}
	}
	var result string
	if err := run.Get(ctx, &result); err != nil {
		o.Err = err.Error()
	}
	o.Result = result
	updates.Wait()
	for _, r := range results {
		if r != "" {
			o.Updates = append(o.Updates, r)
		}
	}
	if len(p.Race) == 0 && !p.CallsVary {
		o.Calls = acts.Calls()
	}
	events := History(ctx, t, c, tq, first)
	if len(p.Race) > 0 {
		assertOneTask(t, p, events)
	}
	var dc converter.DataConverter = converter.GetDefaultDataConverter()
	if p.DataConverter != nil {
		dc = p.DataConverter()
	}
	dc = converter.WithDataConverterSerializationContext(dc, converter.WorkflowSerializationContext{Namespace: client.DefaultNamespace, WorkflowID: tq}) // the suite's servers run the default namespace
	for _, e := range events {
		if d := command(e, dc); d != "" {
			o.Commands = append(o.Commands, d)
		}
	}
	if m.Options.Mode == overseer.ModeManage {
		v, err := c.QueryWorkflow(ctx, tq, "", overseer.StatusQueryName)
		require.NoError(t, err)
		var st overseer.Status
		require.NoError(t, v.Get(&st))
		assert.Zero(t, st.Counters.Pauses, "no gate")
	}
	return o, workflow.Execution{ID: tq, RunID: first}
}

// drive takes step s; an update sent while the workflow's worker is
// stopped (updates not nil) completes once it is back.
func drive(ctx context.Context, t testing.TB, c client.Client, acts *Activities, id string, s Step, updates *sync.WaitGroup, result *string) {
	t.Helper()
	switch s.Kind {
	case StepRelease:
		acts.Release(s.Name)
	case StepSignal:
		require.NoError(t, c.SignalWorkflow(ctx, id, "", s.Name, s.Arg))
	case StepAwaitEvent:
		require.Eventually(t, func() bool {
			return slices.ContainsFunc(History(ctx, t, c, id, ""), func(e *historypb.HistoryEvent) bool {
				return strings.HasPrefix(Describe(e), s.Name)
			})
		}, time.Minute, 50*time.Millisecond, "the history has %s", s.Name)
	case StepUpdate:
		updateID := fmt.Sprintf("%s-%s-%d", s.Name, id, s.Arg)
		send := func() {
			h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: id, UpdateID: updateID, UpdateName: s.Name, Args: []any{s.Arg},
				WaitForStage: client.WorkflowUpdateStageCompleted})
			if err != nil {
				*result = "rejected: " + err.Error()
				return
			}
			var v any
			*result = UpdateOutcome(h.Get(ctx, &v))
		}
		if updates == nil {
			send()
			return
		}
		updates.Add(1)
		go func() {
			defer updates.Done()
			send()
		}()
		// The server holds the update for the workflow's next task once
		// it knows it: a poll of an update it does not know fails at once.
		require.Eventually(t, func() bool {
			pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			defer cancel()
			err := c.GetWorkflowUpdateHandle(client.GetWorkflowUpdateHandleOptions{WorkflowID: id, UpdateID: updateID}).Get(pctx, nil)
			var notFound *serviceerror.NotFound
			return !errors.As(err, &notFound)
		}, time.Minute, 20*time.Millisecond, "the server has the update %s", updateID)
	}
}

// History is the run's events, and those of the runs it continued as.
func History(ctx context.Context, t testing.TB, c client.Client, id, runID string) []*historypb.HistoryEvent {
	t.Helper()
	var events []*historypb.HistoryEvent
	for {
		it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		var next string
		for it.HasNext() {
			e, err := it.Next()
			require.NoError(t, err)
			events = append(events, e)
			next = e.GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId()
		}
		if next == "" || runID == "" {
			return events
		}
		runID = next
	}
}

// assertOneTask checks that a race's events landed in one workflow task:
// no workflow task completed between the first completion the race waits
// for and the last event it sends or awaits.
func assertOneTask(t testing.TB, p Pattern, events []*historypb.HistoryEvent) {
	t.Helper()
	first, last := -1, -1
	for i, e := range events {
		d := Describe(e)
		for _, s := range p.Race {
			switch {
			case s.Kind == StepAwaitEvent && strings.HasPrefix(d, s.Name):
				if first < 0 {
					first = i
				}
				last = i
			case s.Kind == StepUpdate && strings.HasPrefix(d, "WorkflowExecutionUpdateAccepted "+s.Name):
				// Accepted is written when the task that took the update
				// completes: that task is the one before it.
				last = i
				for last > 0 && events[last].GetEventType() != enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED {
					last--
				}
			}
		}
	}
	require.GreaterOrEqual(t, first, 0, "the race's events are in the history")
	for _, e := range events[first:last] {
		require.NotEqual(t, enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED, e.GetEventType(),
			"the race's events landed in one workflow task: %v", describeAll(events))
	}
}

func describeAll(events []*historypb.HistoryEvent) []string {
	var out []string
	for _, e := range events {
		out = append(out, Describe(e))
	}
	return out
}

// Describe names an event by its type and what identifies it to the
// workflow (an activity's key is its type's: activity ids shift with the
// overseer's commands, see docs).
func Describe(e *historypb.HistoryEvent) string {
	name := e.GetEventType().String() // ActivityTaskScheduled
	switch a := e.GetAttributes().(type) {
	case *historypb.HistoryEvent_ActivityTaskScheduledEventAttributes:
		return name + " " + a.ActivityTaskScheduledEventAttributes.GetActivityType().GetName()
	case *historypb.HistoryEvent_ActivityTaskCompletedEventAttributes:
		return name + " " + heldKey(a.ActivityTaskCompletedEventAttributes.GetResult())
	case *historypb.HistoryEvent_MarkerRecordedEventAttributes:
		return name + " " + a.MarkerRecordedEventAttributes.GetMarkerName() + " " + changeID(a.MarkerRecordedEventAttributes)
	case *historypb.HistoryEvent_WorkflowExecutionSignaledEventAttributes:
		return name + " " + a.WorkflowExecutionSignaledEventAttributes.GetSignalName()
	case *historypb.HistoryEvent_WorkflowExecutionUpdateAcceptedEventAttributes:
		return name + " " + a.WorkflowExecutionUpdateAcceptedEventAttributes.GetAcceptedRequest().GetInput().GetName()
	case *historypb.HistoryEvent_StartChildWorkflowExecutionInitiatedEventAttributes:
		return name + " " + a.StartChildWorkflowExecutionInitiatedEventAttributes.GetWorkflowType().GetName()
	case *historypb.HistoryEvent_WorkflowPropertiesModifiedEventAttributes:
		return name + " " + strings.Join(keys(a.WorkflowPropertiesModifiedEventAttributes.GetUpsertedMemo().GetFields(), false), ",")
	case *historypb.HistoryEvent_UpsertWorkflowSearchAttributesEventAttributes:
		return name + " " + strings.Join(keys(a.UpsertWorkflowSearchAttributesEventAttributes.GetSearchAttributes().GetIndexedFields(), false), ",")
	}
	return name
}

// heldKey is the key of a Held activity's result ("held b" → "b"), read
// with the default converter; "" for any other result.
func heldKey(ps *commonpb.Payloads) string {
	var s string
	if len(ps.GetPayloads()) != 1 || converter.GetDefaultDataConverter().FromPayload(ps.GetPayloads()[0], &s) != nil {
		return ""
	}
	key, _ := strings.CutPrefix(s, "held ")
	return key
}

func changeID(m *historypb.MarkerRecordedEventAttributes) string {
	var id string
	if p := m.GetDetails()["change-id"]; p != nil && len(p.GetPayloads()) > 0 {
		_ = converter.GetDefaultDataConverter().FromPayload(p.GetPayloads()[0], &id)
	}
	return id
}

// keys are the field names, sorted; without the overseer's when own is
// false.
func keys(fields map[string]*commonpb.Payload, own bool) []string {
	var out []string
	for k := range fields {
		if own || !overseerField(k) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func overseerField(k string) bool {
	return strings.HasPrefix(k, "overseer.") || strings.HasPrefix(k, "Overseer") || k == "TemporalChangeVersion"
}

// command describes e if it is one of the workflow's own commands, ""
// for any other event and for the overseer's documented ones: its version
// markers and side effects (no pattern has versions or side effects of its
// own, and a marker's change id is encoded with the pattern's converter),
// the markers of its judge's local activities (read with dc, the pattern's
// converter in the workflow's serialization context), its memo and search
// attribute upserts and its activities.
func command(e *historypb.HistoryEvent, dc converter.DataConverter) string {
	d := Describe(e)
	switch e.GetEventType() {
	case enumspb.EVENT_TYPE_MARKER_RECORDED:
		m := e.GetMarkerRecordedEventAttributes()
		if m.GetMarkerName() == "SideEffect" || m.GetMarkerName() == "MutableSideEffect" || m.GetMarkerName() == "Version" {
			return ""
		}
		if m.GetMarkerName() == "LocalActivity" {
			var data struct{ ActivityType string }
			if ps := m.GetDetails()["data"].GetPayloads(); len(ps) == 1 && dc.FromPayload(ps[0], &data) == nil &&
				strings.HasPrefix(data.ActivityType, "overseer.") {
				return ""
			}
		}
		return d
	case enumspb.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED:
		if len(keys(e.GetWorkflowPropertiesModifiedEventAttributes().GetUpsertedMemo().GetFields(), false)) == 0 {
			return ""
		}
		return d
	case enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
		if len(keys(e.GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields(), false)) == 0 {
			return ""
		}
		return d
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
		if strings.HasPrefix(e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName(), "overseer.") {
			return ""
		}
		return d
	case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCEL_REQUESTED, enumspb.EVENT_TYPE_TIMER_STARTED, enumspb.EVENT_TYPE_TIMER_CANCELED,
		enumspb.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED,
		enumspb.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED, enumspb.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED:
		return d
	}
	return ""
}
