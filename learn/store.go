package learn

import (
	"bufio"
	"bytes"
	"cmp"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"
	"gocloud.dev/blob/fileblob"
	_ "gocloud.dev/blob/memblob" // mem:// buckets, for tests and trials

	"github.com/corohq/temporal-overseer/eval"
)

// ErrStore wraps the errors of the record store: it cannot be opened,
// read or written.
var ErrStore = errors.New("learn: record store")

// Store keeps the compact run records the learn rounds read from the jobs'
// histories, so that no round reads a closed job's history again: a
// bucket of gocloud.dev/blob (a local folder by default, or S3, GCS or
// Azure Blob Storage through a bucket URL). Each round writes what it
// read as shards (JSON lines, one object per page of jobs listed); train,
// calibrate and recalibrate read their records from there.
//
// Layout, under the bucket's root:
//
//	v1/<type>/<series>/<round>-<seq>-<newest>-<records>.jsonl   a shard
//	v1/<type>/<series>/<round>.json                            a round that finished reading
//
// where <type> is the workflow type (path-escaped), <series> the rounds'
// line (their Where's hash and the first round's run id, [Result.Series]),
// <round> the round's time and <newest> the latest close time among the
// shard's jobs (both as storeTime), <seq> the shard's number in its round
// and <records> the records it holds (a job without phases is a line too,
// without a record, so that it is not read again).
type Store struct {
	bucket *blob.Bucket
	// Location says where it is, for messages.
	Location string
}

// NewStore is a store on bucket (e.g. memblob.OpenBucket(nil) in tests).
func NewStore(bucket *blob.Bucket, location string) *Store {
	return &Store{bucket: bucket, Location: location}
}

// EnvStore names the environment variable of the record store's folder or
// bucket URL, when no flag gives one.
const EnvStore = "OVERSEER_LEARN_RECORDS"

// DefaultStoreDir is the record store's folder when none is given:
// $XDG_STATE_HOME/overseer/records, else ~/.local/state/overseer/records.
func DefaultStoreDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "overseer", "records"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("%w: no folder for the learn records: set $XDG_STATE_HOME or $HOME, or give one (%s): %v", ErrStore, EnvStore, err)
	}
	return filepath.Join(home, ".local", "state", "overseer", "records"), nil
}

// OpenStore opens the record store at location: a folder (created if
// missing), or a bucket URL of a driver registered with gocloud.dev/blob
// (file:// and mem:// are; import github.com/corohq/temporal-overseer/learn/blobdrivers
// for s3://, gs:// and azblob://, as the overseer CLI does). Empty: $OVERSEER_LEARN_RECORDS,
// else DefaultStoreDir.
func OpenStore(ctx context.Context, location string) (*Store, error) {
	if location == "" {
		location = os.Getenv(EnvStore)
	}
	if location == "" {
		d, err := DefaultStoreDir()
		if err != nil {
			return nil, err
		}
		location = d
	}
	if strings.Contains(location, "://") {
		b, err := blob.OpenBucket(ctx, location)
		if err != nil {
			return nil, fmt.Errorf("%w: open %s: %v (give a folder, or a bucket URL such as file:///var/lib/overseer/records?create_dir=1, s3://bucket?region=…, gs://bucket or azblob://container)", ErrStore, location, err)
		}
		return NewStore(b, location), nil
	}
	dir, err := filepath.Abs(location)
	if err != nil {
		return nil, fmt.Errorf("%w: folder %s: %v", ErrStore, location, err)
	}
	// Temporary files beside the shards: the folder is often a volume of
	// its own, and a rename across mounts fails.
	b, err := fileblob.OpenBucket(dir, &fileblob.Options{CreateDir: true, NoTempDir: true, Metadata: fileblob.MetadataDontWrite})
	if err != nil {
		return nil, fmt.Errorf("%w: folder %s: %v", ErrStore, dir, err)
	}
	return NewStore(b, dir), nil
}

// Close closes the store's bucket.
func (s *Store) Close() error { return s.bucket.Close() }

// storeTime is how times are written in keys: fixed width, so that keys
// sort as their times do.
const storeTime = "20060102T150405.000000000Z"

