package dashboard

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// viewCache shares the reads of a view of many jobs (the list, the
// Waiting page) among the tabs that show it: a read is kept for fresh;
// a request that finds one older, but younger than stale, is answered
// with it at once while one read in the background replaces it; an older
// one, or none, waits for the one read in flight. So sixteen tabs that
// refresh every five seconds cost visibility one read per fresh interval,
// not sixteen, and a page shows what is at most stale old. A resume
// clears it (forget), so the page a reviewer comes back to after acting
// is read afresh.
type viewCache[T any] struct {
	fresh, stale time.Duration
	now          func() time.Time
	// load reads key; it gets a context of its own, bounded by timeout,
	// so that a request that gives up does not cancel the others' read.
	load    func(ctx context.Context, key string) (T, error)
	timeout time.Duration
	// good says a read succeeded, so that kept returns it later; if not
	// set, a read without an error.
	good func(T, error) bool

	mu      sync.Mutex
	entries map[string]*viewEntry[T]
	// gen counts forgets: a read that began before one is kept as
	// expired.
	gen int
}

type viewEntry[T any] struct {
	at      time.Time
	val     T
	err     error
	loading chan struct{} // closed when the read in flight ends; nil when none is
	// good is the last read that succeeded, begun at goodAt (zero: none
	// since the entry was made, that is since the last forget).
	good   T
	goodAt time.Time
}

func newViewCache[T any](fresh, stale, timeout time.Duration, now func() time.Time, load func(context.Context, string) (T, error)) *viewCache[T] {
	return &viewCache[T]{fresh: fresh, stale: stale, timeout: timeout, now: now, load: load, entries: map[string]*viewEntry[T]{}}
}

// get returns key's view, read now or shared as the type says.
func (c *viewCache[T]) get(ctx context.Context, key string) (T, error) {
	c.mu.Lock()
	e, ok := c.entries[key]
	if !ok {
		e = &viewEntry[T]{}
		c.entries[key] = e
	}
	age := c.now().Sub(e.at)
	hasValue := !e.at.IsZero()
	switch {
	case hasValue && age < c.fresh:
		v, err := e.val, e.err
		c.mu.Unlock()
		return v, err
	case hasValue && age < c.stale && e.err == nil:
		c.startLocked(key, e)
		v := e.val
		c.mu.Unlock()
		return v, nil
	}
	done := c.startLocked(key, e)
	c.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return e.val, e.err
}

// startLocked starts a read of key unless one is in flight, and returns
// the channel closed when it ends. c.mu is held.
func (c *viewCache[T]) startLocked(key string, e *viewEntry[T]) chan struct{} {
	if e.loading != nil {
		return e.loading
	}
	done := make(chan struct{})
	e.loading = done
	gen := c.gen
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		defer cancel()
		began := c.now()
		v, err := c.load(ctx, key)
		c.mu.Lock()
		e.at, e.val, e.err, e.loading = c.now(), v, err, nil
		if good := c.good; (good == nil && err == nil) || (good != nil && good(v, err)) {
			e.good, e.goodAt = v, began
		}
		if c.gen != gen {
			e.at = time.Time{} // read before a resume: its waiters take it, nobody after
		}
		c.mu.Unlock()
		close(done)
	}()
	return done
}

// forget drops every kept read, those in flight too: the next request
// reads afresh. A read in flight ends into its own entry, which only the
// requests already waiting for it see.
func (c *viewCache[T]) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.entries)
}

// forgetViews clears the views' shared reads after the dashboard changed
// what they show (a resume).
func (s *Server) forgetViews() {
	s.lists.forget()
	s.queue.forget()
}

// kept is key's last read that succeeded and when it began, if one did
// since the last forget: what a page shows, with asOf, when the server
// refuses a read as over the namespace's rate limit (ops.ErrRateLimited),
// rather than an empty table.
func (c *viewCache[T]) kept(key string) (T, time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || e.goodAt.IsZero() {
		var zero T
		return zero, time.Time{}, false
	}
	return e.good, e.goodAt, true
}

// asOf is the sentence a page adds when it shows a kept read.
func asOf(at time.Time, refresh time.Duration) string {
	return fmt.Sprintf("; showing what was read at %s UTC; this page tries again every %s", at.UTC().Format("15:04:05"), refresh)
}
