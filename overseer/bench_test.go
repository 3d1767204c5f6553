package overseer_test

import (
	"context"
	"fmt"
	"testing"

	"go.temporal.io/sdk/converter"

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
	benchAssess(b, overseer.HeuristicJudge{}, overseer.DefaultPolicy(), longTrajectory(b))
}

// benchAssess measures one boundary: build the request, judge, validate
// and evaluate.
func benchAssess(b *testing.B, j jev.Judge, policy overseer.Policy, traj overseer.Trajectory) {
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		req, err := overseer.NewRequest("", overseer.DefaultObligations(), traj)
		if err != nil {
			b.Fatal(err)
		}
		resp, err := j.Decide(ctx, req)
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

// longAgentLoop is an agent loop after turns turns (a model call, then a
// tool call, the fifth of them failing), recorded the way the plugin
// records it.
func longAgentLoop(turns int) overseer.Trajectory {
	ts := make([]turn, turns)
	for i := range ts {
		ts[i] = turn{tool: []string{"agent.read_file", "agent.edit_file", "agent.run_tests"}[i%3], failed: i%5 == 4}
	}
	return agentLoop(ts...)
}

// BenchmarkAssessLoopBoundary is the worker-side cost of one agent-loop
// boundary with the default learned judge and the loop policy: at stage 0
// (the rules alone) and with the type's own succeeded runs (stage 1: the
// loop model reads its turns and tokens against theirs). A phase boundary
// with the same judge is the reference.
func BenchmarkAssessLoopBoundary(b *testing.B) {
	for _, bc := range []struct {
		name  string
		judge *overseer.LearnedJudge
		traj  overseer.Trajectory
	}{
		{"phases", &overseer.LearnedJudge{}, longTrajectory(b)},
		{"loop/stage0", &overseer.LearnedJudge{}, longAgentLoop(500)},
		{"loop/stage1", &overseer.LearnedJudge{LoopModel: withSucceededRuns(b, 50, 200)}, longAgentLoop(500)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			benchAssess(b, bc.judge, overseer.PolicyFor(bc.judge).ForShape(overseer.ShapeOf(bc.traj)), bc.traj)
		})
	}
}

// BenchmarkRecordCall is the workflow-side cost of recording one activity
// call of an agent loop (it runs in workflow code at every call, during
// replay too), in a loop already past its size bound.
func BenchmarkRecordCall(b *testing.B) {
	var rec overseer.TrajectoryRecorder
	result, err := converter.GetDefaultDataConverter().ToPayload("result")
	if err != nil {
		b.Fatal(err)
	}
	calls := []overseer.ActivityCall{
		{Phase: "agent.model", Args: []any{"prompt"}, Result: result, Report: &overseer.PhaseReport{Turns: 1, InputTokens: 3000, OutputTokens: 200}},
		{Phase: "agent.run_tests", Args: []any{"go test ./..."}, Result: result},
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		rec.RecordCall(calls[i%2])
		i++
	}
}
