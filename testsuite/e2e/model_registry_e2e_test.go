package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/registry"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// writeModel writes the shipped model, renamed to version, into dir.
func writeModel(t *testing.T, dir, version string) string {
	t.Helper()
	m := overseer.DefaultLearnedModel()
	m.Version = version
	data, err := json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	path := filepath.Join(dir, version+".json")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// replayWithoutRegistry replays the history of job id on a replayer with
// the overseer plugin and no model source (workflows registered by
// register): a run that pinned its model version reads it, and every
// answer, back from its history.
func replayWithoutRegistry(t *testing.T, c client.Client, id string, register func(sdkworker.WorkflowRegistry)) {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var history historypb.History
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		history.Events = append(history.Events, ev)
	}
	plugin, err := overseer.NewPlugin(overseer.Options{})
	require.NoError(t, err)
	replayer, err := sdkworker.NewWorkflowReplayerWithOptions(sdkworker.WorkflowReplayerOptions{Plugins: []sdkworker.Plugin{plugin}})
	require.NoError(t, err)
	register(replayer)
	require.NoError(t, replayer.ReplayWorkflowHistory(nil, &history), "the history of %s replays clean", id)
}

// Models promoted with `overseer model promote` reach the jobs started
// after the promotion, on a worker that was not restarted, while a job
// running across the promotion keeps the version it pinned — and its
// history replays clean on a worker that has no registry at all.
func TestE2EModelRegistryPromotesAndRunsKeepTheirPinnedModel(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	dir := t.TempDir()
	suffix := fmt.Sprint(time.Now().UnixNano()) // the cluster's registry outlives a run
	versionA, versionB := "e2e-model-a-"+suffix, "e2e-model-b-"+suffix
	modelA, modelB := writeModel(t, dir, versionA), writeModel(t, dir, versionB)
	policyData, err := overseer.MarshalPolicy(overseer.DefaultLearnedPolicy(), nil)
	require.NoError(t, err)
	policy := filepath.Join(dir, "policy.json")
	require.NoError(t, os.WriteFile(policy, policyData, 0o600))
	jobType := workflows.JobWorkflowName

	// Promoted before any worker uses the registry: the CLI hosts it.
	code, out, errOut := overseerCLI(srv, "model", "promote", "--model", modelA, "--policy", policy, "--type", jobType, "--by", "ana", "--note", "first fit")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "Promoted "+versionA+" for type "+jobType)

	// The worker reuses the current version it read for a millisecond: it
	// read A at the long job's start, a phase of agent work (a second)
	// before the promotion, so the next job's start reads the registry
	// again.
	tq := startWorker(t, srv, worker.Config{ModelRegistry: true, ModelRegistryTTL: time.Millisecond, Mode: overseer.ModeObserve,
		JudgeConfig: worker.JudgeConfig{Kind: worker.JudgeLearned}, AgentWork: time.Second})

	long := startJob(t, c, tq, workflows.JobInput{Objective: "ship the export feature", Scenario: activities.OnTrack})
	eventually(t, "the long job's first assessment", 30*time.Second, func() bool { return len(status(t, c, long.GetID()).Assessments) > 0 })
	code, out, errOut = overseerCLI(srv, "model", "promote", "--model", modelB, "--policy", policy, "--type", jobType, "--by", "bo")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "was "+versionA)
	promoted := time.Now()
	require.NoError(t, long.Get(context.Background(), nil))
	st := status(t, c, long.GetID())
	require.NotEmpty(t, st.Assessments)
	var afterPromotion int
	for _, a := range st.Assessments {
		require.Empty(t, a.Error)
		assert.True(t, strings.HasPrefix(a.Model, versionA), "assessment %d (%s) names the pinned version, not %s", a.Seq, a.Model, versionB)
		if a.At.After(promoted) {
			afterPromotion++
		}
	}
	assert.Positive(t, afterPromotion, "the job was assessed after the promotion")

	// A job started once the worker's cache has expired uses B, with no
	// restart of the worker.
	next := startJob(t, c, tq, workflows.JobInput{Objective: "ship the export feature", Scenario: activities.OnTrack})
	require.NoError(t, next.Get(context.Background(), nil))
	nextAssessments := status(t, c, next.GetID()).Assessments
	require.NotEmpty(t, nextAssessments, "the job started after the promotion was assessed")
	for _, a := range nextAssessments {
		assert.True(t, strings.HasPrefix(a.Model, versionB), "assessment %d of the job started after the promotion: %s", a.Seq, a.Model)
	}

	// list and show say what is current.
	code, out, errOut = overseerCLI(srv, "model", "list", "--type", jobType)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, jobType+`\s+`+versionB+`\s+current\s+\S+\s+bo`, out)
	assert.Regexp(t, jobType+`\s+`+versionA+`\s+\S+\s+ana`, out)
	code, out, errOut = overseerCLI(srv, "model", "show", versionA)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "not current (current: "+versionB+")")
	assert.Contains(t, out, "first fit")
	assert.Contains(t, out, "pauses at most 5.0% of succeeded runs")

	// The long job's history replays on a worker without any registry:
	// the pinned version and every answer are read back, never recomputed.
	replayWithoutRegistry(t, c, long.GetID(), workflows.Register)

	// Rollback returns to A for new jobs (a rollback past the first model
	// is refused: TestE2EModelCommandsRefuseBadInputInOneSentence, on a
	// type of its own, as the cluster's CoroJob may have older versions).
	code, out, errOut = overseerCLI(srv, "model", "rollback", "--type", jobType, "--by", "cy", "--note", "b is worse")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "from "+versionB+" to "+versionA)
	if !onCluster() {
		code, _, errOut = overseerCLI(srv, "model", "rollback", "--type", jobType, "--by", "cy")
		assert.Equal(t, 1, code)
		assert.Equal(t, "overseer model: model registry refused: "+versionA+" is the first model of type "+jobType+
			": there is none before it to roll back to\n", errOut)
	}
}

