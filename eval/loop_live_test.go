package eval_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	sdktestsuite "go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/workflows"
)

// liveAssessments runs the workflow registered by register under name
// with input in, with the plugin at its defaults in observe mode in the
// SDK's test environment, checks it closes as the recorded run did (with
// an application error of type errType, or completed when it is ""), and
// returns every assessment it recorded.
func liveAssessments(t *testing.T, register func(worker.Registry), name string, in any, errType string) []overseer.Assessment {
	t.Helper()
	var s sdktestsuite.WorkflowTestSuite
	s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	env := s.NewTestWorkflowEnvironment()
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeObserve, RecentAssessments: 10_000})
	require.NoError(t, err)
	env.SetWorkerOptions(worker.Options{Plugins: []worker.Plugin{plugin}})
	register(env)
	env.ExecuteWorkflow(name, in)
	if errType != "" {
		// The job closes as the run did.
		var app *temporal.ApplicationError
		require.ErrorAs(t, env.GetWorkflowError(), &app)
		require.Equal(t, errType, app.Type())
	} else {
		require.NoError(t, env.GetWorkflowError())
	}
	v, err := env.QueryWorkflow(overseer.StatusQueryName)
	require.NoError(t, err)
	var st overseer.Status
	require.NoError(t, v.Get(&st))
	return st.Assessments
}

// liveVerdicts runs rec as the agent loop a team writes on Temporal
// (workflows.RecordedLoop: a model-call activity, then the tool activity)
// and returns every assessment the plugin recorded.
func liveVerdicts(t *testing.T, rec eval.Record, toolFailures string) []overseer.Assessment {
	t.Helper()
	in := eval.LoopInput(rec)
	in.ToolFailures = toolFailures
	return liveAssessments(t, func(r worker.Registry) {
		workflows.RegisterRecordedLoop(r)
		(&workflows.RecordedLoopActivities{In: in}).Register(r)
	}, workflows.RecordedLoopWorkflowName, in, recordedErrType(rec, workflows.RecordedFailedErrorType))
}

// The verdicts `overseer eval` gives a recorded run are the verdicts the
// live plugin gives the same run replayed as a workflow: the same P(on
// objective) and band at every model and tool call, with failed commands
// failing the tool's activity and returned as results.
func TestEvalVerdictsAreTheLivePluginsOnTheSameRun(t *testing.T) {
	dir := testsuite.SharedTraces(t, "mini-swe-agent-gemini-3-pro")
	recs, err := eval.LoadRuns(dir, "")
	require.NoError(t, err)
	// A failed and a succeeded run of each kind of length.
	var picked []eval.Record
	for _, want := range []struct {
		failed   bool
		min, max int
	}{{true, 10, 40}, {false, 10, 40}, {true, 60, 200}, {false, 60, 200}} {
		for _, r := range recs {
			if r.Outcome.Failed() == want.failed && len(r.Steps) >= want.min && len(r.Steps) <= want.max {
				picked = append(picked, r)
				break
			}
		}
	}
	require.Len(t, picked, 4)
	policy := overseer.DefaultLearnedPolicy().ForShape(overseer.ShapeAgentLoop)
	for _, toolFailures := range []string{workflows.ToolFailuresAsErrors, workflows.ToolFailuresAsResults} {
		for _, rec := range picked {
			t.Run(toolFailures+"/"+rec.ID, func(t *testing.T) {
				points := scoreLoop(t, rec, toolFailures)
				if toolFailures == workflows.ToolFailuresAsErrors {
					// What `overseer eval` itself scores.
					scored, err := eval.Score(context.Background(), []eval.Record{rec}, eval.ScoreOptions{Judge: &overseer.LearnedJudge{}})
					require.NoError(t, err)
					require.Len(t, scored[0].Points, len(points))
					for i := range points {
						require.Equal(t, points[i].Answers.OnObjective, scored[0].Points[i].Answers.OnObjective)
					}
				}
				live := liveVerdicts(t, rec, toolFailures)
				require.Len(t, live, len(points), "an assessment at every call")
				for i, a := range live {
					require.Equal(t, i+1, a.Seq)
					require.NotNil(t, a.Answers, "assessment %d: %s", a.Seq, a.Error)
					p := points[i]
					assert.Equal(t, p.Answers.OnObjective, a.Answers.OnObjective, "P at call %d", a.Seq)
					assert.Equal(t, policy.Evaluate(p.Answers).Band, a.Verdict.Band, "band at call %d", a.Seq)
					assert.Equal(t, policy.Evaluate(p.Answers).Flagged, a.Verdict.Flagged, "flag at call %d", a.Seq)
					assert.Equal(t, p.Answers.Breach, a.Answers.Breach, "breach at call %d", a.Seq)
				}
			})
		}
	}
}

