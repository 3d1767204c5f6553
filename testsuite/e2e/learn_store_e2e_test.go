package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/learn"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
)

// historyCounter is a client that counts the histories read through it,
// by workflow id, and can fail one read.
type historyCounter struct {
	client.Client
	mu    sync.Mutex
	reads map[string]int
	calls int
	// failCall is the read (counted from 1) that fails, once; 0: none.
	failCall int
	failed   bool
	// onFail, if set, runs (in a goroutine) when the read fails.
	onFail func()
}

func newHistoryCounter(c client.Client) *historyCounter {
	return &historyCounter{Client: c, reads: map[string]int{}}
}

func (h *historyCounter) GetWorkflowHistory(ctx context.Context, id, runID string, long bool, filter enumspb.HistoryEventFilterType) client.HistoryEventIterator {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	if h.calls == h.failCall {
		h.failed = true
		if h.onFail != nil {
			go h.onFail()
		}
		return failingHistory{}
	}
	h.reads[id]++
	return h.Client.GetWorkflowHistory(ctx, id, runID, long, filter)
}

// counts is how many times each job's history was read, and in all.
func (h *historyCounter) counts() (map[string]int, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, k := range h.reads {
		n += k
	}
	return maps.Clone(h.reads), n
}

// failingHistory is a history read that fails, as one from a server that
// went away would.
type failingHistory struct{}

func (failingHistory) HasNext() bool { return true }
func (failingHistory) Next() (*historypb.HistoryEvent, error) {
	return nil, errors.New("e2e: the history read failed")
}

// storeJobs runs n jobs of the simulated agent of type typ in observe mode
// on tq (no gate: they close on their own; all deliver, so no round is
// ready to refit or recalibrate) and returns their ids once all have
// closed.
func storeJobs(t *testing.T, c client.Client, tq, typ, prefix string, n int) []string {
	t.Helper()
	var runs []client.WorkflowRun
	for i := range n {
		runs = append(runs, startTyped(t, c, tq, typ, fmt.Sprintf("%s-%d", prefix, i), nil, simInput{Seed: fmt.Sprint(i)}))
	}
	var ids []string
	for _, r := range runs {
		require.NoError(t, r.Get(context.Background(), nil))
		ids = append(ids, r.GetID())
	}
	return ids
}

// storeWorkers starts the simulated agent's workers for typ, in observe
// mode, and returns their task queue.
func storeWorkers(t *testing.T, srv server, typ, suffix string) string {
	t.Helper()
	return startWorkersWithType(t, srv, worker.Config{TaskQueue: "e2e-learn-store-jobs-" + suffix, Modes: map[string]overseer.Mode{typ: overseer.ModeObserve}},
		func(r sdkworker.Registry) {
			r.RegisterWorkflowWithOptions(simAgent, workflow.RegisterOptions{Name: typ})
			for _, p := range simPhases {
				r.RegisterActivityWithOptions(simPhase, activity.RegisterOptions{Name: simActivity(p)})
			}
		})
}

// learnWorker hosts the learn workflow and a on a task queue of its own,
// as `overseer worker --learn-task-queue` does, and returns the queue.
func learnWorker(t *testing.T, c client.Client, a *learn.Activities, suffix string) string {
	t.Helper()
	tq := "e2e-learn-store-" + suffix
	lw := sdkworker.New(c, tq, sdkworker.Options{})
	learn.RegisterActivities(lw, a)
	require.NoError(t, lw.Start())
	t.Cleanup(lw.Stop)
	return tq
}

// runLearnRound waits until count closed jobs of typ matching where are
// visible, then runs a round as `overseer learn run` does on tq.
func runLearnRound(t *testing.T, srv server, c client.Client, typ, where, tq string, count int) learn.Result {
	t.Helper()
	eventually(t, fmt.Sprintf("the %d jobs to be visible as closed", count), 30*time.Second, func() bool {
		r, err := c.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Query: learn.Query(typ, where, time.Time{})})
		require.NoError(t, err)
		return r.GetCount() == int64(count)
	})
	start := time.Now()
	code, out, errOut := overseerCLI(srv, "learn", "run", "--type", typ, "--where", where, "--task-queue", tq, "--json")
	require.Equal(t, 0, code, errOut)
	t.Logf("the learn round took %s", time.Since(start).Round(time.Millisecond))
	var res learn.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	return res
}

