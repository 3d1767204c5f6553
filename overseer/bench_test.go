package overseer_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// longTrajectory is a trajectory after many phases, at its size bound.
func longTrajectory(b *testing.B) overseer.Trajectory {
	b.Helper()
	var rec overseer.TrajectoryRecorder
	rec.SetObjective("Add CSV export to the reports page")
	for i := range 500 {
		rec.SetLane(fmt.Sprintf("lane-%d", i%3))
		rec.SetWorkItem(fmt.Sprintf("W-%d", i), "in_progress")
		rec.RecordPhase(overseer.PhaseRun{Phase: fmt.Sprintf("phase-%d", i%6)}, &overseer.PhaseReport{
			Turns: 5, CostUSD: 0.1, Rework: i % 2, FailedToolCategories: []string{"test"}})
	}
	return rec.Trajectory()
}

// BenchmarkAssessBoundary is the worker-side cost of one boundary with the
// heuristic judge: build the request, judge, validate and evaluate.
func BenchmarkAssessBoundary(b *testing.B) {
	traj := longTrajectory(b)
	policy := overseer.DefaultPolicy()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		req, err := overseer.NewRequest("", overseer.DefaultObligations(), traj)
		if err != nil {
			b.Fatal(err)
		}
		resp, err := overseer.HeuristicJudge{}.Decide(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		a, err := overseer.ParseAnswers(req, resp, overseer.DefaultObligations())
		if err != nil {
			b.Fatal(err)
		}
		_ = policy.Evaluate(a)
	}
}

// BenchmarkRecordPhase is the workflow-side cost of recording one phase
// into a trajectory at its size bound (it runs in workflow code on every
// boundary, during replay too).
func BenchmarkRecordPhase(b *testing.B) {
	var rec overseer.TrajectoryRecorder
	report := &overseer.PhaseReport{Turns: 5, FailedToolCategories: []string{"test", "build"}}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		rec.RecordPhase(overseer.PhaseRun{Phase: fmt.Sprintf("phase-%d", i%40)}, report)
		i++
	}
}

func BenchmarkDigest(b *testing.B) {
	traj := longTrajectory(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = traj.Digest()
	}
}

func BenchmarkValidate(b *testing.B) {
	req, err := overseer.NewRequest("", overseer.DefaultObligations(), longTrajectory(b))
	if err != nil {
		b.Fatal(err)
	}
	resp, err := overseer.HeuristicJudge{}.Decide(context.Background(), req)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := jev.Validate(req, resp); err != nil {
			b.Fatal(err)
		}
	}
}
