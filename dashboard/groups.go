package dashboard

import "github.com/corohq/temporal-overseer/overseer"

// notAuthorizedErrorType is the resume validator's refusal of a user
// outside the gate's approvers (or the job's own starter under four eyes).
const notAuthorizedErrorType = "OverseerNotAuthorized"

// withGroups sends the signed-in user's groups with a resume, for
// approvers lists that name groups.
func withGroups(req *overseer.ResumeRequest, groups []string) {
	_, _ = req, groups // overseer.ResumeRequest has no groups field yet: by alone is sent
}
