package overseer_test

import (
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/codec"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// encrypting is a data converter with the AES-GCM codec and a fresh key,
// as a deployment that encrypts its payloads sets on every client and
// worker.
func encrypting(t *testing.T) converter.DataConverter {
	t.Helper()
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	c, err := codec.NewAESGCM(key)
	require.NoError(t, err)
	return codec.DataConverter(c)
}

// encryptedHarness is newHarness with dc on the test environment (and on
// the plugin, for the activities' note header) and memo as the start
// memo, encoded with dc as the client would.
func encryptedHarness(t *testing.T, dc converter.DataConverter, opts overseer.Options, memo map[string]any, steps ...jev.Step) *harness {
	t.Helper()
	opts.DataConverter = dc
	h := newHarness(t, opts, steps...)
	h.env.SetDataConverter(dc)
	if memo != nil {
		require.NoError(t, h.env.SetMemoOnStart(memo))
	}
	return h
}

func TestEncryptedMemoModeTakesEffect(t *testing.T) {
	dc := encrypting(t)
	h := encryptedHarness(t, dc, overseer.Options{Mode: overseer.ModeObserve,
		GateDeadline: overseer.GateDeadline{After: time.Hour, Action: overseer.DeadlineContinue}},
		map[string]any{overseer.ModeMemoKey: "manage"}, onTrack(), flagged(), onTrack())
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError(), "the encrypted memo's mode is read, not refused")
	s := h.status(t)
	assert.Equal(t, overseer.ModeManage, s.Mode)
	require.Len(t, s.Gates, 1, "manage mode paused at the flagged phase")
	assert.Equal(t, "deadline 1h: continue", s.Gates[0].ExpiredBy)
}

func TestEncryptedMemoGateDeadlineTakesEffect(t *testing.T) {
	dc := encrypting(t)
	h := encryptedHarness(t, dc, overseer.Options{Mode: overseer.ModeManage},
		map[string]any{overseer.GateDeadlineMemoKey: "90m:continue"}, onTrack(), flagged(), onTrack())
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())
	s := h.status(t)
	require.Len(t, s.Gates, 1)
	assert.Equal(t, "deadline 1h30m: continue", s.Gates[0].ExpiredBy, "the encrypted memo's deadline closed the gate")
}

func TestEncryptedMemoStarterKeepsFourEyes(t *testing.T) {
	dc := encrypting(t)
	h := encryptedHarness(t, dc, overseer.Options{Mode: overseer.ModeManage,
		Approval:     overseer.Approval{FourEyes: true},
		GateDeadline: overseer.GateDeadline{After: 2 * time.Hour, Action: overseer.DeadlineAbort}},
		map[string]any{overseer.StartedByMemoKey: "alice"}, onTrack(), flagged(), onTrack())
	var own, other *updateResult
	h.env.RegisterDelayedCallback(func() {
		own = h.update(overseer.ResumeRequest{By: "alice"})
		other = h.update(overseer.ResumeRequest{By: "bob", Note: "go on"})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError(), "bob opened the gate before its deadline aborted the job")
	require.NotNil(t, own)
	assert.ErrorContains(t, own.rejected, `"alice" started this job and may not resume its own gate`)
	require.NoError(t, other.rejected)
	assert.True(t, other.done)
	s := h.status(t)
	require.Len(t, s.Gates, 1)
	assert.Equal(t, "bob", s.Gates[0].By)
}

// headerSeen records the raw note header the phase activities received.
type headerSeen struct {
	interceptor.WorkerInterceptorBase
	mu      sync.Mutex
	headers map[string]*commonpb.Payload
}

type headerSeenInbound struct {
	interceptor.ActivityInboundInterceptorBase
	seen *headerSeen
}

func (a *headerSeenInbound) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	if p, ok := interceptor.Header(ctx)["overseer-note"]; ok {
		a.seen.mu.Lock()
		a.seen.headers[activity.GetInfo(ctx).ActivityType.Name] = p
		a.seen.mu.Unlock()
	}
	return a.Next.ExecuteActivity(ctx, in)
}

// InterceptActivity sees the headers before the overseer's interceptor
// (worker.Options.Interceptors are outside the plugins').
func (h *headerSeen) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &headerSeenInbound{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, seen: h}
}

