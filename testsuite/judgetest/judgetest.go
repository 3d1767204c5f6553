package judgetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// Kind is the kind of a scripted reply.
type Kind int

// The kinds of reply a Harness can be scripted with.
const (
	// KindAnswer sends Reply.Response as the backend's answer, however
	// invalid it is (NaN, out of range, unknown options, missing
	// answers…).
	KindAnswer Kind = iota
	// KindEmpty sends an empty answer: an empty body over HTTP, empty
	// content in a chat completion, a response without answers in process.
	KindEmpty
	// KindHTTPStatus answers with the HTTP status Reply.HTTPStatus and an
	// error body.
	KindHTTPStatus
	// KindHang never answers: the backend waits until the caller gives up.
	KindHang
)

func (k Kind) String() string {
	switch k {
	case KindAnswer:
		return "answer"
	case KindEmpty:
		return "empty"
	case KindHTTPStatus:
		return "http-status"
	case KindHang:
		return "hang"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Reply is what a scripted backend answers.
type Reply struct {
	Kind Kind
	// Response is the answer of KindAnswer. The Harness encodes it the
	// way its transport does (MarshalLoose writes NaN as a bare NaN).
	Response *jev.Response
	// HTTPStatus is the HTTP status of KindHTTPStatus.
	HTTPStatus int
}

// Harness is one backend under test.
type Harness struct {
	// Judge is the judge under test.
	Judge jev.Judge
	// Script makes the backend answer every following call with r until
	// the next Script, and reports false when the backend cannot express r
	// (the case is then skipped). If nil, the backend cannot be scripted:
	// only the cases that need no script run, with BoundaryRequest.
	Script func(r Reply) bool
	// ValidatesAnswers says Decide itself reports an invalid answer with an
	// error wrapping jev.ErrInvalidAnswer (every transport-backed judge
	// does). If false, Decide may return the invalid answer, and the suite
	// requires that jev.Validate rejects it.
	ValidatesAnswers bool
	// ReportsUsage says the backend returns the token usage it was
	// scripted with.
	ReportsUsage bool
}

// Run runs the suite. newHarness is called once per case, so that each
// case gets a fresh backend; it may register cleanups on its t.
func Run(t *testing.T, newHarness func(t *testing.T) *Harness) {
	t.Helper()
	t.Run("valid/boundary", func(t *testing.T) { testValid(t, newHarness(t), BoundaryRequest()) })
	t.Run("valid/generic", func(t *testing.T) { testValid(t, scripted(t, newHarness(t)), GenericRequest()) })
	for _, c := range invalidCases() {
		t.Run("invalid/"+c.name, func(t *testing.T) { testInvalid(t, scripted(t, newHarness(t)), c.reply()) })
	}
	for _, c := range []struct {
		status    int
		rejected  bool
		retryable bool
	}{{500, false, true}, {502, false, true}, {503, false, true}, {408, false, true}, {429, false, true},
		{400, true, false}, {401, true, false}, {403, true, false}, {404, true, false}} {
		t.Run(fmt.Sprintf("status/%d", c.status), func(t *testing.T) { testStatus(t, scripted(t, newHarness(t)), c.status, c.rejected) })
	}
	t.Run("context/cancelled-before", func(t *testing.T) {
		h := newHarness(t)
		scriptIfPossible(h, Reply{Kind: KindAnswer, Response: ValidResponse(BoundaryRequest())})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := decide(t, h, ctx, BoundaryRequest())
		requireIs(t, err, context.Canceled)
	})
	t.Run("context/deadline-passed", func(t *testing.T) {
		h := newHarness(t)
		scriptIfPossible(h, Reply{Kind: KindAnswer, Response: ValidResponse(BoundaryRequest())})
		ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel()
		_, err := decide(t, h, ctx, BoundaryRequest())
		requireIs(t, err, context.DeadlineExceeded)
	})
	t.Run("context/cancelled-while-waiting", func(t *testing.T) {
		h := scripted(t, newHarness(t))
		script(t, h, Reply{Kind: KindHang})
		ctx, cancel := context.WithCancel(context.Background())
		stop := time.AfterFunc(50*time.Millisecond, cancel)
		defer stop.Stop()
		_, err := decide(t, h, ctx, BoundaryRequest())
		requireIs(t, err, context.Canceled)
	})
	t.Run("context/deadline-while-waiting", func(t *testing.T) {
		h := scripted(t, newHarness(t))
		script(t, h, Reply{Kind: KindHang})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := decide(t, h, ctx, BoundaryRequest())
		requireIs(t, err, context.DeadlineExceeded)
	})
	t.Run("concurrent", func(t *testing.T) {
		h := newHarness(t)
		req := BoundaryRequest()
		scriptIfPossible(h, Reply{Kind: KindAnswer, Response: ValidResponse(req)})
		var wg sync.WaitGroup
		errs := make([]error, 8)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := h.Judge.Decide(context.Background(), req)
				if err == nil {
					err = jev.Validate(req, resp)
				}
				errs[i] = err
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("call %d: %v", i, err)
			}
		}
	})
}

