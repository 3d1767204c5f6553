package overseer

import (
	"context"
	"fmt"
	"sync"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
)

// NewPlugin returns the overseer as an SDK plugin: add it to
// worker.Options.Plugins (or client.Options.Plugins) and every phase of the
// worker's workflows is overseen. It installs the worker interceptor and
// registers the overseer's activities and its notifier workflow
// ([NotifyWorkflowName]).
func NewPlugin(opts Options) (*temporal.SimplePlugin, error) {
	wi, err := NewWorkerInterceptor(opts)
	if err != nil {
		return nil, err
	}
	a, err := newAssessor(opts, wi.(*workerInterceptor).circuit)
	if err != nil {
		return nil, err
	}
	dc := wi.(*workerInterceptor).dc
	var activitiesOnly sync.Map // worker instance keys
	return temporal.NewSimplePlugin(temporal.SimplePluginOptions{
		Name:               pluginName,
		WorkerInterceptors: []interceptor.WorkerInterceptor{wi},
		// Given to a client, the plugin learns its data converter, for the
		// activities' note header (Options.DataConverter).
		ConfigureClient: func(_ context.Context, o client.PluginConfigureClientOptions) error {
			dc.capture(o.ClientOptions.DataConverter)
			return nil
		},
		// A worker that runs activities only (DisableWorkflowWorker) gets
		// the overseer's activities and no workflow: the SDK panics at a
		// workflow registered on it.
		ConfigureWorker: func(_ context.Context, o worker.PluginConfigureWorkerOptions) error {
			if o.WorkerOptions != nil && o.WorkerOptions.DisableWorkflowWorker {
				activitiesOnly.Store(o.WorkerInstanceKey, true)
			}
			return nil
		},
		RunContextBefore: func(_ context.Context, o temporal.SimplePluginRunContextBeforeOptions) error {
			o.Registry.RegisterActivityWithOptions(a.Assess, activity.RegisterOptions{Name: AssessActivityName})
			registerNotify(o.Registry, opts)
			if _, ok := activitiesOnly.Load(o.InstanceKey); !ok {
				RegisterNotifyWorkflow(o.Registry)
			}
			return nil
		},
	})
}

// RegisterActivities registers the overseer's activities (assess and
// notify) on a worker that uses the bare interceptor from
// NewWorkerInterceptor; register the notifier workflow with
// [RegisterNotifyWorkflow].
func RegisterActivities(r worker.ActivityRegistry, opts Options) error {
	a, err := newAssessor(opts, nil)
	if err != nil {
		return fmt.Errorf("overseer: register activities: %w", err)
	}
	r.RegisterActivityWithOptions(a.Assess, activity.RegisterOptions{Name: AssessActivityName})
	registerNotify(r, opts)
	return nil
}