// scoreLoop is what `overseer eval` answers at each call of rec replayed as
// a loop whose tool reports failures as toolFailures says.
func scoreLoop(t *testing.T, rec eval.Record, toolFailures string) []eval.Point {
	t.Helper()
	judge := &overseer.LearnedJudge{}
	var points []eval.Point
	for _, b := range eval.ReplayLoop(rec, toolFailures, trajectory.ContentWindow{}) {
		req, err := overseer.NewRequest("", overseer.DefaultObligations(), b.Trajectory)
		require.NoError(t, err)
		resp, err := judge.Decide(context.Background(), req)
		require.NoError(t, err)
		a, err := overseer.ParseAnswers(req, resp, overseer.DefaultObligations())
		require.NoError(t, err)
		points = append(points, eval.Point{Steps: b.Steps, Answers: a})
	}
	return points
}

// livePhaseVerdicts runs rec recast as a job of phases as the recorded job
// (workflows.RecordedJob: one activity per phase run, returning its
// report) and returns every assessment the plugin recorded.
func livePhaseVerdicts(t *testing.T, rec eval.Record) []overseer.Assessment {
	t.Helper()
	in := eval.RecordedJob(rec)
	in.Speed = 1e9 // the recorded time is read from the phases' reports, not waited
	return liveAssessments(t, func(r worker.Registry) {
		workflows.RegisterRecorded(r)
		(&activities.Recorded{}).Register(r)
	}, workflows.RecordedJobWorkflowName, in, recordedErrType(rec, workflows.RecordedBlockedErrorType))
}

// recordedErrType is the error type a recorded job of rec ends with: none
// when it succeeded, RecordedFailedErrorType when it failed, blocked when
// it was blocked.
func recordedErrType(rec eval.Record, blocked string) string {
	switch rec.Outcome {
	case eval.OutcomeSucceeded:
		return ""
	case eval.OutcomeBlocked:
		return blocked
	}
	return workflows.RecordedFailedErrorType
}

// The other shape: a recorded run recast as a job of phases gets, live, the
// verdicts `overseer eval --as-phases` gives it, phase run by phase run.
func TestEvalVerdictsAreTheLivePluginsOnTheSameJobOfPhases(t *testing.T) {
	recs, err := eval.LoadRuns(testsuite.SharedTraces(t, "mini-swe-agent-gemini-3-pro"), "")
	require.NoError(t, err)
	policy := overseer.DefaultLearnedPolicy()
	picked := 0
	for _, r := range recs {
		if picked == 4 || len(r.Steps) < 20 || len(r.Steps) > 80 {
			continue
		}
		picked++
		rec := r.AsPhases()
		t.Run(rec.ID, func(t *testing.T) {
			scored, err := eval.Score(context.Background(), []eval.Record{rec}, eval.ScoreOptions{Judge: &overseer.LearnedJudge{}})
			require.NoError(t, err)
			live := livePhaseVerdicts(t, rec)
			require.Len(t, live, len(scored[0].Points), "an assessment at every phase run")
			for i, a := range live {
				p := scored[0].Points[i]
				require.NotNil(t, a.Answers, "assessment %d: %s", a.Seq, a.Error)
				assert.InDelta(t, p.Answers.OnObjective, a.Answers.OnObjective, 1e-9, "P at phase run %d", a.Seq)
				assert.Equal(t, policy.Evaluate(p.Answers).Band, a.Verdict.Band, "band at phase run %d", a.Seq)
				assert.Equal(t, p.Answers.Breach, a.Answers.Breach, "breach at phase run %d", a.Seq)
			}
		})
	}
	require.Equal(t, 4, picked)
}

