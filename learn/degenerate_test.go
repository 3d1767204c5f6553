package learn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/learn"
	"github.com/corohq/temporal-overseer/overseer"
	overseertest "github.com/corohq/temporal-overseer/testsuite"
)

// group is n runs of one task family and one outcome.
type group struct {
	family string
	n      int
	failed bool
}

// runsOf builds the groups' runs in order (newest first, as a round reads
// them); a run's steps vary with its index so features are not constant.
func runsOf(groups ...group) []eval.Record {
	phases := []string{"read", "edit", "test"}
	var out []eval.Record
	for _, g := range groups {
		for range g.n {
			i := len(out)
			rec := eval.Record{Format: eval.RecordFormat, ID: fmt.Sprintf("%s-%d", g.family, i), Unit: eval.UnitStep, Outcome: eval.OutcomeSucceeded}
			for s := range 6 + i%5 {
				rec.Steps = append(rec.Steps, eval.Step{Phase: phases[(s/2)%3], OutputTokens: int64(150 + 37*((i*7+s*3)%11)),
					InputTokens: int64(6000 + 100*s), Failed: (i+s)%4 == 0})
			}
			if g.failed {
				rec.Outcome = eval.OutcomeFailed
			}
			out = append(out, rec.AsPhases()) // as a round reads it from Temporal
		}
	}
	return out
}

// roundOn runs one learn round on records: the export activity for real,
// the refit deciding as Activities.Refit does, with the shipped model
// current, and a promotion taken without a registry.
func roundOn(t *testing.T, records []eval.Record) (learn.Result, error) {
	t.Helper()
	a := &learn.Activities{Records: func(context.Context, string, string, time.Time) ([]eval.Record, error) {
		return slices.Clone(records), nil
	}}
	refit := func(ctx context.Context, in learn.RefitInput) (learn.RefitOutput, error) {
		cur := learn.Current{Model: overseer.DefaultLearnedModel(), Policy: overseer.DefaultLearnedPolicy()}
		labelled := slices.Clone(records)
		eval.UseGateLabels(labelled)
		var d learn.Decision
		var err error
		if learn.Ready(labelled, in.Options).Ready {
			opts := in.Options
			opts.For = in.Type
			d, err = learn.Decide(ctx, slices.Clone(records), cur, opts)
		} else {
			d, err = learn.DecideRecalibration(ctx, slices.Clone(records), cur, in.Type, in.Options)
		}
		if err != nil {
			return learn.RefitOutput{}, err
		}
		return learn.RefitOutput{Decision: d, Promoted: d.Promote, Current: cur.Model.Version}, nil
	}
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetTestTimeout(5 * time.Minute)
	env.RegisterActivityWithOptions(a.Export, activity.RegisterOptions{Name: learn.ExportActivityName})
	env.RegisterActivityWithOptions(refit, activity.RegisterOptions{Name: learn.RefitActivityName})
	env.ExecuteWorkflow(learn.Workflow, learn.Input{Type: "Job"})
	require.True(t, env.IsWorkflowCompleted())
	if err := env.GetWorkflowError(); err != nil {
		return learn.Result{}, err
	}
	var res learn.Result
	require.NoError(t, env.GetWorkflowResult(&res))
	return res, nil
}

// A round on degenerate runs promotes or refuses in one sentence; it never
// fails on a number JSON cannot hold, nor says a Go map.
func TestRoundOnDegenerateRunsRefusesOrPromotesInOneSentence(t *testing.T) {
	tests := []struct {
		name    string
		records []eval.Record
		stages  []int // the stages its candidate may be at
	}{
		// Stage 1: each family one outcome, so no fold of the
		// re-standardisation check measures an AUROC (it failed the round
		// with "json: unsupported value: NaN").
		{"stage 1 on one outcome per family", runsOf(
			group{"a", 8, false}, group{"b", 8, false}, group{"c", 8, false}, group{"d", 8, true}, group{"e", 8, true}), []int{overseer.StageRecalibrated, overseer.StageCertified}},
		// Stage 3: the first outer fold holds out the only failed family,
		// so no sub-model can train on the others (its refusal printed
		// map[structure:… telemetry:…]).
		{"stage 3 with a fold of one outcome", runsOf(
			group{"a", 5, false}, group{"c", 5, true}, // the newest, held out
			group{"c", 14, true}, group{"a", 12, false}, group{"b", 12, false}), []int{overseer.StageRefit}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := roundOn(t, tt.records)
			require.NoError(t, err)
			require.NotNil(t, res.Decision, res.Sentence)
			assert.Contains(t, tt.stages, res.Decision.Figures.Stage, res.Sentence)
			t.Log(res.Sentence)
			overseertest.OneSentence(t, res.Sentence)
			_, err = json.Marshal(res)
			assert.NoError(t, err)
		})
	}
}

// Figures a round could not measure (an AUROC on runs of one outcome) go
// through JSON as null and come back undefined, not as an encoding error
// that fails the round.
func TestFiguresNotMeasuredEncode(t *testing.T) {
	f := learn.Figures{Stage: overseer.StageRefit, Trained: 40, HeldOut: 10, CandidateAUROC: math.NaN(), CurrentAUROC: 0.61, CandidateBrier: math.NaN(), Current: "v1"}
	out := learn.RefitOutput{Decision: learn.Decision{Version: "v2", Reason: "refused v2: it ranks worse", Figures: f}, Current: "v1"}
	p, err := converter.GetDefaultDataConverter().ToPayload(out)
	require.NoError(t, err)
	assert.False(t, strings.Contains(string(p.GetData()), "NaN"))
	var back learn.RefitOutput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(p, &back))
	assert.True(t, math.IsNaN(back.Decision.Figures.CandidateAUROC))
	assert.True(t, math.IsNaN(back.Decision.Figures.CandidateBrier))
	assert.Equal(t, 0.61, back.Decision.Figures.CurrentAUROC)
	assert.Zero(t, back.Decision.Figures.CurrentBrier, "a figure not set stays unset")
}
