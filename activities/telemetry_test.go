package activities_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/workflows"
)

// phaseRun is one completed phase of a job and the report it carried.
type phaseRun struct {
	phase  string
	run    int
	report overseer.PhaseReport
}

func (r phaseRun) inputPerTurn() float64 {
	return float64(r.report.InputTokens) / float64(r.report.Turns)
}

type job struct {
	result workflows.JobResult
	err    error
	runs   []phaseRun
}

// runJob runs the reference job without the overseer (no process notes),
// as workflow id, and collects every phase's report in order.
func runJob(t *testing.T, scenario activities.Scenario, id string) job {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := s.NewTestWorkflowEnvironment()
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: id})
	workflows.Register(env)
	(&activities.Agents{}).Register(env)
	var j job
	runs := map[string]int{}
	env.SetOnActivityCompletedListener(func(_ *activity.Info, result converter.EncodedValue, err error) {
		if err != nil {
			return
		}
		var out activities.PhaseOutput
		require.NoError(t, result.Get(&out))
		require.NotNil(t, out.OverseerReport, "phase %s carries no report", out.Phase)
		runs[out.Phase]++
		j.runs = append(j.runs, phaseRun{phase: out.Phase, run: runs[out.Phase], report: *out.OverseerReport})
	})
	env.ExecuteWorkflow(workflows.JobWorkflowName, workflows.JobInput{Objective: "Add CSV export", Scenario: scenario})
	require.True(t, env.IsWorkflowCompleted())
	j.err = env.GetWorkflowError()
	if j.err == nil {
		require.NoError(t, env.GetWorkflowResult(&j.result))
	}
	return j
}

func (j job) totalTurns() (turns int) {
	for _, r := range j.runs {
		turns += r.report.Turns
	}
	return turns
}

func (j job) runsOf(phase string) (runs []phaseRun) {
	for _, r := range j.runs {
		if r.phase == phase {
			runs = append(runs, r)
		}
	}
	return runs
}

// runPhase runs one phase as an activity of the SDK's test environment.
func runPhase(t *testing.T, in *activities.PhaseInput) (activities.PhaseOutput, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := s.NewTestActivityEnvironment()
	(&activities.Agents{}).Register(env)
	v, err := env.ExecuteActivity(activities.ActivityName(in.Phase), in)
	var out activities.PhaseOutput
	if err == nil {
		require.NoError(t, v.Get(&out))
	}
	return out, err
}

func TestEveryPhaseReportsTelemetry(t *testing.T) {
	for _, sc := range activities.Scenarios {
		for _, phase := range activities.DefaultPhases {
			for _, run := range []int{1, 2, 5} {
				for _, noted := range []bool{false, true} {
					t.Run(fmt.Sprintf("%s/%s/%d/noted=%v", sc, phase, run, noted), func(t *testing.T) {
						in := &activities.PhaseInput{Objective: "Add CSV export", Scenario: sc, Phase: phase, Lane: "feature", Run: run}
						if noted {
							in.SetProcessNote(overseer.Note{FlaggedPhase: "code", Text: "change approach", ReviewerNote: "credentials added"})
						}
						out, err := runPhase(t, in)
						if sc == activities.Blocked && phase == activities.PhaseCode && !noted {
							var app *temporal.ApplicationError
							require.ErrorAs(t, err, &app, "a blocked code phase fails and reports nothing")
							assert.Equal(t, activities.BlockedErrorType, app.Type())
							return
						}
						require.NoError(t, err)
						r := out.OverseerReport
						require.NotNil(t, r)
						assert.Positive(t, r.Turns)
						assert.Positive(t, r.OutputTokens)
						assert.Greater(t, r.InputTokens, int64(r.Turns)*activities.SystemPromptTokens,
							"every turn re-sends the system prompt and more")
						assert.LessOrEqual(t, r.InputTokens, int64(r.Turns)*activities.ContextWindowTokens)
						assert.InDelta(t, float64(r.InputTokens)*activities.InputUSDPerMillionTokens/1e6+
							float64(r.OutputTokens)*activities.OutputUSDPerMillionTokens/1e6, r.CostUSD, 1e-9)
						if phase == activities.PhaseCode {
							assert.GreaterOrEqual(t, r.Turns, 4, "the code loop's four edit steps are turns")
						}
					})
				}
			}
		}
	}
}

func TestTelemetryIsDeterministic(t *testing.T) {
	in := func() *activities.PhaseInput {
		return &activities.PhaseInput{Objective: "Add CSV export", Scenario: activities.Looping, Phase: activities.PhaseTest, Run: 3}
	}
	a, err := runPhase(t, in())
	require.NoError(t, err)
	b, err := runPhase(t, in())
	require.NoError(t, err)
	assert.Equal(t, *a.OverseerReport, *b.OverseerReport, "the same phase run of the same job")

	direct, err := (&activities.Agents{}).Run(context.Background(), in())
	require.NoError(t, err)
	again, err := (&activities.Agents{}).Run(context.Background(), in())
	require.NoError(t, err)
	assert.Equal(t, *direct.OverseerReport, *again.OverseerReport, "outside an activity too")

	first, second := runJob(t, activities.Looping, "job-a"), runJob(t, activities.Looping, "job-a")
	require.NoError(t, first.err)
	assert.Equal(t, first.runs, second.runs, "a job run again under its id reports the same telemetry")

	other := runJob(t, activities.Looping, "job-b")
	require.NoError(t, other.err)
	assert.Equal(t, first.result, other.result, "the telemetry does not change what the job does")
	require.Len(t, other.runs, len(first.runs))
	differ := 0
	for i := range first.runs {
		if first.runs[i].report.InputTokens != other.runs[i].report.InputTokens {
			differ++
		}
	}
	assert.Greater(t, differ, len(first.runs)/2, "another job id draws other numbers")
}

