package activities

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/overseer"
)

// RecordedActivityPrefix begins the activity type of every phase of a
// recorded run: "recorded.<phase>", so that the overseer sees the recorded
// phase's own name ("edit", "test", "Programmer"), whatever the importer
// called it.
const RecordedActivityPrefix = "recorded."

// RecordedActivityName is the activity type of a recorded phase.
func RecordedActivityName(phase string) string { return RecordedActivityPrefix + phase }

// RecordedPhase is one phase run of a recorded agent run: its name, the
// agent steps it grouped, how long it took when it was recorded (zero when
// the run has no timestamps) and the report the plugin reads from it.
type RecordedPhase struct {
	Phase    string               `json:"phase"`
	Steps    int                  `json:"steps"`
	Duration time.Duration        `json:"duration,omitempty"`
	Report   overseer.PhaseReport `json:"report"`
}

// RecordedPhaseInput is what one recorded phase activity receives.
type RecordedPhaseInput struct {
	// Run is the recorded run's id; Index the phase's place in it, from 0.
	Run   string `json:"run"`
	Index int    `json:"index"`
	Phase string `json:"phase"`
	// Work is how long the phase takes now (the recorded time over the
	// speed factor).
	Work   time.Duration        `json:"work"`
	Report overseer.PhaseReport `json:"report"`
}

// RecordedPhaseOutput is what a recorded phase returns: the recorded
// report, under "overseer_report".
type RecordedPhaseOutput struct {
	overseer.ReportCarrier
	Run   string `json:"run"`
	Index int    `json:"index"`
	Phase string `json:"phase"`
}

// Recorded plays the phases of recorded runs. It takes no note: a
// recording cannot change, so its input does not implement
// overseer.NoteReceiver.
type Recorded struct{}

// Register registers the recorded phases as the worker's dynamic activity:
// a recorded run's phase names are whatever its agent's were, so they
// cannot be listed in advance. Any other unregistered activity type fails
// its attempt, retryably.
func (r *Recorded) Register(w worker.ActivityRegistry) {
	w.RegisterDynamicActivity(r.dynamic, activity.DynamicRegisterOptions{})
}

func (r *Recorded) dynamic(ctx context.Context, args converter.EncodedValues) (RecordedPhaseOutput, error) {
	typ := activity.GetInfo(ctx).ActivityType.Name
	if !strings.HasPrefix(typ, RecordedActivityPrefix) {
		// Retryable, as the SDK's own error for an unregistered type is: a
		// worker of the same task queue that has it may take the retry.
		return RecordedPhaseOutput{}, temporal.NewApplicationError(
			fmt.Sprintf("no activity %q is registered on this worker", typ), "UnknownActivity")
	}
	var in RecordedPhaseInput
	if err := args.Get(&in); err != nil {
		return RecordedPhaseOutput{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("recorded phase %s: bad input: %v", typ, err), "InvalidPhaseInput", nil)
	}
	return r.Run(ctx, in)
}

// Run plays one recorded phase: it waits in.Work, then returns the
// recorded report.
func (r *Recorded) Run(ctx context.Context, in RecordedPhaseInput) (RecordedPhaseOutput, error) {
	if in.Work > 0 {
		t := time.NewTimer(in.Work)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return RecordedPhaseOutput{}, ctx.Err()
		}
	}
	rep := in.Report
	return RecordedPhaseOutput{ReportCarrier: overseer.ReportCarrier{OverseerReport: &rep}, Run: in.Run, Index: in.Index, Phase: in.Phase}, nil
}
