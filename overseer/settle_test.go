package overseer_test

import (
	"context"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

// withoutLateActivityRace returns opts with one more plugin, last, that keeps the SDK test
// environment's end of run from racing an activity it has not started yet.
//
// A run may end with an activity scheduled and not awaited (a notification
// the run hands to its notifier workflow, a phase a gate left behind). The
// environment starts every activity on a goroutine of its own, which looks
// the activity up in the registry; when the run ends, the environment stops
// its plugins and restores that registry. go.temporal.io/sdk v1.51.0 reads
// the registry's dynamic activity there without its lock, so under load
// -race sees the restore and a late lookup at once (CI saw it twice). The
// plugin's stop waits, up to two seconds of real time, until every activity
// the run scheduled has entered its code, that is until every lookup is done.
func withoutLateActivityRace(opts worker.Options) worker.Options {
	s := &settle{}
	p, err := temporal.NewSimplePlugin(temporal.SimplePluginOptions{
		Name:               "overseer-test.settle",
		WorkerInterceptors: []interceptor.WorkerInterceptor{s},
		RunContextAfter:    func(context.Context, temporal.SimplePluginRunContextAfterOptions) { s.wait() },
	})
	if err != nil {
		panic(err) // only for an empty name
	}
	opts.Plugins = append(opts.Plugins, p)
	return opts
}

// settle counts the activities a run scheduled and those that started. Its
// interceptors are the innermost (its plugin comes last), so it counts each
// call that reaches the environment once.
type settle struct {
	interceptor.WorkerInterceptorBase
	scheduled, entered atomic.Int64
}

func (s *settle) wait() {
	for deadline := time.Now().Add(2 * time.Second); s.entered.Load() < s.scheduled.Load() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond) // polls a condition with a deadline; the outcome does not depend on it
	}
}

func (s *settle) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &settleActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, s: s}
}

func (s *settle) InterceptWorkflow(ctx workflow.Context, next interceptor.WorkflowInboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return withOutbound(next, func(out interceptor.WorkflowOutboundInterceptor) interceptor.WorkflowOutboundInterceptor {
		return &settleOutbound{WorkflowOutboundInterceptorBase: interceptor.WorkflowOutboundInterceptorBase{Next: out}, s: s}
	})
}

type settleActivity struct {
	interceptor.ActivityInboundInterceptorBase
	s *settle
}

func (a *settleActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	if activity.GetInfo(ctx).Attempt == 1 {
		a.s.entered.Add(1)
	}
	return a.Next.ExecuteActivity(ctx, in)
}

type settleOutbound struct {
	interceptor.WorkflowOutboundInterceptorBase
	s *settle
}

func (o *settleOutbound) ExecuteActivity(ctx workflow.Context, activityType string, args ...any) workflow.Future {
	if !workflow.IsReplaying(ctx) {
		o.s.scheduled.Add(1)
	}
	return o.Next.ExecuteActivity(ctx, activityType, args...)
}

// withOutbound is next with each workflow's outbound calls wrapped by wrap:
// what a test interceptor that changes only outbound calls needs.
func withOutbound(next interceptor.WorkflowInboundInterceptor, wrap func(interceptor.WorkflowOutboundInterceptor) interceptor.WorkflowOutboundInterceptor) interceptor.WorkflowInboundInterceptor {
	return &outboundWrapper{WorkflowInboundInterceptorBase: interceptor.WorkflowInboundInterceptorBase{Next: next}, wrap: wrap}
}

type outboundWrapper struct {
	interceptor.WorkflowInboundInterceptorBase
	wrap func(interceptor.WorkflowOutboundInterceptor) interceptor.WorkflowOutboundInterceptor
}

func (w *outboundWrapper) Init(out interceptor.WorkflowOutboundInterceptor) error {
	return w.Next.Init(w.wrap(out))
}
