package ops_test

import (
	"fmt"
	"log"

	"github.com/corohq/temporal-overseer/ops"
)

// The visibility queries behind `overseer list`: give one to
// ops.ListOptions.Query, or paste it into the Temporal UI or
// `temporal workflow list --query`.
func ExampleListQuery() {
	for _, f := range []struct {
		band   string
		paused bool
	}{{"off_track", false}, {"", true}, {"needs_a_look", true}} {
		q, err := ops.ListQuery(f.band, f.paused)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(q)
	}
	_, err := ops.ListQuery("red", false)
	fmt.Println(err)
	// Output:
	// OverseerStatus = 'off_track'
	// OverseerPaused = true AND ExecutionStatus NOT IN ('Completed', 'Failed', 'Canceled', 'Terminated', 'ContinuedAsNew', 'TimedOut')
	// OverseerStatus = 'needs_a_look' AND OverseerPaused = true AND ExecutionStatus NOT IN ('Completed', 'Failed', 'Canceled', 'Terminated', 'ContinuedAsNew', 'TimedOut')
	// invalid filter: status "red": use on_track, needs_a_look or off_track
}
