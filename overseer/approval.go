package overseer

import (
	"fmt"
	"slices"
	"strings"

	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// NotAuthorizedErrorType: the resume's caller may not open this job's
// gates (not an approver, or the job's own starter under the four-eyes
// rule).
const NotAuthorizedErrorType = "OverseerNotAuthorized"

// StartedByMemoKey is the memo field that names who started a job, for the
// four-eyes rule: `overseer start` sets it to the caller's identity; start
// a job from your own code with memo {"overseer.started_by": NAME}.
const StartedByMemoKey = "overseer.started_by"

// groupPrefix marks a group in an approvers list.
const groupPrefix = "group:"

// Approval says who may open a workflow type's gates. The zero value lets
// anyone who can send the update resume (today's behaviour).
//
// Inside the workflow an identity is what the caller claims in
// ResumeRequest.By and Groups: the rule keeps honest reviewers from
// opening gates that are not theirs (and a job's starter from approving
// their own), and the dashboard with a login fills by and groups from a
// verified identity. Who can send an update at all is decided by the
// Temporal server (its authorizer and claim mapper, or Temporal Cloud's
// namespace permissions): give the update permission only to clients you
// trust to fill in the identity honestly.
type Approval struct {
	// Approvers lists who may resume: identities (ResumeRequest.By), or
	// "group:NAME" for callers that claim the group NAME
	// (ResumeRequest.Groups). Empty: anyone.
	Approvers []string `json:"approvers,omitempty"`
	// FourEyes refuses a resume by the identity that started the job (the
	// memo field "overseer.started_by", StartedByMemoKey). A job started
	// without it cannot be checked: every resume is refused with a
	// sentence that says so (fail-closed); cancel such a job through
	// Temporal.
	FourEyes bool `json:"four_eyes,omitempty"`
	// NoStarter is set by the run in its status, never in Options: under
	// the four-eyes rule, a gate opened and the job does not say who
	// started it, so nobody can open its gates.
	NoStarter bool `json:"no_starter,omitempty"`
}

// IsZero reports whether the approval sets no rule.
func (a Approval) IsZero() bool { return len(a.Approvers) == 0 && !a.FourEyes }

// Validate refuses an approvers list with an empty entry or group name.
func (a Approval) Validate() error {
	if a.NoStarter {
		return fmt.Errorf("overseer: Approval.NoStarter is what a job's status reports, not a rule: leave it unset")
	}
	for _, p := range a.Approvers {
		if strings.TrimSpace(p) == "" || strings.TrimSpace(strings.TrimPrefix(p, groupPrefix)) == "" {
			return fmt.Errorf("overseer: approvers %q: every entry must name a user or group:NAME", a.Approvers)
		}
	}
	return nil
}

// String lists who may open the gates, for a person.
func (a Approval) String() string {
	if a.FourEyes && a.NoStarter {
		return fmt.Sprintf("nobody: the four-eyes rule needs to know who started the job and it does not say; start jobs with the memo %s set (overseer start --by NAME sets it)", StartedByMemoKey)
	}
	who := "anyone who may send the update"
	if len(a.Approvers) > 0 {
		who = strings.Join(a.Approvers, ", ")
	}
	if a.FourEyes {
		who += " (not the job's starter)"
	}
	return who
}

// allows refuses a resume the approval does not let through. startedBy is
// the job's starter ("" when the job does not say).
func (a Approval) allows(req ResumeRequest, startedBy string) error {
	if msg := a.Refusal(req.By, req.Groups, startedBy); msg != "" {
		return refusal(NotAuthorizedErrorType, "overseer: "+msg)
	}
	return nil
}

// Refusal is why the approval refuses a resume by by, who claims groups,
// of a job started by startedBy ("" when the job does not say), in the
// words of the resume's refusal; "" when it lets the resume through. The
// dashboard shows it instead of a form that would only be refused.
func (a Approval) Refusal(by string, groups []string, startedBy string) string {
	by = strings.TrimSpace(by)
	if a.FourEyes {
		if startedBy == "" {
			return fmt.Sprintf("this job's gates need a reviewer other than its starter, and the job does not say who started it (memo %q): no resume can be checked; cancel the job through Temporal", StartedByMemoKey)
		}
		if strings.EqualFold(by, startedBy) {
			return fmt.Sprintf("%q started this job and may not resume its own gate (four-eyes rule): ask another approver", trajectory.Clip(by, 80))
		}
	}
	if len(a.Approvers) == 0 {
		return ""
	}
	for _, p := range a.Approvers {
		if g, ok := strings.CutPrefix(p, groupPrefix); ok {
			if slices.Contains(groups, g) {
				return ""
			}
		} else if strings.EqualFold(p, by) {
			return ""
		}
	}
	return fmt.Sprintf("%q may not resume this job: its approvers are %s", trajectory.Clip(by, 80), strings.Join(a.Approvers, ", "))
}

// approvalFor is the approval of workflowType.
func (o Options) approvalFor(workflowType string) Approval {
	if a, ok := o.Approvals[workflowType]; ok {
		return a
	}
	return o.Approval
}

// startedBy reads who started the run from its memo, "" if it does not
// say. The memo is part of the start event: every replay reads the same.
// A memo its codec encrypted is read with the worker's data converter
// (memoStringUnversioned: the starter decides no command).
func startedBy(ctx workflow.Context) string {
	s, _, err := memoStringUnversioned(ctx, StartedByMemoKey)
	if err != nil {
		workflow.GetLogger(ctx).Warn("overseer: the job's starter cannot be read", "memo", StartedByMemoKey, "error", err.Error())
		return ""
	}
	return strings.TrimSpace(s)
}

// signalStarter is startedBy for a resume signal: the starter read with
// the worker's data converter, in every run. The releases from a0c0690 to
// v0.0.9 read it so with no version marker; v0.1.0 and v0.2.0 read it
// behind memoCodecChangeID, recorded at the signal when the memo needs
// the codec, and left the starter unknown without it, so the four-eyes
// signals the earlier ones had taken were refused on replay. The marker
// is still recorded where those two did, so their histories replay; its
// version no longer decides.
func signalStarter(ctx workflow.Context) string {
	if memoNeedsCodec(ctx, StartedByMemoKey) {
		workflow.GetVersion(ctx, memoCodecChangeID, workflow.DefaultVersion, 1)
	}
	return startedBy(ctx)
}
