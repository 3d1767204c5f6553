package learn

import (
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
)

// emitMetrics records a round through the workflow's metrics handler (not
// again on replay): both counters every round, at 0 or 1, so that their
// series exist from the first round; the gauges when there is a value.
func emitMetrics(ctx workflow.Context, res Result, rf *RefitOutput) {
	m := workflow.GetMetricsHandler(ctx).WithTags(map[string]string{overseer.MetricTagJobType: res.Type})
	var promoted, refused int64
	if rf != nil {
		if rf.Promoted {
			promoted = 1
		} else {
			refused = 1
		}
	}
	m.Counter(overseer.MetricLearnPromotions).Inc(promoted)
	m.Counter(overseer.MetricLearnRefusals).Inc(refused)
	m.Gauge(overseer.MetricLearnLabelledRuns).Update(float64(res.Readiness.Runs))
	r := res.Rates
	if r == nil {
		return
	}
	if r.Succeeded > 0 {
		m.Gauge(overseer.MetricLearnFalsePauseRate).Update(r.FalsePauseRate())
	}
	if r.Failed > 0 {
		m.Gauge(overseer.MetricLearnCatchRate).Update(r.CatchRate())
	}
	if r.Promise != nil {
		m.Gauge(overseer.MetricLearnPromisedFalsePause).Update(r.Promise.MaxFalsePause)
	}
}
