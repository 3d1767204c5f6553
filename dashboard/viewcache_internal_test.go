package dashboard

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A view read after a resume (forget) is read afresh even while a read
// that began before the resume is still in flight: neither that read nor
// the value it is replacing answers it (issue 45, item 6).
func TestAViewReadAfterAResumeIsNotTheReadFromBefore(t *testing.T) {
	for _, tc := range []struct {
		name string
		// kept: a value was read before, and the read in flight replaces
		// it in the background.
		kept bool
	}{{"a first read in flight", false}, {"a background read in flight over a kept value", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			now := time.Unix(0, 0)
			clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
			release := make(chan struct{})
			started := make(chan struct{}, 4)
			calls := 0
			load := func(ctx context.Context, key string) (string, error) {
				mu.Lock()
				calls++
				n := calls
				mu.Unlock()
				started <- struct{}{}
				if tc.kept && n == 1 {
					return "before", nil // the kept value
				}
				if n == 1 || (tc.kept && n == 2) {
					<-release // the read that began before the resume
					return "before", nil
				}
				return "after", nil
			}
			c := newViewCache(time.Second, time.Minute, 10*time.Second, clock, load)
			ctx := context.Background()
			var first string
			var wg sync.WaitGroup
			if tc.kept {
				v, err := c.get(ctx, "waiting")
				require.NoError(t, err)
				require.Equal(t, "before", v)
				<-started
				mu.Lock()
				now = now.Add(2 * time.Second) // past fresh, within stale
				mu.Unlock()
				v, err = c.get(ctx, "waiting") // the kept value, and a background read
				require.NoError(t, err)
				require.Equal(t, "before", v)
			} else {
				wg.Go(func() { first, _ = c.get(ctx, "waiting") })
			}
			<-started // the read from before the resume is in flight

			c.forget() // the resume

			// Bounded: on the code before, it waited for the read from
			// before the resume (or answered with the value it replaces).
			after, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			v, err := c.get(after, "waiting")
			require.NoError(t, err, "it waited for the read from before the resume")
			assert.Equal(t, "after", v, "read afresh")
			close(release)
			wg.Wait()
			if !tc.kept {
				assert.Equal(t, "before", first, "a request from before the resume takes the read it waited for")
			}
		})
	}
}

// kept is the last read that succeeded, with when it began, while later
// reads fail; a forget (a resume) drops it.
func TestViewCacheKeepsTheLastGoodRead(t *testing.T) {
	now := time.Unix(100, 0)
	clock := func() time.Time { return now }
	results := []error{nil, errors.New("refused"), errors.New("refused")}
	calls := 0
	load := func(context.Context, string) (int, error) {
		calls++
		return calls, results[calls-1]
	}
	c := newViewCache(0, 0, time.Second, clock, load) // every get reads
	ctx := context.Background()
	_, _, ok := c.kept("list")
	assert.False(t, ok, "nothing read yet")

	v, err := c.get(ctx, "list")
	require.NoError(t, err)
	require.Equal(t, 1, v)
	now = now.Add(time.Minute)
	_, err = c.get(ctx, "list")
	require.Error(t, err)
	kept, at, ok := c.kept("list")
	require.True(t, ok)
	assert.Equal(t, 1, kept, "the last read that succeeded")
	assert.Equal(t, time.Unix(100, 0), at, "when that read began")

	c.forget()
	_, _, ok = c.kept("list")
	assert.False(t, ok, "a resume drops it")
	_, err = c.get(ctx, "list")
	require.Error(t, err)
	_, _, ok = c.kept("list")
	assert.False(t, ok, "a failed read after the forget keeps nothing")
}
