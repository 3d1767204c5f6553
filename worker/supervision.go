package worker

import (
	sdkworker "go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/supervision"
)

// SupervisionConfig configures the in-phase supervisor of long phases.
type SupervisionConfig struct {
	// Disable turns the in-phase supervisor off.
	Disable bool
	// Activities are the long phase activities to follow. If not set, the
	// reference job's code phase.
	Activities []string
	// Judge answers the supervision checks. If not set, the supervision
	// heuristic judge (rules, not a model).
	Judge jev.Judge
	// Config holds thresholds, budget, schedule and limits, as parsed by
	// supervision.ParseConfig. If not set, supervision.ModeShadow with the
	// thresholds 0.2 / 0.8 (uncalibrated) and the default schedule, budget
	// and limits. A Config in supervision.ModeOff turns the supervisor off.
	Config *supervision.Config
}

// supervisionPlugins returns the supervision plugin, which stops its
// observer goroutine when the worker stops, or none when supervision is off.
func (cfg Config) supervisionPlugins() ([]sdkworker.Plugin, error) {
	sc := cfg.Supervision
	if sc.Disable {
		return nil, nil
	}
	c := supervision.Config{Mode: supervision.ModeShadow, Thresholds: supervision.Thresholds{No: 0.2, Yes: 0.8}}
	if sc.Config != nil {
		c = *sc.Config
	}
	judge := sc.Judge
	if judge == nil {
		judge = supervision.HeuristicJudge{}
	}
	logger := cfg.logger()
	logRecord := func(r supervision.Record) {
		logger.Info("supervision record", zap.String("purpose", r.Purpose), zap.String("status", string(r.Status)),
			zap.String("reason", r.Reason), zap.Duration("elapsed", r.Elapsed), zap.Any("recommendation", r.Recommendation))
	}
	sup, err := c.Supervisor(judge, logRecord)
	if err != nil || sup == nil {
		return nil, err
	}
	acts := sc.Activities
	if len(acts) == 0 {
		acts = []string{activities.ActivityName(activities.PhaseCode)}
	}
	p, err := supervision.NewPlugin(supervision.InterceptorOptions{
		Supervisor: sup, Schedule: c.Schedule, Activities: acts, Logger: SDKLogger(logger), OnRecord: logRecord,
	})
	if err != nil {
		return nil, err
	}
	return []sdkworker.Plugin{p}, nil
}