// decideTimeout bounds one call in the suite, so that a judge that ignores
// its context fails the test instead of hanging it. It is a safety net, not
// a measure of speed.
const decideTimeout = 20 * time.Second

// decide calls the judge and fails the test if the call does not return
// within decideTimeout. It also checks that the request is left unchanged.
func decide(t *testing.T, h *Harness, ctx context.Context, req jev.Request) (*jev.Response, error) {
	t.Helper()
	before, err := json.Marshal(req)
	if err != nil {
		t.Fatalf("encode request: %v", err)
	}
	type result struct {
		resp *jev.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := h.Judge.Decide(ctx, req)
		done <- result{resp, err}
	}()
	select {
	case r := <-done:
		after, _ := json.Marshal(req)
		if !bytes.Equal(before, after) {
			t.Errorf("Decide changed its request:\nbefore %s\nafter  %s", before, after)
		}
		return r.resp, r.err
	case <-time.After(decideTimeout):
		t.Fatalf("Decide did not return within %v: does the judge honour its context?", decideTimeout)
		return nil, nil
	}
}

func testValid(t *testing.T, h *Harness, req jev.Request) {
	want := ValidResponse(req)
	scripted := scriptIfPossible(h, Reply{Kind: KindAnswer, Response: want})
	resp, err := decide(t, h, context.Background(), req)
	if err != nil {
		t.Fatalf("Decide: %v", err)
	}
	if resp == nil {
		t.Fatal("Decide returned neither a response nor an error")
	}
	if err := jev.Validate(req, resp); err != nil {
		t.Fatalf("a valid answer does not validate: %v", err)
	}
	if resp.ModelVersion == "" {
		t.Error("the response names no model version")
	}
	if resp.Latency < 0 {
		t.Errorf("negative latency %v", resp.Latency)
	}
	if !scripted {
		return
	}
	if resp.ModelVersion != want.ModelVersion {
		t.Errorf("model version %q, want %q", resp.ModelVersion, want.ModelVersion)
	}
	if h.ReportsUsage && resp.Usage != want.Usage {
		t.Errorf("usage %+v, want %+v", resp.Usage, want.Usage)
	}
	for name, w := range want.Answers {
		g := resp.Answers[name]
		if g.Choice != w.Choice || !samePtr(g.Probability, w.Probability) || !samePtr(g.Score, w.Score) || !samePtr(g.Confidence, w.Confidence) {
			t.Errorf("answer %q = %s, want %s", name, show(g), show(w))
		}
		for k, p := range w.Probabilities {
			if math.Abs(g.Probabilities[k]-p) > 1e-9 {
				t.Errorf("answer %q: probability of %q = %v, want %v", name, k, g.Probabilities[k], p)
			}
		}
	}
}

func testInvalid(t *testing.T, h *Harness, r Reply) {
	req := BoundaryRequest()
	script(t, h, r)
	resp, err := decide(t, h, context.Background(), req)
	if h.ValidatesAnswers {
		if err == nil {
			t.Fatalf("Decide accepted an invalid answer: %s", show(resp))
		}
		if resp != nil {
			t.Errorf("Decide returned a response with its error %v", err)
		}
	} else if err == nil {
		err = jev.Validate(req, resp)
	}
	requireIs(t, err, jev.ErrInvalidAnswer)
	if errors.Is(err, jev.ErrRejected) {
		t.Errorf("an invalid answer is not a rejection: %v", err)
	}
}

func testStatus(t *testing.T, h *Harness, status int, rejected bool) {
	if !h.Script(Reply{Kind: KindHTTPStatus, HTTPStatus: status}) {
		t.Skipf("the backend cannot answer with HTTP status %d", status)
	}
	resp, err := decide(t, h, context.Background(), BoundaryRequest())
	if err == nil {
		t.Fatalf("status %d gave a response: %s", status, show(resp))
	}
	if errors.Is(err, jev.ErrInvalidAnswer) {
		t.Errorf("status %d is not an invalid answer: %v", status, err)
	}
	if got := errors.Is(err, jev.ErrRejected); got != rejected {
		t.Errorf("status %d: errors.Is(err, jev.ErrRejected) = %v, want %v (err: %v)", status, got, rejected, err)
	}
}

