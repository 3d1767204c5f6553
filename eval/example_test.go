package eval_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/corohq/temporal-overseer/eval"
)

// Run records are JSON Lines, one run per line: here a run of phases, as
// `overseer export` writes them. Replay rebuilds the trajectory the
// overseer's judge would have seen at each phase boundary.
func ExampleReplay() {
	const line = `{"format": "overseer-run/v1", "id": "job-7", "outcome": "failed", ` +
		`"task": {"family": "reports", "objective": "Add CSV export"}, "unit": "phase", "steps": [` +
		`{"phase": "plan", "turns": 4}, ` +
		`{"phase": "code", "turns": 12, "input_tokens": 52000, "output_tokens": 3100}, ` +
		`{"phase": "test", "failed": true}, {"phase": "test", "failed": true}]}`
	records, err := eval.ReadRecords(strings.NewReader(line + "\n"))
	if err != nil {
		log.Fatal(err)
	}
	for _, b := range eval.Replay(records[0]) {
		fmt.Println(b.Trajectory.Digest())
	}
	// Output:
	// phase plan; 1 phase runs, 0 repeats, 0 failed (streak 0); 4 turns, $0.00
	// phase code; 2 phase runs, 0 repeats, 0 failed (streak 0); 16 turns, $0.00; tokens 52000 in, 3100 out
	// phase test; 3 phase runs, 0 repeats, 1 failed (streak 1); 17 turns, $0.00; tokens 52000 in, 3100 out
	// phase test; 4 phase runs, 1 repeats, 2 failed (streak 2); 18 turns, $0.00; tokens 52000 in, 3100 out
}

// AUROC is the chance that a failed run (the positive class) scores above
// a succeeded one: 1 ranks every failure first, 0.5 is chance.
func ExampleAUROC() {
	scores := []float64{0.9, 0.7, 0.6, 0.2}
	failed := []bool{true, false, true, false}
	fmt.Printf("%.2f\n", eval.AUROC(scores, failed))
	// Output:
	// 0.75
}