// openStore is a record store in a folder of the test's own.
func openStore(t *testing.T) *learn.Store {
	t.Helper()
	st, err := learn.OpenStore(context.Background(), t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// A round reads only the jobs closed since the last one: the first round
// over 30 jobs reads 30 histories, the second, after 20 more closed, reads
// exactly those 20, each once (the 30 older ones, within the overlap
// window, are listed again and found in the record store), and counts and
// measures on all 50 from the store; a third round with nothing new reads
// none.
func TestE2ELearnRoundReadsOnlyTheJobsClosedSinceTheLast(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	suffix := fmt.Sprint(time.Now().UnixNano())
	typ := "E2ELearnStore" + suffix
	jobsTQ := storeWorkers(t, srv, typ, suffix)
	counter := newHistoryCounter(c)
	ltq := learnWorker(t, c, &learn.Activities{Client: counter, Store: openStore(t)}, suffix)
	where := fmt.Sprintf("TaskQueue = '%s'", jobsTQ)

	older := storeJobs(t, c, jobsTQ, typ, "e2e-learn-store-old-"+suffix, 30)
	first := runLearnRound(t, srv, c, typ, where, ltq, 30)
	reads, total := counter.counts()
	assert.Equal(t, 30, total, "the first round reads every job once")
	for _, id := range older {
		assert.Equal(t, 1, reads[id], id)
	}
	assert.Equal(t, 30, first.Read)
	assert.Equal(t, 30, first.Stored)
	assert.Equal(t, 30, first.Readiness.Runs)
	require.NotEmpty(t, first.Series)

	newer := storeJobs(t, c, jobsTQ, typ, "e2e-learn-store-new-"+suffix, 20)
	second := runLearnRound(t, srv, c, typ, where, ltq, 50)
	reads, total = counter.counts()
	assert.Equal(t, 50, total, "the second round reads the 20 new jobs and no older one")
	for _, id := range older {
		assert.Equal(t, 1, reads[id], "%s: an older job is not read again", id)
	}
	for _, id := range newer {
		assert.Equal(t, 1, reads[id], id)
	}
	assert.Equal(t, 20, second.Read)
	assert.Equal(t, 20, second.NewRuns)
	assert.Equal(t, 50, second.Stored)
	assert.Equal(t, 50, second.Readiness.Runs, "it counts the older jobs from the record store")
	assert.Equal(t, 50, second.Rates.Jobs)
	assert.Equal(t, first.Series, second.Series)
	assert.Equal(t, first.Rounds+1, second.Rounds)

	third := runLearnRound(t, srv, c, typ, where, ltq, 50)
	_, total = counter.counts()
	assert.Equal(t, 50, total, "nothing new: no history read")
	assert.Zero(t, third.Read)
	assert.Equal(t, 50, third.Readiness.Runs)
}

// A round whose export fails midway (a history read fails after the first
// page of 10 jobs) is retried and resumes: the retry lists from the page
// after the last shard it wrote, and no job's history is read twice.
func TestE2ELearnRoundRetriedMidwayResumesAndReadsNoJobTwice(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	suffix := fmt.Sprint(time.Now().UnixNano())
	typ := "E2ELearnResume" + suffix
	jobsTQ := storeWorkers(t, srv, typ, suffix)
	counter := newHistoryCounter(c)
	counter.failCall = 11 // the first read of the second page
	st := openStore(t)
	ltq := learnWorker(t, c, &learn.Activities{Client: counter, Store: st, PageSize: 10, Parallel: 1}, suffix)
	where := fmt.Sprintf("TaskQueue = '%s'", jobsTQ)

	ids := storeJobs(t, c, jobsTQ, typ, "e2e-learn-resume-"+suffix, 30)
	res := runLearnRound(t, srv, c, typ, where, ltq, 30)
	require.True(t, counter.failed, "the export failed once midway")
	reads, total := counter.counts()
	for _, id := range ids {
		assert.Equal(t, 1, reads[id], "%s: read once, by one attempt or the other", id)
	}
	assert.Equal(t, 30, total)
	assert.Equal(t, 30, res.Read, "the round's count has both attempts' reads")
	assert.Equal(t, 30, res.Stored)
	assert.Equal(t, 30, res.Readiness.Runs)
	assert.Equal(t, slices.Sorted(maps.Keys(reads)), slices.Sorted(slices.Values(ids)))

	// The round's export ran twice: the retry is what finished it.
	var attempts int32
	it := c.GetWorkflowHistory(context.Background(), roundID(t, c, typ), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil {
			attempts = max(attempts, a.GetAttempt())
		}
	}
	assert.Equal(t, int32(2), attempts)
}

// roundID is the id of the latest learn round of typ.
func roundID(t *testing.T, c client.Client, typ string) string {
	t.Helper()
	var id string
	eventually(t, "the round to be listed", 30*time.Second, func() bool {
		resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: learn.RoundsQuery, PageSize: 100})
		require.NoError(t, err)
		for _, e := range resp.Executions {
			if strings.HasPrefix(e.GetExecution().GetWorkflowId(), learn.DefaultScheduleName+"-"+typ+"-") {
				id = e.GetExecution().GetWorkflowId()
				return true
			}
		}
		return false
	})
	return id
}