// requestRecorder is a judge that keeps every request it is asked, and
// answers as the learned judge does.
type requestRecorder struct {
	overseer.LearnedJudge
	mu   sync.Mutex
	reqs []jev.Request
}

func (r *requestRecorder) Decide(ctx context.Context, req jev.Request) (*jev.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.mu.Unlock()
	return r.LearnedJudge.Decide(ctx, req)
}

// The content window a model judge reads live, on the recorded loop run
// as a workflow with Options.ContentWindows, is the window `overseer eval`
// builds offline from the same recorded run: the same excerpts of the same
// calls at every call, with failed commands failing the tool's activity
// and returned as results.
func TestEvalContentWindowIsTheLivePluginsOnTheSameRun(t *testing.T) {
	recs, err := eval.LoadRuns(testsuite.SharedTraces(t, "mini-swe-agent-gemini-3-pro"), "")
	require.NoError(t, err)
	var rec eval.Record
	for _, r := range recs {
		formatErrors, failed := 0, 0
		for _, s := range r.Steps {
			if s.FailureCategory == "format" {
				formatErrors++
			} else if s.Failed {
				failed++
			}
		}
		if len(r.Steps) >= 10 && len(r.Steps) <= 40 && formatErrors > 0 && failed > 0 {
			rec = r
			break
		}
	}
	require.NotEmpty(t, rec.ID, "a short run with a format error and a failed command")
	w := trajectory.ContentWindow{Calls: 8, CallBytes: 1024}
	for _, toolFailures := range []string{workflows.ToolFailuresAsErrors, workflows.ToolFailuresAsResults} {
		t.Run(toolFailures+"/"+rec.ID, func(t *testing.T) {
			offline := eval.ReplayLoop(rec, toolFailures, w)
			in := eval.LoopInput(rec)
			in.ToolFailures = toolFailures
			judge := &requestRecorder{}
			var s sdktestsuite.WorkflowTestSuite
			s.SetLogger(log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
			env := s.NewTestWorkflowEnvironment()
			plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeObserve, Judge: judge, Placement: overseer.PlacementLocalActivity,
				ContentWindows: map[string]trajectory.ContentWindow{workflows.RecordedLoopWorkflowName: w}})
			require.NoError(t, err)
			env.SetWorkerOptions(worker.Options{Plugins: []worker.Plugin{plugin}})
			workflows.RegisterRecordedLoop(env)
			(&workflows.RecordedLoopActivities{In: in}).Register(env)
			env.ExecuteWorkflow(workflows.RecordedLoopWorkflowName, in)
			require.Error(t, env.GetWorkflowError(), "the recorded run failed")

			require.Len(t, judge.reqs, len(offline), "a request at every call")
			sawText, sawError := false, false
			for _, req := range judge.reqs {
				var st trajectory.State
				require.NoError(t, json.Unmarshal(req.State, &st))
				n := st.Trajectory.PhaseRuns
				require.GreaterOrEqual(t, n, 1)
				want := offline[n-1].Trajectory.Content
				require.NotEmpty(t, want)
				require.Equal(t, want, st.Trajectory.Content, "the window at call %d", n)
				for _, c := range want {
					sawText = sawText || strings.Contains(c.Input, `"text":"`)
					sawError = sawError || c.Error != ""
				}
			}
			assert.True(t, sawText, "the commands' texts reached the judge")
			assert.True(t, sawError, "the format error's, at least")
		})
	}
}
