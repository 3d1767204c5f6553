package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/learn"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/registry"
	"github.com/corohq/temporal-overseer/worker"
)

// simPhases are the phases of the simulated agent of the learn test.
var simPhases = []string{"plan", "code", "test", "review"}

// simInput starts a job of the simulated agent.
type simInput struct {
	// Troubled makes the agent struggle from its first phase: several times
	// the output tokens per turn, three failed tool calls in its code phase
	// and failing tests, which fail the job.
	Troubled bool `json:"troubled,omitempty"`
	// FlakyTools makes the code phase's tool calls fail three times (a
	// flaky shell) and the agent go on unharmed.
	FlakyTools bool `json:"flaky_tools,omitempty"`
	// Seed seeds the phases' telemetry; without it, the job's id does.
	// The learn test's ids carry a time suffix (the registry outlives a run
	// on the cluster): seeded by them, every run of the test drew other
	// telemetry, and a refit judged on 7 held-out jobs sometimes ranked
	// below the current model.
	Seed string `json:"seed,omitempty"`
}

// simPhaseInput is one phase's input.
type simPhaseInput struct {
	Phase string `json:"phase"`
	simInput
}

type simPhaseOutput struct {
	overseer.ReportCarrier
	Passed bool `json:"passed"`
}

// simAgent is a small agent workflow: its phases run once each, in order,
// and a phase that does not pass fails the job.
func simAgent(ctx workflow.Context, in simInput) (string, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	for _, phase := range simPhases {
		var out simPhaseOutput
		if err := workflow.ExecuteActivity(ctx, simActivity(phase), simPhaseInput{Phase: phase, simInput: in}).Get(ctx, &out); err != nil {
			return "", err
		}
		if !out.Passed {
			return "", temporal.NewNonRetryableApplicationError(phase+" did not pass", "SimPhaseFailed", nil)
		}
	}
	return "delivered", nil
}

func simActivity(phase string) string { return "sim." + phase }

// simPhase plays one phase and reports its telemetry: turns, tokens and
// cost drawn from a generator seeded by the job (its Seed, else its id)
// and the phase, and its failed tool calls.
func simPhase(ctx context.Context, in simPhaseInput) (simPhaseOutput, error) {
	seed := in.Seed
	if seed == "" {
		seed = activity.GetInfo(ctx).WorkflowExecution.ID
	}
	h := fnv.New64a()
	h.Write([]byte(seed + "/" + in.Phase))
	rng := rand.New(rand.NewPCG(h.Sum64(), 18))
	r := &overseer.PhaseReport{Turns: 3 + rng.IntN(3)}
	perTurn := int64(200 + rng.IntN(200))
	if in.Troubled {
		perTurn *= 4
	}
	history := int64(4000 + rng.IntN(2000))
	for range r.Turns {
		r.InputTokens += history
		out := perTurn + int64(rng.IntN(50))
		r.OutputTokens += out
		history += out + int64(500+rng.IntN(500))
	}
	r.CostUSD = float64(r.InputTokens)*3/1e6 + float64(r.OutputTokens)*15/1e6
	passed := true
	switch {
	case in.Phase == "code" && (in.Troubled || in.FlakyTools):
		// Three failed tool calls: the rule-based judge pauses a managed job.
		r.FailedToolCategories = []string{"shell", "shell", "shell"}
	case in.Phase == "test" && in.Troubled:
		r.FailedToolCategories, passed = []string{"test"}, false
	}
	return simPhaseOutput{ReportCarrier: overseer.ReportCarrier{OverseerReport: r}, Passed: passed}, nil
}

// learnJob is one job of known outcome in the learn test: how it starts
// and what its reviewer does at its gates.
type learnJob struct {
	family string
	simInput
	// observe runs it without gates (memo overseer.mode): it fails or
	// succeeds on its own.
	observe bool
	// review is what its reviewer does at each gate: continue or abort; ""
	// means it must not pause.
	review overseer.Action

	run               client.WorkflowRun
	closed            bool
	continues, aborts int
}

