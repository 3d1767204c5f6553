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
// the first of each paused (a reviewer continued the succeeded ones without
// a note, a false pause; the failed ones a reviewer aborted).
func jobs(succeeded, falsePauses, failed, caught int) []eval.Record {
	var out []eval.Record
	add := func(outcome eval.Outcome, paused bool, action string) {
		r := eval.Record{Format: eval.RecordFormat, ID: fmt.Sprintf("job-%d", len(out)), Outcome: outcome, Unit: eval.UnitPhase,
			Steps: []eval.Step{{Phase: "code"}, {Phase: "test"}}}
		if paused {
			r.Gates = []eval.GateDecision{{Gate: "code-1", Phase: "code", After: 1, By: "ana", Action: action}}
			if action == eval.GateContinue {
				r.Gates[0].Needed, r.Gates[0].NeededBy = new(false), string(overseer.NeededByNoNote)
			} else {
				r.Gates[0].Needed, r.Gates[0].NeededBy = new(true), string(overseer.NeededByAction)
			}
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
		say: "on the newest closed 50 jobs, 2 of 41 succeeded jobs had a false pause (4.9%), 3 of 9 failed jobs caught (33.3%): " +
			"consistent with the promise of model learned-b (at most 5.0% false pauses), but 41 succeeded jobs are too few to confirm it (it takes 59)",
	}, {
		name:    "the promise holds",
		records: jobs(180, 2, 20, 15), promise: promise,
		want:    learn.Rates{Jobs: 200, Succeeded: 180, FalsePauses: 2, Failed: 20, Caught: 15},
		verdict: eval.PromiseHolds,
		say:     "on the newest closed 200 jobs, 2 of 180 succeeded jobs had a false pause (1.1%), 15 of 20 failed jobs caught (75.0%): the promise of model learned-b (at most 5.0% false pauses) holds on them (95% upper bound 3.5%)",
	}, {
		name:    "above the promise within sampling error",
		records: jobs(40, 3, 5, 1), promise: promise,
		want:    learn.Rates{Jobs: 45, Succeeded: 40, FalsePauses: 3, Failed: 5, Caught: 1},
		verdict: eval.PromiseAbove, above: true,
		say: "on the newest closed 45 jobs, 3 of 40 succeeded jobs had a false pause (7.5%), 1 of 5 failed jobs caught (20.0%): " +
			"above the promise of model learned-b (at most 5.0% false pauses), though within sampling error (95% lower bound 2.1%)",
	}, {
		name:    "the promise broken",
		records: jobs(60, 12, 10, 8), promise: promise,
		want:    learn.Rates{Jobs: 70, Succeeded: 60, FalsePauses: 12, Failed: 10, Caught: 8},
		verdict: eval.PromiseBroken, above: true, broken: true,
		say: "on the newest closed 70 jobs, 12 of 60 succeeded jobs had a false pause (20.0%), 8 of 10 failed jobs caught (80.0%): " +
			"these false pauses BREAK the promise of model learned-b (at most 5.0% false pauses): even their 95% lower bound, 12.0%, is above it; " +
			"the type's own jobs are what fixes it: the round's next step says when a recalibration or refit can run",
	}, {
		name: "only the newest window", records: append(jobs(10, 0, 0, 0), jobs(0, 0, 10, 10)...), window: 10,
		want: learn.Rates{Jobs: 10, Succeeded: 10},
		say:  "on the newest closed 10 jobs, 0 of 10 succeeded jobs had a false pause (0.0%), no failed job; model learned-b's policy makes no false-pause promise to hold them to",
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

// A job that succeeded after a needed pause (a reviewer's note redirected
// it) is no false pause; a continue the reviewer called a false alarm is
// one; a job exported before the judgement keeps the old rule, and the
// sentence says so.
func TestMeasureRatesReadsWhetherThePauseWasNeeded(t *testing.T) {
	promise := overseer.Promise{MaxFalsePause: 0.05, Confidence: 0.95, SucceededRuns: 80, UpperBound: 0.037, FailedRuns: 40, Catches: 22}
	gate := func(needed *bool, by overseer.NeededBy) []eval.GateDecision {
		return []eval.GateDecision{{Gate: "code-1", Phase: "code", After: 1, By: "ana", Action: eval.GateContinue, Note: "find the root cause", Needed: needed, NeededBy: string(by)}}
	}
	// The four demo scenarios after `overseer dev`: three resumed with a
	// note, each of them then delivered.
	demo := jobs(4, 0, 0, 0)
	for i := 1; i < 4; i++ {
		demo[i].Gates = gate(new(true), overseer.NeededByNote)
	}
	got := learn.MeasureRates(demo, 0, "learned-b", promise)
	assert.Equal(t, [3]int{4, 0, 3}, [3]int{got.Succeeded, got.FalsePauses, got.NeededPauses})
	assert.False(t, got.Above())
	assert.False(t, got.Broken())
	assert.Equal(t, "on the newest closed 4 jobs, 0 of 4 succeeded jobs had a false pause (0.0%; 3 more paused only where it was needed), no failed job: "+
		"consistent with the promise of model learned-b (at most 5.0% false pauses), but 4 succeeded jobs are too few to confirm it (it takes 59)", got.Sentence)

	// The same jobs, one continued with a note the reviewer marked not
	// needed: a false pause.
	demo[1].Gates = gate(new(false), overseer.NeededByReviewer)
	got = learn.MeasureRates(demo, 0, "learned-b", promise)
	assert.Equal(t, [3]int{4, 1, 2}, [3]int{got.Succeeded, got.FalsePauses, got.NeededPauses})
	assert.Contains(t, got.Sentence, "1 of 4 succeeded jobs had a false pause (25.0%; 2 more paused only where it was needed)")

	// Exported before the judgement: the old rule, said.
	demo[2].Gates = gate(nil, "")
	got = learn.MeasureRates(demo, 0, "learned-b", promise)
	assert.Equal(t, [4]int{4, 2, 1, 1}, [4]int{got.Succeeded, got.FalsePauses, got.NeededPauses, got.Unjudged})
	assert.Contains(t, got.Sentence, "2 of 4 succeeded jobs had a false pause (50.0%; 1 more paused only where it was needed; "+
		"1 of the false pauses by the old rule, exported before gates recorded whether the pause was needed)")
}

// A budget's stop is not the judge's pause: a succeeded job continued at
// its budget's gate without a note has no false pause, and a failed job
// that only reached its budget is not caught.
func TestMeasureRatesLeaveBudgetStopsOut(t *testing.T) {
	records := jobs(2, 1, 2, 1)
	for _, i := range []int{0, 2} { // the paused succeeded and failed jobs
		records[i].Gates[0].Kind = overseer.GateKindBudget
	}
	eval.UseGateLabels(records)
	got := learn.MeasureRates(records, 0, "", overseer.Promise{})
	assert.Equal(t, [4]int{2, 0, 2, 0}, [4]int{got.Succeeded, got.FalsePauses, got.Failed, got.Caught})
}
