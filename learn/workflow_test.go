package learn_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/learn"
	"github.com/corohq/temporal-overseer/overseer"
)

// recorder is a client.MetricsHandler that keeps the overseer_learn_*
// series it is given, keyed by "name{job_type=…}".
type recorder struct {
	mu       *sync.Mutex
	tags     map[string]string
	counters map[string]int64
	gauges   map[string]float64
}

func newRecorder() *recorder {
	return &recorder{mu: &sync.Mutex{}, tags: map[string]string{}, counters: map[string]int64{}, gauges: map[string]float64{}}
}

func (r *recorder) key(name string) string {
	return fmt.Sprintf("%s{job_type=%s}", name, r.tags[overseer.MetricTagJobType])
}

func (r *recorder) WithTags(tags map[string]string) client.MetricsHandler {
	n := *r
	n.tags = maps.Clone(r.tags)
	maps.Copy(n.tags, tags)
	return &n
}

func (r *recorder) Counter(name string) client.MetricsCounter {
	if !strings.HasPrefix(name, "overseer_learn_") {
		return client.MetricsNopHandler.Counter(name)
	}
	return counterFunc(func(d int64) { r.mu.Lock(); r.counters[r.key(name)] += d; r.mu.Unlock() })
}

func (r *recorder) Gauge(name string) client.MetricsGauge {
	if !strings.HasPrefix(name, "overseer_learn_") {
		return client.MetricsNopHandler.Gauge(name)
	}
	return gaugeFunc(func(v float64) { r.mu.Lock(); r.gauges[r.key(name)] = v; r.mu.Unlock() })
}

func (r *recorder) Timer(name string) client.MetricsTimer {
	return client.MetricsNopHandler.Timer(name)
}

type counterFunc func(int64)

func (f counterFunc) Inc(d int64) { f(d) }

type gaugeFunc func(float64)

func (f gaugeFunc) Update(v float64) { f(v) }

// A round measures the rates on the closed jobs (the export activity, here
// over records with the reviewers' decisions), carries them in its result
// and its memo, and emits them as metrics with the round's promotion or
// refusal.
func TestRoundCarriesRatesInResultMemoAndMetrics(t *testing.T) {
	records := jobs(41, 2, 9, 3)
	a := &learn.Activities{Records: func(context.Context, string, string, time.Time) ([]eval.Record, error) {
		return slices.Clone(records), nil
	}}
	shipped := overseer.DefaultLearnedPolicy().Promise
	tests := []struct {
		name     string
		refit    *learn.RefitOutput
		counters map[string]int64
	}{
		{"too few runs: no candidate", nil, map[string]int64{"overseer_learn_promotions{job_type=Job}": 0, "overseer_learn_refusals{job_type=Job}": 0}},
		{"refused", &learn.RefitOutput{Decision: learn.Decision{Version: "v2", Reason: "refused v2: it ranks worse"}, Current: "v1"},
			map[string]int64{"overseer_learn_promotions{job_type=Job}": 0, "overseer_learn_refusals{job_type=Job}": 1}},
		{"promoted", &learn.RefitOutput{Decision: learn.Decision{Version: "v3", Promote: true, Reason: "promote v3"}, Promoted: true, Current: "v3"},
			map[string]int64{"overseer_learn_promotions{job_type=Job}": 1, "overseer_learn_refusals{job_type=Job}": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			m := newRecorder()
			s.SetMetricsHandler(m)
			env := s.NewTestWorkflowEnvironment()
			env.RegisterActivityWithOptions(func(ctx context.Context, in learn.ExportInput) (learn.ExportOutput, error) {
				out, err := a.Export(ctx, in)
				out.Readiness.Ready, out.Readiness.Recalibrate = tt.refit != nil, false
				return out, err
			}, activity.RegisterOptions{Name: learn.ExportActivityName})
			env.RegisterActivityWithOptions(func(context.Context, learn.RefitInput) (learn.RefitOutput, error) {
				return *tt.refit, nil
			}, activity.RegisterOptions{Name: learn.RefitActivityName})
			var memo learn.Result
			env.OnUpsertMemo(mock.Anything).Run(func(args mock.Arguments) {
				memo, _ = args.Get(0).(map[string]any)[learn.MemoKey].(learn.Result)
			}).Return(nil).Once()
			env.ExecuteWorkflow(learn.Workflow, learn.Input{Type: "Job", Previous: &learn.Result{Refusals: []string{"refused v0"}}})
			require.True(t, env.IsWorkflowCompleted())
			require.NoError(t, env.GetWorkflowError())
			var res learn.Result
			require.NoError(t, env.GetWorkflowResult(&res))
			env.AssertExpectations(t)

			require.NotNil(t, res.Rates)
			assert.Equal(t, [4]int{41, 2, 9, 3}, [4]int{res.Rates.Succeeded, res.Rates.FalsePauses, res.Rates.Failed, res.Rates.Caught})
			assert.Equal(t, overseer.DefaultLearnedModel().Version, res.Rates.Model, "no registry: the shipped model")
			assert.Equal(t, &shipped, res.Rates.Promise)
			assert.Contains(t, res.Rates.Sentence, "2 of 41 succeeded jobs had a false pause (4.9%), 3 of 9 failed jobs caught (33.3%)")

			// What oversight did on the same 50 jobs: the failed ones, those
			// of them caught at a gate, the gates' waits added up.
			require.NotNil(t, res.Saved)
			assert.Equal(t, 50, res.Saved.Jobs)
			assert.Equal(t, 9, res.Saved.Failed)
			assert.Equal(t, 3, res.Saved.PausedFailed, "the caught failed jobs")
			assert.Positive(t, res.Saved.Gates)
			assert.Contains(t, res.Saved.Sentence(), fmt.Sprintf("at %d gates", res.Saved.Gates))

			assert.Equal(t, res.Sentence, memo.Sentence)
			assert.Equal(t, res.Rates, memo.Rates)
			assert.Equal(t, res.Readiness, memo.Readiness)
			assert.Nil(t, memo.Decision, "the memo stays small")
			assert.Nil(t, memo.Refusals)
			if tt.refit != nil {
				assert.NotNil(t, res.Decision)
			}

			m.mu.Lock()
			defer m.mu.Unlock()
			assert.Equal(t, tt.counters, m.counters)
			assert.Equal(t, map[string]float64{
				"overseer_learn_labelled_runs{job_type=Job}":        50,
				"overseer_learn_false_pause_rate{job_type=Job}":     2.0 / 41,
				"overseer_learn_catch_rate{job_type=Job}":           3.0 / 9,
				"overseer_learn_promised_false_pause{job_type=Job}": shipped.MaxFalsePause,
			}, m.gauges)
		})
	}
}
