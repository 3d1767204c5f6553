package overseer_test

import (
	"context"
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	sdktestsuite "go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/testsuite"
)

// sandboxQueue is the task queue of the phases' own fleet.
const sandboxQueue = "sandbox"

// sandboxWorkflow runs the named phases on the sandbox queue, as agent
// jobs whose phases run on a fleet of their own do.
func sandboxWorkflow(ctx workflow.Context, phases []string) ([]string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{TaskQueue: sandboxQueue, StartToCloseTimeout: time.Minute})
	var done []string
	for _, p := range phases {
		var res phaseResult
		if err := workflow.ExecuteActivity(ctx, p, &phaseInput{Phase: p}).Get(ctx, &res); err != nil {
			return done, err
		}
		done = append(done, res.Phase)
	}
	return done, nil
}

// queuesSeen records the task queue every activity ran on, by type.
type queuesSeen struct {
	interceptor.WorkerInterceptorBase
	mu     sync.Mutex
	queues map[string][]string
}

type queuesSeenInbound struct {
	interceptor.ActivityInboundInterceptorBase
	seen *queuesSeen
}

func (a *queuesSeenInbound) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	info := activity.GetInfo(ctx)
	a.seen.mu.Lock()
	a.seen.queues[info.ActivityType.Name] = append(a.seen.queues[info.ActivityType.Name], info.TaskQueue)
	a.seen.mu.Unlock()
	return a.Next.ExecuteActivity(ctx, in)
}

func (q *queuesSeen) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &queuesSeenInbound{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, seen: q}
}

// TestTheOverseersActivitiesRunOnTheWorkflowsQueueWhenPhasesRunOnTheirOwn:
// with the phases on a queue of their own, the judge's activity (no
// AssessTaskQueue) and every notification of the gate go to the
// workflow's queue, where the overseer's worker runs, not to the phases'
// queue the gate's context was scheduled from.
func TestTheOverseersActivitiesRunOnTheWorkflowsQueueWhenPhasesRunOnTheirOwn(t *testing.T) {
	var s sdktestsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	n := &inbox{}
	judge := jev.NewScripted(onTrack(), flagged(), onTrack())
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeManage, Judge: judge, Placement: overseer.PlacementActivity, Notifier: n})
	require.NoError(t, err)
	seen := &queuesSeen{queues: map[string][]string{}}
	env.SetWorkerOptions(withoutLateActivityRace(worker.Options{Plugins: []worker.Plugin{plugin}, Interceptors: []interceptor.WorkerInterceptor{seen}}))
	rec := &recorder{}
	env.RegisterWorkflow(sandboxWorkflow)
	for _, p := range testPhases {
		env.RegisterActivityWithOptions(rec.phase, activity.RegisterOptions{Name: p})
	}
	h := &harness{env: env, rec: rec, judge: judge}
	env.RegisterDelayedCallback(func() { h.update(overseer.ResumeRequest{By: "bob"}) }, time.Hour)
	env.ExecuteWorkflow(sandboxWorkflow, testPhases)
	require.NoError(t, env.GetWorkflowError())

	own := "default-test-taskqueue" // the test environment's workflow queue
	seen.mu.Lock()
	defer seen.mu.Unlock()
	for _, p := range testPhases {
		assert.Equal(t, []string{sandboxQueue}, seen.queues[p], "phase %s on its fleet", p)
	}
	require.Len(t, seen.queues[overseer.AssessActivityName], 3)
	for _, q := range seen.queues[overseer.AssessActivityName] {
		assert.Equal(t, own, q, "the judge's activity goes to the workflow's queue")
	}
	require.NotEmpty(t, seen.queues[overseer.NotifyActivityName])
	for _, q := range seen.queues[overseer.NotifyActivityName] {
		assert.Equal(t, own, q, "a gate's notification goes to the workflow's queue")
	}
	assert.Equal(t, []overseer.GateEventKind{overseer.GateOpened, overseer.GateResumed}, n.kinds())
}

// contextBound is a data converter whose codec refuses a payload decoded
// in a serialization context other than the one it was encoded in.
func contextBound(t *testing.T) converter.DataConverter {
	t.Helper()
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	c, err := testsuite.NewContextBoundCodec(key)
	require.NoError(t, err)
	return testsuite.ContextBoundDataConverter(c)
}

// TestAContextBoundCodecReadsEveryPhaseResult: under a codec that binds
// each payload to its serialization context, the workflow reads every
// phase's result through the overseer as it would without it, in observe
// mode and in manage mode with a gate, and the next phase reads the
// process note's header with ProcessNote.
func TestAContextBoundCodecReadsEveryPhaseResult(t *testing.T) {
	for _, mode := range []overseer.Mode{overseer.ModeObserve, overseer.ModeManage} {
		t.Run(string(mode), func(t *testing.T) {
			dc := contextBound(t)
			h := encryptedHarness(t, dc, overseer.Options{Mode: mode}, nil, onTrack(), flagged(), onTrack())
			h.env.RegisterDelayedCallback(func() {
				h.update(overseer.ResumeRequest{By: "bob", Note: "keep the CSV columns stable"})
			}, time.Hour)
			h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
			require.NoError(t, h.env.GetWorkflowError())
			var done []string
			require.NoError(t, h.env.GetWorkflowResult(&done))
			assert.Equal(t, testPhases, done, "every phase's result read by the workflow")
			s := h.status(t)
			assert.Equal(t, 3, s.Counters.Phases)
			calls := h.rec.Calls()
			require.Len(t, calls, 3)
			if mode == overseer.ModeObserve {
				assert.Nil(t, calls[2].ContextNte, "observe mode passes no note")
				return
			}
			require.Len(t, s.Gates, 1)
			require.NotNil(t, calls[2].ContextNte, "ProcessNote reads the header in the phase activity's context")
			assert.Equal(t, "keep the CSV columns stable", calls[2].ContextNte.ReviewerNote)
		})
	}
}

