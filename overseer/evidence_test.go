package overseer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
)

// evidenceStep is one phase run of an evidence test's trajectory: the lane
// and work items set before it, then the run with its report.
type evidenceStep struct {
	lane      string
	workItems [][2]string
	run       overseer.PhaseRun
	report    *overseer.PhaseReport
}

func trajectoryOf(steps ...evidenceStep) overseer.Trajectory {
	var rec overseer.TrajectoryRecorder
	rec.SetObjective("Add CSV export")
	for _, s := range steps {
		if s.lane != "" {
			rec.SetLane(s.lane)
		}
		for _, w := range s.workItems {
			rec.SetWorkItem(w[0], w[1])
		}
		rec.RecordPhase(s.run, s.report)
	}
	return rec.Trajectory()
}

func ran(phase string) evidenceStep { return evidenceStep{run: overseer.PhaseRun{Phase: phase}} }

func reported(phase string, r overseer.PhaseReport) evidenceStep {
	return evidenceStep{run: overseer.PhaseRun{Phase: phase}, report: &r}
}

func failed(phase, err string) evidenceStep {
	return evidenceStep{run: overseer.PhaseRun{Phase: phase, Failed: true, Error: err}}
}

func inLane(lane string, s evidenceStep) evidenceStep { s.lane = lane; return s }

func withItem(id, status string, s evidenceStep) evidenceStep {
	s.workItems = append(s.workItems, [2]string{id, status})
	return s
}

// judged asks judge about traj with the default obligations.
func judged(t *testing.T, judge jev.Judge, traj overseer.Trajectory) overseer.Answers {
	t.Helper()
	req, err := overseer.NewRequest("", overseer.DefaultObligations(), traj)
	require.NoError(t, err)
	resp, err := judge.Decide(context.Background(), req)
	require.NoError(t, err)
	a, err := overseer.ParseAnswers(req, resp, overseer.DefaultObligations())
	require.NoError(t, err)
	return a
}

