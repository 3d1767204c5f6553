package learn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gocloud.dev/blob/memblob"

	"github.com/corohq/temporal-overseer/eval"
)

func memStore(t *testing.T) *Store {
	t.Helper()
	st := NewStore(memblob.OpenBucket(nil), "mem://")
	t.Cleanup(func() { _ = st.Close() })
	return st
}

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// job is a stored job closed at minute m, with phases unless noPhases.
func job(id string, m int, noPhases bool) storedJob {
	j := storedJob{ID: id, RunID: "run-" + id, Closed: t0.Add(time.Duration(m) * time.Minute), NoPhases: noPhases}
	if !noPhases {
		j.Record = &eval.Record{Format: eval.RecordFormat, ID: id, Outcome: eval.OutcomeSucceeded, Unit: eval.UnitPhase, Steps: []eval.Step{{Phase: "code"}}}
	}
	return j
}

func ids(recs []eval.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.ID)
	}
	return out
}

// The newest records come newest first, each job once, the jobs without
// phases left out; a cap keeps the newest and reads no shard older than
// the records it keeps (an unreadable old shard is never opened).
func TestStoreNewestKeepsTheNewestRecordsOnce(t *testing.T) {
	ctx := context.Background()
	st := memStore(t)
	const typ, name = "Job", "00000000-run"
	r1, r2 := t0.Add(time.Hour), t0.Add(2*time.Hour)
	_, err := st.writeShard(ctx, typ, name, r1, 0, []storedJob{job("a", 1, false), job("b", 2, false), job("nop", 3, true)})
	require.NoError(t, err)
	_, err = st.writeShard(ctx, typ, name, r1, 1, []storedJob{job("c", 4, false), job("d", 5, false)})
	require.NoError(t, err)
	// The second round listed d again (the overlap) and read e, f.
	_, err = st.writeShard(ctx, typ, name, r2, 0, []storedJob{job("d", 5, false), job("e", 61, false), job("f", 62, false)})
	require.NoError(t, err)
	require.NoError(t, st.writeRound(ctx, typ, name, roundDone{At: r1}))
	// Not shards: a temporary file, another series.
	require.NoError(t, st.bucket.WriteAll(ctx, seriesPrefix(typ, name)+"x.jsonl.123.tmp", []byte("junk"), nil))
	_, err = st.writeShard(ctx, typ, "other", r1, 0, []storedJob{job("z", 9, false)})
	require.NoError(t, err)

	sr, err := st.list(ctx, typ, name)
	require.NoError(t, err)
	assert.Len(t, sr.shards, 3)
	assert.Equal(t, 7, sr.records(), "records counted from the keys, the job without phases not among them")
	assert.Equal(t, r1, sr.highWater())
	assert.Len(t, sr.until(r1).shards, 2)

	tests := []struct {
		max  int
		want []string
	}{
		{0, []string{"f", "e", "d", "c", "b", "a"}},
		{3, []string{"f", "e", "d"}},
		{4, []string{"f", "e", "d", "c"}},
		{10, []string{"f", "e", "d", "c", "b", "a"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.max), func(t *testing.T) {
			recs, err := st.newest(ctx, sr, tt.max)
			require.NoError(t, err)
			assert.Equal(t, tt.want, ids(recs))
		})
	}

	// An old shard that no longer reads: a cap that the newer shards fill
	// never opens it; reading everything says which shard and line.
	old := shardKey(typ, name, t0, 0, t0, 1)
	require.NoError(t, st.bucket.WriteAll(ctx, old, []byte("{not json\n"), nil))
	sr, err = st.list(ctx, typ, name)
	require.NoError(t, err)
	recs, err := st.newest(ctx, sr, 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"f", "e"}, ids(recs))
	_, err = st.newest(ctx, sr, 0)
	require.ErrorIs(t, err, ErrStore)
	assert.Contains(t, err.Error(), old+" line 1")
}

// A round's series: the previous round's when it learned from the same
// jobs, else a new one named by the round's run.
func TestSeriesFor(t *testing.T) {
	same := seriesFor("TaskQueue = 'a'", "run-1", nil)
	tests := []struct {
		name  string
		where string
		prev  *Result
		want  string
	}{
		{"first round", "TaskQueue = 'a'", nil, seriesFor("TaskQueue = 'a'", "run-2", nil)},
		{"the same jobs", " TaskQueue = 'a' ", &Result{Series: same}, same},
		{"other jobs", "TaskQueue = 'b'", &Result{Series: same}, seriesFor("TaskQueue = 'b'", "run-2", nil)},
		{"a round before the store", "TaskQueue = 'a'", &Result{}, seriesFor("TaskQueue = 'a'", "run-2", nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, seriesFor(tt.where, "run-2", tt.prev))
		})
	}
	assert.NotEqual(t, same, seriesFor("TaskQueue = 'a'", "run-2", nil), "named by the run")
	assert.Regexp(t, `^[0-9a-f]{8}-run-1$`, same)
}

// A folder is created; a URL of a registered scheme opens; anything else
// is refused in one sentence that says what to give.
func TestOpenStore(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "a", "records")
	st, err := OpenStore(ctx, dir)
	require.NoError(t, err)
	_, err = st.writeShard(ctx, "Job", "s", t0, 0, []storedJob{job("a", 1, false)})
	require.NoError(t, err)
	require.NoError(t, st.Close())
	matches, err := filepath.Glob(filepath.Join(dir, "v1", "Job", "s", "*.jsonl"))
	require.NoError(t, err)
	assert.Len(t, matches, 1, "one shard, no metadata beside it")

	st, err = OpenStore(ctx, "file://"+dir)
	require.NoError(t, err)
	sr, err := st.list(ctx, "Job", "s")
	require.NoError(t, err)
	assert.Equal(t, 1, sr.records())
	require.NoError(t, st.Close())

	t.Setenv(EnvStore, "mem://")
	st, err = OpenStore(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, "mem://", st.Location)
	require.NoError(t, st.Close())

	_, err = OpenStore(ctx, "nosuch://bucket")
	require.ErrorIs(t, err, ErrStore)
	assert.Contains(t, err.Error(), "give a folder, or a bucket URL")

	t.Setenv(EnvStore, "")
	t.Setenv("XDG_STATE_HOME", filepath.Join(t.TempDir(), "state"))
	d, err := DefaultStoreDir()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(os.Getenv("XDG_STATE_HOME"), "overseer", "records"), d)
	assert.False(t, errors.Is(err, ErrStore))
}
