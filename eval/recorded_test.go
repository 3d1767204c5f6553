package eval_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/workflows"
)

func TestRecordedJobHasThePhasesTheBoundariesForm(t *testing.T) {
	rec := eval.Record{Format: eval.RecordFormat, ID: "astropy__astropy-12907", Outcome: eval.OutcomeFailed, Agent: "a",
		Task: eval.Task{Objective: "fix it"},
		Steps: []eval.Step{
			{Phase: "read", DurationMS: 1000, InputTokens: 10},
			{Phase: "read", DurationMS: 2000, InputTokens: 20},
			{Phase: "edit", Failed: true, FailureCategory: "edit"},
			{Phase: "test", CostUSD: 0.5},
			{Phase: "str.replace"},
		}}
	require.NoError(t, rec.Validate())
	in := eval.RecordedJob(rec)
	assert.Equal(t, "astropy__astropy-12907", in.Run)
	assert.Equal(t, "astropy__astropy", in.Family)
	assert.Equal(t, workflows.RecordedFailed, in.Outcome)
	require.Len(t, in.Phases, 4)
	bs := rec.Boundaries()
	steps := 0
	for i, p := range in.Phases {
		assert.Equal(t, *bs[i].Report, p.Report, "phase %d", i)
		steps += p.Steps
		assert.Equal(t, bs[i].Steps, steps, "phase %d", i)
	}
	assert.Equal(t, "read", in.Phases[0].Phase)
	assert.Equal(t, 2, in.Phases[0].Steps)
	assert.Equal(t, 3*time.Second, in.Phases[0].Duration)
	assert.Equal(t, []string{"edit"}, in.Phases[1].Report.FailedToolCategories)
	assert.Equal(t, "str_replace", in.Phases[3].Phase)
}