// Each breach rule of the heuristic and learned judges, on a trajectory
// that trips it: the judge chooses the breach, and the evidence says, in
// plain words, what the rule saw, then the other signals.
func TestEvidenceSaysWhatEachBreachRuleSaw(t *testing.T) {
	heuristic, learned := overseer.HeuristicJudge{}, &overseer.LearnedJudge{}
	for _, tc := range []struct {
		name   string
		judge  jev.Judge
		steps  []evidenceStep
		breach string
		want   []string
	}{{
		name:   "missing output, named",
		judge:  heuristic,
		steps:  []evidenceStep{ran("spec"), ran("plan"), reported("code", overseer.PhaseReport{MissingOutputs: []string{"patch"}})},
		breach: "obligation[0]",
		want:   []string{"code returned no output for `patch`"},
	}, {
		name:  "missing output, twice, unnamed",
		judge: heuristic,
		steps: []evidenceStep{ran("spec"), reported("plan", overseer.PhaseReport{OutputMissing: true}),
			reported("code", overseer.PhaseReport{OutputMissing: true})},
		breach: "obligation[0]",
		want: []string{"code reported that it did not produce the output its workflow contract requires " +
			"(2 phase runs of the job so far lacked a required output)"},
	}, {
		name:  "a phase failing in a row with the same error",
		judge: learned,
		steps: []evidenceStep{ran("spec"), ran("plan"), failed("code", "cannot push: missing credentials"),
			failed("code", "cannot push: missing credentials"), failed("code", "cannot push: missing credentials")},
		breach: "obligation[0]",
		want:   []string{"code failed 3 times in a row, each time with the same error: cannot push: missing credentials"},
	}, {
		name:   "different phases failing in a row",
		judge:  learned,
		steps:  []evidenceStep{ran("spec"), failed("code", "build broke"), failed("test", "pytest: 2 failed"), failed("review", "no reviewer")},
		breach: "obligation[0]",
		want:   []string{"the last 3 phase runs failed (code, test, review); the last error: no reviewer"},
	}, {
		name:  "a tool failing on every call of an agent loop",
		judge: learned,
		steps: []evidenceStep{ran("model"), failed("run_tests", "exit status 2"), ran("model"), failed("run_tests", "exit status 2"),
			ran("model"), failed("run_tests", "exit status 2")},
		breach: "obligation[0]",
		// What the calls did, in the words of a loop: no phase-of-work
		// facts (phase runs, re-runs) of a single-tool loop.
		want: []string{"run_tests failed each of its last 3 calls, the same error each time: exit status 2"},
	}, {
		name:  "a failure streak longer than the window",
		judge: learned,
		steps: []evidenceStep{failed("spec", "no spec"), failed("code", "no spec"), failed("code", "no spec"), failed("code", "no spec"),
			failed("code", "no spec"), failed("code", "no spec"), failed("code", "no spec"), failed("code", "no spec"), failed("code", "no spec")},
		breach: "obligation[0]",
		want:   []string{"the last 9 phase runs failed (the latest 8: code, code, code, code, code, code, code, code), those 8 with the same error: no spec"},
	}, {
		name:  "lane ping-pong",
		judge: heuristic,
		steps: []evidenceStep{inLane("feature", ran("plan")), inLane("refactor", ran("code")), inLane("feature", ran("test")),
			inLane("refactor", ran("review")), inLane("feature", ran("evaluate"))},
		breach: "obligation[1]",
		want:   []string{"the job went back to an earlier lane 3 times in the job's 5 phase runs: feature → refactor → feature → refactor → feature"},
	}, {
		name:  "re-runs since the last plan",
		judge: heuristic,
		steps: []evidenceStep{ran("plan"), reported("code", overseer.PhaseReport{}), ran("test"), reported("code", overseer.PhaseReport{Rework: 1}),
			ran("test"), reported("code", overseer.PhaseReport{Rework: 1}), ran("test"), reported("code", overseer.PhaseReport{Rework: 2})},
		breach: "obligation[2]",
		want: []string{"code ran 4 times since the last plan",
			"3 of the job's 8 phase runs redid earlier work (4 units of rework)"},
	}, {
		name:  "re-runs with the same failing tool",
		judge: heuristic,
		steps: []evidenceStep{ran("spec"), ran("plan"),
			ran("code"), reported("test", overseer.PhaseReport{FailedToolCategories: []string{"pytest"}}),
			ran("code"), reported("test", overseer.PhaseReport{FailedToolCategories: []string{"pytest"}}),
			ran("code"), reported("test", overseer.PhaseReport{FailedToolCategories: []string{"pytest"}}),
			ran("code"), reported("test", overseer.PhaseReport{FailedToolCategories: []string{"pytest"}})},
		breach: "obligation[2]",
		want: []string{"test ran 4 times in the last 8 phase runs, each time with failed tool calls in the category pytest",
			"test succeeded although 1 of its tool calls failed (category pytest)"},
	}, {
		name:  "a work item reopened",
		judge: learned,
		steps: []evidenceStep{withItem("W-2", "in_progress", ran("code")), withItem("W-2", "done", ran("test")),
			withItem("W-2", "in_progress", ran("review")), withItem("W-2", "done", ran("evaluate")),
			withItem("W-2", "in_progress", reported("fix", overseer.PhaseReport{FailedToolCategories: []string{"build", "build"}}))},
		breach: "obligation[2]",
		want:   []string{"work item W-2 was reopened twice", "fix succeeded although 2 of its tool calls failed (category build)"},
	}, {
		name:   "failures worked around",
		judge:  heuristic,
		steps:  []evidenceStep{ran("plan"), reported("code", overseer.PhaseReport{FailedToolCategories: []string{"pytest", "lint", "pytest"}})},
		breach: "obligation[3]",
		want:   []string{"code succeeded although 3 of its tool calls failed (categories pytest, lint)"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			traj := trajectoryOf(tc.steps...)
			a := judged(t, tc.judge, traj)
			require.Equal(t, tc.breach, a.Breach, "the judge's rule fires on this trajectory")
			// The breach, not P, is what flags it here.
			a.OnObjective, a.OnObjectiveUnknown = 0.9, false
			p := overseer.DefaultPolicy()
			require.True(t, p.Evaluate(a).Flagged)
			assert.Equal(t, tc.want, overseer.Evidence(traj, a, p))
		})
	}
}

