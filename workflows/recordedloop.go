package workflows

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
)

// RecordedLoopWorkflowName is the workflow type of a recorded agent run
// replayed as the agent loop a team writes on Temporal.
const RecordedLoopWorkflowName = "CoroRecordedLoop"

// The recorded loop's activities: the model call, then the tool call it
// asked for. Their phases are "model" and "bash".
const (
	RecordedModelActivity = "recordedloop.model"
	RecordedToolActivity  = "recordedloop.bash"
)

// How a recorded loop's tool reports a failed command.
const (
	// ToolFailuresAsErrors: a non-zero exit fails the tool's activity.
	ToolFailuresAsErrors = "error"
	// ToolFailuresAsResults: the tool returns the exit status and reports
	// the failure in its result (overseer_report.failed_tool_categories).
	ToolFailuresAsResults = "result"
)

// RecordedLoopInput is a recorded agent run, turn by turn.
type RecordedLoopInput struct {
	Objective string         `json:"objective"`
	Turns     []RecordedTurn `json:"turns"`
	// ToolFailures is ToolFailuresAsErrors (the default) or
	// ToolFailuresAsResults.
	ToolFailures string `json:"tool_failures,omitempty"`
	// Outcome is how the recorded run ended: RecordedFailed or
	// RecordedBlocked make the loop fail after its last turn
	// (RecordedFailedErrorType), so that the job closes as the run did;
	// anything else completes it.
	Outcome string `json:"outcome,omitempty"`
}

// RecordedTurn is one turn of a recorded agent run: what the model asked
// for and what the tool gave back. Digests stand for the texts, which the
// overseer's counters only ever compare; excerpts of the texts, when the
// recording has them, ride beside the digests in the activities' inputs
// and results, for a model judge's content window to read.
type RecordedTurn struct {
	// Command is the command the model asked for (a digest of it); empty
	// with FormatError, when the model's answer held no command.
	Command     string `json:"command,omitempty"`
	FormatError bool   `json:"format_error,omitempty"`
	// ExitCode, TimedOut and Output are the tool's outcome (Output a
	// digest of what it printed).
	ExitCode     int     `json:"exit_code,omitempty"`
	TimedOut     bool    `json:"timed_out,omitempty"`
	Output       string  `json:"output,omitempty"`
	InputTokens  int64   `json:"input_tokens,omitempty"`
	OutputTokens int64   `json:"output_tokens,omitempty"`
	CostUSD      float64 `json:"cost_usd,omitempty"`
	DurationMS   int64   `json:"duration_ms,omitempty"`
	// Text is the command as text, as the tool receives it
	// (RecordedToolInput.Text). It must be a function of Command (the
	// same command, the same text), so that a call made again is still
	// told by its input (overseer.PhaseRun.SameCall).
	Text string `json:"text,omitempty"`
	// Printed is what the tool printed (RecordedToolOutput.Printed, or
	// the failed tool's error details), a function of Output.
	Printed string `json:"printed,omitempty"`
	// Message is what the model said with its command
	// (RecordedModelOutput.Message, or the format error's details).
	Message string `json:"message,omitempty"`
}

// RecordedModelInput is the recorded model activity's input.
type RecordedModelInput struct {
	Turn int `json:"turn"`
}

// RecordedModelOutput is what the recorded model activity returns: the
// command it asked for, what it said with it (RecordedTurn.Message), and
// its tokens and cost as a phase report.
type RecordedModelOutput struct {
	Command string                `json:"command"`
	Message string                `json:"message,omitempty"`
	Report  *overseer.PhaseReport `json:"overseer_report,omitempty"`
}

// RecordedToolInput is the recorded tool activity's input: the command's
// digest and its text (RecordedTurn.Text).
type RecordedToolInput struct {
	Command string `json:"command"`
	Text    string `json:"text,omitempty"`
}

