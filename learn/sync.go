package learn

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/ops"
)

// Defaults of the rounds' reading.
const (
	// DefaultOverlap is how far before the end of the last round that
	// finished reading a round lists the closed jobs again: a job that
	// closed before that end but showed in visibility only after it is
	// read by the next round. The jobs it lists again are in the record
	// store already and are not read again.
	DefaultOverlap = 10 * time.Minute
	// DefaultMaxRuns is how many of the newest closed jobs in the record
	// store a round measures, refits and recalibrates on (Input.MaxRuns):
	// what a round holds in memory stays flat however many jobs closed.
	DefaultMaxRuns = 5000
	// DefaultShardJobs is how many closed jobs a listing page, and so a
	// shard of the record store, holds at most: what a round's retry
	// may read again after its worker died.
	DefaultShardJobs = 100
)

// whereHash names the jobs a series learns from (its Where clause).
func whereHash(where string) string {
	h := fnv.New32a()
	h.Write([]byte(strings.TrimSpace(where)))
	return fmt.Sprintf("%08x", h.Sum32())
}

// seriesFor is the series a round writes its records in: the previous
// round's when it learned from the same jobs, else a new one named by
// runID, the run of the round (a round with no previous one, or whose
// previous one kept no series, reads every retained job once more).
func seriesFor(where, runID string, prev *Result) string {
	h := whereHash(where)
	if prev != nil && strings.HasPrefix(prev.Series, h+"-") {
		return prev.Series
	}
	return h + "-" + runID
}

// seriesOf is the series of an activity's input, or, for an input from a
// round begun before the record store (no series), the series its
// workflow would name now.
func seriesOf(ctx context.Context, name, where string) string {
	if name != "" {
		return name
	}
	return seriesFor(where, activity.GetInfo(ctx).WorkflowExecution.RunID, nil)
}

// exportProgress is the export's heartbeat: where a retry resumes the
// listing and what the round did so far.
type exportProgress struct {
	// Before is the round's end, so that a retry of another round's
	// activity ignores it.
	Before time.Time `json:"before"`
	// Token is the listing page after the last shard written.
	Token   []byte `json:"token,omitempty"`
	Shards  int    `json:"shards"`
	Read    int    `json:"read"`
	Skipped int    `json:"skipped"`
}

