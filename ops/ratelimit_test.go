package ops_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/corohq/temporal-overseer/ops"
)

func TestCallWordsItsError(t *testing.T) {
	other := errors.New("permission denied")
	tests := []struct {
		name        string
		call        func(ctx context.Context) error
		rateLimited bool
		timedOut    bool
		is          error
		says        string
	}{
		{name: "refused without a retry", call: func(context.Context) error {
			return serviceerror.NewResourceExhausted(enums.RESOURCE_EXHAUSTED_CAUSE_RPS_LIMIT, "namespace rate limit exceeded")
		}, rateLimited: true, says: "the server refused a List call once within 50ms as over the namespace's rate limit (RESOURCE_EXHAUSTED: namespace rate limit exceeded)"},
		{name: "no answer in time", call: func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		}, timedOut: true, says: "the server did not answer a List call within 50ms"},
		{name: "another error, as it is", call: func(context.Context) error { return other }, is: other, says: "permission denied"},
		{name: "success", call: func(context.Context) error { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ops.Call(context.Background(), 50*time.Millisecond, "a List call", tt.call)
			if tt.says == "" {
				assert.NoError(t, err)
				return
			}
			assert.Equal(t, tt.says, firstClause(err.Error()))
			assert.Equal(t, tt.rateLimited, errors.Is(err, ops.ErrRateLimited))
			assert.Equal(t, tt.timedOut, ops.TimedOut(err))
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
		})
	}
}

// The caller's own end is not the call's fault: its error, as it is.
func TestCallLeavesTheCallersEndAlone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := ops.Call(ctx, time.Second, "a List call", func(ctx context.Context) error { return ctx.Err() })
	assert.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, ops.ErrRateLimited)
}

// firstClause is a sentence up to its advice.
func firstClause(s string) string {
	for i := range len(s) - 1 {
		if s[i] == ')' && s[i+1] == ':' {
			return s[:i+1]
		}
	}
	return s
}

// A visibility call over the process's budget waits for its turn within
// its context: with a budget of 1 a second, a second call whose context
// ends sooner than its turn is not made, and says why.
func TestVisibilityCallWaitsForItsTurnInTheBudget(t *testing.T) {
	ops.SetVisibilityRate(1)
	t.Cleanup(func() { ops.SetVisibilityRate(ops.DefaultVisibilityRate) })
	calls := 0
	call := func(context.Context) error { calls++; return nil }
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	assert.NoError(t, ops.VisibilityCall(ctx, time.Second, "a Count call", call))
	err := ops.VisibilityCall(ctx, time.Second, "a Count call", call)
	assert.ErrorContains(t, err, "no turn in this process's budget of visibility calls (1 a second) came for a Count call before its deadline")
	assert.True(t, ops.TimedOut(err), "said as a time-out")
	assert.Equal(t, 1, calls, "the call over the budget was not made")
}
