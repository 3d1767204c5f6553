package bench_test

import (
	"fmt"

	"github.com/corohq/temporal-overseer/bench"
)

// The variants a bench runs, in the order it reports them; name some in
// Options.Variants to run only those.
func ExampleVariants() {
	for _, v := range bench.Variants() {
		fmt.Println(v)
	}
	// Output:
	// bare
	// hand-written
	// hand-written/listening
	// hand-written/background
	// observe
	// manage
	// manage+search-attributes
	// manage/local-activity
	// observe/remote-judge
	// observe/http-judge
	// observe/activity
	// observe/local-activity
	// observe/hanging-judge
	// bare/agent-loop
	// observe/agent-loop
	// manage/agent-loop
}
