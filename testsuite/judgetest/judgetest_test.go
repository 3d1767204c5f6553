package judgetest_test

import (
	"context"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/testsuite/judgetest"
)

// scriptedHarness runs jev.Scripted through the suite: each Script swaps
// in a new script that repeats its one step.
func scriptedHarness(t *testing.T) *judgetest.Harness {
	var mu sync.Mutex
	current := jev.NewScripted()
	return &judgetest.Harness{
		Judge: jev.JudgeFunc(func(ctx context.Context, req jev.Request) (*jev.Response, error) {
			mu.Lock()
			s := current
			mu.Unlock()
			return s.Decide(ctx, req)
		}),
		Script: func(r judgetest.Reply) bool {
			var step jev.Step
			switch r.Kind {
			case judgetest.KindAnswer:
				step.Response = r.Response
			case judgetest.KindEmpty:
				step.Response = &jev.Response{ModelVersion: "scripted"}
			case judgetest.KindHang:
			default:
				return false // no transport, no status
			}
			s := jev.NewScripted(step)
			s.Repeat = true
			mu.Lock()
			current = s
			mu.Unlock()
			return true
		},
		ReportsUsage: true,
	}
}

func TestConformanceScripted(t *testing.T) {
	judgetest.Run(t, scriptedHarness)
}

func TestConformanceHeuristic(t *testing.T) {
	judgetest.Run(t, func(t *testing.T) *judgetest.Harness {
		return &judgetest.Harness{Judge: overseer.HeuristicJudge{}}
	})
}

func TestMarshalLoose(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   any
		want string
	}{
		{"finite is plain JSON", map[string]float64{"p": 0.5}, `{"p":0.5}`},
		{"NaN is a bare token", map[string]float64{"p": math.NaN()}, `{"p":NaN}`},
		{"infinities", []float64{math.Inf(1), math.Inf(-1)}, `[Infinity,-Infinity]`},
		{"answer with NaN keeps its tags", jev.Answer{Type: jev.Noul, Probability: jev.Prob(math.NaN())}, `{"probability":NaN,"type":"noul"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := judgetest.MarshalLoose(tc.in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
		})
	}
}

func TestValidResponseValidates(t *testing.T) {
	for _, req := range []jev.Request{judgetest.BoundaryRequest(), judgetest.GenericRequest()} {
		require.NoError(t, jev.Validate(req, judgetest.ValidResponse(req)))
		require.NoError(t, jev.ValidateRequest(req))
	}
}