// The learn loop from real jobs: jobs of one workflow type run on the
// server with known outcomes — delivered, failed on their own, paused at a
// gate and continued by a reviewer (then delivered: a recorded false
// pause), paused and aborted (a confirmed failure) — and one round of the
// learn workflow, started as `overseer learn run` starts it, exports them
// with their labels, refits grouped by the task-family memo and promotes
// the candidate into the model registry with its figures. A worker started
// after the promotion gives a new job the promoted version; a job held at
// a gate across the promotion keeps the version and policy it pinned, and
// its history replays clean. (The refusal of a worse candidate is
// TestE2ELearnPromotesAGoodCandidateAndRefusesAWorseOne; a promotion
// reaching a worker that was not restarted, once its cache expires,
// TestE2EModelRegistryPromotesAndRunsKeepTheirPinnedModel.)
func TestE2ELearnPromotesAModelFromRealJobsAndLaterWorkersUseIt(t *testing.T) {
	began := time.Now()
	srv := e2eServer(t)
	c := srv.Client()
	ctx := context.Background()
	suffix := fmt.Sprint(time.Now().UnixNano()) // the registry outlives a run on the cluster
	// A workflow type of the test's own: the model registry's entry for it
	// is the test's alone.
	typ := "E2ELearnSimAgent" + suffix
	register := func(r sdkworker.WorkflowRegistry) {
		r.RegisterWorkflowWithOptions(simAgent, workflow.RegisterOptions{Name: typ})
	}
	registerAll := func(r sdkworker.Registry) {
		register(r)
		for _, p := range simPhases {
			r.RegisterActivityWithOptions(simPhase, activity.RegisterOptions{Name: simActivity(p)})
		}
	}
	manage := map[string]overseer.Mode{typ: overseer.ModeManage}
	// A 20 % promise: the succeeded runs to train on that certify it.
	const budget = 0.2
	needed := eval.RunsNeeded(budget, eval.PromiseConfidence)
	require.Equal(t, 14, needed)

	// A job that pins its model before the promotion and waits at a gate
	// across it: its worker hosts the registry (as `overseer worker
	// --model-registry` does) and pauses at every boundary.
	pauseAll := overseer.DefaultLearnedPolicy()
	pauseAll.Name, pauseAll.PauseAtOrBelow, pauseAll.Promise = "e2e: pause at every boundary", 1, overseer.Promise{}
	pinnedTQ := startWorkersWithType(t, srv, worker.Config{TaskQueue: "e2e-learn-pinned-" + suffix, ModelRegistry: true,
		JudgeConfig: worker.JudgeConfig{Kind: worker.JudgeLearned}, Policy: pauseAll, Modes: manage}, registerAll)
	across := startTyped(t, c, pinnedTQ, typ, "e2e-learn-across-"+suffix, nil, simInput{})
	eventually(t, "the job across the promotion to pause at its first gate", 30*time.Second, func() bool { return status(t, c, across.GetID()).Paused })
	st := status(t, c, across.GetID())
	require.NotEmpty(t, st.Assessments)
	oldVersion, _, _ := strings.Cut(st.Assessments[0].Model, "/")
	require.NotEmpty(t, oldVersion)
	require.Empty(t, st.Assessments[0].Error)

	// The jobs of known outcome, managed, on workers with the rule-based
	// judge (it pauses a job at its code phase's failed tool calls, flaky
	// or not). Four task families, named by the memo; the newest wave is
	// the 20 % a round holds out.
	jobsTQ := startWorkersWithType(t, srv, worker.Config{TaskQueue: "e2e-learn-jobs-" + suffix, Modes: manage}, registerAll)
	families := []string{"billing", "search", "auth", "reports"}
	var older, newest []*learnJob
	for _, f := range families {
		for range 4 {
			older = append(older, &learnJob{family: f})
		}
		older = append(older,
			&learnJob{family: f, simInput: simInput{FlakyTools: true}, review: overseer.ActionContinue},
			&learnJob{family: f, simInput: simInput{Troubled: true}, review: overseer.ActionAbort},
			&learnJob{family: f, simInput: simInput{Troubled: true}, observe: true})
	}
	for i := range 4 {
		newest = append(newest, &learnJob{family: families[i]})
	}
	newest = append(newest,
		&learnJob{family: families[0], simInput: simInput{FlakyTools: true}, review: overseer.ActionContinue},
		&learnJob{family: families[1], simInput: simInput{Troubled: true}, review: overseer.ActionAbort},
		&learnJob{family: families[2], simInput: simInput{Troubled: true}, observe: true})
	all := append(append([]*learnJob{}, older...), newest...)
	n := 0
	runWave := func(wave []*learnJob) {
		for _, j := range wave {
			n++
			memo := map[string]any{ops.TaskFamilyMemoKey: j.family}
			if j.observe {
				memo[overseer.ModeMemoKey] = string(overseer.ModeObserve)
			}
			in := j.simInput
			in.Seed = fmt.Sprintf("%s-%d", j.family, n)
			j.run = startTyped(t, c, jobsTQ, typ, fmt.Sprintf("e2e-learn-%s-%s-%d", suffix, j.family, n), memo, in)
		}
		eventually(t, fmt.Sprintf("the %d jobs of the wave to close", len(wave)), 90*time.Second, func() bool {
			open := 0
			for _, j := range wave {
				if j.closed {
					continue
				}
				d, err := c.DescribeWorkflow(ctx, j.run.GetID(), "")
				require.NoError(t, err)
				if d.RawResponse.GetWorkflowExecutionInfo().GetCloseTime() != nil {
					j.closed = true
					continue
				}
				open++
				s := status(t, c, j.run.GetID())
				if !s.Paused {
					continue
				}
				require.NotEmpty(t, j.review, "%s (%+v) paused: %s", j.run.GetID(), j.simInput, s.PauseReason)
				req := overseer.ResumeRequest{By: "ana", Action: j.review, Note: "the shell is flaky, not the agent"}
				if j.review == overseer.ActionAbort {
					req.By, req.Note = "bo", "going nowhere"
					j.aborts++
				} else {
					// The note says it: the pause was a false alarm.
					req.Needed = new(false)
					j.continues++
				}
				_, err = c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: j.run.GetID(), UpdateName: overseer.ResumeName,
					Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted})
				require.NoError(t, err)
			}
			return open == 0
		})
	}
	// The newest wave starts once the older one closed: the round holds
	// out exactly it, whichever of start or close time visibility orders by.
	runWave(older)
	runWave(newest)
	t.Logf("%d jobs closed after %s", len(all), time.Since(began).Round(time.Millisecond))

	var want eval.GateLabels
	succeeded, failed := 0, 0
	for _, j := range all {
		err := j.run.Get(ctx, nil)
		switch {
		case j.review == overseer.ActionAbort:
			require.Error(t, err, j.run.GetID())
			assert.Equal(t, 1, j.aborts, "%s: aborted at its first gate", j.run.GetID())
			want.Aborts++
			failed++
		case j.observe:
			require.Error(t, err, "%s: a troubled agent without a reviewer fails its tests", j.run.GetID())
			failed++
		case j.review == overseer.ActionContinue:
			require.NoError(t, err, j.run.GetID())
			assert.Positive(t, j.continues, "%s: continued at a gate", j.run.GetID())
			want.Continues += j.continues
			want.FalsePauses += j.continues
			want.RunsWithFalsePause++
			succeeded++
		default:
			require.NoError(t, err, j.run.GetID())
			succeeded++
		}
	}
	require.Equal(t, 25, succeeded)
	require.Equal(t, 10, failed)
	require.Equal(t, eval.GateLabels{Aborts: 5, Continues: 5, FalsePauses: 5, RunsWithFalsePause: 5}, want, "one gate per paused job")

	where := fmt.Sprintf("TaskQueue = '%s'", jobsTQ)
	res := learnRound(t, srv, c, typ, where, len(all), "e2e-learn-round-"+suffix, "--max-false-pause", fmt.Sprint(budget), "--promise", "confidence")
	promoted := time.Now()
	assert.Equal(t, learn.Readiness{Runs: len(all), Succeeded: succeeded, Failed: failed, Families: len(families),
		TrainSucceeded: succeeded - 5, RunsNeeded: needed, TrainFamilies: len(families), Ready: true, Sentence: res.Readiness.Sentence,
		Next: "this round refits on the type's jobs (stage 3)"}, res.Readiness)
	require.NotNil(t, res.Decision, res.Sentence)
	d := res.Decision
	require.True(t, d.Promote, res.Sentence)
	assert.Equal(t, 1, res.Promoted)
	assert.Equal(t, d.Version, res.Current)
	assert.Equal(t, "round 1 for "+typ+": "+d.Reason, res.Sentence)
	assert.True(t, strings.HasPrefix(d.Reason, "promote "+d.Version+": "), d.Reason)
	assert.Equal(t, want, d.Figures.Labels, "the reviewers' decisions used as labels")
	assert.Equal(t, len(older), d.Figures.Trained)
	assert.Equal(t, len(newest), d.Figures.HeldOut)
	require.NotNil(t, d.Figures.Calibration)
	assert.Equal(t, budget, d.Figures.Calibration.Budget)
	assert.Equal(t, succeeded-5, d.Figures.Calibration.Rates.Succeeded, "calibrated on every delivered job it trained on")
	assert.LessOrEqual(t, d.Figures.Calibration.UpperBound, budget)
	// The reviewers' continues taught it that a flaky shell is no failure:
	// it pauses troubled jobs and no delivered one.
	assert.Positive(t, d.Figures.Calibration.Rates.Catches)
	assert.Zero(t, d.Figures.Calibration.Rates.FalsePauses)
	require.NotNil(t, d.Figures.Promise)
	assert.Equal(t, 5, d.Figures.Promise.Succeeded, "the held-out newest wave's delivered jobs")
	assert.Contains(t, []string{eval.PromiseHolds, eval.PromiseConsistent}, d.Figures.Promise.Verdict)
	assert.False(t, d.Figures.RanksWorseOnline(), "promoted: it ranks no worse after 10 steps")

	// The registry's record of the promotion: by overseer learn, with the
	// round's figures and the candidate's certified promise.
	rs, err := registry.Get(ctx, c, registry.Query{Types: []string{typ}, Content: true})
	require.NoError(t, err)
	tm := rs.Type(typ)
	require.NotNil(t, tm)
	assert.Equal(t, d.Version, tm.Current)
	assert.NotEqual(t, oldVersion, d.Version)
	v := tm.CurrentVersion()
	require.NotNil(t, v)
	assert.Equal(t, learn.PromotedBy, v.By)
	assert.Equal(t, d.Reason, v.Note)
	var figures learn.Figures
	require.NoError(t, json.Unmarshal(v.Figures, &figures))
	assert.Equal(t, want, figures.Labels)
	assert.Equal(t, len(newest), figures.HeldOut)
	assert.Equal(t, d.Figures.CandidateAUROC, figures.CandidateAUROC)
	policy, err := overseer.ParsePolicy(v.Policy)
	require.NoError(t, err)
	assert.Equal(t, budget, policy.Promise.MaxFalsePause)
	assert.Equal(t, eval.PromiseConfidence, policy.Promise.Confidence)
	assert.GreaterOrEqual(t, policy.Promise.SucceededRuns, needed)
	assert.LessOrEqual(t, policy.Promise.UpperBound, budget)
	// overseer learn status says the round as a team reads it.
	out := learnStatusOnceRoundShows(t, srv, typ)
	t.Logf("overseer learn status --type %s:\n%s", typ, out)
	assert.Contains(t, out, res.Sentence+"\n")
	assert.Contains(t, out, "rounds 1, promoted 1, refused 0; 35 jobs closed since the round before\ncurrent model: "+d.Version+"\n")
	assert.Contains(t, out, "reviewers' decisions used as labels: 5 aborts at a gate (confirmed failures; 0 runs relabelled failed), 5 continues (0 judged needed), 5 of them judged not needed on jobs that then succeeded (recorded false pauses, on 5 runs)")
	code, out, errOut := overseerCLI(srv, "model", "show", d.Version)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "pauses at most 20.0% of succeeded runs")
	assert.Contains(t, out, learn.PromotedBy)

	// A worker started after the promotion, nothing else restarted: its
	// new job pins the promoted version.
	laterTQ := startWorkersWithType(t, srv, worker.Config{TaskQueue: "e2e-learn-later-" + suffix, ModelRegistry: true,
		JudgeConfig: worker.JudgeConfig{Kind: worker.JudgeLearned}, Modes: map[string]overseer.Mode{typ: overseer.ModeObserve}}, registerAll)
	next := startTyped(t, c, laterTQ, typ, "e2e-learn-next-"+suffix, nil, simInput{})
	require.NoError(t, next.Get(ctx, nil))
	na := status(t, c, next.GetID()).Assessments
	require.NotEmpty(t, na)
	for _, a := range na {
		require.Empty(t, a.Error)
		assert.True(t, strings.HasPrefix(a.Model, d.Version+"/"), "assessment %d of the job started after the promotion names %s, not %s", a.Seq, a.Model, d.Version)
	}

	// The job held at its gate across the promotion keeps its pinned
	// version and policy (it pauses at every boundary still), and its
	// history replays on a worker with no registry.
	resumeUntilClosed(t, c, across, "cy")
	require.NoError(t, across.Get(ctx, nil))
	st = status(t, c, across.GetID())
	var after int
	for _, a := range st.Assessments {
		require.Empty(t, a.Error)
		assert.True(t, strings.HasPrefix(a.Model, oldVersion+"/"), "assessment %d of the job across the promotion names %s, not %s", a.Seq, a.Model, oldVersion)
		if a.At.After(promoted) {
			after++
		}
	}
	assert.Positive(t, after, "the job was assessed after the promotion")
	assert.Equal(t, st.Counters.Assessments, st.Counters.Pauses, "the pinned policy pauses at every boundary")
	replayWithoutRegistry(t, c, across.GetID(), register)
	t.Logf("done after %s", time.Since(began).Round(time.Millisecond))
}

