package overseer_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/overseer"
)

// fakeModels is a ModelSource whose current version the test promotes.
type fakeModels struct {
	mu       sync.Mutex
	current  string
	versions map[string]overseer.ModelVersion
	lookups  []string // Version calls
	currents int
}

func modelVersion(version string, onTrackAt float64) overseer.ModelVersion {
	m := overseer.DefaultLearnedModel()
	m.Version = version
	p := overseer.DefaultLearnedPolicy()
	p.Name, p.OnTrackAt, p.NeedsALookAt, p.PauseAtOrBelow = "policy of "+version, onTrackAt, onTrackAt, 0
	return overseer.ModelVersion{Version: version, Model: m, Policy: p}
}

func newFakeModels() *fakeModels {
	// model-a's policy shows everything On track, model-b's everything
	// Off track: the band says which policy a run pinned.
	return &fakeModels{current: "model-a", versions: map[string]overseer.ModelVersion{
		"model-a": modelVersion("model-a", 0), "model-b": modelVersion("model-b", 1)}}
}

func (f *fakeModels) promote(v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.current = v
}

func (f *fakeModels) Current(_ context.Context, _ string) (overseer.ModelVersion, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.currents++
	return f.versions[f.current], nil
}

func (f *fakeModels) Version(_ context.Context, _ string, v string) (overseer.ModelVersion, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups = append(f.lookups, v)
	mv, ok := f.versions[v]
	if !ok {
		return mv, fmt.Errorf("version %s is not in the fake registry", v)
	}
	return mv, nil
}

// runWithModels runs phasesWorkflow under the plugin with models; the
// code phase calls during, e.g. to promote another model mid-run.
func runWithModels(t *testing.T, opts overseer.Options, during func()) overseer.Status {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	plugin, err := overseer.NewPlugin(opts)
	require.NoError(t, err)
	env.SetWorkerOptions(withoutLateActivityRace(worker.Options{Plugins: []worker.Plugin{plugin}}))
	env.RegisterWorkflow(phasesWorkflow)
	for _, p := range testPhases {
		env.RegisterActivityWithOptions(func(_ context.Context, in *phaseInput) (phaseResult, error) {
			if in.Phase == "code" && during != nil {
				during()
			}
			return phaseResult{Phase: in.Phase}, nil
		}, activity.RegisterOptions{Name: p})
	}
	env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	v, err := env.QueryWorkflow(overseer.StatusQueryName)
	require.NoError(t, err)
	var st overseer.Status
	require.NoError(t, v.Get(&st))
	return st
}

func TestARunPinsItsModelVersionAcrossAPromotion(t *testing.T) {
	for _, placement := range []overseer.Placement{overseer.PlacementAuto, overseer.PlacementLocalActivity, overseer.PlacementActivity} {
		name := string(placement)
		if name == "" {
			name = "auto"
		}
		t.Run(name, func(t *testing.T) {
			models := newFakeModels()
			opts := overseer.Options{Models: models, Placement: placement}
			first := runWithModels(t, opts, func() { models.promote("model-b") })
			require.Len(t, first.Assessments, len(testPhases))
			for _, a := range first.Assessments {
				require.Empty(t, a.Error)
				assert.True(t, strings.HasPrefix(a.Model, "model-a/"), "assessment %d after the promotion names the pinned version: %s", a.Seq, a.Model)
				assert.Equal(t, overseer.BandOnTrack, a.Verdict.Band, "the pinned version's policy")
			}
			models.mu.Lock()
			assert.Equal(t, 1, models.currents, "the run asked for the current version once, when it started")
			assert.NotContains(t, models.lookups, "model-b")
			models.mu.Unlock()

			// A run started after the promotion uses the new version and its policy.
			second := runWithModels(t, opts, nil)
			require.Len(t, second.Assessments, len(testPhases))
			for _, a := range second.Assessments {
				assert.True(t, strings.HasPrefix(a.Model, "model-b/"), a.Model)
				assert.Equal(t, overseer.BandOffTrack, a.Verdict.Band)
			}
		})
	}
}

func TestARunWhoseModelVersionIsGoneRecordsFailedAssessments(t *testing.T) {
	models := newFakeModels()
	st := runWithModels(t, overseer.Options{Models: models}, func() {
		models.mu.Lock()
		delete(models.versions, "model-a")
		models.mu.Unlock()
	})
	require.Len(t, st.Assessments, 3)
	assert.Empty(t, st.Assessments[0].Error, "spec was assessed before the version went")
	assert.Contains(t, st.Assessments[1].Error, `model version "model-a" of this run: version model-a is not in the fake registry`)
}

func TestModelsNeedTheLearnedJudge(t *testing.T) {
	_, err := overseer.NewPlugin(overseer.Options{Models: newFakeModels(), Judge: overseer.HeuristicJudge{}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Models gives runs learned models, but Judge is judge.HeuristicJudge")
	_, err = overseer.NewPlugin(overseer.Options{Models: newFakeModels(), Placement: overseer.PlacementBackground})
	require.Error(t, err)
}

func TestARunThatCannotReadTheSourceUsesTheWorkersJudge(t *testing.T) {
	st := runWithModels(t, overseer.Options{Models: failingModels{}}, nil)
	require.Len(t, st.Assessments, 3)
	for _, a := range st.Assessments {
		assert.Empty(t, a.Error)
		assert.True(t, strings.HasPrefix(a.Model, overseer.DefaultLearnedModel().Version+"/"), a.Model)
	}
}

type failingModels struct{}

func (failingModels) Current(context.Context, string) (overseer.ModelVersion, error) {
	return overseer.ModelVersion{}, fmt.Errorf("registry unreachable")
}

func (failingModels) Version(context.Context, string, string) (overseer.ModelVersion, error) {
	return overseer.ModelVersion{}, fmt.Errorf("registry unreachable")
}
