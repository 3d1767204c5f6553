package bench_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/bench"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
	"github.com/corohq/temporal-overseer/testsuite"
)

func devServer(t *testing.T) *testsuite.DevServer {
	t.Helper()
	return testsuite.StartDevServerForTest(t, testsuite.DevServerOptions{DynamicConfig: bench.DevServerConfig()})
}

// One small bench run pins what its table reports in counts, never in
// times: the history the plugin adds per boundary, the judge's request
// size along a long job, and that a hanging judge in observe mode never
// holds a phase back.
func TestBenchCounts(t *testing.T) {
	srv := devServer(t)
	const phases = 5
	res, err := bench.Run(context.Background(), srv.Client(), bench.Options{
		Phases: phases, PhaseDuration: time.Millisecond, Rounds: 1, Concurrency: 2, LongPhases: 400,
		HangBudget: 500 * time.Millisecond,
		Variants: []string{bench.VariantBare, bench.VariantHandwritten, bench.VariantHandwrittenListening, bench.VariantHandwrittenBackground, bench.VariantObserve, bench.VariantManage,
			bench.VariantManageLocal, bench.VariantObserveRemote, bench.VariantObserveHTTP, bench.VariantObserveActivity, bench.VariantObserveHang,
			bench.VariantBareLoop, bench.VariantObserveLoop, bench.VariantManageLoop},
	})
	require.NoError(t, err)
	events := func(name string) int {
		v, ok := res.Variant(name)
		require.True(t, ok, name)
		return v.Events
	}
	bare := events(bench.VariantBare)
	// Per boundary the default manage and observe paths add one marker; the
	// job's summary (a memo upsert, what views read) is written at the first
	// verdict, again only when a view acts on a change (these trivial
	// phases, within a minute, change nothing a view acts on), and when the
	// run ends; per run three events more: the version marker, its
	// search-attribute upsert and the pinned configuration.
	for _, name := range []string{bench.VariantObserve, bench.VariantManage, bench.VariantManageLocal} {
		assert.Equal(t, bare+phases+3+2, events(name), "%s: one event per boundary, five per run", name)
	}
	assert.Equal(t, bare+phases, events(bench.VariantHandwritten), "the hand-written job: one local-activity marker per boundary")
	assert.Equal(t, events(bench.VariantHandwritten), events(bench.VariantHandwrittenListening), "a listening coroutine writes no event")
	listening, _ := res.Variant(bench.VariantHandwrittenListening)
	assert.Equal(t, bench.VariantHandwritten, listening.Baseline, "the listening job is measured against the hand-written job")

	// A judge that is not pure answers in the background in observe mode:
	// one side-effect marker per boundary, the summary's memo upsert when
	// an answer is recorded, three events per run and a local-activity
	// marker at the end for each answer still in flight (the last
	// boundary's at least; every boundary's for a judge that hangs).
	for _, name := range []string{bench.VariantObserveRemote, bench.VariantObserveHTTP, bench.VariantObserveHang} {
		v, _ := res.Variant(name)
		assert.Zero(t, v.JudgeActivities, "%s: no regular activity", name)
		assert.GreaterOrEqual(t, v.Events, bare+phases+3+1, name)
		assert.LessOrEqual(t, v.Events, bare+3*phases+3, "%s: at most three events per boundary, three per run", name)
		assert.Zero(t, v.HeldPhases, "%s: no phase held back", name)
	}
	hand, _ := res.Variant(bench.VariantHandwrittenBackground)
	assert.GreaterOrEqual(t, hand.Events, bare+phases+1, "the hand-written background job: a marker per boundary, one at the end")
	act, _ := res.Variant(bench.VariantObserveActivity)
	assert.Equal(t, phases, act.JudgeActivities, "asked for, a regular activity per boundary")
	assert.Zero(t, act.HeldPhases, "which holds no phase back either")
	manage, _ := res.Variant(bench.VariantManage)
	assert.Zero(t, manage.JudgeActivities, "the learned judge answers in workflow code")
	for _, v := range res.Variants {
		assert.Equal(t, 1, v.BoundaryMS.N, "%s: one trivial job's median boundary per round", v.Name)
		assert.Positive(t, v.BoundaryMS.Median, "%s: read from its history", v.Name)
	}

	// The agent loop: every call a boundary, the plugin's events the same
	// as on a job of phases, measured against the bare loop and no
	// hand-written job; and the plugin judged it as a loop.
	bareLoop := events(bench.VariantBareLoop)
	for _, name := range []string{bench.VariantObserveLoop, bench.VariantManageLoop} {
		v, _ := res.Variant(name)
		assert.Equal(t, bareLoop+phases+3+2, v.Events, "%s: one event per boundary, five per run", name)
		assert.Equal(t, bench.VariantBareLoop, v.Bare, name)
		assert.Empty(t, v.Baseline, "%s: no hand-written loop to measure against", name)
		q := res.Ratios(name)
		assert.Positive(t, q.LatencyVsBare, name)
		assert.Zero(t, q.LatencyVsHandwritten, name)
	}
	assert.Equal(t, bare, bareLoop, "the bare loop makes the same calls as the bare job of phases")
	loopSummary := summaryOf(t, srv, bench.VariantManageLoop)
	assert.Contains(t, loopSummary.Basis, "agent-loop rules", "the default judge read the bench's loop as an agent loop")
	phaseSummary := summaryOf(t, srv, bench.VariantManage)
	t.Logf("bases: loop %q, phases %q", loopSummary.Basis, phaseSummary.Basis)
	assert.NotContains(t, phaseSummary.Basis, "agent-loop", "and its job of phases as phases")

	require.NotEmpty(t, res.RequestSizes)
	first, last := res.RequestSizes[0], res.RequestSizes[len(res.RequestSizes)-1]
	assert.Equal(t, 10, first.Phase)
	assert.Equal(t, 400, last.Phase)
	assert.Positive(t, first.Bytes)
	assert.LessOrEqual(t, float64(last.Bytes), 1.05*float64(first.Bytes), "the request at phase 400 is within 5%% of phase 10's")
	assert.LessOrEqual(t, last.Bytes, 16<<10)
	for _, s := range res.RequestSizes {
		assert.Positive(t, s.Bytes, "phase %d (%s) was assessed", s.Phase, s.Note)
	}
	assert.Positive(t, res.CarriedStateBytes, "the second run of the long job started with the carried state")
	assert.LessOrEqual(t, res.CarriedStateBytes, 16<<10)

	// A content window adds at most its request bytes (and their JSON
	// quoting) to a boundary, however long the job.
	require.Len(t, res.WindowRequestSizes, len(res.RequestSizes))
	for i, s := range res.WindowRequestSizes {
		added := s.Bytes - res.RequestSizes[i].Bytes
		t.Logf("phase %d: request %d B without a window, %d B with one (+%d B)", s.Phase, res.RequestSizes[i].Bytes, s.Bytes, added)
		assert.Greater(t, added, 4<<10, "phase %d: the window holds the phases' texts", s.Phase)
		assert.LessOrEqual(t, added, 2*trajectory.DefaultContentRequestBytes, "phase %d: the window stays bounded", s.Phase)
	}
	assert.Greater(t, res.WindowCarriedStateBytes, res.CarriedStateBytes, "the window is carried across continue-as-new")
}

