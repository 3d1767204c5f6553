package overseer_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
)

// TestApprovalIsEnforcedByTheResumeValidator: an approvers list of users and
// groups and the four-eyes rule refuse, with the typed error, a resume by
// someone else; an approver then opens the gate.
func TestApprovalIsEnforcedByTheResumeValidator(t *testing.T) {
	approval := overseer.Approval{Approvers: []string{"alice", "group:sre"}, FourEyes: true}
	for _, tc := range []struct {
		name      string
		startedBy string
		refused   []overseer.ResumeRequest
		wantMsg   []string
		ok        overseer.ResumeRequest
		// who is who the status says may open the gate.
		who string
	}{
		{
			name:      "approvers and four eyes",
			startedBy: "alice",
			refused: []overseer.ResumeRequest{
				{By: "mallory"},
				{By: "mallory", Groups: []string{"dev"}},
				{By: "alice"}, // an approver, but the job's starter
				{By: "ALICE", Action: overseer.ActionAbort},
			},
			wantMsg: []string{
				`"mallory" may not resume this job: its approvers are alice, group:sre`,
				`"mallory" may not resume this job`,
				`"alice" started this job and may not resume its own gate (four-eyes rule)`,
				`"ALICE" started this job`,
			},
			ok:  overseer.ResumeRequest{By: "bob", Groups: []string{"sre"}},
			who: "alice, group:sre (not the job's starter)",
		},
		{
			name:      "four eyes without a starter on record: fail-closed",
			startedBy: "",
			refused:   []overseer.ResumeRequest{{By: "alice"}},
			wantMsg:   []string{`the job does not say who started it (memo "overseer.started_by")`},
			who:       "nobody: the four-eyes rule needs to know who started the job and it does not say; start jobs with the memo overseer.started_by set (overseer start --by NAME sets it)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A gate nobody may open ends at its deadline (not by cancelling
			// the run while a phase activity runs, which races in the
			// SDK's test environment).
			h := newHarness(t, overseer.Options{Mode: overseer.ModeManage, Approvals: map[string]overseer.Approval{"starterWorkflow": approval},
				GateDeadline: overseer.GateDeadline{After: 2 * time.Hour, Action: overseer.DeadlineContinue}},
				onTrack(), flagged(), onTrack(), onTrack())
			h.env.RegisterWorkflow(starterWorkflow)
			var refused []*updateResult
			var ok *updateResult
			var during overseer.Status
			h.env.RegisterDelayedCallback(func() {
				during = h.status(t)
				for _, req := range tc.refused {
					refused = append(refused, h.update(req))
				}
				if tc.ok.By != "" {
					ok = h.update(tc.ok)
				}
			}, time.Hour)
			h.env.ExecuteWorkflow(starterWorkflow, tc.startedBy)

			assert.Equal(t, approval.Approvers, during.Approval.Approvers, "the status says who may open the gate")
			assert.Equal(t, tc.startedBy == "", during.Approval.NoStarter, "and whether nobody can, for want of a starter")
			assert.Equal(t, tc.startedBy, during.StartedBy, "and who started the job")
			assert.Equal(t, tc.who, during.Approval.String())
			for i, r := range refused {
				assert.Equal(t, overseer.NotAuthorizedErrorType, overseer.ErrorType(r.rejected), "%v", r.rejected)
				assert.ErrorContains(t, r.rejected, tc.wantMsg[i])
			}
			require.NoError(t, h.env.GetWorkflowError())
			if ok == nil {
				gates := h.status(t).Gates
				require.NotEmpty(t, gates)
				assert.True(t, gates[0].Expired, "nobody could open it: its deadline did")
				return
			}
			require.NoError(t, ok.rejected)
			assert.Equal(t, "bob", ok.gate.By)
			for _, g := range h.status(t).Gates {
				assert.NotEqual(t, "mallory", g.By)
				assert.NotEqual(t, "alice", g.By)
			}
		})
	}
}

// starterWorkflow records who started it in its memo (the test
// environment does not pass a start memo to the workflow), then runs the
// phases.
func starterWorkflow(ctx workflow.Context, startedBy string) ([]string, error) {
	if startedBy != "" {
		if err := workflow.UpsertMemo(ctx, map[string]any{overseer.StartedByMemoKey: startedBy}); err != nil {
			return nil, err
		}
	}
	return phasesWorkflow(ctx, testPhases)
}

// TestNoApprovalKeepsTodaysGate: with the zero Approval anyone resumes.
func TestNoApprovalKeepsTodaysGate(t *testing.T) {
	h := newHarness(t, overseer.Options{Mode: overseer.ModeManage}, onTrack(), flagged(), onTrack(), onTrack())
	var ok *updateResult
	h.env.RegisterDelayedCallback(func() { ok = h.update(overseer.ResumeRequest{By: "anyone"}) }, time.Hour)
	h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
	require.NoError(t, h.env.GetWorkflowError())
	require.NoError(t, ok.rejected)
	assert.True(t, h.status(t).Approval.IsZero())
}

func TestApprovalValidate(t *testing.T) {
	_, err := overseer.NewPlugin(overseer.Options{Approvals: map[string]overseer.Approval{"Job": {Approvers: []string{"group:"}}}})
	assert.EqualError(t, err, `overseer: Approvals["Job"]: overseer: approvers ["group:"]: every entry must name a user or group:NAME`)
	_, err = overseer.NewPlugin(overseer.Options{Approval: overseer.Approval{Approvers: []string{" "}}})
	assert.ErrorContains(t, err, "every entry must name a user or group:NAME")
	_, err = overseer.NewPlugin(overseer.Options{Approval: overseer.Approval{FourEyes: true, NoStarter: true}})
	assert.ErrorContains(t, err, "NoStarter is what a job's status reports")
}