// Two worker replicas poll the rounds' queue; replica A's export fails
// after its first page of 10 jobs (a history read fails) and A stops, as
// a pod that goes away does, so that the retry runs on replica B. With one
// store both replicas share (a shared volume here; a bucket URL in a
// deployment), every job is read once, by one replica or the other. With a
// store of each replica's own (the emptyDir the manifests shipped), B's
// store does not hold A's shard: B lists from the start and its store ends
// with every job (10 read twice, and the round says why) instead of
// resuming from A's page token and losing A's 10 (the bug: "read 20,
// stored 20" of 30).
func TestE2ELearnRoundRetriedOnTheOtherReplica(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	for _, shared := range []bool{true, false} {
		name := map[bool]string{true: "one shared store", false: "a store of each replica's own"}[shared]
		t.Run(name, func(t *testing.T) {
			suffix := fmt.Sprint(time.Now().UnixNano())
			typ := "E2ELearnReplicas" + suffix
			jobsTQ := storeWorkers(t, srv, typ, suffix)
			where := fmt.Sprintf("TaskQueue = '%s'", jobsTQ)
			ids := storeJobs(t, c, jobsTQ, typ, "e2e-learn-replicas-"+suffix, 30)

			storeA := openStore(t)
			storeB := storeA
			if !shared {
				storeB = openStore(t)
			}
			ltq := "e2e-learn-replicas-" + suffix
			readsA, readsB := newHistoryCounter(c), newHistoryCounter(c)
			readsA.failCall = 11 // the first read of the second page
			replica := func(identity string, reads *historyCounter, st *learn.Store) sdkworker.Worker {
				w := sdkworker.New(c, ltq, sdkworker.Options{Identity: identity})
				learn.RegisterActivities(w, &learn.Activities{Client: reads, Store: st, PageSize: 10, Parallel: 1})
				return w
			}
			wA := replica("replica-a", readsA, storeA)
			var stopA sync.Once
			readsA.onFail = func() { stopA.Do(wA.Stop) }
			require.NoError(t, wA.Start())
			t.Cleanup(func() { stopA.Do(wA.Stop) })
			res := runLearnRoundStartingB(t, srv, c, typ, where, ltq, 30, readsA, func() sdkworker.Worker {
				wB := replica("replica-b", readsB, storeB)
				require.NoError(t, wB.Start())
				t.Cleanup(wB.Stop)
				return wB
			})

			require.True(t, readsA.failed, "replica A's export failed midway")
			byA, totalA := readsA.counts()
			byB, totalB := readsB.counts()
			assert.Equal(t, 10, totalA, "replica A read its first page")
			assert.Equal(t, "replica-b", exportAttemptIdentity(t, c, typ, 2), "the retry ran on replica B")
			assert.Equal(t, 30, res.Stored, "the store the round reads holds every job")
			assert.Equal(t, 30, res.Readiness.Runs)
			if shared {
				for _, id := range ids {
					assert.Equal(t, 1, byA[id]+byB[id], "%s: read once, by one replica or the other", id)
				}
				assert.Equal(t, 20, totalB)
				assert.Equal(t, 30, res.Read)
				assert.Empty(t, res.StoreNote)
			} else {
				for _, id := range ids {
					assert.Equal(t, 1, byB[id], "%s: in replica B's store", id)
				}
				assert.Equal(t, 30, totalB, "replica B lists from the start")
				assert.Equal(t, 30, res.Read)
				assert.Contains(t, res.StoreNote, "does not hold")
				assert.Contains(t, res.Sentence, "record store: an earlier attempt of this round wrote 1 shards")
			}
		})
	}
}

// runLearnRoundStartingB is runLearnRound with replica B started once
// replica A has begun reading (so that A runs the export's first attempt).
func runLearnRoundStartingB(t *testing.T, srv server, c client.Client, typ, where, tq string, count int, readsA *historyCounter, startB func() sdkworker.Worker) learn.Result {
	t.Helper()
	eventually(t, fmt.Sprintf("the %d jobs to be visible as closed", count), 30*time.Second, func() bool {
		r, err := c.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Query: learn.Query(typ, where, time.Time{})})
		require.NoError(t, err)
		return r.GetCount() == int64(count)
	})
	type outcome struct {
		code      int
		out, errs string
	}
	done := make(chan outcome, 1)
	go func() {
		code, out, errOut := overseerCLI(srv, "learn", "run", "--type", typ, "--where", where, "--task-queue", tq, "--json")
		done <- outcome{code, out, errOut}
	}()
	eventually(t, "replica A to start reading", time.Minute, func() bool {
		_, n := readsA.counts()
		return n > 0
	})
	startB()
	o := <-done
	require.Equal(t, 0, o.code, o.errs)
	var res learn.Result
	require.NoError(t, json.Unmarshal([]byte(o.out), &res))
	return res
}

// exportAttemptIdentity is the identity of the worker that started the
// given attempt of the latest round's export, "" when the history has no
// such attempt (it records only an activity's last attempt, once closed).
func exportAttemptIdentity(t *testing.T, c client.Client, typ string, attempt int32) string {
	t.Helper()
	id := roundID(t, c, typ)
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var scheduled int64
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(t, err)
		if a := e.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == learn.ExportActivityName {
			scheduled = e.GetEventId()
		}
		if a := e.GetActivityTaskStartedEventAttributes(); a != nil && a.GetScheduledEventId() == scheduled && a.GetAttempt() == attempt {
			return a.GetIdentity()
		}
	}
	return ""
}