func TestE2EModelCommandsRefuseBadInputInOneSentence(t *testing.T) {
	srv := e2eServer(t)
	dir := t.TempDir()
	suffix := fmt.Sprint(time.Now().UnixNano())
	policyData, err := overseer.MarshalPolicy(overseer.DefaultLearnedPolicy(), nil)
	require.NoError(t, err)
	policy := filepath.Join(dir, "policy.json")
	require.NoError(t, os.WriteFile(policy, policyData, 0o600))
	v1 := filepath.Join(dir, "v1.json")
	require.NoError(t, os.WriteFile(v1, []byte(`{"format":"overseer-learned-model/v1","version":"old","features":[],"intercept":0}`), 0o600))
	typ := "E2EType" + suffix
	model := writeModel(t, dir, "e2e-only-"+suffix)

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"model of another format", []string{"promote", "--model", v1, "--policy", policy, "--by", "ana"}, 2,
			`overseer model: --model ` + v1 + `: learned model: format "overseer-learned-model/v1" is not "overseer-learned-model/v2": retrain the model with this version of overseer` + "\n"},
		{"no --by", []string{"promote", "--model", model, "--policy", policy}, 2, "overseer model: say who promotes the model with --by NAME\n"},
		{"no policy", []string{"promote", "--model", model, "--by", "ana"}, 2, "overseer model: give the policy file with --policy FILE\n"},
		{"rollback of a type never promoted", []string{"rollback", "--type", typ, "--by", "ana"}, 1,
			"overseer model: model registry refused: no model was promoted for type " + typ + ": nothing to roll back\n"},
		{"promote", []string{"promote", "--model", model, "--policy", policy, "--type", typ, "--by", "ana"}, 0, ""},
		{"unknown version", []string{"show", "no-such-version-" + suffix}, 1,
			"overseer model: version no-such-version-" + suffix + " is not in the model registry (overseer model list shows the versions)\n"},
		{"the same version again", []string{"promote", "--model", model, "--policy", policy, "--type", typ, "--by", "ana"}, 1,
			"overseer model: model registry refused: version e2e-only-" + suffix + " is already in the registry for type " + typ +
				": give the new model a version of its own\n"},
		{"rollback past the first model", []string{"rollback", "--type", typ, "--by", "ana"}, 1,
			"overseer model: model registry refused: e2e-only-" + suffix + " is the first model of type " + typ + ": there is none before it to roll back to\n"},
		{"unknown subcommand", []string{"retire"}, 2, "overseer model: unknown subcommand \"retire\": use list, show, promote or rollback\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := overseerCLI(srv, append([]string{"model"}, tc.args...)...)
			assert.Equal(t, tc.code, code, errOut)
			assert.Equal(t, tc.want, errOut)
		})
	}

	// The version every verdict of a job without a promoted model names is
	// shown, as the shipped model (unless a model of that version was
	// promoted here, as a cluster may have).
	shipped := overseer.DefaultLearnedModel().Version
	code, out, errOut := overseerCLI(srv, "model", "show", shipped+"/telemetry")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, shipped)
	if !onCluster() {
		assert.Contains(t, out, "shipped with the overseer (overseer.DefaultLearnedModel and DefaultLearnedPolicy), not from the model registry")
	}

	code, out, errOut = overseerCLI(srv, "model", "list", "--type", typ, "--json")
	require.Equal(t, 0, code, errOut)
	var st registry.State
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.Len(t, st.Types, 1)
	assert.Equal(t, "e2e-only-"+suffix, st.Types[0].Current)
}
