package learn_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/learn"
	"github.com/corohq/temporal-overseer/overseer"
)

// jobs builds closed jobs, newest first: succeeded ones, then failed ones,
// the first of each paused (a reviewer continued the succeeded ones; the
// failed ones a reviewer aborted).
func jobs(succeeded, falsePauses, failed, caught int) []eval.Record {
	var out []eval.Record
	add := func(outcome eval.Outcome, paused bool, action string) {
		r := eval.Record{Format: eval.RecordFormat, ID: fmt.Sprintf("job-%d", len(out)), Outcome: outcome, Unit: eval.UnitPhase,
			Steps: []eval.Step{{Phase: "code"}, {Phase: "test"}}}
		if paused {
			r.Gates = []eval.GateDecision{{Gate: "code-1", Phase: "code", After: 1, By: "ana", Action: action}}
		}
		out = append(out, r)
	}
	for i := range succeeded {
		add(eval.OutcomeSucceeded, i < falsePauses, eval.GateContinue)
	}
	for i := range failed {
		add(eval.OutcomeFailed, i < caught, eval.GateAbort)
	}
	return out
}

func TestMeasureRatesOnClosedJobs(t *testing.T) {
	promise := overseer.Promise{MaxFalsePause: 0.05, Confidence: 0.95, SucceededRuns: 80, UpperBound: 0.037, FailedRuns: 40, Catches: 22}
	tests := []struct {
		name    string
		records []eval.Record
		window  int
		promise overseer.Promise
		want    learn.Rates
		verdict string
		above   bool
		broken  bool
		say     string
	}{{
		name:    "within the promise but too few to confirm it",
		records: jobs(41, 2, 9, 3), promise: promise,
		want:    learn.Rates{Jobs: 50, Succeeded: 41, FalsePauses: 2, Failed: 9, Caught: 3},
		verdict: eval.PromiseConsistent,
		say: "on the newest closed 50 jobs, 2 of 41 succeeded jobs paused (4.9%), 3 of 9 failed jobs caught (33.3%): " +
			"consistent with the promise of model learned-b (at most 5.0% false pauses), but 41 succeeded jobs are too few to confirm it (it takes 59)",
	}, {
		name:    "the promise holds",
		records: jobs(180, 2, 20, 15), promise: promise,
		want:    learn.Rates{Jobs: 200, Succeeded: 180, FalsePauses: 2, Failed: 20, Caught: 15},
		verdict: eval.PromiseHolds,
		say:     "on the newest closed 200 jobs, 2 of 180 succeeded jobs paused (1.1%), 15 of 20 failed jobs caught (75.0%): the promise of model learned-b (at most 5.0% false pauses) holds on them (95% upper bound 3.5%)",
	}, {
		name:    "above the promise within sampling error",
		records: jobs(40, 3, 5, 1), promise: promise,
		want:    learn.Rates{Jobs: 45, Succeeded: 40, FalsePauses: 3, Failed: 5, Caught: 1},
		verdict: eval.PromiseAbove, above: true,
		say: "on the newest closed 45 jobs, 3 of 40 succeeded jobs paused (7.5%), 1 of 5 failed jobs caught (20.0%): " +
			"above the promise of model learned-b (at most 5.0% false pauses), though within sampling error (95% lower bound 2.1%)",
	}, {
		name:    "the promise broken",
		records: jobs(60, 12, 10, 8), promise: promise,
		want:    learn.Rates{Jobs: 70, Succeeded: 60, FalsePauses: 12, Failed: 10, Caught: 8},
		verdict: eval.PromiseBroken, above: true, broken: true,
		say: "on the newest closed 70 jobs, 12 of 60 succeeded jobs paused (20.0%), 8 of 10 failed jobs caught (80.0%): " +
			"these false pauses BREAK the promise of model learned-b (at most 5.0% false pauses): even their 95% lower bound, 12.0%, is above it; " +
			"the type's own jobs are what fixes it: the round's next step says when a recalibration or refit can run",
	}, {
		name: "only the newest window", records: append(jobs(10, 0, 0, 0), jobs(0, 0, 10, 10)...), window: 10,
		want: learn.Rates{Jobs: 10, Succeeded: 10},
		say:  "on the newest closed 10 jobs, 0 of 10 succeeded jobs paused (0.0%), no failed job; model learned-b's policy makes no false-pause promise to hold them to",
	}, {
		name: "no jobs",
		say:  "no closed jobs to measure the gates on",
	}, {
		name: "one failed job", records: jobs(0, 0, 1, 1), promise: promise,
		want:    learn.Rates{Jobs: 1, Failed: 1, Caught: 1},
		verdict: eval.PromiseConsistent,
		say: "on the newest closed job, no succeeded job, 1 of 1 failed jobs caught (100.0%): " +
			"consistent with the promise of model learned-b (at most 5.0% false pauses), but 0 succeeded jobs are too few to confirm it (it takes 59)",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := learn.MeasureRates(tt.records, tt.window, "learned-b", tt.promise)
			assert.Equal(t, tt.say, got.Sentence)
			assert.Equal(t, tt.want.Jobs, got.Jobs)
			assert.Equal(t, [4]int{tt.want.Succeeded, tt.want.FalsePauses, tt.want.Failed, tt.want.Caught}, [4]int{got.Succeeded, got.FalsePauses, got.Failed, got.Caught})
			assert.Equal(t, "learned-b", got.Model)
			if tt.verdict == "" {
				assert.Nil(t, got.Check)
				assert.Nil(t, got.Promise)
			} else if assert.NotNil(t, got.Check) {
				assert.Equal(t, tt.verdict, got.Check.Verdict)
				assert.Equal(t, &tt.promise, got.Promise)
			}
			assert.Equal(t, tt.above, got.Above())
			assert.Equal(t, tt.broken, got.Broken())
			if got.Succeeded > 0 {
				assert.InDelta(t, float64(got.FalsePauses)/float64(got.Succeeded), got.FalsePauseRate(), 1e-12)
			}
		})
	}
}

// The rates are measured after the reviewers' decisions are labels: a job
// aborted at a gate is failed and caught, whatever its close status said.
func TestMeasureRatesAfterGateLabels(t *testing.T) {
	records := jobs(3, 1, 0, 0)
	records[2].Gates = []eval.GateDecision{{Gate: "code-1", Phase: "code", After: 1, By: "bo", Action: eval.GateAbort}}
	eval.UseGateLabels(records)
	got := learn.MeasureRates(records, 0, "", overseer.Promise{})
	assert.Equal(t, [4]int{2, 1, 1, 1}, [4]int{got.Succeeded, got.FalsePauses, got.Failed, got.Caught})
	assert.Equal(t, 0.5, got.FalsePauseRate())
	assert.Equal(t, 1.0, got.CatchRate())
	assert.Contains(t, got.Sentence, "the current model's policy makes no false-pause promise")
}
