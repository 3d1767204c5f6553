package ops_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
)

func TestChooseGate(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	done := t0.Add(time.Minute)
	gate := func(id string, at time.Duration, closed bool) overseer.Gate {
		g := overseer.Gate{ID: id, PausedAt: t0.Add(at)}
		if closed {
			g.ResumedAt = &done
		}
		return g
	}
	for _, tc := range []struct {
		name    string
		gates   []overseer.Gate
		oldest  bool
		want    string
		wantErr string
	}{
		{"none open", []overseer.Gate{gate("code-1", 0, true)}, false, "", ""},
		{"one open", []overseer.Gate{gate("code-1", 0, true), gate("test-2", time.Second, false)}, false, "test-2", ""},
		{"two open: refused", []overseer.Gate{gate("test-3", 2*time.Second, false), gate("code-2", time.Second, false)}, false, "",
			`more than one gate is open: job "j" has 2 open gates (code-2, test-3): name one with --gate, or pass --oldest to resume code-2`},
		{"two open, --oldest", []overseer.Gate{gate("test-3", 2*time.Second, false), gate("code-2", time.Second, false)}, true, "code-2", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ops.ChooseGate("j", overseer.Status{Gates: tc.gates}, tc.oldest)
			if tc.wantErr != "" {
				assert.ErrorIs(t, err, ops.ErrAmbiguousGate)
				assert.EqualError(t, err, tc.wantErr)
				return
			}
			assert.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestPausedQuery(t *testing.T) {
	assert.Equal(t, "OverseerPaused = true AND ExecutionStatus NOT IN ('Completed', 'Failed', 'Canceled', 'Terminated', 'ContinuedAsNew', 'TimedOut')", ops.PausedQuery(""))
	assert.Equal(t, "(WorkflowType = 'CoroJob') AND OverseerPaused = true AND ExecutionStatus NOT IN ('Completed', 'Failed', 'Canceled', 'Terminated', 'ContinuedAsNew', 'TimedOut')", ops.PausedQuery("WorkflowType = 'CoroJob'"))
}

// The queue's row of a four-eyes job that does not say who started it
// says nobody can open its gate, not which approvers would all be refused.
func TestJobWaitingGatesOfAFourEyesJobWithoutAStarter(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	s := overseer.Status{Approval: overseer.Approval{Approvers: []string{"alice", "group:sre"}, FourEyes: true, NoStarter: true},
		Gates: []overseer.Gate{{ID: "code-1", Phase: "code", PausedAt: t0}}}
	gates := ops.JobWaitingGates(ops.Job{ID: "j"}, s, t0.Add(time.Minute))
	assert.Len(t, gates, 1)
	assert.Equal(t, time.Minute, gates[0].Wait)
	assert.True(t, gates[0].NoStarter)
	assert.Equal(t, "nobody: the four-eyes rule needs to know who started the job and it does not say; start jobs with the memo overseer.started_by set (overseer start --by NAME sets it)",
		gates[0].Approval().String())
}
