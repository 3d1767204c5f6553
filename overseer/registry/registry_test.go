package registry_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/registry"
)

// modelJSON is the shipped model renamed to version.
func modelJSON(t *testing.T, version string) json.RawMessage {
	t.Helper()
	m := overseer.DefaultLearnedModel()
	m.Version = version
	data, err := json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	return data
}

func policyJSON(t *testing.T) json.RawMessage {
	t.Helper()
	data, err := overseer.MarshalPolicy(overseer.DefaultLearnedPolicy(), nil)
	require.NoError(t, err)
	return data
}

// regEnv runs the registry workflow in the SDK's test environment.
type regEnv struct {
	t   *testing.T
	env *testsuite.TestWorkflowEnvironment
}

func newRegEnv(t *testing.T) *regEnv {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	registry.Register(env)
	return &regEnv{t: t, env: env}
}

type outcome struct {
	rejected, failed error
	result           registry.Result
	done             bool
}

func (r *regEnv) update(name string, arg any) *outcome {
	o := &outcome{}
	r.env.UpdateWorkflow(name, "", &testsuite.TestUpdateCallback{
		OnAccept: func() {},
		OnReject: func(err error) { o.rejected = err },
		OnComplete: func(v any, err error) {
			o.done, o.failed = true, err
			if res, ok := v.(registry.Result); ok {
				o.result = res
			}
		},
	}, arg)
	return o
}

func (r *regEnv) query(q registry.Query) registry.State {
	r.t.Helper()
	v, err := r.env.QueryWorkflow(registry.QueryName, q)
	require.NoError(r.t, err)
	var s registry.State
	require.NoError(r.t, v.Get(&s))
	return s
}

// run executes the registry with in; steps run one simulated second apart,
// then the workflow is cancelled unless it continued as new.
func (r *regEnv) run(in registry.Input, steps ...func()) {
	for i, step := range steps {
		r.env.RegisterDelayedCallback(step, time.Duration(i+1)*time.Second)
	}
	r.env.RegisterDelayedCallback(func() { r.env.CancelWorkflow() }, time.Duration(len(steps)+1)*time.Second)
	r.env.ExecuteWorkflow(registry.WorkflowName, in)
	require.True(r.t, r.env.IsWorkflowCompleted())
}

func TestRegistryPromotesRollsBackAndRefusesInOneSentence(t *testing.T) {
	r := newRegEnv(t)
	var a, b, again, v1, badPolicy, noBy, firstRollback, unknownType, rollback, pastFirst *outcome
	var afterPromotions, afterRollback registry.State
	v1Model := json.RawMessage(`{"format":"overseer-learned-model/v1","version":"old","features":[]}`)
	r.run(registry.Input{},
		func() {
			firstRollback = r.update(registry.RollbackName, registry.RollbackRequest{By: "ana"})
			a = r.update(registry.PromoteName, registry.PromoteRequest{Model: modelJSON(t, "model-a"), Policy: policyJSON(t), By: "ana", Note: "first fit",
				Figures: json.RawMessage(`{"auc": 0.8}`)})
		},
		func() {
			b = r.update(registry.PromoteName, registry.PromoteRequest{Model: modelJSON(t, "model-b"), Policy: policyJSON(t), By: "bo"})
			again = r.update(registry.PromoteName, registry.PromoteRequest{Model: modelJSON(t, "model-b"), Policy: policyJSON(t), By: "bo"})
			v1 = r.update(registry.PromoteName, registry.PromoteRequest{Model: v1Model, Policy: policyJSON(t), By: "bo"})
			badPolicy = r.update(registry.PromoteName, registry.PromoteRequest{Model: modelJSON(t, "model-c"),
				Policy: json.RawMessage(`{"format":"overseer-policy/v1","on_track_at":0.2,"needs_a_look_at":0.5,"pause_at_or_below":0.1,` +
					`"breach_confidence":0.5,"breach_severity":1.5,"max_consecutive_failures":3}`), By: "bo"})
			noBy = r.update(registry.PromoteName, registry.PromoteRequest{Model: modelJSON(t, "model-c"), Policy: policyJSON(t)})
			unknownType = r.update(registry.RollbackName, registry.RollbackRequest{Type: "Nope", By: "bo"})
		},
		func() { afterPromotions = r.query(registry.Query{}) },
		func() {
			rollback = r.update(registry.RollbackName, registry.RollbackRequest{By: "cy", Note: "b pauses too much"})
		},
		func() {
			afterRollback = r.query(registry.Query{Content: true, CurrentOnly: true})
			pastFirst = r.update(registry.RollbackName, registry.RollbackRequest{By: "cy"})
		},
	)

	require.NoError(t, a.rejected)
	require.NoError(t, a.failed)
	assert.Equal(t, registry.Result{Type: registry.DefaultType, Version: "model-a", At: a.result.At}, a.result)
	require.NoError(t, b.rejected)
	assert.Equal(t, "model-a", b.result.From)

	refusal := func(o *outcome, want string) {
		t.Helper()
		require.Error(t, o.rejected)
		assert.Contains(t, o.rejected.Error(), want)
		assert.False(t, o.done)
	}
	refusal(firstRollback, "no model was promoted for type *: nothing to roll back")
	refusal(again, "version model-b is already in the registry for type *")
	refusal(v1, `format "overseer-learned-model/v1" is not "overseer-learned-model/v2"`)
	refusal(badPolicy, "the policy is refused")
	refusal(noBy, "say who promotes the model (by)")
	refusal(unknownType, "no model was promoted for type Nope")
	refusal(pastFirst, "model-a is the first model of type *: there is none before it to roll back to")

	require.Len(t, afterPromotions.Types, 1)
	ty := afterPromotions.Types[0]
	assert.Equal(t, "model-b", ty.Current)
	require.Len(t, ty.Versions, 2)
	assert.Equal(t, "model-a", ty.Versions[0].Version)
	assert.Equal(t, "ana", ty.Versions[0].By)
	assert.Equal(t, "first fit", ty.Versions[0].Note)
	assert.JSONEq(t, `{"auc":0.8}`, string(ty.Versions[0].Figures))
	assert.Nil(t, ty.Versions[0].Model, "no content unless asked")
	require.NotNil(t, ty.Versions[0].Promise)
	assert.Equal(t, 0.05, ty.Versions[0].Promise.MaxFalsePause)
	assert.Equal(t, "model-a", ty.Versions[1].Previous)
	assert.Equal(t, 2, afterPromotions.Updates)

	require.NoError(t, rollback.rejected)
	assert.Equal(t, registry.Result{Type: registry.DefaultType, Version: "model-a", From: "model-b", At: rollback.result.At}, rollback.result)
	cur := afterRollback.Resolve("AnyType")
	require.NotNil(t, cur)
	assert.Equal(t, "model-a", cur.Current)
	require.Len(t, cur.Versions, 1)
	m, err := overseer.ParseLearnedModel(cur.Versions[0].Model)
	require.NoError(t, err)
	assert.Equal(t, "model-a", m.Version)
	require.Len(t, afterRollback.Events, 3)
	assert.Equal(t, registry.Event{At: afterRollback.Events[2].At, Action: "rollback", Type: "*", Version: "model-a", From: "model-b", By: "cy",
		Note: "b pauses too much"}, afterRollback.Events[2])
}

