package testsuite_test

import (
	"context"
	"fmt"
	"log"
	"maps"
	"slices"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/corohq/temporal-overseer/testsuite"
)

// Start a dev server, run a workflow against it and stop it. (Compiled,
// not run: it needs the Temporal CLI.)
func ExampleStartDevServer() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		LogLevel: "warn",
		UI:       true, // serve the Web UI too
	})
	if err != nil {
		log.Fatal(err) // says how to get the Temporal CLI when it is missing
	}
	defer srv.Stop()
	fmt.Println("frontend", srv.FrontendHostPort(), "web UI", srv.UIAddress())

	run, err := srv.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: "jobs"}, "YourJob")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("started", run.GetID())
}

// The search attributes every dev server has registered. To use
// overseer.Options.SearchAttributes on your own namespace, register the
// same there, e.g. temporal operator search-attribute create --name
// OverseerStatus --type Keyword.
func ExampleOverseerSearchAttributes() {
	for _, name := range slices.Sorted(maps.Keys(testsuite.OverseerSearchAttributes)) {
		fmt.Println(name, testsuite.OverseerSearchAttributes[name])
	}
	// Output:
	// OverseerBudget Keyword
	// OverseerGateSince Datetime
	// OverseerOnObjective Double
	// OverseerPaused Bool
	// OverseerStatus Keyword
}