func TestScenariosPlayAsBefore(t *testing.T) {
	for _, tc := range []struct {
		scenario activities.Scenario
		outcome  string
		log      []string
	}{
		{activities.OnTrack, "delivered", []string{"spec#1 ok", "plan#1 ok", "code#1 ok", "test#1 failed checks", "code#2 ok", "test#2 ok", "review#1 ok", "evaluate#1 ok"}},
		{activities.Drifting, "delivered", []string{"spec#1 ok", "plan#1 ok",
			"code#1 ok", "test#1 ok", "review#1 failed checks", "code#2 ok", "test#2 ok", "review#2 failed checks",
			"code#3 ok", "test#3 ok", "review#3 failed checks", "code#4 ok", "test#4 ok", "review#4 ok", "evaluate#1 ok"}},
		{activities.Looping, "delivered", []string{"spec#1 ok", "plan#1 ok",
			"code#1 ok", "test#1 failed checks", "code#2 ok", "test#2 failed checks", "code#3 ok", "test#3 failed checks",
			"code#4 ok", "test#4 failed checks", "code#5 ok", "test#5 failed checks", "code#6 ok", "test#6 failed checks",
			"code#7 ok", "test#7 ok", "review#1 ok", "evaluate#1 ok"}},
	} {
		t.Run(string(tc.scenario), func(t *testing.T) {
			j := runJob(t, tc.scenario, "job-"+string(tc.scenario))
			require.NoError(t, j.err)
			assert.Equal(t, tc.outcome, j.result.Outcome)
			assert.Equal(t, tc.log, j.result.Log)
		})
	}
	blocked := runJob(t, activities.Blocked, "job-blocked")
	require.Error(t, blocked.err, "nobody brings the credentials")
	assert.Contains(t, blocked.err.Error(), "missing credentials")
	assert.Len(t, blocked.runs, 2, "only spec and plan complete")
}

func TestContextAccumulatesOverAJob(t *testing.T) {
	j := runJob(t, activities.Looping, "job-looping")
	require.NoError(t, j.err)
	for _, phase := range []string{activities.PhaseCode, activities.PhaseTest} {
		runs := j.runsOf(phase)
		require.Len(t, runs, 7)
		first, last := runs[0], runs[len(runs)-1]
		// Six loops' hand-offs (code's diff and the test log, 5,500 tokens
		// each pass) outweigh any difference between the runs' own histories.
		assert.Greater(t, last.inputPerTurn(), first.inputPerTurn()+10000,
			"%s#%d re-reads a context grown by six loops: %.0f vs %.0f input tokens a turn", phase, last.run, last.inputPerTurn(), first.inputPerTurn())
	}
	// The first pass through the phases: the evaluation carries every
	// phase's hand-off, the spec none.
	spec, eval := j.runsOf(activities.PhaseSpec)[0], j.runsOf(activities.PhaseEvaluate)[0]
	assert.Greater(t, eval.inputPerTurn(), spec.inputPerTurn())
}

func TestLoopingCostsMoreThanOnTrack(t *testing.T) {
	onTrack, looping := runJob(t, activities.OnTrack, "job-1"), runJob(t, activities.Looping, "job-1")
	require.NoError(t, onTrack.err)
	require.NoError(t, looping.err)
	// By the turn ranges, whatever the draws: at least 119 turns against
	// at most 59.
	assert.Greater(t, looping.totalTurns(), 2*onTrack.totalTurns())
	var onTrackCost, loopingCost float64
	for _, r := range onTrack.runs {
		onTrackCost += r.report.CostUSD
	}
	for _, r := range looping.runs {
		loopingCost += r.report.CostUSD
	}
	assert.Greater(t, loopingCost, onTrackCost)
}

func TestFailuresAndReworkTakeTurns(t *testing.T) {
	// The same phase run of the same job, with and without its failure:
	// one draw, so the difference is the failure's turns.
	in := func(sc activities.Scenario) *activities.PhaseInput {
		return &activities.PhaseInput{Objective: "Add CSV export", Scenario: sc, Phase: activities.PhaseTest, Run: 1}
	}
	failing, err := runPhase(t, in(activities.OnTrack)) // on track fails its first test run
	require.NoError(t, err)
	require.False(t, failing.Passed)
	passing, err := runPhase(t, in(activities.Drifting))
	require.NoError(t, err)
	require.True(t, passing.Passed)
	assert.Equal(t, passing.OverseerReport.Turns+activities.FailedCheckTurns, failing.OverseerReport.Turns)
	assert.Greater(t, failing.OverseerReport.InputTokens, passing.OverseerReport.InputTokens)

	drift := &activities.PhaseInput{Objective: "Add CSV export", Scenario: activities.Drifting, Phase: activities.PhaseCode, Run: 3}
	reworked, err := runPhase(t, drift)
	require.NoError(t, err)
	require.Equal(t, 3, reworked.OverseerReport.Rework)
	plain, err := runPhase(t, &activities.PhaseInput{Objective: "Add CSV export", Scenario: activities.Drifting, Phase: activities.PhaseCode, Run: 3, Noted: true})
	require.NoError(t, err)
	require.Zero(t, plain.OverseerReport.Rework)
	assert.Equal(t, plain.OverseerReport.Turns+3*activities.ReworkTurns, reworked.OverseerReport.Turns)
}
