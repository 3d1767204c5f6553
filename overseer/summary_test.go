package overseer_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
)

// memosSeen keeps every summary a run upserted into its memo.
type memosSeen struct {
	interceptor.WorkerInterceptorBase
	mu        sync.Mutex
	summaries []overseer.Summary
	other     int
}

type memosSeenInbound struct {
	interceptor.WorkflowInboundInterceptorBase
	seen *memosSeen
}

type memosSeenOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	seen *memosSeen
}

func (m *memosSeen) InterceptWorkflow(_ workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &memosSeenInbound{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, seen: m}
}

func (i *memosSeenInbound) Init(outbound interceptor.WorkflowOutboundInterceptor) error {
	return i.Next.Init(&memosSeenOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: outbound}, seen: i.seen})
}

func (o *memosSeenOutbound) UpsertMemo(ctx workflow.Context, memo map[string]any) error {
	o.seen.mu.Lock()
	if s, ok := memo[overseer.SummaryMemoKey].(overseer.Summary); ok {
		o.seen.summaries = append(o.seen.summaries, s)
	} else {
		o.seen.other++
	}
	o.seen.mu.Unlock()
	return o.Next.UpsertMemo(ctx, memo)
}

// TestTheSummaryInTheMemoSaysWhatAViewShows: at each boundary and gate the
// run keeps a small summary in its memo, written only when it changed:
// the verdict, and while paused each open gate with its opening, deadline,
// who may open it and its first evidence line.
func TestTheSummaryInTheMemoSaysWhatAViewShows(t *testing.T) {
	seen := &memosSeen{}
	h, _ := deadlineHarnessWith(t, overseer.Options{Mode: overseer.ModeManage, Approval: overseer.Approval{Approvers: []string{"alice", "group:leads"}},
		GateDeadline: overseer.GateDeadline{After: 3 * time.Hour, Action: overseer.DeadlineAbort}}, []interceptor.WorkerInterceptor{seen}, onTrack(), flagged(), onTrack())
	var during []overseer.Summary
	h.env.RegisterDelayedCallback(func() {
		seen.mu.Lock()
		during = append(during, seen.summaries...)
		seen.mu.Unlock()
		h.update(overseer.ResumeRequest{By: "alice"})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())

	seen.mu.Lock()
	defer seen.mu.Unlock()
	assert.Zero(t, seen.other)
	require.NotEmpty(t, during)
	paused := during[len(during)-1]
	assert.Equal(t, overseer.SummaryFormat, paused.Format)
	assert.Equal(t, overseer.ModeManage, paused.Mode)
	assert.Equal(t, "code", paused.Phase)
	require.Len(t, paused.Gates, 1, "the open gate")
	g := paused.Gates[0]
	assert.Equal(t, "code-1", g.ID)
	assert.Equal(t, "code", g.Phase)
	require.NotNil(t, g.Deadline)
	assert.Equal(t, g.PausedAt.Add(3*time.Hour), *g.Deadline)
	assert.Equal(t, "deadline 3h: abort", g.DeadlineBy)
	assert.NotEmpty(t, g.Why, "what tripped the flag")
	assert.Equal(t, []string{"alice", "group:leads"}, paused.Approval.Approvers)
	assert.Equal(t, 2, paused.Phases)
	assert.Equal(t, 1, paused.Pauses)

	last := seen.summaries[len(seen.summaries)-1]
	assert.Empty(t, last.Gates, "resumed: no gate open")
	assert.Equal(t, 3, last.Phases)
	assert.True(t, last.Assessed)
	for i := 1; i < len(seen.summaries); i++ {
		assert.NotEqual(t, seen.summaries[i-1], seen.summaries[i], "written only when it changed")
	}
	assert.LessOrEqual(t, len(seen.summaries), 3+1, "one per boundary and resume")
	for _, s := range seen.summaries {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		assert.Less(t, len(b), 600, "a few hundred bytes: %s", b)
	}
}
