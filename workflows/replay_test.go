package workflows_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/overseer"
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

func TestHistoryBudgetPerBoundary(t *testing.T) {
	for _, file := range []string{"job_with_plugin.json", "job_observe_background.json", "job_with_plugin_structure_v1.json", "job_with_plugin_local_activity.json"} {
		t.Run(file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", file))
			require.NoError(t, err)
			var h struct {
				Events []struct {
					EventType string `json:"eventType"`
				} `json:"events"`
			}
			require.NoError(t, json.Unmarshal(raw, &h))
			count := map[string]int{}
			for _, e := range h.Events {
				count[e.EventType]++
			}
			boundaries := count["EVENT_TYPE_ACTIVITY_TASK_COMPLETED"]
			require.Positive(t, boundaries)
			assert.Zero(t, count["EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"]-boundaries, "the judge never ran as a regular activity")
			// Once per run: the version marker, the pinned configuration and the
			// TemporalChangeVersion upsert.
			perBoundary := float64(count["EVENT_TYPE_MARKER_RECORDED"]+count["EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES"]-3) / float64(boundaries)
			assert.LessOrEqual(t, perBoundary, 2.0, "events added per boundary: %v", count)
		})
	}
}
