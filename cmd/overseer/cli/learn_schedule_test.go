package cli

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/sdk/client"
)

// nextInterval is the Temporal server's next time of an interval spec
// after ts (service/worker/scheduler, nextIntervalTime), in whole seconds.
func nextInterval(iv client.ScheduleIntervalSpec, ts time.Time) time.Time {
	interval, phase := int64(iv.Every/time.Second), int64(iv.Offset/time.Second)
	return time.Unix((((ts.Unix()-phase)/interval)+1)*interval+phase, 0).UTC()
}

// learn schedule --every 24h fires its first round 24 h after it was run,
// not at the next midnight UTC, and says when.
func TestLearnScheduleFirstRoundIsEveryFromNow(t *testing.T) {
	now := time.Date(2026, 12, 1, 22, 47, 13, 600_000_000, time.UTC)
	for _, every := range []time.Duration{24 * time.Hour, 12 * time.Hour, 90 * time.Minute, time.Minute} {
		iv, first := intervalFromNow(now, every)
		assert.Equal(t, now.Truncate(time.Second).Add(every), first, "%s", every)
		assert.Less(t, iv.Offset, every)
		// The server computes the next round a moment later than the CLI's
		// clock read, at any point before the first round.
		for _, later := range []time.Duration{0, 300 * time.Millisecond, 5 * time.Second, every - 2*time.Second} {
			assert.Equal(t, first, nextInterval(iv, now.Add(later)), "every %s, %s later", every, later)
		}
	}
	// Without an offset, 24h meant the next midnight UTC.
	assert.Equal(t, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC), nextInterval(client.ScheduleIntervalSpec{Every: 24 * time.Hour}, now))
}
