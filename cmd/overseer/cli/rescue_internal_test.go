package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/learn"
)

// rescueJobs are closed jobs of one type as a learn round reads them,
// newest first: paused jobs with a reviewer's decision at a gate (needed or
// not, and how the job ended), and flagged jobs no gate held (observe
// mode, their outcome without a pause).
func rescueJobs(typ string, needed, rescued, notNeeded, disrupted, observed, observedFailed int) []eval.Record {
	var out []eval.Record
	add := func(paused, judgedNeeded, failed bool) {
		i := len(out)
		rec := eval.Record{Format: eval.RecordFormat, ID: fmt.Sprintf("%s-fam%d-%d", typ, i%4, i), Agent: typ, Unit: eval.UnitPhase, Outcome: eval.OutcomeSucceeded}
		for s, ph := range []string{"plan", "code", "test"} {
			a := &eval.RecordedAssessment{OnObjective: 0.8, Band: "on_track"}
			if s == 1 {
				// Failed jobs' P lowest: the live catches are all of them.
				p := 0.3 + 0.01*float64(i)
				if failed {
					p = 0.25
				}
				a = &eval.RecordedAssessment{OnObjective: p, Band: "off_track", Flagged: true}
			}
			rec.Steps = append(rec.Steps, eval.Step{Phase: ph, Turns: 3, InputTokens: 900, OutputTokens: 120, Assessment: a})
		}
		if failed {
			rec.Outcome = eval.OutcomeFailed
		}
		if paused {
			n := judgedNeeded
			rec.Gates = []eval.GateDecision{{Gate: "code-1", Phase: "code", After: 2, By: "ana", Action: eval.GateContinue, Note: "look at the failing test first", Needed: &n, WaitMS: 12 * 60000}}
		}
		out = append(out, rec)
	}
	for i := range needed {
		add(true, true, i >= rescued)
	}
	for i := range notNeeded {
		add(true, false, i < disrupted)
	}
	for i := range observed {
		add(false, false, i < observedFailed)
	}
	return out
}

// `overseer learn status` prints each type's round; its rescue sentence
// comes from a real round (the learn workflow and its export activity in
// the SDK's test environment) on the type's jobs: a type with enough
// paused and observed jobs gets the rule's figures and a recommendation,
// one with 4 labelled gates is told to keep observing.
func TestLearnStatusSaysRescueAgainstDisruptionPerType(t *testing.T) {
	jobs := map[string][]eval.Record{
		"CoroJob":   rescueJobs("CoroJob", 9, 5, 3, 0, 12, 6),
		"AgentLoop": rescueJobs("AgentLoop", 3, 2, 1, 0, 10, 4),
	}
	var s testsuite.WorkflowTestSuite
	var out bytes.Buffer
	for i, typ := range []string{"AgentLoop", "CoroJob"} {
		env := s.NewTestWorkflowEnvironment()
		learn.RegisterActivities(env, &learn.Activities{Records: func(_ context.Context, workflowType, _ string, _ time.Time) ([]eval.Record, error) {
			return jobs[workflowType], nil
		}})
		env.ExecuteWorkflow(learn.WorkflowName, learn.Input{Type: typ})
		require.True(t, env.IsWorkflowCompleted())
		require.NoError(t, env.GetWorkflowError())
		var res learn.Result
		require.NoError(t, env.GetWorkflowResult(&res))
		require.NotNil(t, res.Rescue, "every round estimates rescue against disruption")
		res.Series = "" // named from the test environment's run id
		if i > 0 {
			fmt.Fprintln(&out)
		}
		fmt.Fprintf(&out, "%s: no schedule\n", typ)
		printRound(&out, res)
	}
	got := out.String()
	assert.Contains(t, got, "should pauses be on for AgentLoop? keep observing: 4 labelled gates are too few to say whether pausing AgentLoop helps (need 10)")
	assert.Contains(t, got, "should pauses be on for CoroJob? pauses here were needed 8 times in 10 (9 of 12 paused jobs); p 0.500 > d/(r+d) 0.000: pausing helps")
	assert.Contains(t, got, "29 reviewer minutes per rescued job", "12 gates waited 12 minutes each for 5 rescued jobs")
	assert.Contains(t, got, "at 5% of succeeded jobs paused 100.0% (10 of 10; 0 of 14 paused)", "CoroJob's failed jobs, all below its succeeded ones")
	goldenInternal(t, "learn_status_rescue.txt", got)
}

// goldenInternal compares got with testdata/name; `go test -update`
// (the flag the package's external tests define) rewrites it.
func goldenInternal(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create %s", path)
	assert.Equal(t, string(want), got)
}
