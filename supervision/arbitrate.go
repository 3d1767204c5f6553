package supervision

// truths indexes a report's findings by check id.
type truths map[string]Finding

func truthsOf(r *Report) truths {
	t := truths{}
	for _, c := range Checks(true) {
		if f, ok := r.Finding(c.Key()); ok {
			t[c.ID] = f
		}
	}
	return t
}

func (t truths) is(id string, want Truth) bool { f, ok := t[id]; return ok && f.Truth == want }

// uncertain reports uncertainty that matters on the current decision
// branch. meaningful_progress and needs_verification are never consulted;
// health and repository checks only while the worker is active.
func (t truths) uncertain(active, docRequired, verified bool) bool {
	if t.is(NeedsHuman, Unknown) {
		return true
	}
	if active {
		return t.is(AgentsMDDrift, Unknown) || t.is(WorkerStuck, Unknown) || t.is(WorkOffTrack, Unknown)
	}
	if docRequired && t.is(DocumentationSufficient, Unknown) {
		return true
	}
	if t.is(ImplementationComplete, Unknown) {
		return true
	}
	if t.is(ImplementationComplete, No) {
		return false
	}
	if !verified || !t.is(TestsSufficient, Yes) {
		return false // a verification request covers this case
	}
	return t.is(RequirementsSatisfied, Unknown) || t.is(ReadyToFinish, Unknown)
}

// propose appends proposals in the seed's exact order (step 6 comes after
// step 5 although its priority is higher).
func propose(r *Report, active, failed, docRequired bool) []Proposal {
	t := truthsOf(r)
	verified, trunc := r.VerifiedRevision, r.Truncated
	uncertain := t.uncertain(active, docRequired, verified)
	complete := t.is(ImplementationComplete, Yes)
	ready := complete && t.is(RequirementsSatisfied, Yes) && t.is(ReadyToFinish, Yes)
	tests := t.is(TestsSufficient, Yes)

	var ps []Proposal
	add := func(resp string, a Advice, reason string, prio int, conf float64) {
		ps = append(ps, Proposal{Responsibility: resp, Advice: a, Reason: reason, Priority: prio, Confidence: conf})
	}
	if t.is(NeedsHuman, Yes) {
		add(RespHumanEscalation, ManualReview, ReasonNeedsHuman, 1000, t[NeedsHuman].Probability)
	}
	if failed {
		add(RespRuntime, ManualReview, ReasonWorkerFailed, 950, 1)
	}
	if active {
		if t.is(AgentsMDDrift, Yes) {
			add(RespInstructions, ReviewDirection, ReasonAgentsMDDrift, 900, t[AgentsMDDrift].Probability)
		}
		if t.is(WorkOffTrack, Yes) {
			add(RespWorkerHealth, ReviewDirection, ReasonWorkOffTrack, 900, t[WorkOffTrack].Probability)
		}
		if t.is(WorkerStuck, Yes) {
			add(RespWorkerHealth, ReviewDirection, ReasonWorkerStuck, 900, t[WorkerStuck].Probability)
		}
	}
	if trunc {
		add(RespRuntime, ManualReview, ReasonEvidenceTruncated, 850, 1)
	}
	if !active {
		if docRequired && t.is(DocumentationSufficient, No) {
			add(RespDocumentation, ReviewDocumentation, ReasonDocumentationIncomplete, 750, 1)
		}
		if complete && (!verified || !tests) {
			reason := ReasonCurrentVerification
			if verified {
				reason = ReasonTestCoverageInsufficient
			}
			add(RespVerification, RequestVerification, reason, 800, 1)
		}
		if ready && tests && verified && !uncertain && !trunc {
			add(RespCompletion, ReviewCompletion, ReasonCompletionReviewReady, 700, 1)
		}
		if !ready && !uncertain {
			add(RespCompletion, Continue, ReasonWorkRemains, 500, 1)
		}
	}
	if uncertain {
		add(RespRuntime, ManualReview, ReasonUncertainChecks, 650, 0)
	}
	add(RespRuntime, Continue, ReasonWorkerMayContinue, 0, 0)
	return ps
}

// arbitrate walks proposals in insertion order; a later one wins only with
// a strictly higher priority, or an equal priority and a strictly higher
// confidence. The earliest proposal wins a full tie, which puts repository
// constraints before health issues at equal confidence.
func arbitrate(ps []Proposal) Proposal {
	best := ps[0]
	for _, p := range ps[1:] {
		if p.Priority > best.Priority || (p.Priority == best.Priority && p.Confidence > best.Confidence) {
			best = p
		}
	}
	return best
}