// noteRun runs a job whose code phase is flagged and resumed with a
// reviewer's note, under dc on the environment and pluginDC on the plugin.
func noteRun(t *testing.T, dc, pluginDC converter.DataConverter) (*harness, *headerSeen) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetDataConverter(dc)
	judge := jev.NewScripted(onTrack(), flagged(), onTrack())
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeManage, DataConverter: pluginDC,
		Judge: judge, Placement: overseer.PlacementLocalActivity})
	require.NoError(t, err)
	seen := &headerSeen{headers: map[string]*commonpb.Payload{}}
	env.SetWorkerOptions(withoutLateActivityRace(worker.Options{Plugins: []worker.Plugin{plugin}, Interceptors: []interceptor.WorkerInterceptor{seen}}))
	h := &harness{env: env, rec: &recorder{}, judge: judge}
	env.RegisterWorkflow(phasesWorkflow)
	for _, p := range testPhases {
		env.RegisterActivityWithOptions(h.rec.phase, activity.RegisterOptions{Name: p})
	}
	env.RegisterDelayedCallback(func() {
		h.update(overseer.ResumeRequest{By: "bob", Note: "keep the CSV columns stable"})
	}, time.Hour)
	env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, env.GetWorkflowError())
	return h, seen
}

func TestEncryptedNoteHeaderReachesTheNextPhase(t *testing.T) {
	dc := encrypting(t)
	h, seen := noteRun(t, dc, dc)
	p := seen.headers["test"]
	require.NotNil(t, p, "the phase after the gate gets the note's header")
	assert.True(t, codec.Encrypted(p), "the note's header is encrypted like the input that carries the same note: %v", p.GetMetadata())
	calls := h.rec.Calls()
	require.Len(t, calls, 3)
	require.NotNil(t, calls[2].InputNote)
	require.NotNil(t, calls[2].ContextNte, "ProcessNote reads the encrypted header")
	assert.Equal(t, "keep the CSV columns stable", calls[2].ContextNte.ReviewerNote)
	assert.Equal(t, *calls[2].InputNote, *calls[2].ContextNte)
}

func TestEncryptedNoteHeaderWithoutTheConverterOnThePlugin(t *testing.T) {
	// The workflow still encrypts the header (it uses the worker's own
	// converter); an activity whose plugin was not given the converter
	// cannot read it, but the note still reaches the phase in its input.
	dc := encrypting(t)
	h, seen := noteRun(t, dc, nil)
	require.NotNil(t, seen.headers["test"])
	assert.True(t, codec.Encrypted(seen.headers["test"]))
	calls := h.rec.Calls()
	require.Len(t, calls, 3)
	require.NotNil(t, calls[2].InputNote)
	assert.Nil(t, calls[2].ContextNte)
}

func TestPlainNoteHeaderStaysReadable(t *testing.T) {
	// No codec: the header is the default converter's JSON, as before.
	h, seen := noteRun(t, converter.GetDefaultDataConverter(), nil)
	require.NotNil(t, seen.headers["test"])
	assert.Equal(t, "json/plain", string(seen.headers["test"].GetMetadata()["encoding"]))
	require.NotNil(t, h.rec.Calls()[2].ContextNte)
}

func TestEncryptedContinueAsNewCarriesOverseerState(t *testing.T) {
	dc := encrypting(t)
	var s testsuite.WorkflowTestSuite
	judge := jev.NewScripted(answer(0.5, overseer.BreachNone, 0.9, 1))
	judge.Repeat = true
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeObserve, Judge: judge, DataConverter: dc})
	require.NoError(t, err)
	rec := &recorder{}
	runs := 3
	var header *commonpb.Header
	for {
		env := s.NewTestWorkflowEnvironment()
		env.SetDataConverter(dc)
		env.SetWorkerOptions(withoutLateActivityRace(worker.Options{Plugins: []worker.Plugin{plugin}}))
		env.RegisterWorkflow(continuingWorkflow)
		env.RegisterActivityWithOptions(rec.phase, activity.RegisterOptions{Name: "code"})
		if header != nil {
			env.SetHeader(header)
		}
		env.ExecuteWorkflow(continuingWorkflow, runs)
		var can *workflow.ContinueAsNewError
		if err := env.GetWorkflowError(); errors.As(err, &can) {
			p := can.Header.GetFields()["overseer-state"]
			require.NotNil(t, p, "overseer state rides on the continue-as-new header")
			assert.True(t, codec.Encrypted(p), "the carried status and trajectory are encrypted: %v", p.GetMetadata())
			var plain map[string]any
			assert.Error(t, converter.GetDefaultDataConverter().FromPayload(p, &plain), "not readable without the key")
			header = can.Header
			runs--
			continue
		}
		require.NoError(t, env.GetWorkflowError())
		var phases int
		require.NoError(t, env.GetWorkflowResult(&phases))
		assert.Equal(t, 3, phases, "counters survive an encrypted continue-as-new")
		v, err := env.QueryWorkflow(overseer.StatusQueryName)
		require.NoError(t, err)
		var st overseer.Status
		require.NoError(t, v.Get(&st))
		assert.Equal(t, 3, st.Counters.Assessments)
		return
	}
}

