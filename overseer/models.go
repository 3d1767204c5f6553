package overseer

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

// ModelVersion is one version of a learned model with the policy that
// goes with it, as a [ModelSource] holds it.
type ModelVersion struct {
	// Version names the version; it is the model's own Version, which
	// every assessment by it records (with its sub-model).
	Version string
	Model   *LearnedModel
	Policy  Policy
}

// ModelSource says which learned model a new run uses, and finds the model
// of a version again, e.g. a registry of promoted models stored in Temporal
// (package overseer/registry). It lives on the worker.
//
// With [Options].Models set, a new run pins, in its pinned configuration,
// the current version of its workflow type and that version's policy;
// every assessment of the run asks the learned judge with the pinned
// version's model, looked up with Version. A promotion therefore never
// changes a running job, and a replay reads the recorded answers and never
// asks the source.
//
// Both methods run in workflow code, inside a side effect (Current) or
// the one that records an answer (Version), with a context bound of
// [ModelLookupTimeout]: answer from a cache on the worker, and query a
// remote store only on a miss. A version once returned must always return
// the same model.
type ModelSource interface {
	// Current is the version a new run of workflowType uses.
	Current(ctx context.Context, workflowType string) (ModelVersion, error)
	// Version is the named version for workflowType.
	Version(ctx context.Context, workflowType, version string) (ModelVersion, error)
}

// ModelLookupTimeout bounds one call of a [ModelSource] by the plugin. The
// call runs in workflow code, which must yield within the SDK's deadlock
// detection timeout (1 s).
const ModelLookupTimeout = 600 * time.Millisecond

// ModelUnavailableErrorType is the application error type of an
// assessment whose run is pinned to a model version on a worker without a
// model source. It is not retried.
const ModelUnavailableErrorType = "OverseerModelUnavailable"

// modelSourceExempt says whether runs of workflowType never ask the model
// source: the overseer's own workflows (the model registry among them).
func modelSourceExempt(workflowType string) bool {
	return strings.HasPrefix(workflowType, "overseer.")
}

// pinModel sets the run's model version and its policy from the current
// version of the source. On failure the run pins none and uses the
// worker's judge and policy, as without a source.
func (c *runConfig) pinModel(models ModelSource, workflowType string) {
	ctx, cancel := context.WithTimeout(context.Background(), ModelLookupTimeout)
	defer cancel()
	mv, err := models.Current(ctx, workflowType)
	if err != nil || mv.Version == "" || mv.Model == nil {
		return
	}
	c.ModelVersion = mv.Version
	if mv.Policy != (Policy{}) {
		c.Policy = mv.Policy
	}
}

// pinnedJudge is the judge of an assessment of a run pinned to
// modelVersion: the learned judge with that version's model. With no
// pinned version it is judge itself.
func pinnedJudge(ctx context.Context, judge jev.Judge, models ModelSource, workflowType, modelVersion string) (jev.Judge, error) {
	if modelVersion == "" {
		return judge, nil
	}
	if models == nil {
		return nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("overseer.assess: this run is pinned to model version %q "+
			"but this worker has no model source (Options.Models)", modelVersion), ModelUnavailableErrorType, nil)
	}
	ctx, cancel := context.WithTimeout(ctx, ModelLookupTimeout)
	defer cancel()
	mv, err := models.Version(ctx, workflowType, modelVersion)
	if err == nil && mv.Model == nil {
		err = fmt.Errorf("the source returned no model")
	}
	if err != nil {
		// Retried in an activity: the source may answer again soon.
		return nil, fmt.Errorf("overseer.assess: model version %q of this run: %w", modelVersion, err)
	}
	return &LearnedJudge{Model: mv.Model}, nil
}