// The load mode and the gate burst run end to end and report one sample
// per round, and one per job at the gate; their figures are not checked.
func TestLoadAndGateBurst(t *testing.T) {
	srv := devServer(t)
	res, err := bench.RunLoad(context.Background(), srv.Client(), bench.LoadOptions{
		Jobs: 3, Phases: 2, Rounds: 1, Variants: []string{bench.VariantBare, bench.VariantManageLocal}, GateBurst: 3,
	})
	require.NoError(t, err)
	require.Len(t, res.Variants, 2)
	for _, v := range res.Variants {
		assert.Equal(t, 1, v.BatchS.N, v.Name)
		assert.Equal(t, 1, v.CPUS.N, v.Name)
	}
	bare, _ := res.Variant(bench.VariantBare)
	assert.Zero(t, bare.BatchVsBare.N, "bare is not paired with itself")
	manage, _ := res.Variant(bench.VariantManageLocal)
	assert.Equal(t, 1, manage.BatchVsBare.N, "one round, one paired ratio")
	assert.InDelta(t, manage.BatchS.Median/bare.BatchS.Median, manage.BatchVsBare.Median, 1e-9)
	assert.InDelta(t, manage.CPUS.Median/bare.CPUS.Median, manage.CPUVsBare.Median, 1e-9)
	assert.Zero(t, manage.BatchVsBaseline.N, "its hand-written baseline did not run")
	require.NotNil(t, res.GateBurst)
	assert.Equal(t, 3, res.GateBurst.NextPhaseMS.N, "every job paused, was resumed and went on to its next phase")
	assert.Equal(t, 3, res.GateBurst.ResumeMS.N)
}

// summaryOf is the overseer's summary (its memo) of a closed bench job of
// the named variant, read through visibility (polled: it is eventually
// consistent).
func summaryOf(t *testing.T, srv *testsuite.DevServer, variant string) overseer.Summary {
	t.Helper()
	var sum overseer.Summary
	slug := strings.ReplaceAll(variant, "/", "-")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		resp, err := srv.Client().ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{
			Query: fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus = 'Completed'", bench.JobWorkflowName),
		})
		require.NoError(c, err)
		for _, e := range resp.GetExecutions() {
			id := e.GetExecution().GetWorkflowId()
			if !strings.Contains(id, "-"+slug+"-latency-") {
				continue
			}
			p := e.GetMemo().GetFields()[overseer.SummaryMemoKey]
			require.NotNil(c, p, "%s has the overseer's summary", id)
			require.NoError(c, converter.GetDefaultDataConverter().FromPayload(p, &sum))
			return
		}
		c.Errorf("no completed %s job yet", variant)
	}, 30*time.Second, 200*time.Millisecond)
	return sum
}
