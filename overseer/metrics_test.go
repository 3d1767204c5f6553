package overseer_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// capture is a client.MetricsHandler that keeps what it is given, keyed
// by "name{tag=value,…}" with the tags sorted.
type capture struct {
	mu     *sync.Mutex
	tags   map[string]string
	counts map[string]int64
	timers map[string][]time.Duration
}

func newCapture() *capture {
	return &capture{mu: &sync.Mutex{}, tags: map[string]string{}, counts: map[string]int64{}, timers: map[string][]time.Duration{}}
}

func (c *capture) key(name string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(c.tags)) {
		if k == "mode" || k == "band" || k == "outcome" || k == "kind" ||
			k == "cause" || k == "action" || k == "reason" || k == "via" {
			kv = append(kv, k+"="+c.tags[k])
		}
	}
	return fmt.Sprintf("%s{%s}", name, strings.Join(kv, ","))
}

func (c *capture) WithTags(tags map[string]string) client.MetricsHandler {
	n := *c
	n.tags = maps.Clone(c.tags)
	maps.Copy(n.tags, tags)
	return &n
}

func (c *capture) Counter(name string) client.MetricsCounter {
	return counterFunc(func(d int64) { c.mu.Lock(); c.counts[c.key(name)] += d; c.mu.Unlock() })
}

func (c *capture) Gauge(string) client.MetricsGauge { return client.MetricsNopHandler.Gauge("") }

func (c *capture) Timer(name string) client.MetricsTimer {
	return timerFunc(func(d time.Duration) {
		c.mu.Lock()
		c.timers[c.key(name)] = append(c.timers[c.key(name)], d)
		c.mu.Unlock()
	})
}

type counterFunc func(int64)

func (f counterFunc) Inc(d int64) { f(d) }

type timerFunc func(time.Duration)

func (f timerFunc) Record(d time.Duration) { f(d) }