// storedJob is one line of a shard: a closed job read, with its record
// unless it ran no phase.
type storedJob struct {
	ID       string       `json:"id"`
	RunID    string       `json:"run_id"`
	Closed   time.Time    `json:"closed"`
	NoPhases bool         `json:"no_phases,omitempty"`
	Record   *eval.Record `json:"record,omitempty"`
}

func (j storedJob) key() string { return j.ID + "\x00" + j.RunID }

// shard is a shard's key, parsed.
type shard struct {
	key     string
	round   time.Time
	seq     int
	newest  time.Time
	records int
}

// series is what the store holds of one type's series: its shards and the
// rounds that finished reading.
type series struct {
	shards []shard
	rounds []time.Time
}

func seriesPrefix(typ, name string) string {
	return "v1/" + url.PathEscape(typ) + "/" + url.PathEscape(name) + "/"
}

func shardKey(typ, name string, round time.Time, seq int, newest time.Time, records int) string {
	return fmt.Sprintf("%s%s-%05d-%s-%d.jsonl", seriesPrefix(typ, name), round.UTC().Format(storeTime), seq, newest.UTC().Format(storeTime), records)
}

func roundKey(typ, name string, round time.Time) string {
	return seriesPrefix(typ, name) + round.UTC().Format(storeTime) + ".json"
}

// list reads the series' keys (no object is read).
func (s *Store) list(ctx context.Context, typ, name string) (series, error) {
	var out series
	prefix := seriesPrefix(typ, name)
	it := s.bucket.List(&blob.ListOptions{Prefix: prefix})
	for {
		o, err := it.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return series{}, fmt.Errorf("%w: list %s in %s: %v", ErrStore, prefix, s.Location, err)
		}
		rest := strings.TrimPrefix(o.Key, prefix)
		if r, ok := strings.CutSuffix(rest, ".json"); ok {
			if t, err := time.Parse(storeTime, r); err == nil {
				out.rounds = append(out.rounds, t)
			}
			continue
		}
		if sh, ok := parseShard(o.Key, rest); ok {
			out.shards = append(out.shards, sh)
		}
		// Anything else (a temporary file, a file someone put there) is
		// no shard.
	}
	return out, nil
}

func parseShard(key, rest string) (shard, bool) {
	rest, ok := strings.CutSuffix(rest, ".jsonl")
	parts := strings.Split(rest, "-")
	if !ok || len(parts) != 4 {
		return shard{}, false
	}
	round, err1 := time.Parse(storeTime, parts[0])
	seq, err2 := strconv.Atoi(parts[1])
	newest, err3 := time.Parse(storeTime, parts[2])
	records, err4 := strconv.Atoi(parts[3])
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return shard{}, false
	}
	return shard{key: key, round: round, seq: seq, newest: newest, records: records}, true
}

// records is how many records the series' shards hold.
func (sr series) records() int {
	n := 0
	for _, sh := range sr.shards {
		n += sh.records
	}
	return n
}

// highWater is the latest round that finished reading, zero when none did.
func (sr series) highWater() time.Time {
	var hw time.Time
	for _, r := range sr.rounds {
		if r.After(hw) {
			hw = r
		}
	}
	return hw
}

// writeShard writes jobs as one shard object (whole or not at all).
func (s *Store) writeShard(ctx context.Context, typ, name string, round time.Time, seq int, jobs []storedJob) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	var newest time.Time
	records := 0
	for _, j := range jobs {
		if err := enc.Encode(j); err != nil {
			return "", fmt.Errorf("%w: encode the record of job %q: %v", ErrStore, j.ID, err)
		}
		if j.Closed.After(newest) {
			newest = j.Closed
		}
		if j.Record != nil {
			records++
		}
	}
	key := shardKey(typ, name, round, seq, newest, records)
	if err := s.bucket.WriteAll(ctx, key, buf.Bytes(), &blob.WriterOptions{ContentType: "application/x-ndjson"}); err != nil {
		return "", fmt.Errorf("%w: write %s in %s: %v", ErrStore, key, s.Location, err)
	}
	return key, nil
}

