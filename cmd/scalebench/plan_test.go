package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/workflows"
)

// TestPopulationPlanMix checks that a plan starts the jobs it was asked
// for, each once: closed jobs, agent loops and budgeted jobs among them,
// verdict gates and budget gates, every id distinct.
func TestPopulationPlanMix(t *testing.T) {
	for _, tc := range []struct {
		name                                    string
		plan                                    populationPlan
		loops, budgeted, verdictGates, budgetGs int
	}{
		{"a day", populationPlan{closed: 100000, open: 5000, verdictGates: 1000, loops: 2000, budgetedEvery: 10, prefix: "scale"}, 2000, 10000, 1000, 4000},
		{"gates only", populationPlan{closed: 0, open: 1000, verdictGates: 1000, prefix: "g"}, 0, 0, 1000, 0},
		{"no gates", populationPlan{closed: 500, open: 0, prefix: "c"}, 0, 0, 0, 0},
		{"budget gates only", populationPlan{closed: 90, open: 10, verdictGates: 0, prefix: "b"}, 0, 0, 0, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids := map[string]bool{}
			var loops, budgeted, verdict, budgetGates, closed int
			for i := range tc.plan.total() {
				wf, o, _ := tc.plan.job(i, "q")
				assert.False(t, ids[o.ID], "id %s twice", o.ID)
				ids[o.ID] = true
				switch {
				case strings.Contains(o.ID, "-gate-"):
					verdict++
				case strings.Contains(o.ID, "-budget-"):
					budgetGates++
				case wf == workflows.AgentLoopWorkflowName:
					loops++
					closed++
				default:
					closed++
					if o.Memo[overseer.BudgetMemoKey] != nil {
						budgeted++
					}
				}
			}
			assert.Equal(t, tc.plan.closed, closed, "closed jobs")
			assert.Equal(t, tc.loops, loops, "agent loops")
			assert.Equal(t, tc.verdictGates, verdict, "verdict gates")
			assert.Equal(t, tc.budgetGs, budgetGates, "budget gates")
			assert.InDelta(t, tc.budgeted, budgeted, float64(tc.budgeted)/50+1, "budgeted closed jobs")
		})
	}
}
