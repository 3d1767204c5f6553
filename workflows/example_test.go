package workflows_test

import (
	"fmt"
	"io"
	"log/slog"

	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/workflows"
)

// Run the reference job under the overseer, offline, in the SDK's test
// environment: the simulated agents of the on-track scenario fail the
// tests once and fix them, and the overseer, observing with its
// rule-based judge, assesses every phase.
func ExampleJob() {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := s.NewTestWorkflowEnvironment()
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeObserve, Judge: overseer.HeuristicJudge{}})
	if err != nil {
		panic(err)
	}
	env.SetWorkerOptions(worker.Options{Plugins: []worker.Plugin{plugin}})
	workflows.Register(env)
	(&activities.Agents{}).Register(env)

	env.ExecuteWorkflow(workflows.JobWorkflowName, workflows.JobInput{
		Objective: "Add CSV export to the reports page",
		Scenario:  activities.OnTrack,
	})
	var result workflows.JobResult
	if err := env.GetWorkflowResult(&result); err != nil {
		panic(err)
	}
	fmt.Println(result.Outcome, result.Log)

	v, err := env.QueryWorkflow(overseer.StatusQueryName)
	if err != nil {
		panic(err)
	}
	var st overseer.Status
	if err := v.Get(&st); err != nil {
		panic(err)
	}
	for _, a := range st.Assessments {
		fmt.Printf("%s: %s (P(on objective) %.2f)\n", a.Phase, a.Verdict.Band, a.Verdict.OnObjective)
	}
	// Output:
	// delivered [spec#1 ok plan#1 ok code#1 ok test#1 failed checks code#2 ok test#2 ok review#1 ok evaluate#1 ok]
	// spec: On track (P(on objective) 0.92)
	// plan: On track (P(on objective) 0.92)
	// code: On track (P(on objective) 0.92)
	// test: On track (P(on objective) 0.92)
	// code: On track (P(on objective) 0.80)
	// test: On track (P(on objective) 0.80)
	// review: On track (P(on objective) 0.88)
	// evaluate: On track (P(on objective) 0.88)
}
