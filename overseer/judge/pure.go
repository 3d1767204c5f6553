package judge

import "github.com/corohq/temporal-overseer/overseer/jev"

// A PureJudge answers from the request alone, in microseconds: no I/O, no
// clock, no randomness, no goroutines, no shared state it changes. Such a
// judge may run inside workflow code (the plugin's PlacementWorkflow); its answer is
// recorded in history, so a worker with another model never changes a run
// being replayed. [HeuristicJudge] and [LearnedJudge] are pure.
type PureJudge interface {
	jev.Judge
	// Pure marks the judge as safe to run in workflow code.
	Pure()
}
