package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/learn"
	"github.com/corohq/temporal-overseer/ops"
)

// Export streams: with Each it hands over each page of records as soon as
// the page is read (16 histories at once keep the listing's order) and
// keeps none; a run Skip names is not read. `overseer export --out`
// writes the same records, and leaves no file when nothing matches.
func TestE2EExportStreamsPageByPageInTheListingsOrder(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	suffix := fmt.Sprint(time.Now().UnixNano())
	typ := "E2EExportStream" + suffix
	tq := storeWorkers(t, srv, typ, suffix)
	ids := storeJobs(t, c, tq, typ, "e2e-export-stream-"+suffix, 7)
	query := learn.Query(typ, fmt.Sprintf("TaskQueue = '%s'", tq), time.Time{})
	eventually(t, "the 7 jobs to be visible as closed", 30*time.Second, func() bool {
		res, err := ops.Export(context.Background(), c, ops.ExportOptions{Query: query, Parallel: 1})
		require.NoError(t, err)
		return len(res.Records) == 7
	})
	one, err := ops.Export(context.Background(), c, ops.ExportOptions{Query: query, Parallel: 1})
	require.NoError(t, err)

	counter := newHistoryCounter(c)
	var streamed []eval.Record
	var pages, atPage []int
	skipped := ids[3]
	res, err := ops.Export(context.Background(), counter, ops.ExportOptions{Query: query, PageSize: 3,
		Skip: func(id, _ string) bool { return id == skipped },
		Each: func(j ops.ExportedJob) error {
			require.False(t, j.NoPhases)
			require.NotEmpty(t, j.RunID)
			require.False(t, j.Closed.IsZero())
			streamed = append(streamed, j.Record)
			return nil
		},
		Page: func(next []byte) error {
			pages = append(pages, len(streamed))
			if len(next) > 0 {
				atPage = append(atPage, len(streamed))
			}
			return nil
		}})
	require.NoError(t, err)
	assert.Empty(t, res.Records, "with Each, the export keeps no record")
	assert.Equal(t, [3]int{6, 1, 6}, [3]int{res.Read, res.Skipped, res.Exported})
	// Pages of 3 listed jobs, in the listing's order; the skipped one is
	// in one of them, unread.
	var want []string
	var wantPages []int
	for i, r := range one.Records {
		if r.ID != skipped {
			want = append(want, r.ID)
		}
		if i%3 == 2 || i == len(one.Records)-1 {
			wantPages = append(wantPages, len(want))
		}
	}
	assert.Equal(t, wantPages, pages, "a page of 3 listed jobs at a time, the skipped one not read")
	assert.Equal(t, wantPages[:2], atPage, "a next page after each but the last")
	var got []string
	for _, r := range streamed {
		got = append(got, r.ID)
	}
	assert.Equal(t, want, got, "in the listing's order, read 16 at a time")
	reads, total := counter.counts()
	assert.Equal(t, 6, total)
	assert.Zero(t, reads[skipped])

	out := filepath.Join(t.TempDir(), "runs.jsonl")
	code, stdout, errOut := overseerCLI(srv, "export", "--query", query, "--out", out)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, stdout, "exported 7 runs (7 succeeded, 0 failed or blocked) to "+out)
	f, err := os.Open(out)
	require.NoError(t, err)
	recs, err := eval.ReadRecords(f)
	f.Close()
	require.NoError(t, err)
	assert.Len(t, recs, 7)
	entries, err := os.ReadDir(filepath.Dir(out))
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left beside it")

	none := filepath.Join(t.TempDir(), "none.jsonl")
	code, _, errOut = overseerCLI(srv, "export", "--query", learn.Query(typ+"Nothing", "", time.Time{}), "--out", none)
	assert.NotEqual(t, 0, code)
	assert.Contains(t, errOut, "no closed job with phases matches the query")
	entries, err = os.ReadDir(filepath.Dir(none))
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing exported, no file")
	assert.False(t, strings.Contains(errOut, "write "), errOut)
}
