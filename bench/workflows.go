package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// Names the bench registers on its workers.
const (
	JobWorkflowName         = "bench.job"
	HandwrittenWorkflowName = "bench.handwritten-job"
	// HandwrittenListeningWorkflowName is HandwrittenJob with a second
	// coroutine that listens for signals while its phases run.
	HandwrittenListeningWorkflowName = "bench.handwritten-listening-job"
	PhaseActivityName                = "bench.phase"
	// ModelActivityName and ToolActivityName are an agent loop's calls
	// (JobInput.Loop): the plugin reads an activity whose name says
	// "model" as a model call.
	ModelActivityName = "bench.model"
	ToolActivityName  = "bench.tool"
	// HandwrittenResumeSignal resumes a hand-written job paused by its judge.
	HandwrittenResumeSignal = "bench.resume"
)

// JobInput is one bench job: Phases phase activities of PhaseDuration each,
// continuing as new after every ContinueEvery phases (0: never). With Loop
// it is an agent loop instead: Phases calls, a model call and then the
// tool call it asked for, turn after turn (each call a boundary).
type JobInput struct {
	Phases        int           `json:"phases"`
	PhaseDuration time.Duration `json:"phase_duration"`
	ContinueEvery int           `json:"continue_every,omitempty"`
	Loop          bool          `json:"loop,omitempty"`
	// Printed is how many bytes of text each phase returns (what a tool
	// printed), for a content window to read; 0: none.
	Printed int `json:"printed,omitempty"`
	// Done counts the phases run by earlier runs of the chain.
	Done int `json:"done,omitempty"`
}

// PhaseInput is one phase's input.
type PhaseInput struct {
	Index    int           `json:"index"`
	Duration time.Duration `json:"duration"`
	Printed  int           `json:"printed,omitempty"`
}

// PhaseResult is what a phase returns: a healthy agent phase's report, so
// that a judge has something real to read and finds nothing wrong.
type PhaseResult struct {
	overseer.ReportCarrier
	Index int `json:"index"`
	// Printed is PhaseInput.Printed bytes of text.
	Printed string `json:"printed,omitempty"`
}

// Phase is the phase activity: it works for its duration and reports.
func Phase(ctx context.Context, in PhaseInput) (PhaseResult, error) {
	if err := work(ctx, in.Duration); err != nil {
		return PhaseResult{}, err
	}
	return PhaseResult{Index: in.Index, Printed: printed(in), ReportCarrier: overseer.ReportCarrier{OverseerReport: &overseer.PhaseReport{
		Turns: 6, CostUSD: 0.04, InputTokens: 9000, OutputTokens: 900,
	}}}, nil
}

// Model is an agent loop's model call: it thinks for its duration and
// reports one turn's tokens.
func Model(ctx context.Context, in PhaseInput) (PhaseResult, error) {
	if err := work(ctx, in.Duration); err != nil {
		return PhaseResult{}, err
	}
	return PhaseResult{Index: in.Index, ReportCarrier: overseer.ReportCarrier{OverseerReport: &overseer.PhaseReport{
		Turns: 1, CostUSD: 0.01, InputTokens: 3000, OutputTokens: 200,
	}}}, nil
}

// Tool is an agent loop's tool call: it runs for its duration and returns
// a new result each time (a healthy loop).
func Tool(ctx context.Context, in PhaseInput) (PhaseResult, error) {
	if err := work(ctx, in.Duration); err != nil {
		return PhaseResult{}, err
	}
	return PhaseResult{Index: in.Index}, nil
}

// printed is in.Printed bytes of a test log, different for each phase.
func printed(in PhaseInput) string {
	if in.Printed <= 0 {
		return ""
	}
	line := fmt.Sprintf("=== RUN TestExport/case-%d\n--- PASS: TestExport/case-%d (0.01s)\n", in.Index, in.Index)
	return strings.Repeat(line, in.Printed/len(line)+1)[:in.Printed]
}

func work(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func phaseOptions(ctx workflow.Context) workflow.Context {
	return workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
	})
}

// Job is the bench's job: plain Temporal, the same code with and without
// the overseer plugin on the worker.
func Job(ctx workflow.Context, in JobInput) (int, error) {
	ctx = phaseOptions(ctx)
	for run := 0; in.Done < in.Phases; run++ {
		if in.ContinueEvery > 0 && run == in.ContinueEvery {
			return 0, workflow.NewContinueAsNewError(ctx, JobWorkflowName, in)
		}
		var res PhaseResult
		if err := workflow.ExecuteActivity(ctx, in.activity(), PhaseInput{Index: in.Done, Duration: in.PhaseDuration, Printed: in.Printed}).Get(ctx, &res); err != nil {
			return in.Done, err
		}
		in.Done++
	}
	return in.Done, nil
}

