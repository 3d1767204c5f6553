package visibility

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A call that cannot get a turn in the budget before its deadline is said
// as a time-out of the budget's (TimedOut matches it), not in the
// limiter's own words; a cancelled caller is told it was cancelled.
func TestNoTurnInTheBudgetBeforeTheDeadlineIsATimeOut(t *testing.T) {
	SetRate(0.01) // a turn every 100 s, one at once
	defer SetRate(DefaultRate)
	visibilityBudget.SetBurst(1)
	defer visibilityBudget.SetBurst(DefaultBurst)
	called := 0
	call := func(context.Context) error { called++; return nil }
	require.NoError(t, Budgeted(context.Background(), time.Second, "a List call", call), "the one turn the budget has")

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := Budgeted(ctx, time.Second, "a List call", call)
	require.Error(t, err)
	assert.True(t, TimedOut(err), "a time-out: %v", err)
	assert.False(t, errors.Is(err, ErrRateLimited), "the server refused nothing")
	assert.Contains(t, err.Error(), "no turn in this process's budget of visibility calls (0.01 a second) came for a List call before its deadline")
	assert.NotContains(t, err.Error(), "would exceed")

	cancelled, stop := context.WithCancel(context.Background())
	stop()
	err = Budgeted(cancelled, time.Second, "a Count call", call)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, called, "no call went out without a turn")
}
