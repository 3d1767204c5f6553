package jev

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// Judge answers structured-decision requests. Implementations must honour
// ctx's deadline and cancellation and must not retry on their own: the
// caller (a Temporal retry policy) is the only retry layer.
type Judge interface {
	Decide(ctx context.Context, req Request) (*Response, error)
}

// JudgeFunc adapts a function to the Judge interface.
type JudgeFunc func(ctx context.Context, req Request) (*Response, error)

// Decide calls f.
func (f JudgeFunc) Decide(ctx context.Context, req Request) (*Response, error) { return f(ctx, req) }

var (
	_ Judge = JudgeFunc(nil)
	_ Judge = (*Scripted)(nil)
)

// ErrScriptExhausted is returned by a Scripted judge that has no step left.
var ErrScriptExhausted = errors.New("jev: scripted judge has no step left")

// Step is one scripted reply: a response, or an error, or both nil to
// block until ctx is done.
type Step struct {
	Response *Response
	Err      error
}

// Scripted is a judge for tests: it replays its steps in order and records
// every request it received. It is safe for concurrent use.
type Scripted struct {
	mu       sync.Mutex
	steps    []Step
	requests []Request
	// Repeat, when set, makes the last step answer every call after the
	// script runs out instead of returning ErrScriptExhausted.
	Repeat bool
}

// NewScripted returns a judge that answers with steps in order.
func NewScripted(steps ...Step) *Scripted { return &Scripted{steps: steps} }

// Decide returns the next scripted step, or ctx's error when ctx is
// already done (the step is used up all the same).
func (s *Scripted) Decide(ctx context.Context, req Request) (*Response, error) {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	n := len(s.requests)
	var step Step
	switch {
	case n <= len(s.steps):
		step = s.steps[n-1]
	case s.Repeat && len(s.steps) > 0:
		step = s.steps[len(s.steps)-1]
	default:
		s.mu.Unlock()
		return nil, fmt.Errorf("jev: call %d: %w", n, ErrScriptExhausted)
	}
	s.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if step.Response == nil && step.Err == nil {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if step.Err != nil {
		return nil, step.Err
	}
	resp := *step.Response
	return &resp, nil
}

// Requests returns a copy of the requests received so far.
func (s *Scripted) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Prob returns a pointer to p, for building answers.
func Prob(p float64) *float64 { return &p }

// DecodeState is how an in-process judge starts: it returns ctx's error if
// the call is already cancelled, else decodes the request's state into v,
// saying which judge could not read it.
func DecodeState(ctx context.Context, judge string, req Request, v any) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := json.Unmarshal(req.State, v); err != nil {
		return fmt.Errorf("%s: the request's state is not what it reads: %w", judge, err)
	}
	return nil
}
