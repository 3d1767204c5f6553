package eval

import (
	"strings"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/workflows"
)

// RecordedJob is the input of the recorded job (workflows.RecordedJob)
// that replays rec: its phase runs as [Record.Boundaries] forms them, each
// with its agent steps, recorded time and report, and its outcome. A dot
// in a phase name becomes "_" (the plugin names a phase by its activity
// type after the last dot). Speed and StepTime are left to the workflow's
// defaults.
func RecordedJob(rec Record) workflows.RecordedJobInput {
	in := workflows.RecordedJobInput{
		Run: rec.ID, Agent: rec.Agent, Family: rec.FamilyName(), Objective: rec.Task.Objective,
		Outcome: string(rec.Outcome),
	}
	prev := 0
	for _, b := range rec.Boundaries() {
		p := activities.RecordedPhase{
			Phase: strings.ReplaceAll(b.Run.Phase, ".", "_"), Steps: b.Steps - prev, Duration: b.Run.Duration,
		}
		if b.Report != nil {
			p.Report = *b.Report
		}
		prev = b.Steps
		in.Phases = append(in.Phases, p)
	}
	return in
}
