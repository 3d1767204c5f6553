package overseer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/corohq/temporal-overseer/overseer/judge"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// maxEvidence is the most sentences of evidence a flag carries: the one
// that explains the rule that fired, then the strongest other signals.
const maxEvidence = 4

// Evidence says in plain words what in the trajectory t tripped the flag
// the policy p raises on the answers a, most telling first: for a pause on
// P(on objective), the probability (with where it stands among the
// workflow type's recent jobs, when the answers' basis carries the
// reference of a recalibrated model, see [StandingOf]) and then the
// trajectory's strongest signals; for a breach, first what the judge's
// rule for that obligation looks at ("test failed 3 times in a row, each
// time with the same error: …", "code returned no output for `patch`"),
// then the other signals. It is nil when p does not flag a.
//
// It is pure and deterministic (no map is iterated), so it runs in
// workflow code; [Verdict].Reason keeps the rule itself.
func Evidence(t Trajectory, a Answers, p Policy) []string {
	if !p.Evaluate(a).Flagged {
		return nil
	}
	if ShapeOf(t) == ShapeAgentLoop {
		return loopCallsEvidence(t, a, p)
	}
	var lead []string
	if !a.OnObjectiveUnknown && a.OnObjective <= p.PauseAtOrBelow {
		lead = []string{onObjectiveFact(a, p)}
	} else {
		lead = breachFacts(t, a)
	}
	return withSignals(lead, t)
}

// JudgeFailureEvidence is the evidence of a pause for manual review after
// the judge failed failures boundaries in a row, the last with lastError:
// the failure itself, then what the trajectory shows without a judge.
func JudgeFailureEvidence(t Trajectory, failures int, lastError string) []string {
	lead := fmt.Sprintf("the overseer could not assess %d boundaries in a row, so no verdict says how the job goes", failures)
	if lastError != "" {
		lead += "; the judge's last error: " + trajectory.Clip(lastError, trajectory.MaxErrorChars)
	}
	return withSignals([]string{lead}, t)
}

