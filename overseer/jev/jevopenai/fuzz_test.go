package jevopenai_test

import (
	"errors"
	"math"
	"testing"

	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/jev/jevopenai"
	"github.com/corohq/temporal-overseer/testsuite/judgetest"
)

// FuzzParseCompletion feeds arbitrary chat-completions bodies to the parser
// (seed corpus in testdata/fuzz/FuzzParseCompletion). It must not panic,
// must fail only with jev.ErrInvalidAnswer, and what it accepts must
// validate with every probability finite and in [0,1].
func FuzzParseCompletion(f *testing.F) {
	req := judgetest.BoundaryRequest()
	f.Fuzz(func(t *testing.T, body []byte) {
		resp, err := jevopenai.ParseCompletion(req, body)
		if err != nil {
			if !errors.Is(err, jev.ErrInvalidAnswer) {
				t.Fatalf("error %v does not wrap jev.ErrInvalidAnswer", err)
			}
			if resp != nil {
				t.Fatal("a response returned with an error")
			}
			return
		}
		if err := jev.Validate(req, resp); err != nil {
			t.Fatalf("accepted a response that does not validate: %v", err)
		}
		for name, a := range resp.Answers {
			if a.Type != req.Questions[name].Type {
				t.Fatalf("answer %q has type %q", name, a.Type)
			}
			for _, p := range []*float64{a.Probability, a.Confidence} {
				if p != nil && (math.IsNaN(*p) || *p < 0 || *p > 1) {
					t.Fatalf("answer %q: accepted probability %v", name, *p)
				}
			}
		}
	})
}