// activity is the job's next activity: a phase, or in a loop a model call
// and then a tool call.
func (in JobInput) activity() string {
	switch {
	case !in.Loop:
		return PhaseActivityName
	case in.Done%2 == 0:
		return ModelActivityName
	}
	return ToolActivityName
}

// HandwrittenInput is a hand-written job's input: the job, and the policy
// its judge's answers are held to.
type HandwrittenInput struct {
	JobInput
	Obligations []string        `json:"obligations"`
	Policy      overseer.Policy `json:"policy"`
}

// HandwrittenJob is the honest baseline the plugin is measured against:
// what a Temporal user would write by hand to get the same judgment and
// the same pause, with no plugin. After each phase it records the phase in
// a trajectory, asks the same judge in a local activity (the overseer's own
// Assessor, registered by the worker as overseer.assess), holds the answers
// to the same policy and, when they are flagged, waits for a resume
// signal. It has none of the plugin's status query, search attributes,
// gate ids, process notes or continue-as-new carry-over.
func HandwrittenJob(ctx workflow.Context, in HandwrittenInput) (int, error) {
	ctx = phaseOptions(ctx)
	judgeCtx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{
		StartToCloseTimeout: 10 * time.Second,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 3},
	})
	resume := workflow.GetSignalChannel(ctx, HandwrittenResumeSignal)
	var rec overseer.TrajectoryRecorder
	for in.Done < in.Phases {
		started := workflow.Now(ctx)
		var res PhaseResult
		err := workflow.ExecuteActivity(ctx, PhaseActivityName, PhaseInput{Index: in.Done, Duration: in.PhaseDuration}).Get(ctx, &res)
		if err != nil {
			return in.Done, err
		}
		in.Done++
		rec.RecordPhase(overseer.PhaseRun{Phase: "phase", Duration: workflow.Now(ctx).Sub(started)}, res.OverseerReport)

		var out overseer.AssessOutput
		req := overseer.AssessInput{WorkflowType: HandwrittenWorkflowName, Phase: "phase", Obligations: in.Obligations, Trajectory: rec.Trajectory()}
		if err := workflow.ExecuteLocalActivity(judgeCtx, overseer.AssessActivityName, req).Get(ctx, &out); err != nil {
			workflow.GetLogger(ctx).Warn("judge failed; going on", "error", err)
			continue
		}
		if v := in.Policy.Evaluate(out.Answers); v.Flagged {
			sel := workflow.NewSelector(ctx)
			sel.AddReceive(resume, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
			sel.Select(ctx)
		}
	}
	return in.Done, nil
}

// HandwrittenListeningJob is [HandwrittenJob] that also listens, on a
// coroutine of its own, for the in-phase advice signal while its phases
// run, as a hand-written job must to show a running phase's advice (the
// plugin's run receives its signals on a second coroutine too, see the
// overseer's loop.go). It does nothing else: it measures what that one
// coroutine costs a boundary, which the SDK resumes at every step of every
// workflow task.
func HandwrittenListeningJob(ctx workflow.Context, in HandwrittenInput) (int, error) {
	advice := workflow.GetSignalChannel(ctx, overseer.InPhaseSignalName)
	workflow.Go(ctx, func(ctx workflow.Context) {
		for advice.Receive(ctx, nil) {
		}
	})
	return HandwrittenJob(ctx, in)
}

func workflowOptions(name string) workflow.RegisterOptions {
	return workflow.RegisterOptions{Name: name}
}

// HandwrittenBackgroundWorkflowName is the hand-written job that asks its
// judge in the background; bench.await is its end-of-run local activity.
const (
	HandwrittenBackgroundWorkflowName = "bench.handwritten-background-job"
	AwaitActivityName                 = "bench.await"
)

