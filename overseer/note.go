package overseer

import (
	"context"
	"fmt"
	"strings"

	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// Note is the short process-confidence note the next phase receives when
// the previous phase was flagged in manage mode. It describes the process,
// never the quality of the code, and is not fed back to the agent that did
// the flagged phase.
type Note struct {
	// FlaggedPhase is the phase that was flagged.
	FlaggedPhase string  `json:"flagged_phase"`
	OnObjective  float64 `json:"on_objective"`
	// Text is the note itself, ready to put in a prompt.
	Text string `json:"text"`
	// ReviewerNote is what the human who resumed the job wrote, if anything.
	ReviewerNote string `json:"reviewer_note,omitempty"`
	ReviewedBy   string `json:"reviewed_by,omitempty"`
}

// String returns the note with the reviewer's words appended.
func (n Note) String() string {
	if n.ReviewerNote == "" {
		return n.Text
	}
	return fmt.Sprintf("%s Reviewer %s: %s", n.Text, n.ReviewedBy, n.ReviewerNote)
}

// NoteReceiver is implemented by a phase activity's input (a pointer) that
// wants the process note set on it. The interceptor calls SetProcessNote on
// the first argument before scheduling the phase.
type NoteReceiver interface {
	SetProcessNote(Note)
}

type noteKey struct{}

// ProcessNote returns the process note passed to the running phase activity,
// if the previous phase was flagged.
func ProcessNote(ctx context.Context) (Note, bool) {
	n, ok := ctx.Value(noteKey{}).(Note)
	return n, ok
}

// newNote words a flagged verdict as a process signal. On an agent loop
// it names the call and says what the calls did (the gate's first line of
// evidence), not what a phase of work may have done.
func newNote(phase string, shape trajectory.Shape, a Answers, v Verdict, obligations, evidence []string) Note {
	concern := "the work may no longer serve the objective"
	if i, ok := trajectory.ObligationIndex(a.Breach); ok && i < len(obligations) {
		concern = obligationConcern(i, obligations[i])
	}
	flagged := "the previous phase (" + phase + ")"
	if shape == trajectory.ShapeAgentLoop {
		flagged = "the last call (" + phase + ")"
		if len(evidence) > 0 {
			concern = evidence[0]
		}
	}
	text := fmt.Sprintf("Process note from the overseer: %s was flagged: %s; P(on objective)=%.2f. "+
		"This is a process-confidence signal, not a code-quality score.", flagged, concern, v.OnObjective)
	return Note{FlaggedPhase: phase, OnObjective: v.OnObjective, Text: text}
}

func failureNote(phase string, shape trajectory.Shape, failures int) Note {
	step := stepNoun(shape)
	return Note{FlaggedPhase: phase, Text: fmt.Sprintf(
		"Process note from the overseer: the overseer could not assess the last %d %s boundaries (up to %s); "+
			"a person reviewed the job before this %s.", failures, step, phase, step)}
}

func obligationConcern(i int, text string) string {
	if i < len(trajectory.DefaultObligations()) && text == trajectory.DefaultObligations()[i] {
		return [...]string{
			"the phase may not have produced its required output",
			"the work may have drifted from the objective",
			"the phase may have repeated earlier work",
			"failures may have been worked around instead of surfaced",
		}[i]
	}
	return "this obligation may be unmet: " + strings.TrimSuffix(text, ".")
}