func TestRegistryTypesFallBackToTheDefaultAndVersionsNameOneModel(t *testing.T) {
	r := newRegEnv(t)
	var def, own, sameElsewhere, otherContent *outcome
	var st registry.State
	r.run(registry.Input{},
		func() {
			def = r.update(registry.PromoteName, registry.PromoteRequest{Model: modelJSON(t, "model-a"), Policy: policyJSON(t), By: "ana"})
			own = r.update(registry.PromoteName, registry.PromoteRequest{Type: "CoroJob", Model: modelJSON(t, "model-j"), Policy: policyJSON(t), By: "ana"})
			// The same model for another type is fine; another model under a
			// version already used is not.
			sameElsewhere = r.update(registry.PromoteName, registry.PromoteRequest{Type: "Other", Model: modelJSON(t, "model-a"), Policy: policyJSON(t), By: "ana"})
			m := overseer.DefaultLearnedModel()
			m.Version, m.SubModels[0].Intercept = "model-j", 0.5
			data, _ := json.Marshal(m)
			otherContent = r.update(registry.PromoteName, registry.PromoteRequest{Type: "Third", Model: data, Policy: policyJSON(t), By: "ana"})
		},
		func() { st = r.query(registry.Query{}) },
	)
	require.NoError(t, def.rejected)
	require.NoError(t, own.rejected)
	require.NoError(t, sameElsewhere.rejected)
	require.Error(t, otherContent.rejected)
	assert.Contains(t, otherContent.rejected.Error(), "version model-j already names another model (type CoroJob)")
	assert.Equal(t, "model-j", st.Resolve("CoroJob").Current)
	assert.Equal(t, "model-a", st.Resolve("Unlisted").Current)
	var types []string
	for _, ty := range st.Types {
		types = append(types, ty.Type)
	}
	assert.Equal(t, []string{"*", "CoroJob", "Other"}, types, "sorted")
}

