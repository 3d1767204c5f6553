package supervision

import (
	"context"
	"sync"

	"go.temporal.io/sdk/worker"
)

// Plugin is a worker plugin that supervises designated long activities: it
// gives each worker it is added to an Interceptor of its own and, when that
// worker stops, stops the interceptor's observer goroutine once its queued
// callbacks have run.
type Plugin struct {
	worker.PluginBase
	o InterceptorOptions

	mu    sync.Mutex
	icpts map[string]*Interceptor // by worker instance key
}

var _ worker.Plugin = (*Plugin)(nil)

// NewPlugin returns the supervision plugin for o (see InterceptorOptions).
// Add it to worker.Options.Plugins.
func NewPlugin(o InterceptorOptions) (*Plugin, error) {
	if _, err := NewInterceptor(o); err != nil { // validates o; starts nothing
		return nil, err
	}
	return &Plugin{o: o, icpts: map[string]*Interceptor{}}, nil
}

// Name implements worker.Plugin.
func (p *Plugin) Name() string { return "overseer.supervision" }

// ConfigureWorker adds this worker's interceptor.
func (p *Plugin) ConfigureWorker(_ context.Context, o worker.PluginConfigureWorkerOptions) error {
	icpt, err := NewInterceptor(p.o)
	if err != nil {
		return err
	}
	o.WorkerOptions.Interceptors = append(o.WorkerOptions.Interceptors, icpt)
	p.mu.Lock()
	p.icpts[o.WorkerInstanceKey] = icpt
	p.mu.Unlock()
	return nil
}

// StopWorker stops the worker (its activities finish first), then the
// interceptor's observer goroutine.
func (p *Plugin) StopWorker(ctx context.Context, o worker.PluginStopWorkerOptions, next func(context.Context, worker.PluginStopWorkerOptions)) {
	next(ctx, o)
	p.mu.Lock()
	icpt := p.icpts[o.WorkerInstanceKey]
	delete(p.icpts, o.WorkerInstanceKey)
	p.mu.Unlock()
	if icpt != nil {
		icpt.Close()
	}
}
