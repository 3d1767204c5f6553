package conformance_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/log"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/testsuite/conformance"
)

var recordCorpus = flag.String("record-corpus", "", "record the corpus of histories into this folder (testdata/corpus/RELEASE)")

// corpusEntry is one recorded run of the corpus (manifest.json).
type corpusEntry struct {
	File       string `json:"file"`
	Pattern    string `json:"pattern"`
	Mode       string `json:"mode"`
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
}

// corpusModes are the modes the corpus is recorded in: those that write to
// a run's history.
var corpusModes = []string{"observe", "manage"}

// TestRecordCorpus records, on a dev server, every pattern in every mode
// that writes to history, one JSON file per run, into the folder
// -record-corpus names, with a manifest.json; TestCorpusReplays replays
// them. A release's corpus is recorded by that release's own code: this
// file and the package's non-test files are copied into a git worktree of
// the release's commit and run there (scripts/record-corpus.sh). It uses
// only what every release has (testsuite.StartDevServer, the package's
// RunOnServer and History), so that it runs on each.
func TestRecordCorpus(t *testing.T) {
	if *recordCorpus == "" {
		t.Skip("records the corpus only with -record-corpus DIR")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{Output: io.Discard, Logger: log.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	require.NoError(t, err)
	defer func() { _ = srv.Stop() }()
	require.NoError(t, os.MkdirAll(*recordCorpus, 0o755))
	var manifest []corpusEntry
	for _, p := range conformance.Patterns() {
		if p.Name == "ContextBoundCodec" {
			// Its codec binds each payload to the run's namespace, and a
			// replayer outside the server has none of its own.
			continue
		}
		for _, m := range conformance.Modes() {
			if !slices.Contains(corpusModes, m.Name) {
				continue
			}
			_, run := conformance.RunOnServer(t, srv.Client(), p, m)
			events := conformance.History(ctx, t, srv.Client(), run.ID, run.RunID)
			for i, runEvents := range splitRuns(events) {
				e := corpusEntry{File: fmt.Sprintf("%s.%s.run%d.json", p.Name, m.Name, i+1), Pattern: p.Name, Mode: m.Name,
					WorkflowID: run.ID, RunID: runEvents.runID}
				if i == 0 {
					e.RunID = run.RunID
				}
				b, err := protojson.MarshalOptions{Indent: "  "}.Marshal(&historypb.History{Events: runEvents.events})
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(*recordCorpus, e.File), b, 0o644))
				manifest = append(manifest, e)
			}
		}
	}
	b, err := json.MarshalIndent(manifest, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(*recordCorpus, "manifest.json"), append(b, '\n'), 0o644))
}

type recordedRun struct {
	runID  string
	events []*historypb.HistoryEvent
}

// splitRuns splits a chain of runs' events (History) into each run's, with
// its run id (the first run's is the execution's; a continued run's is in
// the event that continued it).
func splitRuns(events []*historypb.HistoryEvent) []recordedRun {
	var runs []recordedRun
	next := ""
	for _, e := range events {
		if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED {
			runs = append(runs, recordedRun{runID: next})
		}
		runs[len(runs)-1].events = append(runs[len(runs)-1].events, e)
		if id := e.GetWorkflowExecutionContinuedAsNewEventAttributes().GetNewExecutionRunId(); id != "" {
			next = id
		}
	}
	return runs
}