func TestEvidenceOfAPauseOnP(t *testing.T) {
	traj := trajectoryOf(ran("spec"), ran("plan"), failed("code", "cannot push: missing credentials"))
	p := overseer.DefaultPolicy()
	low := overseer.Answers{Breach: overseer.BreachNone, BreachConfidence: 0.9, OnObjective: 0.2, Basis: "telemetry sub-model: …"}
	assert.Equal(t, []string{"P(on objective) 0.20, at or below the pause threshold 0.250", "code failed; the last error: cannot push: missing credentials"},
		overseer.Evidence(traj, low, p), "without a reference: against the pause threshold")

	standing := overseer.Standing{Below: 0.06, Runs: 200}.Sentence("CoroJob")
	low.Basis = "telemetry sub-model: failure_streak, repeat_rate; stage 1: recalibrated (intercept) on 200 CoroJob jobs; " + standing
	assert.Equal(t, []string{"P(on objective) 0.20, lower than 94% of the last 200 CoroJob jobs at this point", "code failed; the last error: cannot push: missing credentials"},
		overseer.Evidence(traj, low, p), "with the recalibrated model's reference: where the job stands among the type's jobs")

	// P wins over a breach, as in Policy.Evaluate.
	low.Breach, low.BreachText, low.Severity = "obligation[1]", overseer.DefaultObligations()[1], 3
	assert.Equal(t, "P(on objective) 0.20, lower than 94% of the last 200 CoroJob jobs at this point", overseer.Evidence(traj, low, p)[0])

	low.OnObjective, low.Breach = 0.8, overseer.BreachNone
	assert.Nil(t, overseer.Evidence(traj, low, p), "nothing flagged, no evidence")
}

func TestEvidenceOfABreachNoRuleBacks(t *testing.T) {
	traj := trajectoryOf(ran("plan"), ran("code"))
	a := overseer.Answers{Breach: "obligation[1]", BreachText: overseer.DefaultObligations()[1], BreachConfidence: 0.7, Severity: 2, OnObjective: 0.8}
	assert.Equal(t, []string{`the judge found "The work still serves the job's objective" unmet after code (confidence 0.70)`},
		overseer.Evidence(traj, a, overseer.DefaultPolicy()))
}

// A breach of an obligation of the workflow type's own is said in its
// words first, not as the default rule for its index, which may be about
// something else; the trajectory's signals follow.
func TestEvidenceOfABreachOfAnObligationOfTheTypesOwn(t *testing.T) {
	traj := trajectoryOf(inLane("feature", ran("plan")), inLane("docs", ran("code")), inLane("feature", ran("test")))
	a := overseer.Answers{Breach: "obligation[1]", BreachText: "Every change has a test.", BreachConfidence: 0.8, Severity: 2, OnObjective: 0.8}
	assert.Equal(t, []string{`the judge found "Every change has a test" unmet after test (confidence 0.80)`,
		"the job went back to an earlier lane once in the job's 3 phase runs: feature → docs → feature"},
		overseer.Evidence(traj, a, overseer.DefaultPolicy()))
}

func TestEvidenceOfAJudgeFailurePause(t *testing.T) {
	traj := trajectoryOf(ran("plan"), reported("code", overseer.PhaseReport{Rework: 2}))
	assert.Equal(t, []string{
		"the overseer could not assess 3 boundaries in a row, so no verdict says how the job goes; the judge's last error: judge timed out",
		"1 of the job's 2 phase runs redid earlier work (2 units of rework)",
	}, overseer.JudgeFailureEvidence(traj, 3, errors.New("judge timed out").Error()))
}

