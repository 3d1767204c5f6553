package eval

import "time"

// Phase is one phase run: consecutive actions of one class. Its end is a
// phase boundary, where the overseer would assess the job.
type Phase struct {
	Class Class
	// First and End index the phase's actions in the trace: [First, End).
	First, End int
	// FailedTools lists the category of each failed action (see
	// [Action.FailureCategory]).
	FailedTools []string
	// Rework is true for an edit run that redoes tested work: an earlier
	// edit run exists and a test run came after it.
	Rework bool
	// Looping is true for a run of a class other than edit and submit that
	// already ran since the last edit run (or since the start): the agent
	// repeats an activity without new edits.
	Looping bool
	// Duration runs from the phase's first action to the next phase's
	// first action (to its own last action for the last phase).
	Duration time.Duration
	CostUSD  float64
}

// Turns is the number of assistant turns in the phase.
func (p Phase) Turns() int { return p.End - p.First }

// Phases groups a run's actions into phase runs. A turn the harness
// rejected (format error) has no class: it belongs to the phase in progress,
// or to the first phase when it comes before any action.
func Phases(actions []Action) []Phase {
	var phases []Phase
	var leading []int // format errors before the first classified action
	for i, a := range actions {
		if a.FormatError {
			if n := len(phases); n > 0 {
				p := &phases[n-1]
				p.End = i + 1
				p.FailedTools = append(p.FailedTools, a.FailureCategory())
				p.CostUSD += a.CostUSD
			} else {
				leading = append(leading, i)
			}
			continue
		}
		if n := len(phases); n > 0 && phases[n-1].Class == a.Class {
			phases[n-1].End = i + 1
		} else {
			p := Phase{Class: a.Class, First: i, End: i + 1}
			if len(phases) == 0 && len(leading) > 0 {
				p.First = leading[0]
				for _, j := range leading {
					p.FailedTools = append(p.FailedTools, actions[j].FailureCategory())
					p.CostUSD += actions[j].CostUSD
				}
			}
			phases = append(phases, p)
		}
		p := &phases[len(phases)-1]
		p.CostUSD += a.CostUSD
		if a.Failed() {
			p.FailedTools = append(p.FailedTools, a.FailureCategory())
		}
	}
	for i := range phases {
		p := &phases[i]
		start, end := actions[p.First].At, actions[p.End-1].At
		if i+1 < len(phases) {
			end = actions[phases[i+1].First].At
		}
		if !start.IsZero() && end.After(start) {
			p.Duration = end.Sub(start)
		}
	}
	markReworkAndLoops(phases)
	return phases
}

func markReworkAndLoops(phases []Phase) {
	editSeen, testedSinceEdit := false, false
	seen := map[Class]bool{}
	for i := range phases {
		p := &phases[i]
		switch p.Class {
		case Edit:
			p.Rework = editSeen && testedSinceEdit
			editSeen, testedSinceEdit = true, false
			clear(seen)
		case Submit:
		default:
			p.Looping = seen[p.Class]
			seen[p.Class] = true
			if p.Class == Test {
				testedSinceEdit = true
			}
		}
	}
}