func TestMetricsFromWorkflowCode(t *testing.T) {
	slow := answer(0.2, overseer.BreachNone, 0.9, 0.5) // off track: pauses in manage mode
	slow.Response.Latency = 40 * time.Millisecond
	invalid := answer(1.5, overseer.BreachNone, 0.9, 0)
	tests := []struct {
		name   string
		mode   overseer.Mode
		steps  []jev.Step
		resume *overseer.ResumeRequest
		counts map[string]int64
		timers map[string]int
	}{
		{
			name: "manage: a pause, an abort", mode: overseer.ModeManage,
			steps:  []jev.Step{onTrack(), slow},
			resume: &overseer.ResumeRequest{By: "alice", Action: overseer.ActionAbort},
			counts: map[string]int64{
				"overseer_assessments{band=on_track,mode=manage,outcome=ok}":       1,
				"overseer_assessments{band=off_track,mode=manage,outcome=flagged}": 1,
				"overseer_judge_tokens{kind=input}":                                200,
				"overseer_judge_tokens{kind=output}":                               20,
				"overseer_pauses{cause=verdict}":                                   1,
				"overseer_resumes{action=abort}":                                   1,
				"overseer_job_tokens{outcome=aborted}":                             0,
				"overseer_job_cost_microusd{outcome=aborted}":                      1_000_000, // two phases at $0.50
			},
			timers: map[string]int{"overseer_judge_latency{}": 2, "overseer_gate_wait{action=abort}": 1},
		},
		{
			name: "observe: an invalid answer is a judge error", mode: overseer.ModeObserve,
			steps: []jev.Step{onTrack(), invalid, onTrack()},
			counts: map[string]int64{
				"overseer_assessments{band=on_track,mode=observe,outcome=ok}": 2,
				"overseer_assessments{mode=observe,outcome=error}":            1,
				"overseer_judge_errors{kind=invalid_answer}":                  1,
				"overseer_judge_tokens{kind=input}":                           200,
				"overseer_judge_tokens{kind=output}":                          20,
				"overseer_job_tokens{outcome=completed}":                      0,
				"overseer_job_cost_microusd{outcome=completed}":               1_500_000, // three phases at $0.50
			},
			timers: map[string]int{"overseer_judge_latency{}": 2},
		},
		{
			name: "observe: a rejected call is its own kind", mode: overseer.ModeObserve,
			steps: []jev.Step{{Err: fmt.Errorf("%w: HTTP 401: wrong key", jev.ErrRejected)}, onTrack(), onTrack()},
			counts: map[string]int64{
				"overseer_assessments{band=on_track,mode=observe,outcome=ok}": 2,
				"overseer_assessments{mode=observe,outcome=error}":            1,
				"overseer_judge_errors{kind=rejected}":                        1,
				"overseer_judge_tokens{kind=input}":                           200,
				"overseer_judge_tokens{kind=output}":                          20,
				"overseer_job_tokens{outcome=completed}":                      0,
				"overseer_job_cost_microusd{outcome=completed}":               1_500_000, // three phases at $0.50
			},
			timers: map[string]int{"overseer_judge_latency{}": 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s testsuite.WorkflowTestSuite
			m := newCapture()
			s.SetMetricsHandler(m)
			env := s.NewTestWorkflowEnvironment()
			plugin, err := overseer.NewPlugin(overseer.Options{Mode: tt.mode, Judge: jev.NewScripted(tt.steps...)})
			require.NoError(t, err)
			env.SetWorkerOptions(withoutLateActivityRace(worker.Options{Plugins: []worker.Plugin{plugin}}))
			rec := &recorder{}
			env.RegisterWorkflow(phasesWorkflow)
			for _, p := range testPhases {
				env.RegisterActivityWithOptions(rec.phase, activity.RegisterOptions{Name: p})
			}
			if tt.resume != nil {
				env.RegisterDelayedCallback(func() {
					env.SignalWorkflow(overseer.ResumeName, *tt.resume)
				}, 2*time.Hour)
			}
			env.ExecuteWorkflow(phasesWorkflow, testPhases)
			require.True(t, env.IsWorkflowCompleted())

			m.mu.Lock()
			defer m.mu.Unlock()
			for k, want := range tt.counts {
				assert.Equal(t, want, m.counts[k], k)
			}
			for k, v := range m.counts {
				if strings.HasPrefix(k, "overseer_") {
					assert.Contains(t, tt.counts, k, "unexpected series %s = %d", k, v)
				}
			}
			for k, want := range tt.timers {
				assert.Len(t, m.timers[k], want, k)
			}
			if w := m.timers["overseer_gate_wait{action=abort}"]; len(w) == 1 {
				assert.Equal(t, 2*time.Hour, w[0].Round(time.Minute), "the gate waited for the delayed resume")
			}
			if l := m.timers["overseer_judge_latency{}"]; len(l) == 2 && tt.mode == overseer.ModeManage {
				assert.Equal(t, 40*time.Millisecond, l[1], "the judge's reported latency")
			}
		})
	}
}