func TestRegistryContinuesAsNewWithItsState(t *testing.T) {
	r := newRegEnv(t)
	var outs []*outcome
	steps := []func(){}
	for _, v := range []string{"model-a", "model-b", "model-c"} {
		steps = append(steps, func() {
			outs = append(outs, r.update(registry.PromoteName, registry.PromoteRequest{Model: modelJSON(t, v), Policy: policyJSON(t), By: "ana"}))
		})
	}
	for i, step := range steps {
		r.env.RegisterDelayedCallback(step, time.Duration(i+1)*time.Second)
	}
	r.env.ExecuteWorkflow(registry.WorkflowName, registry.Input{MaxUpdates: 3})
	require.True(t, r.env.IsWorkflowCompleted())
	for _, o := range outs {
		require.NoError(t, o.rejected)
		require.NoError(t, o.failed)
		require.True(t, o.done, "every accepted update finishes before the run continues as new")
	}
	var can *workflow.ContinueAsNewError
	require.True(t, errors.As(r.env.GetWorkflowError(), &can), "continued as new: %v", r.env.GetWorkflowError())
	assert.Equal(t, registry.WorkflowName, can.WorkflowType.Name)
	var carried registry.Input
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(can.Input, &carried))
	assert.Equal(t, 3, carried.MaxUpdates)
	require.Len(t, carried.State.Types, 1)
	assert.Equal(t, "model-c", carried.State.Types[0].Current)
	assert.Len(t, carried.State.Types[0].Versions, 3)
	assert.NotEmpty(t, carried.State.Types[0].Versions[0].Model, "the state keeps the model files")

	// The next run starts from the carried state: it answers with it and
	// rolls back within it.
	next := newRegEnv(t)
	var st registry.State
	var back *outcome
	next.run(carried,
		func() { st = next.query(registry.Query{Version: "model-b"}) },
		func() { back = next.update(registry.RollbackName, registry.RollbackRequest{By: "ana"}) },
	)
	require.Len(t, st.Types, 1)
	require.Len(t, st.Types[0].Versions, 1)
	assert.Equal(t, "model-a", st.Types[0].Versions[0].Previous)
	require.NoError(t, back.rejected)
	assert.Equal(t, "model-b", back.result.Version)
}

func TestRegistryRecordsRefusalsBoundedPerTypeAndRefusesBadOnes(t *testing.T) {
	r := newRegEnv(t)
	refusal := func(typ, version string) registry.RefusalRequest {
		return registry.RefusalRequest{Type: typ, Version: version, Current: "model-a", By: "overseer learn",
			Reason: "refused " + version + ": it ranks worse", Figures: json.RawMessage(`{"candidate_auroc_50": 0.6, "current_auroc_50": 0.7}`)}
	}
	bad := []struct {
		name string
		req  registry.RefusalRequest
		want string
	}{
		{"no by", registry.RefusalRequest{Reason: "worse"}, "say who refused the candidate (by)"},
		{"no reason", registry.RefusalRequest{By: "ana", Reason: "  "}, "say why the candidate was refused (reason)"},
		{"long reason", registry.RefusalRequest{By: "ana", Reason: strings.Repeat("x", registry.MaxNoteBytes+1)}, "the reason is 4097 bytes; keep it to 4096"},
		{"figures too big", registry.RefusalRequest{By: "ana", Reason: "worse", Figures: json.RawMessage(`"` + strings.Repeat("x", registry.MaxFiguresBytes) + `"`)},
			"the figures are 16386 bytes; keep them to 16384"},
	}
	outs := make([]*outcome, len(bad))
	var first *outcome
	var all, job, ofVersion, current registry.State
	steps := []func(){
		func() {
			first = r.update(registry.RefusalName, refusal("CoroJob", "cand-0"))
			for i, b := range bad {
				outs[i] = r.update(registry.RefusalName, b.req)
			}
		},
		func() {
			for i := 1; i <= registry.MaxRefusals; i++ {
				r.update(registry.RefusalName, refusal("CoroJob", fmt.Sprintf("cand-%d", i)))
			}
			r.update(registry.RefusalName, refusal("", "cand-default"))
		},
		func() {
			all = r.query(registry.Query{})
			job = r.query(registry.Query{Types: []string{"CoroJob"}})
			ofVersion = r.query(registry.Query{Version: "cand-default"})
			current = r.query(registry.Query{CurrentOnly: true})
		},
	}
	r.run(registry.Input{}, steps...)
	require.NoError(t, first.rejected)
	assert.Equal(t, registry.Result{Type: "CoroJob", Version: "cand-0", From: "model-a", At: first.result.At}, first.result)
	for i, b := range bad {
		require.Error(t, outs[i].rejected, b.name)
		assert.Contains(t, outs[i].rejected.Error(), b.want, b.name)
	}
	require.Len(t, all.Refusals, registry.MaxRefusals+1, "the oldest of CoroJob's is dropped, the default type's kept")
	assert.Equal(t, "cand-1", all.Refusals[0].Version, "oldest first")
	assert.Equal(t, registry.Refusal{At: all.Refusals[0].At, Type: "CoroJob", Version: "cand-1", Current: "model-a", Reason: "refused cand-1: it ranks worse",
		Figures: json.RawMessage(`{"candidate_auroc_50":0.6,"current_auroc_50":0.7}`), By: "overseer learn"}, all.Refusals[0])
	assert.Equal(t, registry.DefaultType, all.Refusals[registry.MaxRefusals].Type)
	assert.Equal(t, 1+registry.MaxRefusals+1, all.Updates)
	assert.Empty(t, all.Types, "a refusal promotes nothing")
	assert.Len(t, job.Refusals, registry.MaxRefusals)
	require.Len(t, ofVersion.Refusals, 1)
	assert.Equal(t, "cand-default", ofVersion.Refusals[0].Version)
	assert.Empty(t, current.Refusals, "the current models only")
}