// HandwrittenBackgroundJob is the hand-written baseline of observe mode
// with a judge that is not pure, asked the way the plugin asks it
// (overseer.PlacementBackground): after each phase one side effect starts
// the judge call in a goroutine of the worker and records the answers that
// have arrived; at the end a local activity waits for the others. Nothing
// waits for the judge before the end; flagged answers change nothing.
func HandwrittenBackgroundJob(ctx workflow.Context, in HandwrittenInput) (int, error) {
	ctx = phaseOptions(ctx)
	awaitCtx := workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 10 * time.Second})
	info := workflow.GetInfo(ctx)
	run := info.WorkflowExecution.ID + "/" + info.WorkflowExecution.RunID
	var rec overseer.TrajectoryRecorder
	var pending []int
	answered := 0
	for in.Done < in.Phases {
		started := workflow.Now(ctx)
		var res PhaseResult
		err := workflow.ExecuteActivity(ctx, PhaseActivityName, PhaseInput{Index: in.Done, Duration: in.PhaseDuration}).Get(ctx, &res)
		if err != nil {
			return in.Done, err
		}
		in.Done++
		rec.RecordPhase(overseer.PhaseRun{Phase: "phase", Duration: workflow.Now(ctx).Sub(started)}, res.OverseerReport)
		seq, traj, asked := in.Done, rec.Trajectory(), slices.Clone(pending)
		pending = append(pending, seq)
		var got []handAnswer
		if err := workflow.SideEffect(ctx, func(workflow.Context) any {
			handCalls.start(run, seq, in.Obligations, traj)
			return handCalls.collect(run, asked)
		}).Get(&got); err != nil {
			return in.Done, err
		}
		for _, a := range got {
			pending = slices.DeleteFunc(pending, func(s int) bool { return s == a.Seq })
			if a.Answers != nil {
				answered++
				_ = in.Policy.Evaluate(*a.Answers) // observe: recorded, never acted on
			}
		}
	}
	var futures []workflow.Future
	for _, seq := range pending {
		futures = append(futures, workflow.ExecuteLocalActivity(awaitCtx, AwaitActivityName, run, seq))
	}
	for _, f := range futures {
		var a handAnswer
		if f.Get(ctx, &a) == nil && a.Answers != nil {
			answered++
		}
	}
	return in.Done, nil
}

// handAnswer is one answer of the hand-written background judge.
type handAnswer struct {
	Seq     int               `json:"seq"`
	Answers *overseer.Answers `json:"answers,omitempty"`
	Error   string            `json:"error,omitempty"`
}

// handCalls are the hand-written background judge's calls in flight in
// this process. It asks the judge set by [SetHandwrittenJudge].
var handCalls = &handBackground{calls: map[string]chan handAnswer{}}

type handBackground struct {
	mu    sync.Mutex
	judge jev.Judge
	calls map[string]chan handAnswer
}

func (b *handBackground) start(run string, seq int, obligations []string, traj overseer.Trajectory) {
	c := make(chan handAnswer, 1)
	b.mu.Lock()
	b.calls[fmt.Sprint(run, "#", seq)] = c
	judge := b.judge
	b.mu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		a := handAnswer{Seq: seq}
		req, err := overseer.NewRequest(HandwrittenWorkflowName, obligations, traj)
		if err == nil {
			var resp *jev.Response
			if resp, err = judge.Decide(ctx, req); err == nil {
				var ans overseer.Answers
				if ans, err = overseer.ParseAnswers(req, resp, obligations); err == nil {
					a.Answers = &ans
				}
			}
		}
		if err != nil {
			a.Error = err.Error()
		}
		c <- a
	}()
}

func (b *handBackground) collect(run string, seqs []int) []handAnswer {
	var got []handAnswer
	for _, seq := range seqs {
		k := fmt.Sprint(run, "#", seq)
		b.mu.Lock()
		c := b.calls[k]
		b.mu.Unlock()
		select {
		case a := <-c:
			got = append(got, a)
			b.mu.Lock()
			delete(b.calls, k)
			b.mu.Unlock()
		default:
		}
	}
	return got
}

// await is bench.await: it waits for a call of this process.
func (b *handBackground) await(ctx context.Context, run string, seq int) (handAnswer, error) {
	k := fmt.Sprint(run, "#", seq)
	b.mu.Lock()
	c, ok := b.calls[k]
	b.mu.Unlock()
	if !ok {
		return handAnswer{Seq: seq, Error: "lost"}, nil
	}
	select {
	case a := <-c:
		b.mu.Lock()
		delete(b.calls, k)
		b.mu.Unlock()
		return a, nil
	case <-ctx.Done():
		return handAnswer{}, ctx.Err()
	}
}