// The evidence is the same however often it is computed: it runs in
// workflow code, where a replay must compute it again identically.
func TestEvidenceIsDeterministic(t *testing.T) {
	traj := trajectoryOf(withItem("W-1", "done", ran("code")), withItem("W-2", "done", ran("test")),
		withItem("W-1", "in_progress", ran("code")), withItem("W-2", "in_progress", ran("test")),
		withItem("W-3", "done", withItem("W-3", "in_progress", reported("code", overseer.PhaseReport{FailedToolCategories: []string{"go"}}))))
	a := overseer.Answers{Breach: "obligation[2]", BreachConfidence: 0.9, Severity: 2, OnObjective: 0.8}
	first := overseer.Evidence(traj, a, overseer.DefaultPolicy())
	assert.Equal(t, []string{"code ran 3 times in the job's 5 phase runs", "2 work items were reopened: W-2 (once), W-1 (once)",
		"code succeeded although 1 of its tool calls failed (category go)"}, first)
	for range 50 {
		require.Equal(t, first, overseer.Evidence(traj, a, overseer.DefaultPolicy()))
	}
}

// A gate opened by a breach carries the evidence of the trajectory that
// tripped it, in the status (the gate and the flagged assessment), the
// resume update's result, the notifications and the workflow's current
// details, where it comes before the rule.
func TestPausedGateCarriesItsEvidence(t *testing.T) {
	n := &inbox{}
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage, Judge: overseer.HeuristicJudge{}, Notifier: n})
	var during overseer.Status
	var details string
	var res *updateResult
	h.env.RegisterDelayedCallback(func() {
		during, details = h.status(t), currentDetails(t, h)
		res = h.update(overseer.ResumeRequest{By: "dave", Note: "find the root cause"})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, []string{"spec", "code", "code", "code", "code"})
	require.NoError(t, h.env.GetWorkflowError())

	want := []string{"code ran 4 times since the last spec"}
	require.True(t, during.Paused)
	require.Len(t, during.Gates, 1)
	assert.Equal(t, want, during.Gates[0].Evidence)
	assert.Contains(t, during.PauseReason, `obligation[2] "The phase made progress instead of repeating earlier work." appears unmet`,
		"the reason keeps the rule")
	flagged := during.Assessments[len(during.Assessments)-1]
	require.NotNil(t, flagged.Verdict)
	require.True(t, flagged.Verdict.Flagged)
	assert.Equal(t, want, flagged.Evidence, "the flagged assessment carries it too")
	for _, a := range during.Assessments[:len(during.Assessments)-1] {
		assert.Nil(t, a.Evidence, "an assessment that was not flagged has none")
	}
	require.NoError(t, res.failed)
	assert.Equal(t, want, res.gate.Evidence, "the update's closed gate")

	evidenceAt, reasonAt := strings.Index(details, "- "+want[0]+"\n"), strings.Index(details, "Reason: ")
	require.GreaterOrEqual(t, evidenceAt, 0, details)
	assert.Less(t, evidenceAt, reasonAt, "the evidence comes before the reason in the current details")
	assert.Equal(t, want, h.status(t).Gates[0].Evidence, "kept once the gate closed")
	require.Equal(t, []overseer.GateEventKind{overseer.GateOpened, overseer.GateResumed}, n.kinds())
	for _, ev := range n.events {
		assert.Equal(t, want, ev.Evidence, "the %s notification", ev.Kind)
	}
	assert.Nil(t, n.events[0].Needed, "an open gate is not judged yet")
	require.NotNil(t, n.events[1].Needed, "the resumed notification says whether the pause was needed")
	assert.True(t, *n.events[1].Needed)
	assert.Equal(t, "pause needed: a continue with a note counts as needed", n.events[1].Judgement)
}

// A pause for manual review after judge failures says so first.
func TestJudgeFailurePauseCarriesItsEvidence(t *testing.T) {
	opts := overseer.Options{Mode: overseer.ModeManage, Policy: overseer.DefaultPolicy()}
	opts.Policy.MaxConsecutiveFailures = 2
	boom := jev.Step{Err: errors.New("judge unavailable")}
	h := newHarness(t, opts, boom, boom, boom, boom, boom, boom, onTrack())
	var during overseer.Status
	h.env.RegisterDelayedCallback(func() {
		during = h.status(t)
		h.update(overseer.ResumeRequest{By: "dave"})
	}, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())

	require.Len(t, during.Gates, 1)
	require.NotEmpty(t, during.Gates[0].Evidence)
	assert.Regexp(t, `^the overseer could not assess 2 boundaries in a row, so no verdict says how the job goes; the judge's last error: .*judge unavailable`,
		during.Gates[0].Evidence[0])
}
