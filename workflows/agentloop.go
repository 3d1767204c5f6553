package workflows

import (
	"errors"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/overseer"
)

// AgentLoopWorkflowName is the workflow type of the reference agent loop.
const AgentLoopWorkflowName = "CoroAgentLoop"

// DefaultAgentLoopTurns bounds an agent loop that sets no MaxTurns.
const DefaultAgentLoopTurns = 12

// maxLoopResults bounds the tool results the model is given.
const maxLoopResults = 8

// AgentLoopInput starts the reference agent loop.
type AgentLoopInput struct {
	Objective string                  `json:"objective"`
	Scenario  activities.LoopScenario `json:"scenario"`
	// MaxTurns bounds the turns; if not set, DefaultAgentLoopTurns.
	MaxTurns int `json:"max_turns,omitempty"`
}

// AgentLoopResult is how the loop ended: "done" when the model said so,
// "gave up" at MaxTurns.
type AgentLoopResult struct {
	Outcome string   `json:"outcome"`
	Turns   int      `json:"turns"`
	Results []string `json:"results"`
}

// AgentLoop is the reference agent loop, the shape of agent frameworks on
// Temporal: a model-call activity (agent.model) asks for a tool call, the
// workflow runs that tool's activity (agent.<tool>) and hands its result,
// or its error, back to the model, turn after turn. A tool's failure is
// the model's to handle, so tool activities do not retry. Every call is an
// activity, so the overseer sees one phase per call; the shipped judge
// recognises the shape (overseer.ShapeOf) and judges it by its agent-loop
// rules (docs/agent-loops.md).
func AgentLoop(ctx workflow.Context, in AgentLoopInput) (AgentLoopResult, error) {
	overseer.SetObjective(ctx, in.Objective)
	overseer.SetShape(ctx, overseer.ShapeAgentLoop)
	maxTurns := in.MaxTurns
	if maxTurns <= 0 {
		maxTurns = DefaultAgentLoopTurns
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		HeartbeatTimeout:    time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	var res AgentLoopResult
	credentials := ""
	for turn := 1; turn <= maxTurns; turn++ {
		res.Turns = turn
		var step activities.ModelStep
		err := workflow.ExecuteActivity(ctx, activities.ModelActivity, &activities.ModelInput{
			Objective: in.Objective, Scenario: in.Scenario, Turn: turn, Results: res.Results, Credentials: credentials,
		}).Get(ctx, &step)
		if err != nil {
			return res, err
		}
		credentials = step.Credentials
		if step.Done || step.Call == nil {
			res.Outcome = "done"
			return res, nil
		}
		var out string
		if err := workflow.ExecuteActivity(ctx, activities.ToolActivity(step.Call.Tool), *step.Call).Get(ctx, &out); err != nil {
			out = step.Call.Tool + " failed: " + errorMessage(err)
		}
		res.Results = append(res.Results, out)
		if len(res.Results) > maxLoopResults {
			res.Results = res.Results[len(res.Results)-maxLoopResults:]
		}
	}
	res.Outcome = "gave up"
	return res, nil
}

// errorMessage is a tool's own error message, without the SDK's wrapping.
func errorMessage(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Message()
	}
	return err.Error()
}

// RegisterAgentLoop registers the reference agent loop under
// AgentLoopWorkflowName.
func RegisterAgentLoop(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(AgentLoop, workflow.RegisterOptions{Name: AgentLoopWorkflowName})
}
