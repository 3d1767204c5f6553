package worker

import (
	"fmt"

	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/registry"
)

// modelSource reads the namespace's model registry; until a model is
// promoted, runs use the judge's own model with the worker's policy.
func (cfg Config) modelSource(c client.Client, opts overseer.Options) (overseer.ModelSource, error) {
	judge, ok := opts.Judge.(*overseer.LearnedJudge)
	if !ok {
		return nil, fmt.Errorf("the model registry gives jobs learned models: it needs the learned judge, not %s", cfg.JudgeConfig)
	}
	so := registry.SourceOptions{TTL: cfg.ModelRegistryTTL, Logger: SDKLogger(cfg.logger())}
	if judge.Model != nil {
		policy := opts.Policy
		if policy == (overseer.Policy{}) {
			policy = overseer.PolicyFor(judge)
		}
		so.Fallback = &overseer.ModelVersion{Version: judge.Model.Version, Model: judge.Model, Policy: policy}
	} else if opts.Policy != (overseer.Policy{}) {
		m := overseer.DefaultLearnedModel()
		so.Fallback = &overseer.ModelVersion{Version: m.Version, Model: m, Policy: opts.Policy}
	}
	return registry.NewSource(c, so), nil
}

// withRegistry is the job worker with a worker of the registry's task
// queue, started and stopped with it.
type withRegistry struct {
	sdkworker.Worker
	registry sdkworker.Worker
}

func (w withRegistry) Start() error {
	if err := w.registry.Start(); err != nil {
		return fmt.Errorf("model registry worker: %w", err)
	}
	if err := w.Worker.Start(); err != nil {
		w.registry.Stop()
		return err
	}
	return nil
}

func (w withRegistry) Run(interruptCh <-chan any) error {
	if err := w.registry.Start(); err != nil {
		return fmt.Errorf("model registry worker: %w", err)
	}
	defer w.registry.Stop()
	return w.Worker.Run(interruptCh)
}

func (w withRegistry) Stop() {
	w.Worker.Stop()
	w.registry.Stop()
}
