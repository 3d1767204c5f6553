package ops_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/api/serviceerror"

	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
)

func TestListQuery(t *testing.T) {
	tests := []struct {
		band   string
		paused bool
		want   string
		err    error
	}{
		{"", false, "", nil},
		{"", true, "OverseerPaused = true AND ExecutionStatus NOT IN ('Completed', 'Failed', 'Canceled', 'Terminated', 'ContinuedAsNew', 'TimedOut')", nil},
		{"off_track", false, "OverseerStatus = 'off_track'", nil},
		{"needs_a_look", true, "OverseerStatus = 'needs_a_look' AND OverseerPaused = true AND ExecutionStatus NOT IN ('Completed', 'Failed', 'Canceled', 'Terminated', 'ContinuedAsNew', 'TimedOut')", nil},
		{"on_track' OR 1=1 --", false, "", ops.ErrInvalidFilter},
	}
	for _, tt := range tests {
		t.Run(tt.band, func(t *testing.T) {
			got, err := ops.ListQuery(tt.band, tt.paused)
			assert.ErrorIs(t, err, tt.err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestResumeValidatesBeforeCallingTemporal(t *testing.T) {
	tests := []struct {
		req  overseer.ResumeRequest
		want string
	}{
		{overseer.ResumeRequest{By: " "}, `resume job "job-1": resume needs "by": who resumes the job`},
		{overseer.ResumeRequest{By: "alice", Action: "pause"}, `resume job "job-1": resume action must be "continue", "redo" or "abort", not "pause"`},
		{overseer.ResumeRequest{By: "alice", Note: strings.Repeat("x", overseer.MaxResumeNoteBytes+1)},
			`resume job "job-1": resume note is 4097 bytes; keep it to 4096 bytes (4 KiB)`},
	}
	for _, tt := range tests {
		// A nil client would panic if it were called.
		_, err := ops.Resume(context.Background(), nil, "job-1", tt.req)
		assert.Equal(t, overseer.InvalidResumeErrorType, overseer.ErrorType(err), "typed refusal: %v", err)
		assert.EqualError(t, err, tt.want)
	}
}

func TestJobError(t *testing.T) {
	tests := []struct {
		name string
		err  error
		is   error
		msg  string
	}{
		{"unknown", serviceerror.NewNotFound("workflow not found"), ops.ErrNoJob, `no job with id "j"`},
		{"deadline", context.DeadlineExceeded, nil, "did not answer in time"},
		{"the SDK's call timeout", serviceerror.NewDeadlineExceeded("context deadline exceeded"), nil, "did not answer in time"},
		{"other", errors.New("boom"), nil, `job "j": boom`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ops.JobError("j", tt.err)
			if tt.is != nil {
				assert.ErrorIs(t, err, tt.is)
			}
			assert.ErrorContains(t, err, tt.msg)
		})
	}
}

// A job's spend as the list shows it: what its phases reported, its
// elapsed time (to its close, or now), against its budget.
func TestJobSpend(t *testing.T) {
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	closed := start.Add(3 * time.Hour)
	tests := []struct {
		name string
		job  ops.Job
		want string
	}{
		{"no summary", ops.Job{Started: start}, ""},
		{"open, nothing reported", ops.Job{Started: start, Summary: &overseer.Summary{}}, "1h0m0s"},
		{"closed, over budget", ops.Job{Started: start, Closed: &closed, Summary: &overseer.Summary{
			Spent: overseer.Budget{Tokens: 2400, CostUSD: 1.2, Turns: 4, PhaseRuns: 4}, Budget: &overseer.Budget{Tokens: 2000}, BudgetState: overseer.BudgetReached}},
			"2400 tokens, $1.20, 4 turns, 3h0m0s of 2000 tokens (reached)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.job.Spend(start.Add(time.Hour)))
		})
	}
	assert.Equal(t, "OverseerBudget IN ('near', 'reached')", ops.OverBudgetQuery)
}

// A job's elapsed time counts from its first run's start, as its time
// budget does: after a continue-as-new the current run started later, and
// its own start would show "0s" of a budget that has counted the
// predecessor's time too. A summary that does not say (the job's first
// run, or an earlier release) counts from the run's start.
func TestJobSpendCountsFromTheFirstRun(t *testing.T) {
	first := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	budget := &overseer.Budget{Elapsed: time.Hour}
	tests := []struct {
		name     string
		runStart time.Time
		closed   *time.Time
		started  time.Time // Summary.Started: the first run's start, if the run is a successor
		now      time.Time
		want     string
	}{
		{"first run", first, nil, time.Time{}, first.Add(8 * time.Second), "8s of 1h0m0s"},
		{"successor started just now", first.Add(8 * time.Second), nil, first, first.Add(8 * time.Second), "8s of 1h0m0s"},
		{"successor, later", first.Add(8 * time.Second), nil, first, first.Add(20 * time.Minute), "20m0s of 1h0m0s"},
		{"successor, closed", first.Add(30 * time.Minute), new(first.Add(70 * time.Minute)), first, first.Add(5 * time.Hour), "1h10m0s of 1h0m0s"},
		{"summary of an earlier release", first.Add(30 * time.Minute), nil, time.Time{}, first.Add(40 * time.Minute), "10m0s of 1h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := ops.Job{Started: tt.runStart, Closed: tt.closed, Summary: &overseer.Summary{Budget: budget, Started: tt.started}}
			assert.Equal(t, tt.want, j.Spend(tt.now))
		})
	}
}
