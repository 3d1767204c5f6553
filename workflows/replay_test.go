package workflows_test

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/workflows"
)

// The histories under testdata/ were recorded from the real dev server by
// go test ./testsuite/e2e -run RecordHistories -record-histories.

func replayer(t *testing.T, withPlugin bool) worker.WorkflowReplayer {
	t.Helper()
	var opts worker.WorkflowReplayerOptions
	if withPlugin {
		plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeManage, SearchAttributes: true})
		require.NoError(t, err)
		opts.Plugins = []worker.Plugin{plugin}
	}
	r, err := worker.NewWorkflowReplayerWithOptions(opts)
	require.NoError(t, err)
	workflows.Register(r)
	return r
}

func TestReplayJobRunUnderThePlugin(t *testing.T) {
	require.NoError(t, replayer(t, true).ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", "job_with_plugin.json")))
}

func TestReplayJobObservedWithAJudgeInTheBackground(t *testing.T) {
	// Its judge was not pure: the answers are in the boundaries' markers.
	require.NoError(t, replayer(t, true).ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", "job_observe_background.json")))
}

func TestReplayJobOfTheFirstStructure(t *testing.T) {
	// Recorded when a run had a coroutine per phase and a signal listener
	// (version 1 of the temporal-overseer change): it replays as it ran.
	require.NoError(t, replayer(t, true).ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", "job_with_plugin_structure_v1.json")))
}

func TestReplayJobPinnedBeforePlacement(t *testing.T) {
	// Recorded when the judge always answered in a local activity: the run
	// pinned no placement and replays with its local activity, although
	// today's default would answer in workflow code.
	require.NoError(t, replayer(t, true).ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", "job_with_plugin_local_activity.json")))
}

func TestReplayRedoneJob(t *testing.T) {
	// A looping job whose first gate a reviewer redid: the rerun of the
	// held phase, scheduled from the gate, replays as it ran.
	path := filepath.Join("testdata", "job_redone.json")
	require.NoError(t, replayer(t, true).ReplayWorkflowHistoryFromJSONFile(nil, path))

	// The history holds what the test is about: the redo's version marker
	// and an accepted resume whose gate was redone.
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)
	dc := converter.GetDefaultDataConverter()
	versioned, redone := false, 0
	for _, e := range h.GetEvents() {
		if m := e.GetMarkerRecordedEventAttributes(); m != nil && m.GetMarkerName() == "Version" {
			var id string
			if dc.FromPayloads(m.GetDetails()["change-id"], &id) == nil && id == "temporal-overseer/redo" {
				versioned = true
			}
		}
		if u := e.GetWorkflowExecutionUpdateCompletedEventAttributes(); u != nil && u.GetOutcome().GetSuccess() != nil {
			var g overseer.Gate
			if dc.FromPayloads(u.GetOutcome().GetSuccess(), &g) == nil && g.Action == overseer.ActionRedo {
				redone++
			}
		}
	}
	assert.True(t, versioned, "the redo's version marker")
	assert.Equal(t, 1, redone, "one gate redone")
}

func TestReplayJobStartedBeforeThePlugin(t *testing.T) {
	// Adding the plugin to a worker must not break runs already in flight.
	require.NoError(t, replayer(t, true).ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", "job_before_plugin.json")))
}

func TestReplayDetectsARemovedPlugin(t *testing.T) {
	// The replay test can fail: the overseer's commands are in the history.
	err := replayer(t, false).ReplayWorkflowHistoryFromJSONFile(nil, filepath.Join("testdata", "job_with_plugin.json"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "TMPRL1100", "a non-determinism error")
}

// historyCount counts what a run writes to its history through the
// workflow API, as the innermost outbound interceptor sees it: a marker for
// each side effect, local activity and first GetVersion of a change (which
// also upserts TemporalChangeVersion), and each search-attribute upsert.
// The SDK's test environment keeps no history; the calls are what the
// server's history would record.
type historyCount struct {
	markers, upserts int
	// memos counts the memo upserts (the job's summary).
	memos int
	// resumes counts the gates the reviewer resumed.
	resumes int
	// activities counts the regular activities scheduled, by type.
	activities map[string]int
	versions   map[string]bool
}

type countingWorker struct {
	interceptor.WorkerInterceptorBase
	c *historyCount
}

func (w *countingWorker) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &countingInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, c: w.c}
}

type countingInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	c *historyCount
}

func (i *countingInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&countingOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, c: i.c})
}

type countingOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	c *historyCount
}

func (o *countingOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.c.activities[activityType]++
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}

func (o *countingOutbound) ExecuteLocalActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	o.c.markers++
	return o.Next.ExecuteLocalActivity(ctx, activityType, args...)
}

func (o *countingOutbound) SideEffect(ctx workflow.Context, f func(ctx workflow.Context) any) converter.EncodedValue {
	o.c.markers++
	return o.Next.SideEffect(ctx, f)
}

func (o *countingOutbound) MutableSideEffect(ctx workflow.Context, id string, f func(ctx workflow.Context) any, equals func(a, b any) bool) converter.EncodedValue {
	o.c.markers++ // at most one: a value that did not change records none
	return o.Next.MutableSideEffect(ctx, id, f, equals)
}

