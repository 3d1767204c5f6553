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
		v, err := c.load(ctx, key)
		c.mu.Lock()
		e.at, e.val, e.err, e.loading = c.now(), v, err, nil
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
	s.goodLists.forget()
	s.goodQueue.forget()
}

// lastGood keeps each view's last read that succeeded, for a view the
// server refused as over the namespace's rate limit (ops.ErrRateLimited):
// the page shows what it read then, says when and why, and tries again at
// its next refresh, rather than showing an empty table. A resume forgets
// it as it forgets the shared reads. Keys are the views' queries: a few.
type lastGood[T any] struct {
	mu   sync.Mutex
	gen  int
	vals map[string]kept[T]
}

type kept[T any] struct {
	val T
	at  time.Time
}

// keep records key's read made at at, unless a forget came after the
// read began (gen is the generation it began in).
func (l *lastGood[T]) keep(key string, gen int, val T, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen != l.gen {
		return
	}
	if l.vals == nil {
		l.vals = map[string]kept[T]{}
	}
	l.vals[key] = kept[T]{val, at}
}

// get is key's last read that succeeded, if any since the last forget.
func (l *lastGood[T]) get(key string) (kept[T], bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k, ok := l.vals[key]
	return k, ok
}

// generation is the current one, for keep.
func (l *lastGood[T]) generation() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gen
}

func (l *lastGood[T]) forget() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gen++
	clear(l.vals)
}

// asOf is the sentence a page adds when it shows a kept read.
func asOf(at time.Time, refresh time.Duration) string {
	return fmt.Sprintf("; showing what was read at %s UTC; this page tries again every %s", at.UTC().Format("15:04:05"), refresh)
}
