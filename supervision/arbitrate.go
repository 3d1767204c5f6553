package supervision

// truths indexes a report's findings by check id.
type truths map[checkID]Finding

func truthsOf(r *Report) truths {
	t := truths{}
	for _, c := range checks(true) {
		if f, ok := r.finding(c.key()); ok {
			t[c.id] = f
		}
	}
	return t
}

func (t truths) is(id checkID, want Truth) bool { f, ok := t[id]; return ok && f.Truth == want }

// uncertain reports uncertainty that matters on the current decision
// branch. meaningful_progress and needs_verification are never consulted;
// health and repository checks only while the worker is active.
func (t truths) uncertain(active, docRequired, verified bool) bool {
	if t.is(checkNeedsHuman, TruthUnknown) {
		return true
	}
	if active {
		return t.is(checkAgentsMDDrift, TruthUnknown) || t.is(checkWorkerStuck, TruthUnknown) || t.is(checkWorkOffTrack, TruthUnknown)
	}
	if docRequired && t.is(checkDocumentationSufficient, TruthUnknown) {
		return true
	}
	if t.is(checkImplementationComplete, TruthUnknown) {
		return true
	}
	if t.is(checkImplementationComplete, TruthNo) {
		return false
	}
	if !verified || !t.is(checkTestsSufficient, TruthYes) {
		return false // a verification request covers this case
	}
	return t.is(checkRequirementsSatisfied, TruthUnknown) || t.is(checkReadyToFinish, TruthUnknown)
}

// propose appends proposals in a fixed order (the verification request
// comes after the documentation one although its priority is higher):
// arbitration breaks ties by this order.
func propose(r *Report, active, failed, docRequired bool) []Proposal {
	t := truthsOf(r)
	verified, trunc := r.VerifiedRevision, r.Truncated
	uncertain := t.uncertain(active, docRequired, verified)
	complete := t.is(checkImplementationComplete, TruthYes)
	ready := complete && t.is(checkRequirementsSatisfied, TruthYes) && t.is(checkReadyToFinish, TruthYes)
	tests := t.is(checkTestsSufficient, TruthYes)

	var ps []Proposal
	add := func(resp string, a Advice, reason Reason, prio int, conf float64) {
		ps = append(ps, Proposal{Responsibility: resp, Advice: a, Reason: reason, Priority: prio, Confidence: conf})
	}
	if t.is(checkNeedsHuman, TruthYes) {
		add(respHumanEscalation, AdviceManualReview, reasonNeedsHuman, 1000, t[checkNeedsHuman].Probability)
	}
	if failed {
		add(respRuntime, AdviceManualReview, reasonWorkerFailed, 950, 1)
	}
	if active {
		if t.is(checkAgentsMDDrift, TruthYes) {
			add(respInstructions, AdviceReviewDirection, reasonAgentsMDDrift, 900, t[checkAgentsMDDrift].Probability)
		}
		if t.is(checkWorkOffTrack, TruthYes) {
			add(respWorkerHealth, AdviceReviewDirection, reasonWorkOffTrack, 900, t[checkWorkOffTrack].Probability)
		}
		if t.is(checkWorkerStuck, TruthYes) {
			add(respWorkerHealth, AdviceReviewDirection, reasonWorkerStuck, 900, t[checkWorkerStuck].Probability)
		}
	}
	if trunc {
		add(respRuntime, AdviceManualReview, reasonEvidenceTruncated, 850, 1)
	}
	if !active {
		if docRequired && t.is(checkDocumentationSufficient, TruthNo) {
			add(respDocumentation, AdviceReviewDocumentation, reasonDocumentationIncomplete, 750, 1)
		}
		if complete && (!verified || !tests) {
			reason := reasonCurrentVerification
			if verified {
				reason = reasonTestCoverageInsufficient
			}
			add(respVerification, AdviceRequestVerification, reason, 800, 1)
		}
		if ready && tests && verified && !uncertain && !trunc {
			add(respCompletion, AdviceReviewCompletion, reasonCompletionReviewReady, 700, 1)
		}
		if !ready && !uncertain {
			add(respCompletion, AdviceContinue, reasonWorkRemains, 500, 1)
		}
	}
	if uncertain {
		add(respRuntime, AdviceManualReview, reasonUncertainChecks, 650, 0)
	}
	add(respRuntime, AdviceContinue, reasonWorkerMayContinue, 0, 0)
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
