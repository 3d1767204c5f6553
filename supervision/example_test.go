package supervision_test

import (
	"context"
	"fmt"
	"log"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/supervision"
)

// Observe a snapshot offline with the heuristic judge: the worker says it
// is done, and the host's evidence carries a passed verification receipt
// for the current revision, issued for this run.
func ExampleSupervisor_ObserveSnapshot() {
	sup, err := supervision.New(supervision.Options{
		Mode:       supervision.ModeShadow,
		Judge:      supervision.HeuristicJudge{},
		Thresholds: supervision.Thresholds{No: 0.2, Yes: 0.8},
	})
	if err != nil {
		panic(err)
	}
	scope := supervision.Scope{UserID: "default", SessionID: "job-42", RunID: "run-1"}
	snap := supervision.Snapshot{
		Scope:        scope,
		Sequence:     17,
		Task:         "Add CSV export to the reports page, with tests.",
		Output:       "Done: implemented the CSV export and its tests.",
		RecentEvents: []string{"TEXT_DELTA", "TOOL_CALL", "TOOL_RESULT", "TEXT_DELTA"},
		Evidence: &supervision.Evidence{
			Revision:     "git:7d1c0b",
			ChangedFiles: []string{"reports/export.go", "reports/export_test.go"},
			Verification: &supervision.Verification{
				UserID: scope.UserID, SessionID: scope.SessionID, RunID: scope.RunID,
				Revision: "git:7d1c0b", Source: "ci/go-test", Passed: true, Summary: "ok reports 0.41s",
			},
		},
	}

	d := sup.ObserveSnapshot(context.Background(), snap)
	fmt.Println(d.Status, d.Reason)
	fmt.Println("advice:", d.Report.Selected.Advice)
	fmt.Println("verified:", d.Report.VerifiedRevision)

	// Without the receipt, "done" is only a claim.
	snap.Evidence.Verification = nil
	d = sup.ObserveSnapshot(context.Background(), snap)
	fmt.Println("advice:", d.Report.Selected.Advice, "-", d.Reason)
	// Output:
	// DECIDED COMPLETION_REVIEW_READY
	// advice: REVIEW_COMPLETION
	// verified: true
	// advice: REQUEST_VERIFICATION - CURRENT_VERIFICATION_REQUIRED
}

// In ModeOff a supervisor judges nothing: every observation is skipped.
func ExampleModeOff() {
	sup, err := supervision.New(supervision.Options{Mode: supervision.ModeOff})
	if err != nil {
		panic(err)
	}
	d := sup.ObserveSnapshot(context.Background(), supervision.Snapshot{})
	fmt.Println(d.Status, d.Reason)
	// Output: SKIPPED DISABLED
}

// A configuration document enables supervision with its thresholds; the
// rest takes its defaults.
func ExampleParseConfig() {
	cfg, err := supervision.ParseConfig([]byte(`{"jev": {"supervision": {
		"mode": "SHADOW", "threshold": 0.8, "rejectionThreshold": 0.2, "maxAssessments": 20}}}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(cfg.Mode, cfg.Thresholds.No, cfg.Thresholds.Yes, cfg.Budget, cfg.Schedule.MaxAssessments)

	_, err = supervision.ParseConfig([]byte(`{"jev": {"supervision": {"mode": "SHADOW", "apiKey": "sk-…"}}}`))
	fmt.Println(err)
	// Output:
	// SHADOW 0.2 0.8 3s 20
	// supervision: invalid configuration: Unknown supervision setting "apiKey" (keys, secrets and endpoint overrides are never accepted)
}

// codeTask is a supervised activity's input: it names the task the
// supervisor judges progress against.
type codeTask struct{ Objective string }

func (t codeTask) SupervisionTask() string { return t.Objective }

// code is a long agent activity: it reports what it does as events, and
// heartbeats as usual.
func code(ctx context.Context, t codeTask) (string, error) {
	supervision.RecordEvent(ctx, supervision.Event{Type: supervision.EventTextDelta, Text: "Editing reports/export.go. "})
	activity.RecordHeartbeat(ctx, "edited")
	supervision.RecordEvent(ctx, supervision.Event{Type: supervision.EventFinalResult, Text: "Done: CSV export with tests."})
	return "done", nil
}

// Supervise an activity in a worker. The evidence source is host code: it
// reads the workspace and issues verification receipts for the run it is
// asked about.
func ExampleNewPlugin() {
	sup, err := supervision.New(supervision.Options{
		Mode:       supervision.ModeShadow,
		Judge:      supervision.HeuristicJudge{},
		Thresholds: supervision.Thresholds{No: 0.2, Yes: 0.8},
	})
	if err != nil {
		log.Fatal(err)
	}
	evidence := supervision.EvidenceFunc(func(ctx context.Context, req supervision.EvidenceRequest) (supervision.Evidence, error) {
		return supervision.Evidence{Revision: "git:7d1c0b", ChangedFiles: []string{"reports/export.go"}}, nil
	})
	p, err := supervision.NewPlugin(supervision.InterceptorOptions{
		Supervisor: sup,
		Activities: []string{"agent.code"},
		Evidence:   evidence,
		Observers: []func(supervision.Observation){func(o supervision.Observation) {
			log.Printf("run %s, assessment %d: %s", o.Scope.RunID, o.Assessment, o.Advice)
		}},
	})
	if err != nil {
		log.Fatal(err)
	}
	c, err := client.Dial(client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	w := worker.New(c, "agents", worker.Options{Plugins: []worker.Plugin{p}})
	w.RegisterActivityWithOptions(code, activity.RegisterOptions{Name: "agent.code"})
	if err := w.Run(worker.InterruptCh()); err != nil {
		log.Fatal(err)
	}
}