// roundDone is what a round that finished reading leaves in the store.
type roundDone struct {
	At      time.Time `json:"at"`
	From    time.Time `json:"from,omitzero"`
	Read    int       `json:"read"`
	Skipped int       `json:"skipped"`
	Shards  int       `json:"shards"`
}

func (s *Store) writeRound(ctx context.Context, typ, name string, d roundDone) error {
	data, err := json.Marshal(d)
	if err != nil {
		return err
	}
	key := roundKey(typ, name, d.At)
	if err := s.bucket.WriteAll(ctx, key, data, &blob.WriterOptions{ContentType: "application/json"}); err != nil {
		return fmt.Errorf("%w: write %s in %s: %v", ErrStore, key, s.Location, err)
	}
	return nil
}

// eachJob calls each with every line of the shard, in order.
func (s *Store) eachJob(ctx context.Context, sh shard, each func(storedJob) error) error {
	r, err := s.bucket.NewReader(ctx, sh.key, nil)
	if err != nil {
		return fmt.Errorf("%w: read %s in %s: %v", ErrStore, sh.key, s.Location, err)
	}
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 256<<20)
	for line := 1; sc.Scan(); line++ {
		var j storedJob
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			return fmt.Errorf("%w: %s line %d: %v", ErrStore, sh.key, line, err)
		}
		if j.Record != nil {
			if err := j.Record.Validate(); err != nil {
				return fmt.Errorf("%w: %s line %d: %v", ErrStore, sh.key, line, err)
			}
		}
		if err := each(j); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: read %s in %s: %v", ErrStore, sh.key, s.Location, err)
	}
	return nil
}

// seen adds to into the jobs (by workflow and run id) of the shards keep
// selects, and says how many lines they hold.
func (s *Store) seen(ctx context.Context, shards []shard, keep func(shard) bool, into map[string]bool) (int, error) {
	lines := 0
	for _, sh := range shards {
		if !keep(sh) {
			continue
		}
		err := s.eachJob(ctx, sh, func(j storedJob) error {
			into[j.key()] = true
			lines++
			return nil
		})
		if err != nil {
			return lines, err
		}
	}
	return lines, nil
}

// newest is the newest max records of the series (all when max <= 0),
// newest first (by close time, then job id), each job once. It reads the
// shards newest first and stops once no older shard can hold a record
// newer than those kept, so it holds at most max records whatever the
// store holds.
func (s *Store) newest(ctx context.Context, sr series, max int) ([]eval.Record, error) {
	shards := slices.Clone(sr.shards)
	slices.SortFunc(shards, func(a, b shard) int { return b.newest.Compare(a.newest) })
	h := &jobHeap{}
	in := map[string]bool{}
	for _, sh := range shards {
		if max > 0 && h.Len() == max && sh.newest.Before((*h)[0].Closed) {
			break
		}
		err := s.eachJob(ctx, sh, func(j storedJob) error {
			if j.Record == nil || in[j.key()] {
				return nil
			}
			if max > 0 && h.Len() == max {
				if !older((*h)[0], j) {
					return nil
				}
				delete(in, heap.Pop(h).(storedJob).key())
			}
			heap.Push(h, j)
			in[j.key()] = true
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	jobs := []storedJob(*h)
	slices.SortFunc(jobs, func(a, b storedJob) int {
		if older(a, b) {
			return 1
		}
		if older(b, a) {
			return -1
		}
		return 0
	})
	out := make([]eval.Record, len(jobs))
	for i, j := range jobs {
		out[i] = *j.Record
	}
	return out, nil
}

// older reports whether a comes before b: closed earlier, or at the same
// time with a greater id (so that newest first is by id for a tie).
func older(a, b storedJob) bool {
	if c := a.Closed.Compare(b.Closed); c != 0 {
		return c < 0
	}
	return cmp.Or(strings.Compare(b.ID, a.ID), strings.Compare(b.RunID, a.RunID)) < 0
}

// jobHeap is a min-heap of jobs, the oldest on top.
type jobHeap []storedJob

func (h jobHeap) Len() int           { return len(h) }
func (h jobHeap) Less(i, j int) bool { return older(h[i], h[j]) }
func (h jobHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *jobHeap) Push(x any)        { *h = append(*h, x.(storedJob)) }
func (h *jobHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
