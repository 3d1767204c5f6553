package overseer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

// InvalidAnswerErrorType is the application error type of an Overseer
// activity whose judge answered something invalid. It is not retried.
const InvalidAnswerErrorType = "OverseerInvalidAnswer"

// RejectedErrorType is the application error type of an Overseer activity
// whose judge refused the request for good (jev.ErrRejected: a 4xx such as
// a wrong key or an unknown model). It is not retried.
const RejectedErrorType = "OverseerJudgeRejected"

// InvalidRequestErrorType is the application error type of an Overseer
// activity that could not build the judge's request (the trajectory does
// not encode as JSON). The judge was never asked; it is not retried.
const InvalidRequestErrorType = "OverseerInvalidRequest"

// AssessInput is the Overseer activity's input. It carries no credentials.
type AssessInput struct {
	WorkflowType string     `json:"workflow_type"`
	Phase        string     `json:"phase"`
	Obligations  []string   `json:"obligations"`
	Trajectory   Trajectory `json:"trajectory"`
	// Background is set at a run's end for a boundary assessed in the
	// background ([PlacementBackground]): the activity waits for that call
	// when this process runs it, instead of asking the judge again.
	Background *BackgroundRef `json:"background,omitempty"`
	// ModelVersion is the learned model's version the run is pinned to
	// ([Options].Models); the activity asks the learned judge with that
	// version's model instead of its own judge.
	ModelVersion string `json:"model_version,omitempty"`
}

// AssessOutput is the judge's validated answer with its metadata.
type AssessOutput struct {
	Answers Answers       `json:"answers"`
	Model   string        `json:"model"`
	Usage   jev.Usage     `json:"usage"`
	Latency time.Duration `json:"latency_ns"`
	// Shape is the shape the job was judged as ([ShapeOf] its trajectory),
	// so that a tool reading the history (`overseer export`) applies the
	// policy of that shape and replays the job as the plugin saw it.
	// Empty in answers recorded before it was kept.
	Shape Shape `json:"shape,omitempty"`
	// Phase is the phase the answer is about: in a job that declares its
	// phases ([Boundary]), the one name of the calls a history reader
	// groups into it. Empty in answers recorded before it was kept.
	Phase string `json:"phase,omitempty"`
}

// assessor runs the Overseer activity with a judge that lives on the worker.
type assessor struct {
	judge  jev.Judge
	models ModelSource
	// circuit is the judge's, shared with the plugin's runs (see
	// judgeCircuit); nil on a worker whose interceptor it does not share
	// (RegisterActivities), where nothing reports to one.
	circuit *judgeCircuit
}

// newAssessor returns the Overseer activity for opts, reading circuit.
func newAssessor(opts Options, circuit *judgeCircuit) (*assessor, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &assessor{judge: o.Judge, models: o.Models, circuit: circuit}, nil
}

// Assess asks the judge the four questions about one boundary. An invalid
// answer is a non-retryable error of type InvalidAnswerErrorType, a
// rejected request (jev.ErrRejected) one of type RejectedErrorType, a
// request that cannot be encoded one of type InvalidRequestErrorType; any
// other judge error is returned as is and retried by the activity's retry
// policy.
func (a *assessor) Assess(ctx context.Context, in AssessInput) (AssessOutput, error) {
	if in.Background != nil {
		if out, err, ok := background.adopt(ctx, *in.Background); ok {
			return out, err
		}
		// The call was lost (the run moved to this worker): ask again,
		// unless the judge is failing here too.
		if why, failing := background.failing(a.circuit); failing {
			return AssessOutput{}, temporal.NewNonRetryableApplicationError(why, JudgeFailingErrorType, nil)
		}
	}
	// The SDK's activity logger: the worker's logger, with the workflow,
	// activity and attempt already attached.
	log := activity.GetLogger(ctx)
	judge, err := pinnedJudge(ctx, a.judge, a.models, in.WorkflowType, in.ModelVersion)
	if err != nil {
		log.Warn("overseer judge unavailable", "workflow_type", in.WorkflowType, "phase", in.Phase, "error", err)
		return AssessOutput{}, err
	}
	out, err := decide(ctx, judge, in)
	if err != nil {
		log.Warn("overseer judge failed", "workflow_type", in.WorkflowType, "phase", in.Phase, "latency", out.Latency, "error", err)
		return AssessOutput{}, err
	}
	log.Debug("overseer assessed phase", "workflow_type", in.WorkflowType, "phase", in.Phase, "on_objective", out.Answers.OnObjective,
		"breach", out.Answers.Breach, "severity", out.Answers.Severity, "latency", out.Latency)
	return out, nil
}

// decide asks judge about one boundary and validates its answer, with the
// error types of [assessor.Assess]. Latency is the judge's own figure, else
// the time it took; on error it is the only field set. It runs in the
// Overseer activity, or inside a side effect for a [PureJudge] in workflow
// code, where reading the clock is recorded, never replayed.
func decide(ctx context.Context, judge jev.Judge, in AssessInput) (AssessOutput, error) {
	req, err := NewRequest(in.WorkflowType, in.Obligations, in.Trajectory)
	if err != nil {
		return AssessOutput{}, temporal.NewNonRetryableApplicationError("overseer.assess: "+err.Error(), InvalidRequestErrorType, err)
	}
	start := time.Now()
	resp, err := judge.Decide(ctx, req)
	failed := AssessOutput{Latency: time.Since(start)}
	if err != nil {
		if errors.Is(err, jev.ErrInvalidAnswer) {
			return failed, temporal.NewNonRetryableApplicationError(err.Error(), InvalidAnswerErrorType, err)
		}
		if errors.Is(err, jev.ErrRejected) {
			return failed, temporal.NewNonRetryableApplicationError("overseer.assess: judge: "+err.Error(), RejectedErrorType, err)
		}
		return failed, fmt.Errorf("overseer.assess: judge: %w", err)
	}
	answers, err := ParseAnswers(req, resp, in.Obligations)
	if err != nil {
		return failed, temporal.NewNonRetryableApplicationError("overseer.assess: "+err.Error(), InvalidAnswerErrorType, err)
	}
	latency := resp.Latency
	if latency == 0 {
		latency = failed.Latency
	}
	return AssessOutput{Answers: answers, Model: resp.ModelVersion, Usage: resp.Usage, Latency: latency, Shape: ShapeOf(in.Trajectory), Phase: in.Phase}, nil
}
