package overseer

// Judgement says in words whether the closed gate's pause was needed and
// which rule said so (Needed, NeededBy), e.g. "pause needed: a continue
// with a note counts as needed"; "" for an open gate and for a gate
// recorded before the judgement existed.
func (g Gate) Judgement() string {
	if g.Needed == nil {
		return ""
	}
	verdict := "pause needed"
	if !*g.Needed {
		verdict = "pause not needed (a false alarm)"
	}
	switch g.NeededBy {
	case NeededByReviewer:
		return verdict + ", the reviewer said"
	case NeededByNote:
		return verdict + ": a continue with a note counts as needed"
	case NeededByNoNote:
		return verdict + ": a continue without a note counts as not needed"
	case NeededByAction:
		return verdict + ": a redo or an abort always is"
	case NeededByDeadline:
		if *g.Needed {
			return verdict + ": nobody judged it; the deadline aborted the job"
		}
		return verdict + ": nobody judged it; the deadline continued the job"
	}
	return verdict
}
