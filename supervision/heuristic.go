package supervision

import (
	"context"
	"fmt"
	"strings"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

// heuristicModelVersion is the model version the heuristic judge reports.
const heuristicModelVersion = "supervision-heuristic-v1"

// HeuristicJudge answers the supervision checks with fixed rules over the
// model state. It is not a model and reads no meaning into the work: it is
// deterministic and offline, for demos, tests and `overseer observe`; its
// model version is "supervision-heuristic-v1". The rules:
//
//   - needs_human is 0.9 when the output mentions credentials, permission
//     or asks for a human; else 0.05.
//   - worker_stuck is 0.9 when the last 8 recent events all have one type
//     other than text; else 0.1. agents_md_drift and work_off_track are 0.05.
//   - meaningful_progress is 0.8 with any text or tool event; else 0.5.
//   - implementation_complete is 0.3 while the worker is active; once idle,
//     0.9 when the output claims it is done, else 0.5.
//   - requirements_satisfied, ready_to_finish and tests_sufficient are 0.9
//     with current, passed verification; else 0.5 (idle) or 0.3 (active) for
//     the first two and 0.1 for tests.
//   - needs_verification is the complement of verification (0.1 / 0.9).
//   - documentation_sufficient is 0.9 when a changed file looks like
//     documentation, else 0.1.
type HeuristicJudge struct{}

var _ jev.Judge = HeuristicJudge{}

type heuristicState struct {
	Output       string   `json:"latest_worker_output"`
	Active       bool     `json:"worker_active"`
	Events       []string `json:"recent_events"`
	ChangedFiles []string `json:"changed_files"`
	Verified     bool     `json:"verification_current_and_passed"`
}

// Decide implements jev.Judge.
func (HeuristicJudge) Decide(ctx context.Context, req jev.Request) (*jev.Response, error) {
	var s heuristicState
	if err := jev.DecodeState(ctx, "supervision heuristic judge", req, &s); err != nil {
		return nil, err
	}
	out := strings.ToLower(s.Output)
	p := map[checkID]float64{
		checkNeedsHuman: 0.05, checkAgentsMDDrift: 0.05, checkWorkOffTrack: 0.05, checkWorkerStuck: 0.1, checkMeaningfulProgress: 0.5,
		checkImplementationComplete: 0.3, checkRequirementsSatisfied: 0.3, checkReadyToFinish: 0.3, checkTestsSufficient: 0.1,
		checkNeedsVerification: 0.9, checkDocumentationSufficient: 0.1,
	}
	if containsAny(out, "credential", "permission", "need a human", "needs a human", "please advise") {
		p[checkNeedsHuman] = 0.9
	}
	if n := len(s.Events); n >= 8 {
		last := s.Events[n-8:]
		same := true
		for _, e := range last {
			same = same && e == last[0]
		}
		if same && last[0] != string(EventTextDelta) {
			p[checkWorkerStuck] = 0.9
		}
	}
	for _, e := range s.Events {
		if e == string(EventTextDelta) || strings.HasPrefix(e, "TOOL") {
			p[checkMeaningfulProgress] = 0.8
		}
	}
	if !s.Active {
		p[checkRequirementsSatisfied], p[checkReadyToFinish] = 0.5, 0.5
		p[checkImplementationComplete] = 0.5
		if containsAny(out, "done", "complete", "implemented", "finished") {
			p[checkImplementationComplete] = 0.9
		}
	}
	if s.Verified {
		p[checkRequirementsSatisfied], p[checkReadyToFinish], p[checkTestsSufficient], p[checkNeedsVerification] = 0.9, 0.9, 0.9, 0.1
	}
	for _, f := range s.ChangedFiles {
		if containsAny(strings.ToLower(f), "readme", "docs/", ".md") {
			p[checkDocumentationSufficient] = 0.9
		}
	}
	resp := &jev.Response{ModelVersion: heuristicModelVersion, Answers: make(map[string]jev.Answer, len(req.Questions))}
	for k := range req.Questions {
		_, id, ok := strings.Cut(k, "__")
		v, known := p[checkID(id)]
		if !ok || !known {
			return nil, fmt.Errorf("supervision heuristic judge: unknown check %q", k)
		}
		resp.Answers[k] = jev.Answer{Type: jev.Noul, Probability: jev.Prob(v)}
	}
	return resp, nil
}

func containsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
