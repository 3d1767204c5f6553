package activities_test

import (
	"context"
	"fmt"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/overseer"
)

// In the looping scenario the tests keep failing until the phase receives
// a process note from the overseer (set on its input, as the plugin does
// after a flagged phase in manage mode).
func ExampleAgents_Run() {
	agents := &activities.Agents{} // Work not set: phases return at once
	in := &activities.PhaseInput{Objective: "Add CSV export", Scenario: activities.Looping, Phase: activities.PhaseTest, Run: 3}

	out, _ := agents.Run(context.Background(), in)
	fmt.Printf("passed %v: %s (failed tools %v)\n", out.Passed, out.Summary, out.OverseerReport.FailedToolCategories)

	in.Run = 4
	in.SetProcessNote(overseer.Note{FlaggedPhase: "code", Text: "The phase may have repeated earlier work."})
	out, _ = agents.Run(context.Background(), in)
	fmt.Printf("passed %v: %s\n", out.Passed, out.Summary)
	// Output:
	// passed false: 2 tests fail: TestExportCSV, TestExportHeader (failed tools [test])
	// passed true: all tests pass
}