// TestSDKEncodesWithTheWorkflowsConverter: without the worker's converter
// (the plugin given to a worker only), the overseer writes and reads its
// workflow payloads through two things the SDK does with the workflow's
// own converter, bound to the workflow's context: a continue-as-new
// error's input is encoded with it and a workflow future set to payloads
// decodes with it. If the SDK stops doing either, this fails: the carried
// state would be written in clear or not read back.
func TestSDKEncodesWithTheWorkflowsConverter(t *testing.T) {
	dc := contextBound(t)
	var s sdktestsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetDataConverter(dc)
	probe := func(ctx workflow.Context) (string, error) {
		can, ok := workflow.NewContinueAsNewError(ctx, "overseer.encode", "secret").(*workflow.ContinueAsNewError)
		if !ok || len(can.Input.GetPayloads()) != 1 {
			return "", assert.AnError
		}
		p := can.Input.GetPayloads()[0]
		if string(p.GetMetadata()["encoding"]) != testsuite.EncodingContextBound {
			return "encoded in clear: " + string(p.GetMetadata()["encoding"]), nil
		}
		f, set := workflow.NewFuture(ctx)
		set.Set(can.Input, nil)
		var back string
		if err := f.Get(ctx, &back); err != nil {
			return "not read back: " + err.Error(), nil
		}
		return back, nil
	}
	env.RegisterWorkflowWithOptions(probe, workflow.RegisterOptions{Name: "probe"})
	env.ExecuteWorkflow("probe")
	require.NoError(t, env.GetWorkflowError())
	var got string
	require.NoError(t, env.GetWorkflowResult(&got))
	assert.Equal(t, "secret", got)
}

// unawaitedWorkflow schedules its code phase and, without awaiting it,
// continues as new an hour later (the second run just reads its status).
func unawaitedWorkflow(ctx workflow.Context, first bool) (overseer.Status, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute})
	if !first {
		s, _ := overseer.GetStatus(ctx)
		return s, nil
	}
	_ = workflow.ExecuteActivity(ctx, "code", &phaseInput{Phase: "code"})
	if err := workflow.Sleep(ctx, time.Hour); err != nil {
		return overseer.Status{}, err
	}
	return overseer.Status{}, workflow.NewContinueAsNewError(ctx, unawaitedWorkflow, false)
}

// TestAGateLeftOpenAcrossContinueAsNewIsAbandoned: a run that continues
// as new while a gate holds a phase it never awaited closes that gate as
// abandoned; neither it nor its successor shows it open or redoable.
func TestAGateLeftOpenAcrossContinueAsNewIsAbandoned(t *testing.T) {
	var s sdktestsuite.WorkflowTestSuite
	judge := jev.NewScripted(flagged())
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeManage, Judge: judge, Placement: overseer.PlacementLocalActivity,
		RedoSafe: []string{"unawaitedWorkflow"}})
	require.NoError(t, err)
	rec := &recorder{}
	newEnv := func() *sdktestsuite.TestWorkflowEnvironment {
		env := s.NewTestWorkflowEnvironment()
		env.SetWorkerOptions(withoutLateActivityRace(worker.Options{Plugins: []worker.Plugin{plugin}}))
		env.RegisterWorkflow(unawaitedWorkflow)
		env.RegisterActivityWithOptions(rec.phase, activity.RegisterOptions{Name: "code"})
		return env
	}
	env := newEnv()
	env.ExecuteWorkflow(unawaitedWorkflow, true)
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	v, err := env.QueryWorkflow(overseer.StatusQueryName)
	require.NoError(t, err)
	var before overseer.Status
	require.NoError(t, v.Get(&before))
	require.Len(t, before.Gates, 1)
	assert.Equal(t, "abandoned", before.Gates[0].Outcome(), "the run that continued")
	assert.False(t, before.Paused)

	next := newEnv()
	next.SetHeader(can.Header)
	next.ExecuteWorkflow(unawaitedWorkflow, false)
	require.NoError(t, next.GetWorkflowError())
	var after overseer.Status
	require.NoError(t, next.GetWorkflowResult(&after))
	require.Len(t, after.Gates, 1)
	g := after.Gates[0]
	assert.Equal(t, "abandoned", g.Outcome())
	assert.False(t, after.Paused)
	assert.False(t, after.CanRedo(g), "nothing can redo it")
	assert.Nil(t, g.Deadline)
}
