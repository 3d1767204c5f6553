package activities

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/overseer"
)

// LoopScenario is how the simulated agent of the reference agent loop
// (workflows.AgentLoop) behaves.
type LoopScenario string

// The agent-loop scenarios.
const (
	// LoopHealthy reads, edits, tests and is done in four turns.
	LoopHealthy LoopScenario = "healthy"
	// LoopToolFailing runs the tests every turn after the first, and they
	// fail every time.
	LoopToolFailing LoopScenario = "tool_failing"
	// LoopRepeating reads the same file, with the same arguments, every
	// turn.
	LoopRepeating LoopScenario = "looping"
	// LoopBlocked cannot deploy without credentials until a process note
	// (a reviewer's resume with a note) gives it some.
	LoopBlocked LoopScenario = "blocked"
)

// LoopScenarios lists the agent-loop scenarios.
var LoopScenarios = []LoopScenario{LoopHealthy, LoopToolFailing, LoopRepeating, LoopBlocked}

// ParseLoopScenario parses an agent-loop scenario name.
func ParseLoopScenario(s string) (LoopScenario, error) {
	return parseName("agent-loop scenario", LoopScenarios, s)
}

// The reference agent loop's activities: one model call, and one activity
// per tool, as agent frameworks on Temporal shape them.
const (
	ModelActivity = "agent.model"
	ToolReadFile  = "read_file"
	ToolEditFile  = "edit_file"
	ToolRunTests  = "run_tests"
	ToolDeploy    = "deploy"
)

// Tools are the reference agent loop's tools.
var Tools = []string{ToolReadFile, ToolEditFile, ToolRunTests, ToolDeploy}

// ToolActivity is the registered activity name of a tool.
func ToolActivity(tool string) string { return "agent." + tool }

// MissingCredentialsErrorType is the error type of a deploy without
// credentials.
const MissingCredentialsErrorType = "MissingCredentials"

// ModelInput is one model call: the objective and what the tools said so
// far (the latest results, bounded by the workflow).
type ModelInput struct {
	Objective string       `json:"objective"`
	Scenario  LoopScenario `json:"scenario"`
	Turn      int          `json:"turn"`
	Results   []string     `json:"results"`
	// Note is the overseer's process note, when a gate before this call
	// was resumed (set through overseer.NoteReceiver).
	Note *overseer.Note `json:"note,omitempty"`
	// Credentials are what an earlier note gave the agent.
	Credentials string `json:"credentials,omitempty"`
}

// SetProcessNote implements overseer.NoteReceiver.
func (in *ModelInput) SetProcessNote(n overseer.Note) { in.Note = &n }

// ToolCall is a tool call the model asks for.
type ToolCall struct {
	Tool        string            `json:"tool"`
	Args        map[string]string `json:"args"`
	Credentials string            `json:"credentials,omitempty"`
}

// ModelStep is a model call's answer: a tool call, or done.
type ModelStep struct {
	overseer.ReportCarrier
	Done bool      `json:"done"`
	Call *ToolCall `json:"call,omitempty"`
	// Credentials the note gave, for the turns after it.
	Credentials string `json:"credentials,omitempty"`
}

// LoopAgent is the simulated model and tools of the reference agent loop.
type LoopAgent struct {
	// Work is how long each model and tool call pretends to work. If not
	// set, calls return at once.
	Work time.Duration
}

// Register registers the model activity and one activity per tool.
func (a *LoopAgent) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.Model, activity.RegisterOptions{Name: ModelActivity})
	for _, t := range Tools {
		r.RegisterActivityWithOptions(a.Tool, activity.RegisterOptions{Name: ToolActivity(t)})
	}
}

// Model decides the next tool call from the scenario and the results so
// far.
func (a *LoopAgent) Model(ctx context.Context, in *ModelInput) (ModelStep, error) {
	if err := (&Agents{}).wait(ctx, a.Work); err != nil {
		return ModelStep{}, err
	}
	step := ModelStep{Credentials: in.Credentials}
	if in.Note != nil && step.Credentials == "" {
		step.Credentials = "from-the-reviewer's-note"
	}
	step.OverseerReport = &overseer.PhaseReport{Turns: 1, InputTokens: int64(2000 + 400*len(in.Results)), OutputTokens: 150}
	last := ""
	if n := len(in.Results); n > 0 {
		last = in.Results[n-1]
	}
	call := func(tool string, args map[string]string) ModelStep {
		step.Call = &ToolCall{Tool: tool, Args: args, Credentials: step.Credentials}
		return step
	}
	switch in.Scenario {
	case LoopToolFailing:
		if in.Turn == 1 {
			return call(ToolReadFile, map[string]string{"path": "export.go"}), nil
		}
		return call(ToolRunTests, map[string]string{"run": fmt.Sprintf("TestExport/attempt-%d", in.Turn)}), nil
	case LoopRepeating:
		return call(ToolReadFile, map[string]string{"path": "export.go"}), nil
	case LoopBlocked:
		switch {
		case in.Turn == 1:
			return call(ToolReadFile, map[string]string{"path": "export.go"}), nil
		case in.Turn == 2:
			return call(ToolEditFile, map[string]string{"path": "export.go", "change": "add CSV writer"}), nil
		case strings.HasPrefix(last, "deployed"):
			step.Done = true
			return step, nil
		}
		return call(ToolDeploy, map[string]string{"env": "staging"}), nil
	}
	switch in.Turn {
	case 1:
		return call(ToolReadFile, map[string]string{"path": "export.go"}), nil
	case 2:
		return call(ToolEditFile, map[string]string{"path": "export.go", "change": "add CSV writer"}), nil
	case 3:
		return call(ToolRunTests, map[string]string{"run": "TestExport"}), nil
	}
	step.Done = true
	return step, nil
}

// Tool runs the tool the activity is named after.
func (a *LoopAgent) Tool(ctx context.Context, call ToolCall) (string, error) {
	if err := (&Agents{}).wait(ctx, a.Work); err != nil {
		return "", err
	}
	switch call.Tool {
	case ToolReadFile:
		return "read " + call.Args["path"], nil
	case ToolEditFile:
		return "edited " + call.Args["path"], nil
	case ToolRunTests:
		if strings.HasPrefix(call.Args["run"], "TestExport/attempt-") {
			return "", temporal.NewNonRetryableApplicationError("exit status 1: TestExport: want 3 rows, got 0", "TestsFailed", nil)
		}
		return "ok " + call.Args["run"], nil
	case ToolDeploy:
		if call.Credentials == "" {
			return "", temporal.NewNonRetryableApplicationError("cannot deploy to "+call.Args["env"]+": missing credentials (DEPLOY_TOKEN)", MissingCredentialsErrorType, nil)
		}
		return "deployed to " + call.Args["env"], nil
	}
	return "", temporal.NewNonRetryableApplicationError("unknown tool "+call.Tool, "UnknownTool", nil)
}