func TestCarriedStateFromAnOlderWorkerIsReadUnderACodec(t *testing.T) {
	// A run continued by a worker before this change carried its state as
	// plain JSON; a worker with the codec still restores it.
	dc := encrypting(t)
	var s testsuite.WorkflowTestSuite
	judge := jev.NewScripted(answer(0.5, overseer.BreachNone, 0.9, 1))
	judge.Repeat = true
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeObserve, Judge: judge})
	require.NoError(t, err)
	rec := &recorder{}
	env := s.NewTestWorkflowEnvironment()
	env.SetWorkerOptions(withoutLateActivityRace(worker.Options{Plugins: []worker.Plugin{plugin}}))
	env.RegisterWorkflow(continuingWorkflow)
	env.RegisterActivityWithOptions(rec.phase, activity.RegisterOptions{Name: "code"})
	env.ExecuteWorkflow(continuingWorkflow, 2)
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	require.Equal(t, "json/plain", string(can.Header.GetFields()["overseer-state"].GetMetadata()["encoding"]))

	env = s.NewTestWorkflowEnvironment()
	env.SetDataConverter(dc)
	env.SetWorkerOptions(withoutLateActivityRace(worker.Options{Plugins: []worker.Plugin{plugin}}))
	env.RegisterWorkflow(continuingWorkflow)
	env.RegisterActivityWithOptions(rec.phase, activity.RegisterOptions{Name: "code"})
	env.SetHeader(can.Header)
	env.ExecuteWorkflow(continuingWorkflow, 1)
	require.NoError(t, env.GetWorkflowError())
	var phases int
	require.NoError(t, env.GetWorkflowResult(&phases))
	assert.Equal(t, 2, phases)
}

const memoCodecChangeID = "temporal-overseer/memo-codec"