func TestZeroMetricsCoversEveryCounterWithoutNone(t *testing.T) {
	m := newCapture()
	overseer.ZeroMetrics(m)
	for _, k := range []string{
		"overseer_judge_errors{kind=rejected}", "overseer_judge_errors{kind=invalid_request}",
		"overseer_judge_errors{kind=invalid_answer}", "overseer_judge_errors{kind=timeout}", "overseer_judge_errors{kind=error}",
		"overseer_assessments{mode=manage,outcome=error}", "overseer_assessments{band=off_track,mode=manage,outcome=flagged}",
		"overseer_pauses{cause=judge_failures}", "overseer_resumes{action=abort}", "overseer_judge_tokens{kind=output}",
		"overseer_resumes{action=redo}", "overseer_notifications_failed{kind=redone}",
	} {
		v, ok := m.counts[k]
		assert.True(t, ok, "%s is emitted at start", k)
		assert.Zero(t, v, k)
	}
	// assessments, judge errors, tokens, pauses, resumes (continue, redo,
	// abort); gates expired, escalations, failed notifications, refused
	// resumes (five reasons by update and by signal); a pause's third
	// cause (budget), job tokens and cost by four outcomes, budgets
	// reached by two modes.
	assert.Len(t, m.counts, 14+5+2+2+3+2+1+6+10+1+8+2)
	assert.Contains(t, m.counts, "overseer_resumes_refused{reason=OverseerNotAuthorized,via=update}")
	for k := range m.counts {
		assert.NotContains(t, k, "none", "no series carries a none value")
	}
	for _, name := range []string{"overseer_assessments", "overseer_judge_latency", "overseer_judge_tokens",
		"overseer_judge_errors", "overseer_pauses", "overseer_resumes", overseer.MetricGateWait, overseer.MetricOpenGates,
		"overseer_gate_escalations", "overseer_gates_expired", "overseer_notifications_failed", "overseer_resumes_refused",
		overseer.MetricLearnPromotions, overseer.MetricLearnRefusals, overseer.MetricLearnLabelledRuns, overseer.MetricLearnFalsePauseRate,
		overseer.MetricLearnCatchRate, overseer.MetricLearnPromisedFalsePause, overseer.MetricJobTokens, overseer.MetricJobCost, overseer.MetricBudgetsReached} {
		assert.NotEmpty(t, overseer.MetricHelp(name), "HELP text of %s", name)
	}
}

// A resume the job refuses is counted by the refusal's error type and the
// way it came: an update its validator refused (no history records it),
// and a signal the job dropped.
func TestRefusedResumesAreCountedByReason(t *testing.T) {
	var s testsuite.WorkflowTestSuite
	m := newCapture()
	s.SetMetricsHandler(m)
	env := s.NewTestWorkflowEnvironment()
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeManage, Judge: jev.NewScripted(onTrack(), flagged(), onTrack()),
		Placement: overseer.PlacementLocalActivity})
	require.NoError(t, err)
	env.SetWorkerOptions(withoutLateActivityRace(worker.Options{Plugins: []worker.Plugin{plugin}}))
	rec := &recorder{}
	env.RegisterWorkflow(phasesWorkflow)
	for _, p := range testPhases {
		env.RegisterActivityWithOptions(rec.phase, activity.RegisterOptions{Name: p})
	}
	h := &harness{env: env, rec: rec}
	var refused []*updateResult
	h.env.RegisterDelayedCallback(func() {
		refused = append(refused, h.update(overseer.ResumeRequest{By: "bob"}))
	}, 0)
	h.env.RegisterDelayedCallback(func() {
		h.env.SignalWorkflow(overseer.ResumeName, overseer.ResumeRequest{Note: "no by"})
		refused = append(refused, h.update(overseer.ResumeRequest{}), h.update(overseer.ResumeRequest{By: "bob", Gate: "spec-0"}))
	}, time.Hour)
	h.env.RegisterDelayedCallback(func() {
		require.NoError(t, h.update(overseer.ResumeRequest{By: "bob", Gate: "code-1"}).rejected)
	}, 2*time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())
	require.Len(t, refused, 3)
	for _, r := range refused {
		require.Error(t, r.rejected)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	got := map[string]int64{}
	for k, v := range m.counts {
		if strings.HasPrefix(k, "overseer_resumes_refused") {
			got[k] = v
		}
	}
	assert.Equal(t, map[string]int64{
		"overseer_resumes_refused{reason=OverseerNotPaused,via=update}":     1,
		"overseer_resumes_refused{reason=OverseerInvalidResume,via=update}": 1,
		"overseer_resumes_refused{reason=OverseerWrongGate,via=update}":     1,
		"overseer_resumes_refused{reason=OverseerInvalidResume,via=signal}": 1,
	}, got)
	assert.Equal(t, int64(1), m.counts["overseer_resumes{action=continue}"], "the valid resume is a resume, not a refusal")
	assert.Equal(t, 1, h.status(t).Counters.IgnoredResumes)
}
