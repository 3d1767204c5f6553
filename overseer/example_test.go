package overseer_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/overseer"
)

// Wire the overseer into your worker: every phase of the worker's workflows
// is overseen; "CoroJob" runs in manage mode, everything else in observe
// mode. (Compiled, not run: it needs a Temporal server.)
func ExampleNewPlugin() {
	plugin, err := overseer.NewPlugin(overseer.Options{
		Mode:             overseer.ModeObserve,
		Modes:            map[string]overseer.Mode{"CoroJob": overseer.ModeManage},
		SearchAttributes: true, // register OverseerStatus, OverseerOnObjective, OverseerPaused first
		// Judge: your Jev HTTP or OpenAI-compatible judge; the shipped
		// learned judge if not set.
	})
	if err != nil {
		log.Fatalln("overseer:", err)
	}
	c, err := client.Dial(client.Options{HostPort: "localhost:7233"})
	if err != nil {
		log.Fatalln("dial:", err)
	}
	defer c.Close()
	w := worker.New(c, "jobs", worker.Options{Plugins: []worker.Plugin{plugin}})
	// w.RegisterWorkflow(YourJob); w.RegisterActivity(yourPhases)
	if err := w.Run(worker.InterruptCh()); err != nil {
		log.Fatalln("worker:", err)
	}
}

// A policy turns the judge's answers into a verdict: the band comes from
// P(on objective) alone, but a confident, severe breach of an obligation
// flags the phase all the same.
func ExamplePolicy_Evaluate() {
	v := overseer.DefaultPolicy().Evaluate(overseer.Answers{
		OnObjective:      0.85,
		Breach:           "obligation[2]",
		BreachText:       "The phase made progress instead of repeating earlier work.",
		BreachConfidence: 0.8,
		Severity:         2,
	})
	fmt.Printf("%s, %.0f%%, pause: %v\n", v.Band, v.OnObjective*100, v.Flagged)
	fmt.Println(v.Reason)
	// Output:
	// On track, 85%, pause: true
	// obligation[2] "The phase made progress instead of repeating earlier work." appears unmet (confidence 0.80, severity 2.0 ≈ Review)
}

// Replay a recorded run offline: the recorder builds the trajectory the
// plugin would send at the last boundary, and a judge answers the four
// questions about it. This job keeps going back to code after failed tests.
func ExampleTrajectoryRecorder() {
	obligations := []string{
		"The phase produced the output its contract requires.",
		"The work still serves the job's objective.",
		"The phase made progress instead of repeating earlier work.",
		"Failures were surfaced rather than silently worked around.",
	}
	var rec overseer.TrajectoryRecorder
	rec.SetObjective("Fix the flaky export test")
	rec.RecordPhase(overseer.PhaseRun{Phase: "spec", Duration: time.Minute}, nil)
	rec.RecordPhase(overseer.PhaseRun{Phase: "plan", Duration: time.Minute}, nil)
	for range 3 {
		rec.RecordPhase(overseer.PhaseRun{Phase: "code", Duration: 4 * time.Minute},
			&overseer.PhaseReport{Turns: 9, CostUSD: 0.42, InputTokens: 40000, OutputTokens: 2500})
		rec.RecordPhase(overseer.PhaseRun{Phase: "test", Failed: true, Error: "2 tests failed"}, nil)
	}
	rec.RecordPhase(overseer.PhaseRun{Phase: "code", Duration: 4 * time.Minute},
		&overseer.PhaseReport{Turns: 9, CostUSD: 0.42, InputTokens: 40000, OutputTokens: 2500})
	t := rec.Trajectory()
	fmt.Println(t.Digest())

	req, err := overseer.NewRequest("", obligations, t)
	if err != nil {
		log.Fatal(err)
	}
	resp, err := overseer.HeuristicJudge{}.Decide(context.Background(), req)
	if err != nil {
		log.Fatal(err)
	}
	a, err := overseer.ParseAnswers(req, resp, obligations)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("P(on objective) %.2f, breach %s (confidence %.2f), severity %.2f, blocked %.2f\n",
		a.OnObjective, a.Breach, a.BreachConfidence, a.Severity, a.Blocked)
	v := overseer.DefaultPolicy().Evaluate(a)
	fmt.Printf("%s, pause: %v: %s\n", v.Band, v.Flagged, v.Reason)
	// Output:
	// phase code; 9 phase runs, 5 repeats, 3 failed (streak 0); 36 turns, $1.68; tokens 160000 in, 10000 out
	// P(on objective) 0.68, breach obligation[2] (confidence 0.60), severity 1.80, blocked 0.05
	// Needs a look, pause: true: obligation[2] "The phase made progress instead of repeating earlier work." appears unmet (confidence 0.60, severity 1.8 ≈ Review)
}

// The learned judge's breach, severity and blocked answers follow fixed
// rules; only P(on objective) comes from the fitted model. Two failed
// phases in a row make the output obligation (obligation[0]) look unmet.
func ExampleLearnedJudge() {
	obligations := []string{"The phase produced its output.", "The work still serves the objective."}
	var rec overseer.TrajectoryRecorder
	rec.RecordPhase(overseer.PhaseRun{Phase: "code"}, &overseer.PhaseReport{InputTokens: 30000, OutputTokens: 2000})
	// One failure is shown, not a breach worth a review; the third of the
	// same phase without a success in between is.
	for range 3 {
		rec.RecordPhase(overseer.PhaseRun{Phase: "test", Failed: true, Error: "build failed"}, nil)
	}

	req, err := overseer.NewRequest("", obligations, rec.Trajectory())
	if err != nil {
		log.Fatal(err)
	}
	judge := &overseer.LearnedJudge{} // the model that ships with the package
	resp, err := judge.Decide(context.Background(), req)
	if err != nil {
		log.Fatal(err)
	}
	a, err := overseer.ParseAnswers(req, resp, obligations)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("breach %s %q (confidence %.2f), severity %.2f, blocked %.2f\n",
		a.Breach, a.BreachText, a.BreachConfidence, a.Severity, a.Blocked)
	// Output:
	// breach obligation[0] "The phase produced its output." (confidence 0.60), severity 1.80, blocked 0.80
}

// A policy file, as `overseer calibrate` writes it or by hand: every
// threshold is required and unknown fields are refused.
func ExampleLoadPolicy() {
	dir, err := os.MkdirTemp("", "policy")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "policy.json")
	err = os.WriteFile(path, []byte(`{
  "format": "overseer-policy/v1",
  "name": "cautious",
  "on_track_at": 0.8,
  "needs_a_look_at": 0.5,
  "pause_at_or_below": 0.4,
  "breach_confidence": 0.6,
  "breach_severity": 2,
  "max_consecutive_failures": 2
}`), 0o600)
	if err != nil {
		log.Fatal(err)
	}

	p, err := overseer.LoadPolicy(path) // then overseer.Options{Policy: p}
	if err != nil {
		log.Fatal(err)
	}
	for _, onObjective := range []float64{0.9, 0.6, 0.3} {
		v := p.Evaluate(overseer.Answers{Breach: overseer.BreachNone, OnObjective: onObjective})
		fmt.Printf("%s: P(on objective) %.2f is %s, pause: %v\n", p.Name, onObjective, v.Band, v.Flagged)
	}
	// Output:
	// cautious: P(on objective) 0.90 is On track, pause: false
	// cautious: P(on objective) 0.60 is Needs a look, pause: false
	// cautious: P(on objective) 0.30 is Off track, pause: true
}
