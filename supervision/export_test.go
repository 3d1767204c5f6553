package supervision

// WorkerMayContinueLast reports whether the always-present CONTINUE
// proposal closes the list, as the seed's step 10 requires.
func WorkerMayContinueLast(ps []Proposal) bool {
	last := ps[len(ps)-1]
	return last.Reason == ReasonWorkerMayContinue && last.Priority == 0
}