// startWorkersWithType is startWorkersWith without the stop function.
func startWorkersWithType(t *testing.T, srv server, cfg worker.Config, register func(sdkworker.Registry)) string {
	t.Helper()
	tq, _ := startWorkersWith(t, srv, cfg, register)
	return tq
}

// startTyped starts a job of workflow type typ with id and memo.
func startTyped(t *testing.T, c client.Client, taskQueue, typ, id string, memo map[string]any, in simInput) client.WorkflowRun {
	t.Helper()
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue, Memo: memo}, typ, in)
	require.NoError(t, err)
	return run
}

// learnRound waits until count closed jobs of typ matching where are
// visible, then runs one round of the learn workflow on a worker of its
// own task queue tq, as `overseer worker` hosts it, started by `overseer
// learn run` with args, and returns what the round printed.
func learnRound(t *testing.T, srv server, c client.Client, typ, where string, count int, tq string, args ...string) learn.Result {
	t.Helper()
	eventually(t, "every job to be visible as closed", 30*time.Second, func() bool {
		r, err := c.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{Query: learn.Query(typ, where, time.Time{})})
		require.NoError(t, err)
		return r.GetCount() == int64(count)
	})
	lw := sdkworker.New(c, tq, sdkworker.Options{})
	learn.RegisterActivities(lw, &learn.Activities{Client: c, Store: openStore(t)})
	require.NoError(t, lw.Start())
	t.Cleanup(lw.Stop)
	start := time.Now()
	code, out, errOut := overseerCLI(srv, append([]string{"learn", "run", "--type", typ, "--where", where, "--task-queue", tq, "--json"}, args...)...)
	require.Equal(t, 0, code, errOut)
	t.Logf("the learn round took %s", time.Since(start).Round(time.Millisecond))
	var res learn.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	return res
}
