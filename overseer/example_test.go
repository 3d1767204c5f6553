package overseer_test

import (
	"fmt"
	"log"

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
		// Judge: your Jev or OpenAI-compatible judge; the heuristic judge if unset.
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

func ExamplePolicy_Evaluate() {
	v := overseer.DefaultPolicy().Evaluate(overseer.Answers{
		OnObjective: 0.85, Breach: "obligation[2]", BreachText: overseer.DefaultObligations[2],
		BreachConfidence: 0.8, Severity: 2,
	})
	fmt.Printf("%s, %.0f%%, pause: %v\n", v.Band, v.OnObjective*100, v.Flagged)
	// Output: On track, 85%, pause: true
}