// RecordedToolOutput is what the recorded tool activity returns: the exit
// status, the digest of what it printed, and what it printed
// (RecordedTurn.Printed).
type RecordedToolOutput struct {
	ExitCode int                   `json:"exit_code"`
	Output   string                `json:"output"`
	Printed  string                `json:"printed,omitempty"`
	Report   *overseer.PhaseReport `json:"overseer_report,omitempty"`
}

// ToolInput is turn's tool activity input.
func (in RecordedLoopInput) ToolInput(turn int) RecordedToolInput {
	t := in.Turns[turn]
	return RecordedToolInput{Command: t.Command, Text: t.Text}
}

// ModelOutput is turn's model activity result (nil with its error).
func (in RecordedLoopInput) ModelOutput(turn int) (*RecordedModelOutput, error) {
	t := in.Turns[turn]
	if t.FormatError {
		return nil, temporal.NewNonRetryableApplicationError("format error: the answer held no single command", "FormatError", nil, details(t.Message)...)
	}
	return &RecordedModelOutput{Command: t.Command, Message: t.Message, Report: &overseer.PhaseReport{Turns: 1, InputTokens: t.InputTokens,
		OutputTokens: t.OutputTokens, CostUSD: t.CostUSD}}, nil
}

// ToolOutput is turn's tool activity result (nil with its error).
func (in RecordedLoopInput) ToolOutput(turn int) (*RecordedToolOutput, error) {
	t := in.Turns[turn]
	failed := t.ExitCode != 0 || t.TimedOut
	msg := fmt.Sprintf("exit status %d", t.ExitCode)
	if t.TimedOut {
		msg = "timed out"
	}
	if failed && in.ToolFailures != ToolFailuresAsResults {
		return nil, temporal.NewNonRetryableApplicationError(msg, "ToolFailed", nil, details(t.Printed)...)
	}
	out := &RecordedToolOutput{ExitCode: t.ExitCode, Output: t.Output, Printed: t.Printed}
	if failed {
		out.Report = &overseer.PhaseReport{FailedToolCategories: []string{"bash"}}
	}
	return out, nil
}

// details are an error's details: text, when there is any. The error's
// message stays what it was without it (the overseer compares failed
// calls' errors by their messages).
func details(text string) []any {
	if text == "" {
		return nil
	}
	return []any{text}
}

// Calls are the activities a recorded loop runs, in order, as the plugin
// observes them (overseer.ActivityCall): what `overseer eval` records
// offline, through the code the plugin records a live run with, and the
// workflow RecordedLoop runs. TurnOf gives each call's turn (0-based).
func (in RecordedLoopInput) Calls() (calls []overseer.ActivityCall, turnOf []int) {
	dc := converter.GetDefaultDataConverter()
	for i := range in.Turns {
		m, err := in.ModelOutput(i)
		mc := overseer.ActivityCall{Phase: "model", Err: err, Args: []any{RecordedModelInput{Turn: i + 1}}}
		if m != nil {
			mc.Result, _ = dc.ToPayload(m)
			mc.Report = m.Report
		}
		calls, turnOf = append(calls, mc), append(turnOf, i)
		if err != nil {
			continue
		}
		o, err := in.ToolOutput(i)
		tc := overseer.ActivityCall{Phase: "bash", Duration: time.Duration(in.Turns[i].DurationMS) * time.Millisecond, Err: err,
			Args: []any{in.ToolInput(i)}}
		if o != nil {
			tc.Result, _ = dc.ToPayload(o)
			tc.Report = o.Report
		}
		calls, turnOf = append(calls, tc), append(turnOf, i)
	}
	return calls, turnOf
}