func scripted(t *testing.T, h *Harness) *Harness {
	t.Helper()
	if h.Script == nil {
		t.Skip("the backend cannot be scripted")
	}
	return h
}

func script(t *testing.T, h *Harness, r Reply) {
	t.Helper()
	if !h.Script(r) {
		t.Skipf("the backend cannot express a reply of kind %s", r.Kind)
	}
}

func scriptIfPossible(h *Harness, r Reply) bool { return h.Script != nil && h.Script(r) }

func requireIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got error %v, want one wrapping %v", err, target)
	}
}

func samePtr(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return math.Abs(*a-*b) <= 1e-9
}

func show(v any) string {
	b, err := MarshalLoose(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

// BoundaryRequest is the overseer's phase-boundary request over a small
// trajectory: what every judge is asked in production.
func BoundaryRequest() jev.Request {
	req, err := overseer.NewRequest("", overseer.DefaultObligations(), overseer.Trajectory{
		Objective: "Add CSV export", Phase: "code", Lane: "feature", PhaseRuns: 3,
	})
	if err != nil {
		panic(err) // the state is a fixed value that always encodes
	}
	return req
}

// GenericRequest asks other questions than the overseer's: other names, a
// choice whose options all have descriptions, a five-level scale.
func GenericRequest() jev.Request {
	return jev.Request{
		State: json.RawMessage(`{"ticket":"PAY-12","summary":"Refund flow times out for large carts","labels":["payments","p1"]}`),
		Questions: map[string]jev.Question{
			"is_bug": {Type: jev.Noul, Instructions: "The ticket describes a defect rather than a feature request."},
			"team": {Type: jev.Choice, Options: []jev.ChoiceOption{
				{Name: "payments", Description: "Owns checkout, refunds and payouts."},
				{Name: "platform", Description: "Owns infrastructure and timeouts."},
				{Name: "support", Description: "Owns customer communication."},
			}},
			"urgency": {Type: jev.Score, Levels: []string{"none", "low", "medium", "high", "critical"}},
		},
	}
}

// ValidResponse answers every question of req validly: noul 0.8, choice
// the last option with confidence 0.7, score the middle of the scale plus
// a quarter, with distributions, model "judgetest-model-1" and usage
// 321/45 tokens.
func ValidResponse(req jev.Request) *jev.Response {
	resp := &jev.Response{ModelVersion: "judgetest-model-1", Usage: jev.Usage{InputTokens: 321, OutputTokens: 45}, Answers: map[string]jev.Answer{}}
	for _, name := range slices.Sorted(maps.Keys(req.Questions)) {
		q := req.Questions[name]
		switch q.Type {
		case jev.Noul:
			resp.Answers[name] = jev.Answer{Type: jev.Noul, Probability: jev.Prob(0.8)}
		case jev.Choice:
			probs := map[string]float64{}
			for _, o := range q.Options {
				probs[o.Name] = 0.3 / float64(max(1, len(q.Options)-1))
			}
			last := q.Options[len(q.Options)-1].Name
			probs[last] = 0.7
			resp.Answers[name] = jev.Answer{Type: jev.Choice, Choice: last, Confidence: jev.Prob(0.7), Probabilities: probs}
		case jev.Score:
			probs := map[string]float64{}
			mid := (len(q.Levels) - 1) / 2
			for i, l := range q.Levels {
				probs[l] = 0.1
				if i == mid {
					probs[l] = 0.6
				}
			}
			resp.Answers[name] = jev.Answer{Type: jev.Score, Score: jev.Prob(float64(mid) + 0.25), Confidence: jev.Prob(0.6), Probabilities: probs}
		}
	}
	return resp
}

type invalidCase struct {
	name  string
	reply func() Reply
}

// invalidCases mutate a valid answer to the boundary request.
func invalidCases() []invalidCase {
	mutate := func(f func(a map[string]jev.Answer)) func() Reply {
		return func() Reply {
			resp := ValidResponse(BoundaryRequest())
			f(resp.Answers)
			return Reply{Kind: KindAnswer, Response: resp}
		}
	}
	set := func(name string, a jev.Answer) func(map[string]jev.Answer) {
		return func(m map[string]jev.Answer) { m[name] = a }
	}
	noul := func(p float64) jev.Answer { return jev.Answer{Type: jev.Noul, Probability: jev.Prob(p)} }
	return []invalidCase{
		{"nan-probability", mutate(set(overseer.QuestionOffTrack, noul(math.NaN())))},
		{"negative-probability", mutate(set(overseer.QuestionOffTrack, noul(-1)))},
		{"probability-above-one", mutate(set(overseer.QuestionBlocked, noul(1.1)))},
		{"nan-confidence", mutate(func(m map[string]jev.Answer) {
			a := m[overseer.QuestionBreach]
			a.Confidence = jev.Prob(math.NaN())
			m[overseer.QuestionBreach] = a
		})},
		{"unknown-option", mutate(func(m map[string]jev.Answer) {
			a := m[overseer.QuestionBreach]
			a.Choice = "obligation[9]"
			m[overseer.QuestionBreach] = a
		})},
		{"missing-question", mutate(func(m map[string]jev.Answer) { delete(m, overseer.QuestionBlocked) })},
		{"score-off-the-scale", mutate(func(m map[string]jev.Answer) {
			a := m[overseer.QuestionSeverity]
			a.Score = jev.Prob(3.5)
			m[overseer.QuestionSeverity] = a
		})},
		{"wrong-answer-type", mutate(set(overseer.QuestionOffTrack, jev.Answer{Type: jev.Score, Score: jev.Prob(1), Confidence: jev.Prob(0.5)}))},
		{"extra-answer", mutate(set("verdict", noul(0.5)))},
		{"no-answers", mutate(func(m map[string]jev.Answer) { clear(m) })},
		{"empty-body", func() Reply { return Reply{Kind: KindEmpty} }},
	}
}

// MarshalLoose encodes v like encoding/json, except that NaN and ±Inf are
// written as the bare tokens NaN, Infinity and -Infinity, as Python's
// json.dumps does by default: the body a careless service sends, which no
// JSON decoder accepts. Scripted transports use it to send such answers.
func MarshalLoose(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err == nil {
		return b, nil
	}
	var generic any
	generic, err = looseTree(reflect.ValueOf(v))
	if err != nil {
		return nil, err
	}
	b, err = json.Marshal(generic)
	if err != nil {
		return nil, err
	}
	for token, sentinel := range nonFinite {
		b = bytes.ReplaceAll(b, []byte(`"`+sentinel+`"`), []byte(token))
	}
	return b, nil
}

var nonFinite = map[string]string{"NaN": "\u2063judgetest:NaN\u2063", "Infinity": "\u2063judgetest:+Inf\u2063", "-Infinity": "\u2063judgetest:-Inf\u2063"}

// looseTree turns v into maps, slices and scalars, with non-finite floats
// replaced by sentinel strings. Struct fields follow their json tags (name
// and omitempty only).
func looseTree(v reflect.Value) (any, error) {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil, nil
		}
		v = v.Elem()
	}
	if m, ok := v.Interface().(json.Marshaler); ok {
		if b, err := m.MarshalJSON(); err == nil {
			return json.RawMessage(b), nil
		}
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		switch {
		case math.IsNaN(f):
			return nonFinite["NaN"], nil
		case math.IsInf(f, 1):
			return nonFinite["Infinity"], nil
		case math.IsInf(f, -1):
			return nonFinite["-Infinity"], nil
		}
		return f, nil
	case reflect.Map:
		out := map[string]any{}
		iter := v.MapRange()
		for iter.Next() {
			e, err := looseTree(iter.Value())
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(iter.Key().Interface())] = e
		}
		return out, nil
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return v.Interface(), nil
		}
		out := make([]any, v.Len())
		for i := range out {
			e, err := looseTree(v.Index(i))
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	case reflect.Struct:
		out := map[string]any{}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			name, opts := f.Name, ""
			if tag, ok := f.Tag.Lookup("json"); ok {
				if tag == "-" {
					continue
				}
				if n, o, _ := bytes.Cut([]byte(tag), []byte(",")); len(n) > 0 {
					name, opts = string(n), string(o)
				} else {
					opts = string(o)
				}
			}
			if opts == "omitempty" && v.Field(i).IsZero() {
				continue
			}
			e, err := looseTree(v.Field(i))
			if err != nil {
				return nil, err
			}
			out[name] = e
		}
		return out, nil
	default:
		return v.Interface(), nil
	}
}
