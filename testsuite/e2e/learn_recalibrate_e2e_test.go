package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/learn"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/registry"
	"github.com/corohq/temporal-overseer/worker"
)

// digestPhaseRuns reads the phase runs an assessment's digest was made at.
var digestPhaseRuns = regexp.MustCompile(`; (\d+) phase runs, `)

// Stage 1 of the learn loop from real jobs: a fresh workflow type's first
// 34 closed jobs, of both outcomes but too few succeeded ones to refit on,
// are enough for a learn round, started as `overseer learn run` starts it,
// to recalibrate the model the type uses (the shipped one) on them and
// promote the result, with its pause policy certified on them (stage 2),
// since its probabilities fit the jobs better (the type succeeds far less
// often than the shipped model's agent). The registry holds the
// recalibrated model with its record of the jobs and its reference; a job
// of a worker started after the promotion pins it, and its verdicts name
// stage 2, as the round and learn status do (the recalibrated model with
// the certified policy the job pinned), the jobs they were recalibrated on
// and where they stand among them.
func TestE2ELearnRecalibratesATypeAfterItsFirstJobsAndTheNextVerdictNamesItsStage(t *testing.T) {
	began := time.Now()
	srv := e2eServer(t)
	c := srv.Client()
	ctx := context.Background()
	suffix := fmt.Sprint(time.Now().UnixNano()) // the registry outlives a run on the cluster
	typ := "E2ERecalSimAgent" + suffix
	register := func(r sdkworker.Registry) {
		r.RegisterWorkflowWithOptions(simAgent, workflow.RegisterOptions{Name: typ})
		for _, p := range simPhases {
			r.RegisterActivityWithOptions(simPhase, activity.RegisterOptions{Name: simActivity(p)})
		}
	}
	// The jobs run observed (no gates: each fails or succeeds on its own)
	// on workers with the learned judge and the registry, as a deployment
	// starting with the learn loop has them: they use the model the type
	// has before any round.
	observe := map[string]overseer.Mode{typ: overseer.ModeObserve}
	jobsTQ := startWorkersWithType(t, srv, worker.Config{TaskQueue: "e2e-recal-jobs-" + suffix, ModelRegistry: true,
		JudgeConfig: worker.JudgeConfig{Kind: worker.JudgeLearned}, Modes: observe}, register)

	// 20 delivered and 14 troubled jobs (a troubled agent fails its
	// tests), in four task families, with fixed seeds: the same telemetry
	// on every run of the test. Under the default promise (5 % false
	// pauses in expectation) a refit takes 19 succeeded jobs among the 80 %
	// older ones it trains on: with 24 of 34 delivered, the round refitted
	// (stage 3) instead. A success rate of 59 % is also well below that of
	// the agent the shipped model learned from, which a recalibration
	// corrects.
	families := []string{"billing", "search", "auth", "reports"}
	type job struct {
		troubled bool
		run      client.WorkflowRun
	}
	var jobs []*job
	for i := range 34 {
		f := families[i%len(families)]
		j := &job{troubled: i%5 == 1 || i%5 == 3} // 14 of 34
		in := simInput{Troubled: j.troubled, Seed: fmt.Sprintf("recal-%s-%d", f, i)}
		if i == 0 {
			// One delivered job's telemetry is the run's own: a
			// recalibration's version is its base's and a hash of its maps
			// (not of the type), and the registry, which outlives a run on
			// the cluster (or -count=2 on one dev server), refuses a version
			// that names another type's model. The other 33 keep the
			// figures all but the same on every run.
			in.Seed += "-" + suffix
		}
		j.run = startTyped(t, c, jobsTQ, typ, fmt.Sprintf("e2e-recal-%s-%s-%d", suffix, f, i), map[string]any{ops.TaskFamilyMemoKey: f}, in)
		jobs = append(jobs, j)
	}
	succeeded, failed := 0, 0
	for _, j := range jobs {
		rctx, cancel := context.WithTimeout(ctx, 90*time.Second)
		err := j.run.Get(rctx, nil)
		cancel()
		if j.troubled {
			require.Error(t, err, "%s: a troubled agent fails its tests", j.run.GetID())
			failed++
		} else {
			require.NoError(t, err, j.run.GetID())
			succeeded++
		}
	}
	require.Equal(t, [2]int{20, 14}, [2]int{succeeded, failed})
	require.GreaterOrEqual(t, len(jobs), eval.DefaultMinRecalibrationRuns, "enough jobs for stage 1")
	t.Logf("%d jobs closed after %s", len(jobs), time.Since(began).Round(time.Millisecond))

	// Before the round, a job's verdicts are stage 0's, of the model the
	// type has now.
	first := status(t, c, jobs[0].run.GetID()).Assessments
	require.NotEmpty(t, first)
	before, _, _ := strings.Cut(first[0].Model, "/")
	require.NotEmpty(t, before)
	for _, a := range first {
		require.Empty(t, a.Error)
		require.NotNil(t, a.Answers)
		assert.Contains(t, a.Answers.Basis, "; stage 0: not calibrated for ", "assessment %d before the round", a.Seq)
		assert.NotContains(t, a.Answers.Basis, "stage 1")
	}

	where := fmt.Sprintf("TaskQueue = '%s'", jobsTQ)
	// One round, with the default promise.
	res := learnRound(t, srv, c, typ, where, len(jobs), "e2e-recal-round-"+suffix)
	t.Logf("%s", res.Sentence)

	// Too few succeeded jobs to refit on, enough jobs to recalibrate on.
	rd := res.Readiness
	assert.Equal(t, [3]int{34, 20, 14}, [3]int{rd.Runs, rd.Succeeded, rd.Failed})
	assert.Equal(t, len(families), rd.Families)
	assert.False(t, rd.Ready, rd.Sentence)
	assert.True(t, rd.Recalibrate, rd.Next)
	assert.Equal(t, overseer.StageUncalibrated, rd.Stage)
	assert.True(t, strings.HasPrefix(rd.Next, "this round recalibrates on the 34 closed "+typ+" jobs (stage 1); a refit (stage 3) needs "), rd.Next)

	require.NotNil(t, res.Decision, res.Sentence)
	d := res.Decision
	require.True(t, d.Promote, res.Sentence)
	assert.Equal(t, 1, res.Rounds)
	assert.Equal(t, 1, res.Promoted)
	assert.Zero(t, res.Refused)
	assert.Equal(t, d.Version, res.Current)
	assert.Equal(t, "round 1 for "+typ+": "+d.Reason, res.Sentence)
	assert.Equal(t, before, d.Figures.Current, "recalibrated from the model the jobs used")
	assert.True(t, strings.HasPrefix(d.Version, before+"-cal-"), d.Version)
	assert.Equal(t, len(jobs), d.Figures.Trained)
	// Its figures: a better Brier score against the current model's.
	assert.Less(t, d.Figures.CandidateBrier, d.Figures.CurrentBrier)
	says := func(v float64) string {
		if math.IsNaN(v) {
			return "not measurable"
		}
		return fmt.Sprintf("%.3f", v)
	}
	fit := fmt.Sprintf("Brier at 50%% on the 34 closed jobs %.3f against the current model %s's %.3f (AUROC after 10 steps, among the jobs still running then, %s against its %s; at 50%% of each run (which knows the run's length) %.3f against %.3f)",
		d.Figures.CandidateBrier, before, d.Figures.CurrentBrier, says(d.Figures.CandidateAUROCSteps), says(d.Figures.CurrentAUROCSteps), d.Figures.CandidateAUROC, d.Figures.CurrentAUROC)
	// The 20 delivered jobs are enough to certify the default promise on
	// the recalibrated model (in expectation, 19 take it), so the round
	// puts the type at stage 2; fewer would leave it at stage 1 with no
	// pause on P.
	assert.Equal(t, overseer.StageCertified, d.Figures.Stage, d.Reason)
	assert.Equal(t, "promote "+d.Version+" (stage 2, recalibrated with a certified pause policy): "+fit, d.Reason)
	require.NotNil(t, d.Figures.Calibration, d.Figures.CalibrationError)
	assert.Equal(t, learn.DefaultBudget, d.Figures.Calibration.Budget)
	assert.Equal(t, succeeded, d.Figures.Calibration.Rates.Succeeded, "certified on every delivered job")

	// The registry's current version for the type is the recalibrated
	// model, with its record of the jobs and its reference.
	rs, err := registry.Get(ctx, c, registry.Query{Types: []string{typ}, Content: true})
	require.NoError(t, err)
	tm := rs.Type(typ)
	require.NotNil(t, tm)
	assert.Equal(t, d.Version, tm.Current)
	v := tm.CurrentVersion()
	require.NotNil(t, v)
	assert.Equal(t, learn.PromotedBy, v.By)
	assert.Equal(t, d.Reason, v.Note)
	var figures learn.Figures
	require.NoError(t, json.Unmarshal(v.Figures, &figures))
	assert.Equal(t, d.Figures.Stage, figures.Stage)
	assert.Equal(t, d.Figures.CandidateBrier, figures.CandidateBrier)
	model, err := overseer.ParseLearnedModel(v.Model)
	require.NoError(t, err)
	assert.Equal(t, d.Version, model.Version)
	assert.Equal(t, overseer.StageRecalibrated, model.Stage())
	rc := model.Recalibration
	require.NotNil(t, rc)
	assert.Equal(t, typ, rc.For)
	assert.Equal(t, before, rc.From)
	assert.Equal(t, [3]int{len(jobs), succeeded, failed}, [3]int{rc.Runs, rc.Succeeded, rc.Failed})
	require.NotEmpty(t, rc.SubModels)
	// The reference: read from the stored model's JSON, wherever the model
	// keeps it (its own field, or its recalibration's as it once did).
	var stored struct {
		Reference     *overseer.Reference `json:"reference"`
		Recalibration struct {
			Reference *overseer.Reference `json:"reference"`
		} `json:"recalibration"`
	}
	require.NoError(t, json.Unmarshal(v.Model, &stored))
	ref := stored.Reference
	if ref == nil {
		ref = stored.Recalibration.Reference
	}
	require.NotNil(t, ref, "34 jobs leave a reference")
	require.NotEmpty(t, ref.Points)
	for _, p := range ref.Points {
		assert.GreaterOrEqual(t, p.Runs, overseer.MinReferenceRuns, "point at %d phase runs", p.FromPhaseRuns)
		assert.LessOrEqual(t, p.Runs, len(jobs), "point at %d phase runs", p.FromPhaseRuns)
	}
	t.Logf("reference: %+v", ref.Points)
	policy, err := overseer.ParsePolicy(v.Policy)
	require.NoError(t, err)
	assert.True(t, policy.Promise.Certified(), "the stage 2 policy carries its promise")
	assert.Equal(t, learn.DefaultBudget, policy.Promise.MaxFalsePause)

	// A worker started after the promotion: its new job pins the
	// recalibrated version, and each verdict names stage 2, the jobs and
	// where its P stands among them at its point.
	laterTQ := startWorkersWithType(t, srv, worker.Config{TaskQueue: "e2e-recal-later-" + suffix, ModelRegistry: true,
		JudgeConfig: worker.JudgeConfig{Kind: worker.JudgeLearned}, Modes: observe}, register)
	next := startTyped(t, c, laterTQ, typ, "e2e-recal-next-"+suffix, map[string]any{ops.TaskFamilyMemoKey: "billing"}, simInput{Seed: "recal-next"})
	nctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	require.NoError(t, next.Get(nctx, nil))
	na := status(t, c, next.GetID()).Assessments
	require.NotEmpty(t, na)
	standings := 0
	for _, a := range na {
		require.Empty(t, a.Error)
		require.NotNil(t, a.Answers)
		basis := a.Answers.Basis
		assert.True(t, strings.HasPrefix(a.Model, d.Version+"/"), "assessment %d of the job started after the promotion names %s, not %s", a.Seq, a.Model, d.Version)
		sub := strings.TrimPrefix(a.Model, d.Version+"/")
		assert.Contains(t, basis, "; stage 2: recalibrated (", "assessment %d names the stage the round promoted", a.Seq)
		assert.Contains(t, basis, fmt.Sprintf(") on %d %s jobs", len(jobs), typ), "assessment %d", a.Seq)
		fitted := ""
		for _, sm := range rc.SubModels {
			if sm.Name == sub {
				fitted = sm.Fitted
			}
		}
		require.NotEmpty(t, fitted, "the recalibration records sub-model %s", sub)
		// What was refitted, as the recalibration records it, and possibly
		// how (e.g. ", features re-standardised").
		assert.Regexp(t, `; stage 2: recalibrated \(`+regexp.QuoteMeta(fitted)+`[^)]*\) on `+fmt.Sprint(len(jobs))+` `+typ+` jobs, with a certified pause policy(;|$)`, basis, "assessment %d", a.Seq)
		m := digestPhaseRuns.FindStringSubmatch(a.Digest)
		require.NotNil(t, m, a.Digest)
		phaseRuns, err := strconv.Atoi(m[1])
		require.NoError(t, err)
		if s, ok := ref.Standing(phaseRuns, a.Answers.OnObjective); ok {
			standings++
			sentence := s.Sentence(typ)
			assert.True(t, strings.HasSuffix(basis, "; "+sentence), "assessment %d at %d phase runs: %q does not end with %q", a.Seq, phaseRuns, basis, sentence)
			assert.Equal(t, sentence, overseer.StandingOf(basis))
			assert.Regexp(t, `^(lower|higher) than \d+% of the last \d+ `+typ+` jobs at this point, (all \d+ of which (succeeded|failed)|\d+ of which succeeded)$`, sentence)
		} else {
			assert.Empty(t, overseer.StandingOf(basis), "assessment %d at %d phase runs: no reference point, no standing", a.Seq, phaseRuns)
		}
		t.Logf("assessment %d (%s, %d phase runs, P %.3f): %s", a.Seq, a.Phase, phaseRuns, a.Answers.OnObjective, basis)
	}
	assert.Positive(t, standings, "the reference has a point at the job's first boundary")
	t.Logf("done after %s", time.Since(began).Round(time.Millisecond))
}
