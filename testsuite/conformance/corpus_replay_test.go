package conformance_test

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/testsuite/conformance"
)

// Every history of the corpus, recorded by each release's own code
// (testdata/corpus/RELEASE, TestRecordCorpus), replays on this code with
// the plugin in the mode it was recorded in, and with the plugin switched
// to off. A change that gives a recorded run other commands — a new
// command path without a version marker — fails here.
func TestCorpusReplays(t *testing.T) {
	releases, err := filepath.Glob(filepath.Join("testdata", "corpus", "*"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(releases), 2, "the corpus of this release and of the one before")
	require.DirExists(t, filepath.Join("testdata", "corpus", overseer.Release),
		"this release's own corpus: scripts/record-corpus.sh %s HEAD once its code is final", overseer.Release)
	patterns := map[string]conformance.Pattern{}
	for _, p := range conformance.Patterns() {
		patterns[p.Name] = p
	}
	modes := map[string]conformance.Mode{}
	for _, m := range conformance.Modes() {
		modes[m.Name] = m
	}
	for _, dir := range releases {
		b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
		require.NoError(t, err)
		var manifest []corpusEntry
		require.NoError(t, json.Unmarshal(b, &manifest))
		require.NotEmpty(t, manifest)
		for _, e := range manifest {
			t.Run(filepath.Base(dir)+"/"+e.File, func(t *testing.T) {
				p, ok := patterns[e.Pattern]
				require.True(t, ok, "pattern %s", e.Pattern)
				m, ok := modes[e.Mode]
				require.True(t, ok, "mode %s", e.Mode)
				for _, opts := range []overseer.Options{m.Options, {Mode: overseer.ModeOff}} {
					require.NoError(t, replayCorpus(t, filepath.Join(dir, e.File), p, opts, workflow.Execution{ID: e.WorkflowID, RunID: e.RunID}),
						"replays with the plugin in mode %s", opts.Mode)
				}
			})
		}
	}
}

func replayCorpus(t *testing.T, path string, p conformance.Pattern, opts overseer.Options, run workflow.Execution) error {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)
	plugin, err := overseer.NewPlugin(opts)
	require.NoError(t, err)
	ro := worker.WorkflowReplayerOptions{Plugins: []worker.Plugin{plugin}}
	if p.DataConverter != nil {
		ro.DataConverter = p.DataConverter()
	}
	r, err := worker.NewWorkflowReplayerWithOptions(ro)
	require.NoError(t, err)
	p.Register(r)
	return r.ReplayWorkflowHistoryWithOptions(log.NewStructuredLogger(slog.New(slog.DiscardHandler)), h,
		worker.ReplayWorkflowHistoryOptions{OriginalExecution: run})
}
