package registry

import (
	"context"
	"errors"
	"fmt"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// ErrNoRegistry says the registry workflow does not exist in the namespace:
// no model was ever promoted there.
var ErrNoRegistry = errors.New("no model registry: no model was promoted in this namespace (overseer model promote)")

// Register registers the registry workflow on r under WorkflowName.
func Register(r worker.WorkflowRegistry) {
	r.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
}

// NewWorker returns a worker of TaskQueue that runs the registry workflow.
// Any process of the namespace may host it: the reference worker does when
// it uses the registry, `overseer model` while it runs.
func NewWorker(c client.Client, opts worker.Options) worker.Worker {
	w := worker.New(c, TaskQueue, opts)
	Register(w)
	return w
}

// Get answers the QueryName query: ErrNoRegistry when the registry does
// not exist.
func Get(ctx context.Context, c client.Client, q Query) (State, error) {
	v, err := c.QueryWorkflow(ctx, WorkflowID, "", QueryName, q)
	if err != nil {
		var nf *serviceerror.NotFound
		if errors.As(err, &nf) {
			return State{}, ErrNoRegistry
		}
		return State{}, fmt.Errorf("query the model registry: %w", err)
	}
	var s State
	if err := v.Get(&s); err != nil {
		return State{}, fmt.Errorf("read the model registry: %w", err)
	}
	return s, nil
}

// Promote promotes a model, starting the registry if it does not run. A
// refusal by the registry wraps ErrRefused, with the registry's sentence.
func Promote(ctx context.Context, c client.Client, req PromoteRequest) (Result, error) {
	return update(ctx, c, PromoteName, req)
}

// Rollback makes the model that was current before a type's current one
// current again, starting the registry if it does not run (it then refuses:
// nothing was promoted). A refusal wraps ErrRefused.
func Rollback(ctx context.Context, c client.Client, req RollbackRequest) (Result, error) {
	return update(ctx, c, RollbackName, req)
}

// RecordRefusal records a refused candidate, starting the registry if it
// does not run. A refusal of the request wraps ErrRefused.
func RecordRefusal(ctx context.Context, c client.Client, req RefusalRequest) (Result, error) {
	return update(ctx, c, RefusalName, req)
}

func update(ctx context.Context, c client.Client, name string, arg any) (Result, error) {
	start := c.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID:                       WorkflowID,
		TaskQueue:                TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, WorkflowName, Input{})
	h, err := c.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: client.UpdateWorkflowOptions{
			WorkflowID:   WorkflowID,
			UpdateName:   name,
			Args:         []any{arg},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		},
	})
	var res Result
	if err == nil {
		err = h.Get(ctx, &res)
	}
	if err != nil {
		var app *temporal.ApplicationError
		if errors.As(err, &app) {
			return Result{}, fmt.Errorf("%w: %s", ErrRefused, app.Message())
		}
		return Result{}, fmt.Errorf("%s: %w", name, err)
	}
	return res, nil
}