// store is the activities' record store, opened on first use.
func (a *Activities) store(ctx context.Context) (*Store, error) {
	if a.Store != nil {
		return a.Store, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.opened == nil {
		st, err := OpenStore(ctx, "")
		if err != nil {
			return nil, err
		}
		a.opened = st
	}
	return a.opened, nil
}

// until is the series without anything written by rounds after before.
func (sr series) until(before time.Time) series {
	var out series
	for _, sh := range sr.shards {
		if !sh.round.After(before) {
			out.shards = append(out.shards, sh)
		}
	}
	for _, r := range sr.rounds {
		if !r.After(before) {
			out.rounds = append(out.rounds, r)
		}
	}
	return out
}

// syncRecords reads into the store the closed jobs of typ (narrowed by
// where) that closed by before and that it does not hold: those closed
// since the last round that finished reading, less overlap, or every
// retained one when none did. It reads at most a.Parallel histories at
// once and writes a shard per listing page; it heartbeats its progress,
// and a retry resumes where it was (the listing page after its last
// shard, and no job read again that a shard holds). A retry on a worker
// whose store does not hold the shards its heartbeat says were written (a
// replica with a store of its own) lists from the start instead, so that
// the jobs of those shards are read into this store rather than lost, and
// says so in its note. It returns the series as it is now, how many
// histories this round has read (its earlier attempts included, unless
// it started over) and the note ("" when nothing was wrong).
func (a *Activities) syncRecords(ctx context.Context, st *Store, typ, where, name string, before time.Time, overlap time.Duration) (series, int, string, error) {
	if a.Client == nil {
		return series{}, 0, "", fmt.Errorf("%w: no Temporal client to read the jobs with", ErrStore)
	}
	sr, err := st.list(ctx, typ, name)
	if err != nil {
		return series{}, 0, "", err
	}
	var mine, earlier []shard
	for _, sh := range sr.shards {
		if sh.round.Equal(before) {
			mine = append(mine, sh)
		} else {
			earlier = append(earlier, sh)
		}
	}
	seen := map[string]bool{}
	// An earlier attempt of this round wrote these: not read again.
	readBefore, err := st.seen(ctx, mine, func(shard) bool { return true }, seen)
	if err != nil {
		return series{}, 0, "", err
	}
	var hw time.Time
	for _, r := range sr.rounds {
		if r.Equal(before) { // this round finished reading in an earlier attempt
			return sr.until(before), readBefore, "", nil
		}
		if r.After(hw) && r.Before(before) {
			hw = r
		}
	}
	if overlap <= 0 {
		overlap = DefaultOverlap
	}
	var from time.Time
	if !hw.IsZero() {
		from = hw.Add(-overlap)
	}
	// The jobs listed again (closed since from) that earlier rounds read.
	if _, err := st.seen(ctx, earlier, func(sh shard) bool { return !sh.newest.Before(from) }, seen); err != nil {
		return series{}, 0, "", err
	}

	p := exportProgress{Before: before, Shards: len(mine), Read: readBefore}
	var resume []byte
	var note string
	var last exportProgress
	if activity.HasHeartbeatDetails(ctx) && activity.GetHeartbeatDetails(ctx, &last) == nil && last.Before.Equal(before) {
		if len(mine) >= last.Shards {
			resume = last.Token
			p.Skipped = last.Skipped
		} else {
			// Resuming from the token would skip the pages of shards this
			// store does not hold: their jobs would be in no store the
			// round reads. Fail-safe: read them again.
			note = fmt.Sprintf("an earlier attempt of this round wrote %d shards of records that the record store %s does not hold "+
				"(another worker with a store of its own?): this attempt listed the jobs from the start; give every worker that runs learn rounds one shared store (a bucket URL), "+
				"or run the rounds on a single worker (--learn-task-queue)", last.Shards, st.Location)
			activity.GetLogger(ctx).Warn("learn: the record store does not hold an earlier attempt's shards; listing from the start",
				"store", st.Location, "shards_written", last.Shards, "shards_held", len(mine))
		}
	}
	var mu sync.Mutex
	progress := func() any { mu.Lock(); defer mu.Unlock(); return p }
	defer heartbeatEvery(ctx, heartbeatInterval, progress)()

	query := Query(typ, where, before)
	if !from.IsZero() {
		query += fmt.Sprintf(" AND CloseTime >= '%s'", from.UTC().Format(time.RFC3339Nano))
	}
	var page []storedJob
	pageSize := a.PageSize
	if pageSize <= 0 {
		pageSize = DefaultShardJobs
	}
	opts := ops.ExportOptions{Query: query, DataConverter: a.DataConverter, Namespace: activity.GetInfo(ctx).Namespace,
		Parallel: a.Parallel, PageSize: pageSize, PageToken: resume,
		Skip: func(id, runID string) bool { return seen[id+"\x00"+runID] },
		Each: func(j ops.ExportedJob) error {
			sj := storedJob{ID: j.Record.ID, RunID: j.RunID, Closed: j.Closed, NoPhases: j.NoPhases}
			if !j.NoPhases {
				rec := j.Record
				sj.Record = &rec
			}
			seen[sj.key()] = true
			page = append(page, sj)
			return nil
		},
		Page: func(next []byte) error {
			if len(page) > 0 {
				key, err := st.writeShard(ctx, typ, name, before, p.Shards, page)
				if err != nil {
					return err
				}
				sh, _ := parseShard(key, strings.TrimPrefix(key, seriesPrefix(typ, name)))
				sr.shards = append(sr.shards, sh)
			}
			wrote := len(page) > 0
			mu.Lock()
			if wrote {
				p.Shards++
			}
			p.Read += len(page)
			p.Token = next
			cur := p
			mu.Unlock()
			page = page[:0]
			activity.RecordHeartbeat(ctx, cur)
			return nil
		},
	}
	res, err := ops.Export(ctx, a.Client, opts)
	var invalid *serviceerror.InvalidArgument
	if err != nil && resume != nil && errors.As(err, &invalid) {
		// A page token the server no longer takes: list from the start;
		// the shards written keep every job they hold from being read.
		opts.PageToken = nil
		res, err = ops.Export(ctx, a.Client, opts)
	}
	if err != nil {
		return series{}, 0, "", err
	}
	mu.Lock()
	p.Skipped += res.Skipped
	done := roundDone{At: before, From: from, Read: p.Read, Skipped: p.Skipped, Shards: p.Shards}
	mu.Unlock()
	if err := st.writeRound(ctx, typ, name, done); err != nil {
		return series{}, 0, "", err
	}
	sr.rounds = append(sr.rounds, before)
	return sr.until(before), done.Read, note, nil
}

// load is the newest max records of the type (DefaultMaxRuns when 0)
// closed by before, newest first, from the record store (or a.Records),
// and how many the store holds. A round begun before the store had one
// reads them into it first.
func (a *Activities) load(ctx context.Context, typ, where, name string, before time.Time, max int) ([]eval.Record, int, error) {
	if a.Records != nil {
		recs, err := a.Records(ctx, typ, where, before)
		return recs, len(recs), err
	}
	st, err := a.store(ctx)
	if err != nil {
		return nil, 0, err
	}
	sr, err := st.list(ctx, typ, name)
	if err != nil {
		return nil, 0, err
	}
	sr = sr.until(before)
	if !slices.ContainsFunc(sr.rounds, before.Equal) {
		// This store has not read this round's jobs (a round begun before
		// the store, or a worker other than the export's with a store of
		// its own): read what it lacks first, rather than refit on stale
		// records.
		if sr, _, _, err = a.syncRecords(ctx, st, typ, where, name, before, 0); err != nil {
			return nil, 0, err
		}
	}
	if max == 0 {
		max = DefaultMaxRuns
	}
	recs, err := st.newest(ctx, sr, max)
	return recs, sr.records(), err
}