// withSignals appends to lead the trajectory's signals it does not already
// say, up to maxEvidence sentences in all.
func withSignals(lead []string, t Trajectory) []string {
	out := slices.Clone(lead)
	for _, s := range trajectorySignals(t) {
		if len(out) >= maxEvidence {
			break
		}
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// onObjectiveFact says P(on objective) and where it stands: among recent
// jobs of the type when the basis carries a standing, else against the
// pause threshold.
func onObjectiveFact(a Answers, p Policy) string {
	if s := StandingOf(a.Basis); s != "" {
		return fmt.Sprintf("P(on objective) %.2f, %s", a.OnObjective, s)
	}
	return fmt.Sprintf("P(on objective) %.2f, at or below the pause threshold %.3f", a.OnObjective, p.PauseAtOrBelow)
}

// breachFacts are the facts behind a breach of obligation[i] of the
// default obligations: what the heuristic and learned judges' rule for i
// reads (see [HeuristicJudge] and [LearnedJudge]). A breach none of those
// facts backs (another judge, an obligation of the workflow type's own,
// whose sentence the rule may not be about) says what the judge found, in
// its words; the signals follow it.
func breachFacts(t Trajectory, a Answers) []string {
	var facts []string
	if i, ok := trajectory.ObligationIndex(a.Breach); ok && i < len(trajectory.DefaultObligations()) && (a.BreachText == "" || a.BreachText == trajectory.DefaultObligations()[i]) {
		switch i {
		case 0: // the output: the last phase failed, or reported a missing output
			facts = []string{failureStreakFact(t), missingOutputFact(t)}
		case 1: // the objective: lane ping-pong
			facts = []string{laneReturnsFact(t)}
		case 2: // progress: re-runs of the phase, work items reopened
			facts = []string{sameCallFact(t), rerunFact(t), reopenedFact(t)}
		case 3: // failures surfaced: failed tool calls in a phase that succeeded
			facts = []string{hiddenFailuresFact(t)}
		}
	}
	facts = slices.DeleteFunc(facts, func(s string) bool { return s == "" })
	if len(facts) == 0 {
		what := a.Breach
		if a.BreachText != "" {
			what = fmt.Sprintf("%q", strings.TrimSuffix(a.BreachText, "."))
		}
		facts = []string{fmt.Sprintf("the judge found %s unmet after %s (confidence %.2f)", what, orUnknown(t.Phase), a.BreachConfidence)}
	}
	return facts
}

// trajectorySignals are the trajectory's signals in plain words, strongest
// first; an empty string is a signal that is absent.
func trajectorySignals(t Trajectory) []string {
	return []string{failureStreakFact(t), missingOutputFact(t), sameCallFact(t), rerunFact(t), laneReturnsFact(t),
		reopenedFact(t), hiddenFailuresFact(t), reworkFact(t)}
}

// last is the latest phase run, false before the first.
func last(t Trajectory) (PhaseRun, bool) {
	if n := len(t.RecentPhases); n > 0 {
		return t.RecentPhases[n-1], true
	}
	return PhaseRun{}, false
}

// sameCallFact says, in an agent loop, that a call was made again and
// again with the same input, no progress between (loopEvidenceOf):
// "read_file was called 3 times in a row with the same input". (Phases of
// work say it with rerunFact.)
func sameCallFact(t Trajectory) string {
	if ShapeOf(t) != ShapeAgentLoop {
		return ""
	}
	e := judge.LoopEvidenceOf(t)
	if e.RepeatedCall < 2 {
		return ""
	}
	return fmt.Sprintf("%s was called %d times in a row with the same input and got the same result each time", e.RepeatPhase, e.RepeatedCall)
}

// failureStreakFact says the phase runs that failed in a row up to now:
// "test failed 3 times in a row, each time with the same error: …".
func failureStreakFact(t Trajectory) string {
	run, ok := last(t)
	if !ok || !run.Failed || t.FailureStreak == 0 {
		return ""
	}
	streak := t.RecentPhases[max(0, len(t.RecentPhases)-t.FailureStreak):]
	var b strings.Builder
	if n := FailureRepeats(t); n > t.FailureStreak {
		// Other phases ran between its failures (an agent's model calls
		// between the calls of a tool that keeps failing).
		var runs []PhaseRun
		for _, r := range t.RecentPhases {
			if r.Phase == run.Phase {
				runs = append(runs, r)
			}
		}
		streak = runs[len(runs)-n:]
		fmt.Fprintf(&b, "%s failed its last %d runs, other phases running between them", run.Phase, n)
		if run.Error != "" && sameError(streak) {
			fmt.Fprintf(&b, ", each time with the same error: %s", run.Error)
		} else if run.Error != "" {
			fmt.Fprintf(&b, "; the last error: %s", run.Error)
		}
		return b.String()
	}
	if samePhase(streak, run.Phase) && len(streak) == t.FailureStreak {
		if t.FailureStreak == 1 {
			fmt.Fprintf(&b, "%s failed", run.Phase)
		} else {
			fmt.Fprintf(&b, "%s failed %d times in a row", run.Phase, t.FailureStreak)
		}
	} else if len(streak) < t.FailureStreak {
		// The window holds only the latest runs of a longer streak.
		fmt.Fprintf(&b, "the last %d phase runs failed (the latest %d: %s)", t.FailureStreak, len(streak), phaseList(streak))
	} else {
		fmt.Fprintf(&b, "the last %d phase runs failed (%s)", t.FailureStreak, phaseList(streak))
	}
	switch {
	case run.Error == "":
	case len(streak) > 1 && sameError(streak) && len(streak) < t.FailureStreak:
		fmt.Fprintf(&b, ", those %d with the same error: %s", len(streak), run.Error)
	case len(streak) > 1 && sameError(streak):
		fmt.Fprintf(&b, ", each time with the same error: %s", run.Error)
	default:
		fmt.Fprintf(&b, "; the last error: %s", run.Error)
	}
	return b.String()
}

// missingOutputFact says the latest phase reported a missing output:
// "code returned no output for `patch`".
func missingOutputFact(t Trajectory) string {
	run, ok := last(t)
	if !ok || !run.NoOutput {
		return ""
	}
	s := run.Phase + " reported that it did not produce the output its workflow contract requires"
	if len(run.MissingOutputs) > 0 {
		s = run.Phase + " returned no output for " + codeList(run.MissingOutputs)
	}
	if t.MissingOutputs > 1 {
		s += fmt.Sprintf(" (%d phase runs of the job so far lacked a required output)", t.MissingOutputs)
	}
	return s
}

// rerunFact says how often the latest phase ran in the recent window, and
// what its latest runs had in common: "test ran 4 times since the last
// plan, the last 3 each with failed tool calls in the category test". The
// heuristic judge's progress rule counts these re-runs.
func rerunFact(t Trajectory) string {
	run, ok := last(t)
	if !ok {
		return ""
	}
	var runs []PhaseRun
	first := -1
	for i, p := range t.RecentPhases {
		if p.Phase == run.Phase {
			runs = append(runs, p)
			if first < 0 {
				first = i
			}
		}
	}
	if len(runs) < 2 || run.Failed && len(runs) <= t.FailureStreak {
		return "" // none, or all in the failure streak, which says them
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s ran %d times ", run.Phase, len(runs))
	// "since the last plan": the latest phase before the first of these
	// runs that did not run again after it; else the window's size.
	if anchor := sinceLast(t.RecentPhases, first); anchor != "" {
		fmt.Fprintf(&b, "since the last %s", anchor)
	} else {
		b.WriteString("in " + windowText(t))
	}
	if total := trajectory.CountOf(t.RunsByPhase, run.Phase); total > len(runs) {
		fmt.Fprintf(&b, " (%d times in the job)", total)
	}
	if common := commonTrait(runs); common != "" {
		b.WriteString(", " + common)
	}
	return b.String()
}

// sinceLast is the phase of the latest run before runs[first] whose phase
// did not run again after it, "" when there is none.
func sinceLast(runs []PhaseRun, first int) string {
	for j := first - 1; j >= 0; j-- {
		if !slices.ContainsFunc(runs[j+1:], func(p PhaseRun) bool { return p.Phase == runs[j].Phase }) {
			return runs[j].Phase
		}
	}
	return ""
}

// commonTrait says what the latest runs of runs (two or more, counted back
// from the newest) have in common: the same error, or failed tool calls of
// the same categories; "" when the newest two share neither.
func commonTrait(runs []PhaseRun) string {
	newest := runs[len(runs)-1]
	alike := func(p PhaseRun) bool {
		switch {
		case newest.Failed:
			return p.Failed && p.Error == newest.Error
		case newest.FailedTools > 0:
			return !p.Failed && p.FailedTools > 0 && slices.Equal(p.FailedToolCategories, newest.FailedToolCategories)
		}
		return false
	}
	n := 0
	for i := len(runs) - 1; i >= 0 && alike(runs[i]); i-- {
		n++
	}
	if n < 2 {
		return ""
	}
	which := fmt.Sprintf("the last %d", n)
	if n == len(runs) {
		which = "each time"
	}
	switch {
	case newest.Failed && newest.Error != "":
		return fmt.Sprintf("%s failing with the same error: %s", which, newest.Error)
	case newest.Failed:
		return which + " failing"
	case len(newest.FailedToolCategories) > 0:
		return fmt.Sprintf("%s with failed tool calls in the %s %s", which, plural(len(newest.FailedToolCategories), "category", "categories"),
			strings.Join(newest.FailedToolCategories, ", "))
	}
	return which + " with failed tool calls"
}

// laneReturnsFact says the job went back to lanes it had left, within the
// recent window, as the judges' objective rule counts it: "the job went
// back to an earlier lane 2 times in the last 8 phase runs: refactor →
// feature → refactor → feature".
func laneReturnsFact(t Trajectory) string {
	returns := judge.PingPongs(t)
	if returns == 0 {
		return ""
	}
	windowStart := t.PhaseRuns - len(t.RecentPhases)
	var path []string
	for _, sw := range t.RecentLaneSwitches {
		if sw.AtRun <= windowStart {
			continue
		}
		if len(path) == 0 {
			path = append(path, sw.From)
		}
		path = append(path, sw.To)
	}
	s := fmt.Sprintf("the job went back to an earlier lane %s in %s", times(returns), windowText(t))
	if len(path) > 1 {
		s += ": " + strings.Join(path, " → ")
	}
	return s
}

// reopenedFact says which work items were reopened, most often first, as
// the learned judge's progress rule counts them: "work item W-2 was
// reopened 3 times".
func reopenedFact(t Trajectory) string {
	items := slices.DeleteFunc(slices.Clone(t.WorkItems), func(w WorkItem) bool { return w.Loops == 0 })
	if len(items) == 0 {
		return ""
	}
	// Most reopened first; among equals the most recently updated (last
	// in WorkItems) first.
	slices.Reverse(items)
	slices.SortStableFunc(items, func(x, y WorkItem) int { return y.Loops - x.Loops })
	if len(items) == 1 {
		return fmt.Sprintf("work item %s was reopened %s", items[0].ID, times(items[0].Loops))
	}
	parts := make([]string, 0, 3)
	for _, w := range items[:min(3, len(items))] {
		parts = append(parts, fmt.Sprintf("%s (%s)", w.ID, times(w.Loops)))
	}
	s := fmt.Sprintf("%d work items were reopened: %s", len(items), strings.Join(parts, ", "))
	if len(items) > 3 {
		s += ", …"
	}
	return s
}

// hiddenFailuresFact says the latest phase succeeded with failed tool
// calls, as the heuristic judge's surfaced-failures rule counts them.
func hiddenFailuresFact(t Trajectory) string {
	run, ok := last(t)
	if !ok || run.Failed || run.FailedTools == 0 {
		return ""
	}
	s := fmt.Sprintf("%s succeeded although %d of its tool calls failed", run.Phase, run.FailedTools)
	if len(run.FailedToolCategories) > 0 {
		s += fmt.Sprintf(" (%s %s)", plural(len(run.FailedToolCategories), "category", "categories"), strings.Join(run.FailedToolCategories, ", "))
	}
	return s
}

// reworkFact says how much earlier work the recent phase runs redid.
func reworkFact(t Trajectory) string {
	units, runs := 0, 0
	for _, p := range t.RecentPhases {
		if p.Rework > 0 {
			units += p.Rework
			runs++
		}
	}
	if units == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %s redid earlier work (%d %s of rework)", runs, windowText(t), units, plural(units, "unit", "units"))
}

// windowText names the recent window of phase runs: "the last 8 phase
// runs", or "the job's 5 phase runs" when it holds all of them.
func windowText(t Trajectory) string {
	if len(t.RecentPhases) == t.PhaseRuns {
		return fmt.Sprintf("the job's %d phase %s", t.PhaseRuns, plural(t.PhaseRuns, "run", "runs"))
	}
	return fmt.Sprintf("the last %d phase runs", len(t.RecentPhases))
}

func samePhase(runs []PhaseRun, phase string) bool {
	return !slices.ContainsFunc(runs, func(p PhaseRun) bool { return p.Phase != phase })
}

func sameError(runs []PhaseRun) bool {
	return !slices.ContainsFunc(runs, func(p PhaseRun) bool { return p.Error != runs[0].Error })
}

func phaseList(runs []PhaseRun) string {
	names := make([]string, len(runs))
	for i, p := range runs {
		names[i] = p.Phase
	}
	return strings.Join(names, ", ")
}

// codeList quotes names as code: "`patch`", "`patch` and `tests`".
func codeList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + n + "`"
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func orUnknown(phase string) string {
	if phase == "" {
		return "the phase"
	}
	return phase
}

// loopCallsEvidence is the evidence of a flag on an agent loop: what the calls
// did first ("bash failed 5 of its last 6 calls, the same error each
// time: exit status 1"; the same call answered the same way; no new
// command for a while; the run's failures so far), then the rule's
// figure. An agent loop has no phases of work: no fact about re-run
// phases or rework is said of it.
func loopCallsEvidence(t Trajectory, a Answers, p Policy) []string {
	var out []string
	facts := []string{loopFailureFact(t), sameCallFact(t), sinceNewFact(t)}
	if t.Loop.ToolCalls > toolCallsInWindow(t) {
		facts = append(facts, runFailuresFact(t)) // the window does not say it all
	}
	for _, f := range facts {
		if f != "" && len(out) < maxEvidence-1 {
			out = append(out, f)
		}
	}
	if !a.OnObjectiveUnknown && a.OnObjective <= p.PauseAtOrBelow {
		out = append(out, onObjectiveFact(a, p))
	} else if len(out) == 0 {
		out = breachFacts(t, a)
	}
	return out
}

// loopFailureFact says how the latest failing tool's recent calls went:
// "bash failed 5 of its last 6 calls, the same error each time: exit
// status 1"; "" when the latest tool call did not fail.
func loopFailureFact(t Trajectory) string {
	var tool string
	for i := len(t.RecentPhases) - 1; i >= 0; i-- {
		if r := t.RecentPhases[i]; !trajectory.IsModelCall(r.Phase) {
			if r.CallFailed() {
				tool = r.Phase
			}
			break
		}
	}
	if tool == "" {
		return ""
	}
	calls, failed := 0, 0
	for _, r := range t.RecentPhases {
		if r.Phase == tool {
			calls++
			if r.CallFailed() {
				failed++
			}
		}
	}
	var s string
	switch {
	case calls == 1:
		s = fmt.Sprintf("%s failed its last call", tool)
	case failed == calls:
		s = fmt.Sprintf("%s failed each of its last %d calls", tool, calls)
	default:
		s = fmt.Sprintf("%s failed %d of its last %d calls", tool, failed, calls)
	}
	switch n := t.Loop.SameErrorStreak; {
	case t.Loop.LastError == "":
	case n > 1 && n >= failed:
		s += ", the same error each time: " + t.Loop.LastError
	case n > 1:
		s += fmt.Sprintf("; the last %d with the same error: %s", n, t.Loop.LastError)
	default:
		s += ": " + t.Loop.LastError
	}
	return s
}

// sinceNewFact says the loop has made no new tool call for a while (at
// least 5 calls).
func sinceNewFact(t Trajectory) string {
	if n := t.Loop.SinceNew; n >= 5 {
		return fmt.Sprintf("no new command and no tool recovering from a failure in the last %d tool calls", n)
	}
	return ""
}

// runFailuresFact says the tool calls that failed over the whole run.
func runFailuresFact(t Trajectory) string {
	s := t.Loop
	if s.ToolFailures == 0 {
		return ""
	}
	f := fmt.Sprintf("%d of the run's %d tool calls failed", s.ToolFailures, s.ToolCalls)
	if s.ReportedFailures > 0 {
		f += fmt.Sprintf(" (%d of them returned as results)", s.ReportedFailures)
	}
	return f
}

// toolCallsInWindow counts the tool calls in the recent window.
func toolCallsInWindow(t Trajectory) int {
	n := 0
	for _, r := range t.RecentPhases {
		if !trajectory.IsModelCall(r.Phase) {
			n++
		}
	}
	return n
}
