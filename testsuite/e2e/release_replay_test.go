package e2e_test

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/codec"
	"github.com/corohq/temporal-overseer/learn"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/workflows"
)

// TestReleaseHistoriesReplay replays, on this code, the reference job's
// histories every release recorded with its own code
// (testdata/releases/RELEASE, scripts/record-release.sh), with the plugin
// and, where one was recorded with a codec, with that codec. A release's
// folder is kept for ever: a change that stops one replaying strands the
// jobs that release left in flight.
func TestReleaseHistoriesReplay(t *testing.T) {
	manifests, err := filepath.Glob(filepath.Join("testdata", "releases", "*", "manifest.json"))
	require.NoError(t, err)
	require.NotEmpty(t, manifests, "no release histories under testdata/releases")
	for _, path := range manifests {
		release := filepath.Base(filepath.Dir(path))
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		var m releaseManifest
		require.NoError(t, json.Unmarshal(b, &m), path)
		for _, h := range m.Histories {
			t.Run(release+"/"+h.File, func(t *testing.T) {
				require.NoError(t, replayReleaseHistory(t, filepath.Join(filepath.Dir(path), h.File), h.CodecKey), "%s (%s)", h.Scenario, m.Commit)
			})
		}
	}
}

// replayReleaseHistory replays one recorded history with the plugin, as a
// worker of this code would, with the AES-GCM codec of key if not "".
func replayReleaseHistory(t *testing.T, path, key string) error {
	t.Helper()
	var dc converter.DataConverter
	if key != "" {
		k, err := base64.StdEncoding.DecodeString(key)
		require.NoError(t, err)
		c, err := codec.NewAESGCM(k)
		require.NoError(t, err)
		dc = codec.DataConverter(c)
	}
	plugin, err := overseer.NewPlugin(overseer.Options{DataConverter: dc})
	require.NoError(t, err)
	r, err := sdkworker.NewWorkflowReplayerWithOptions(sdkworker.WorkflowReplayerOptions{Plugins: []sdkworker.Plugin{plugin}, DataConverter: dc})
	require.NoError(t, err)
	workflows.Register(r)
	workflows.RegisterRecorded(r)
	r.RegisterWorkflowWithOptions(learn.Workflow, workflow.RegisterOptions{Name: learn.WorkflowName})
	r.RegisterWorkflowWithOptions(unawaitedJob, workflowRegisterOptions(unawaitedJobName))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)
	return r.ReplayWorkflowHistory(nil, h)
}