// RecordedLoop replays a recorded agent run as the loop a team writes on
// Temporal: turn after turn, a model-call activity, then the tool activity
// it asked for; a format error fails the model call and the loop goes on;
// a failed command fails the tool's activity, or, with
// ToolFailuresAsResults, is returned and reported. It ends "done" after
// the last turn.
func RecordedLoop(ctx workflow.Context, in RecordedLoopInput) (string, error) {
	overseer.SetObjective(ctx, in.Objective)
	overseer.SetShape(ctx, overseer.ShapeAgentLoop)
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
	for i := range in.Turns {
		var m RecordedModelOutput
		if err := workflow.ExecuteActivity(ctx, RecordedModelActivity, RecordedModelInput{Turn: i + 1}).Get(ctx, &m); err != nil {
			continue // the agent is asked again
		}
		var out RecordedToolOutput
		_ = workflow.ExecuteActivity(ctx, RecordedToolActivity, in.ToolInput(i)).Get(ctx, &out)
	}
	if in.Outcome == RecordedFailed || in.Outcome == RecordedBlocked {
		return "", temporal.NewNonRetryableApplicationError("the recorded run "+in.Outcome, RecordedFailedErrorType, nil)
	}
	return "done", nil
}

// RecordedLoopActivities answer recorded loops' calls: each job's from
// the recording Add gave for its workflow ID, or from In for any other.
// The model activity answers with its turn's command, the tool activity
// with the outcome of the turn the job's latest model call was of (a loop
// calls them one at a time, and never retries them). Register them with
// Register.
type RecordedLoopActivities struct {
	In   RecordedLoopInput
	mu   sync.Mutex
	runs map[string]*recordedLoopRun
	// turn is In's latest model call's turn.
	turn int
}

type recordedLoopRun struct {
	in   RecordedLoopInput
	turn int
}

// Add gives the recording of the job with workflowID.
func (a *RecordedLoopActivities) Add(workflowID string, in RecordedLoopInput) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.runs == nil {
		a.runs = map[string]*recordedLoopRun{}
	}
	a.runs[workflowID] = &recordedLoopRun{in: in}
}

// recording is the calling job's recording and its latest model turn
// (1-based; 0 before any), with a.mu held.
func (a *RecordedLoopActivities) recording(ctx context.Context) (*RecordedLoopInput, *int) {
	if r, ok := a.runs[activity.GetInfo(ctx).WorkflowExecution.ID]; ok {
		return &r.in, &r.turn
	}
	return &a.In, &a.turn
}

// Model is the recorded model call.
func (a *RecordedLoopActivities) Model(ctx context.Context, in RecordedModelInput) (*RecordedModelOutput, error) {
	a.mu.Lock()
	rec, turn := a.recording(ctx)
	if in.Turn < 1 || in.Turn > len(rec.Turns) {
		a.mu.Unlock()
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("turn %d: the recording has %d", in.Turn, len(rec.Turns)), "NoSuchTurn", nil)
	}
	*turn = in.Turn
	a.mu.Unlock()
	return rec.ModelOutput(in.Turn - 1)
}

// Tool is the recorded tool call of the latest model call's turn.
func (a *RecordedLoopActivities) Tool(ctx context.Context, _ RecordedToolInput) (*RecordedToolOutput, error) {
	a.mu.Lock()
	rec, turn := a.recording(ctx)
	t := *turn
	a.mu.Unlock()
	if t == 0 {
		return nil, temporal.NewNonRetryableApplicationError("a tool call before any model call", "NoSuchTurn", nil)
	}
	return rec.ToolOutput(t - 1)
}

// Register registers the activities under RecordedModelActivity and
// RecordedToolActivity.
func (a *RecordedLoopActivities) Register(r worker.ActivityRegistry) {
	r.RegisterActivityWithOptions(a.Model, activity.RegisterOptions{Name: RecordedModelActivity})
	r.RegisterActivityWithOptions(a.Tool, activity.RegisterOptions{Name: RecordedToolActivity})
}

// RegisterRecordedLoop registers RecordedLoop under RecordedLoopWorkflowName.
func RegisterRecordedLoop(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(RecordedLoop, workflow.RegisterOptions{Name: RecordedLoopWorkflowName})
}