func (o *countingOutbound) GetVersion(ctx workflow.Context, changeID string, minSupported, maxSupported workflow.Version) workflow.Version {
	if !o.c.versions[changeID] {
		o.c.versions[changeID] = true
		o.c.markers++
		o.c.upserts++
	}
	return o.Next.GetVersion(ctx, changeID, minSupported, maxSupported)
}

func (o *countingOutbound) UpsertSearchAttributes(ctx workflow.Context, attributes map[string]any) error {
	o.c.upserts++
	return o.Next.UpsertSearchAttributes(ctx, attributes)
}

func (o *countingOutbound) UpsertMemo(ctx workflow.Context, memo map[string]any) error {
	o.c.memos++
	return o.Next.UpsertMemo(ctx, memo)
}

func (o *countingOutbound) UpsertTypedSearchAttributes(ctx workflow.Context, attributes ...temporal.SearchAttributeUpdate) error {
	o.c.upserts++
	return o.Next.UpsertTypedSearchAttributes(ctx, attributes...)
}

// notPure hides its judge's Pure method: the overseer asks it off the
// workflow task, as it would a remote judge.
type notPure struct{ jev.Judge }

// countRun runs the reference job under the plugin with opts, on the SDK's
// test environment; a reviewer resumes each pause an hour after it opens.
func countRun(t *testing.T, opts overseer.Options, scenario activities.Scenario) *historyCount {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := s.NewTestWorkflowEnvironment()
	plugin, err := overseer.NewPlugin(opts)
	require.NoError(t, err)
	c := &historyCount{activities: map[string]int{}, versions: map[string]bool{}}
	// A plugin's interceptors come after the plugins' before it: this one
	// is inside the overseer's and sees the calls it makes.
	counter, err := temporal.NewSimplePlugin(temporal.SimplePluginOptions{Name: "history-count",
		WorkerInterceptors: []interceptor.WorkerInterceptor{&countingWorker{c: c}}})
	require.NoError(t, err)
	env.SetWorkerOptions(worker.Options{Plugins: []worker.Plugin{plugin, counter}})
	workflows.Register(env)
	(&activities.Agents{}).Register(env)
	var tick func()
	tick = func() {
		v, err := env.QueryWorkflow(overseer.StatusQueryName)
		require.NoError(t, err)
		var st overseer.Status
		require.NoError(t, v.Get(&st))
		if st.Paused {
			env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "reviewer", Note: "carry on"})
			c.resumes++
		}
		if !env.IsWorkflowCompleted() {
			env.RegisterDelayedCallback(tick, time.Hour)
		}
	}
	env.RegisterDelayedCallback(tick, time.Hour)
	env.ExecuteWorkflow(workflows.JobWorkflowName, workflows.JobInput{Objective: "Add CSV export", Scenario: scenario})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	return c
}

// The plugin adds at most two events per boundary to a job's history (one
// more when a gate is resumed) beyond what it adds once per run; with the
// default placement, one marker and at most one search-attribute upsert.
// The job's summary (what views read from visibility) adds at most one
// memo upsert per boundary and resume. Measured on runs of the current
// code; the recorded histories above check that old runs still replay.
func TestHistoryBudgetPerBoundary(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     overseer.Options
		scenario activities.Scenario
		// inWorkflow: the default placement, a pure judge in workflow code.
		inWorkflow, paused bool
	}{
		{"managed, paused and resumed", overseer.Options{Mode: overseer.ModeManage, SearchAttributes: true}, activities.Looping, true, true},
		{"observed, a judge in the background", overseer.Options{Mode: overseer.ModeObserve, SearchAttributes: true,
			Judge: notPure{overseer.HeuristicJudge{}}}, activities.OnTrack, false, false},
		{"managed, the judge in a local activity", overseer.Options{Mode: overseer.ModeManage, SearchAttributes: true,
			Placement: overseer.PlacementLocalActivity}, activities.OnTrack, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := countRun(t, tc.opts, tc.scenario)
			assert.Zero(t, c.activities[overseer.AssessActivityName], "the judge never ran as a regular activity")
			boundaries := 0
			for _, n := range c.activities {
				boundaries += n
			}
			require.Positive(t, boundaries)
			assert.Equal(t, tc.paused, c.resumes > 0, "gates resumed: %d", c.resumes)
			// Once per run: each version's marker and TemporalChangeVersion
			// upsert, and the pinned configuration's marker.
			markers, upserts := c.markers-len(c.versions)-1, c.upserts-len(c.versions)
			msg := fmt.Sprintf("%d boundaries, %d resumes: %d markers, %d upserts, versions %v", boundaries, c.resumes, c.markers, c.upserts, c.versions)
			assert.LessOrEqual(t, markers+upserts, 2*boundaries+c.resumes, "events per boundary; %s", msg)
			if tc.inWorkflow {
				assert.Equal(t, boundaries, markers, "one marker per boundary; %s", msg)
				assert.LessOrEqual(t, upserts, boundaries+c.resumes, "at most one upsert per boundary and resume; %s", msg)
			}
			// What the budget is about is there: every boundary's answer in
			// a marker, and upserts of the job's status.
			assert.GreaterOrEqual(t, markers, boundaries, "a marker per boundary; %s", msg)
			assert.Positive(t, upserts, "status upserts; %s", msg)
			assert.Positive(t, c.memos, "the summary is written; %s", msg)
			assert.LessOrEqual(t, c.memos, boundaries+c.resumes, "at most one summary upsert per boundary and resume; %d memos, %s", c.memos, msg)
		})
	}
}
