package judgetest

import (
	"errors"
	"math"
	"testing"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

// CheckParsed asserts the contract of a response parser on one input, for
// fuzz targets: it fails only with jev.ErrInvalidAnswer and then returns no
// response; what it accepts validates against req, answers have their
// question's type, and every probability is finite and in [0,1].
func CheckParsed(t *testing.T, req jev.Request, resp *jev.Response, err error) {
	t.Helper()
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
	bad := func(p float64) bool { return math.IsNaN(p) || p < 0 || p > 1 }
	for name, a := range resp.Answers {
		if a.Type != req.Questions[name].Type {
			t.Fatalf("answer %q has type %q", name, a.Type)
		}
		for _, p := range []*float64{a.Probability, a.Confidence} {
			if p != nil && bad(*p) {
				t.Fatalf("answer %q: accepted probability %v", name, *p)
			}
		}
		for k, p := range a.Probabilities {
			if bad(p) {
				t.Fatalf("answer %q: accepted probability %v for %q", name, p, k)
			}
		}
	}
}