func TestEncryptedMemoInARunRecordedBeforeTheChangeReadsAsItDid(t *testing.T) {
	// A run recorded before the overseer read encrypted memo fields has no
	// memo-codec marker: on replay GetVersion says DefaultVersion and the
	// run goes as it went.
	t.Run("mode: failed at once", func(t *testing.T) {
		dc := encrypting(t)
		h := encryptedHarness(t, dc, overseer.Options{Mode: overseer.ModeObserve},
			map[string]any{overseer.ModeMemoKey: "manage"}, onTrack(), flagged(), onTrack())
		h.env.OnGetVersion(memoCodecChangeID, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
		h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
		err := h.env.GetWorkflowError()
		require.Error(t, err)
		assert.Equal(t, "OverseerInvalidMode", overseer.ErrorType(err), "%v", err)
		assert.ErrorContains(t, err, "memo overseer.mode is not a string")
	})
	t.Run("deadline: the type's applied", func(t *testing.T) {
		dc := encrypting(t)
		h := encryptedHarness(t, dc, overseer.Options{Mode: overseer.ModeManage,
			GateDeadline: overseer.GateDeadline{After: 3 * time.Hour, Action: overseer.DeadlineContinue}},
			map[string]any{overseer.GateDeadlineMemoKey: "90m:continue"}, onTrack(), flagged(), onTrack())
		h.env.OnGetVersion(memoCodecChangeID, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
		h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
		require.NoError(t, h.env.GetWorkflowError())
		s := h.status(t)
		require.Len(t, s.Gates, 1)
		assert.Equal(t, "deadline 3h: continue", s.Gates[0].ExpiredBy)
	})
}

func TestEncryptedStarterIsReadInARunInFlightBeforeTheChange(t *testing.T) {
	// The starter decides no command (only the resume's validator reads
	// it), so a run without the memo-codec marker reads it too: a four-eyes
	// gate opened before the worker learned to read encrypted memos can be
	// opened by another approver after.
	dc := encrypting(t)
	h := encryptedHarness(t, dc, overseer.Options{Mode: overseer.ModeManage,
		Approval:     overseer.Approval{FourEyes: true},
		GateDeadline: overseer.GateDeadline{After: 2 * time.Hour, Action: overseer.DeadlineAbort}},
		map[string]any{overseer.StartedByMemoKey: "alice"}, onTrack(), flagged(), onTrack())
	h.env.OnGetVersion(memoCodecChangeID, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	var own, other *updateResult
	h.env.RegisterDelayedCallback(func() {
		own = h.update(overseer.ResumeRequest{By: "alice"})
		other = h.update(overseer.ResumeRequest{By: "bob"})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())
	assert.ErrorContains(t, own.rejected, `"alice" started this job`)
	require.NoError(t, other.rejected)
	assert.True(t, other.done)
}

// TestAResumeSignalInAnOlderFourEyesHistoryReplaysAsRecorded: the
// releases up to v0.0.9 read an encrypted starter for a resume signal with
// no version marker and took another approver's signal; v0.1.0 left the
// starter unknown in a run without the memo-codec marker and refused it,
// so those histories failed replay (issue 43). A run that settled the
// marker on DefaultVersion takes the signal again, as recorded. (The
// history itself, recorded by v0.0.9, replays in testsuite/e2e.)
func TestAResumeSignalInAnOlderFourEyesHistoryReplaysAsRecorded(t *testing.T) {
	dc := encrypting(t)
	h := encryptedHarness(t, dc, overseer.Options{Mode: overseer.ModeManage,
		Approval:     overseer.Approval{FourEyes: true},
		GateDeadline: overseer.GateDeadline{After: 2 * time.Hour, Action: overseer.DeadlineContinue}},
		map[string]any{overseer.StartedByMemoKey: "alice"}, onTrack(), flagged(), onTrack())
	h.env.OnGetVersion(memoCodecChangeID, workflow.DefaultVersion, 1).Return(workflow.DefaultVersion)
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{By: "bob"})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())
	s := h.status(t)
	require.Len(t, s.Gates, 1)
	assert.Equal(t, 0, s.Counters.IgnoredResumes, "the signal was taken, as v0.0.9 recorded")
	assert.Equal(t, "bob", s.Gates[0].By)
	assert.Empty(t, s.Gates[0].ExpiredBy, "the gate did not wait for its deadline")
}

func TestMemoCodecMarkerOnlyWhenAFieldNeedsTheCodec(t *testing.T) {
	for _, tc := range []struct {
		name      string
		dc        converter.DataConverter
		wantCalls bool
	}{
		{"plain memo", converter.GetDefaultDataConverter(), false},
		{"encrypted memo", encrypting(t), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := encryptedHarness(t, tc.dc, overseer.Options{Mode: overseer.ModeManage},
				map[string]any{overseer.GateDeadlineMemoKey: "90m:continue", overseer.StartedByMemoKey: "alice"}, onTrack(), flagged(), onTrack())
			calls := 0
			h.env.OnGetVersion(memoCodecChangeID, workflow.DefaultVersion, 1).Run(func(mock.Arguments) { calls++ }).Return(workflow.Version(1))
			h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
			require.NoError(t, h.env.GetWorkflowError())
			assert.Equal(t, tc.wantCalls, calls > 0, "GetVersion(%s) called %d times", memoCodecChangeID, calls)
			s := h.status(t)
			require.Len(t, s.Gates, 1)
			assert.Equal(t, "deadline 1h30m: continue", s.Gates[0].ExpiredBy, "the memo's deadline either way")
		})
	}
}

func TestEncryptedMemoTurnsARunOff(t *testing.T) {
	dc := encrypting(t)
	h := encryptedHarness(t, dc, overseer.Options{Mode: overseer.ModeManage},
		map[string]any{overseer.ModeMemoKey: "off"}, flagged(), flagged(), flagged())
	versions := map[string]int{}
	for _, max := range []workflow.Version{1, 2} { // the overseer's change IDs go up to 2
		h.env.OnGetVersion(mock.Anything, workflow.DefaultVersion, max).Run(func(args mock.Arguments) {
			versions[args.String(0)]++
		}).Return(max)
	}
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())
	assert.Equal(t, overseer.ModeOff, h.status(t).Mode)
	assert.Empty(t, h.judge.Requests(), "an off run asks no judge")
	assert.Equal(t, map[string]int{memoCodecChangeID: 1}, versions, "the memo-codec marker and no other")
}
