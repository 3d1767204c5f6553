package supervision_test

import (
	"context"
	"strings"
	"testing"

	"github.com/corohq/temporal-overseer/supervision"
)

// BenchmarkObserveSnapshot is one supervised observation with the heuristic
// judge on a snapshot near the default limits: state building, the request,
// validation, classification and arbitration.
func BenchmarkObserveSnapshot(b *testing.B) {
	th, _ := supervision.NewThresholds(0.2, 0.8)
	s, err := supervision.New(supervision.Options{Mode: supervision.ModeShadow, Judge: supervision.HeuristicJudge{}, Thresholds: th})
	if err != nil {
		b.Fatal(err)
	}
	snap := idle(verifiedEvidence())
	snap.Output = strings.Repeat("working on the export; ", 500)
	snap.Evidence.Diff = strings.Repeat("+line\n", 4000)
	snap.RecentEvents = make([]string, 32)
	for i := range snap.RecentEvents {
		snap.RecentEvents[i] = "TOOL_CALL"
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if d := s.ObserveSnapshot(ctx, snap); d.Report == nil {
			b.Fatalf("no report: %+v", d)
		}
	}
}
