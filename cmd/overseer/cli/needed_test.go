package cli

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/corohq/temporal-overseer/overseer"
)

// --needed and --not-needed are refused together, and --not-needed with
// --abort, in one sentence and before any server is dialled.
func TestResumeNeededFlagsRefusedTogetherAndWithAbort(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"job-1", "--by", "ana", "--needed", "--not-needed"}, "give --needed or --not-needed, not both"},
		{[]string{"job-1", "--by", "ana", "--abort", "--not-needed"}, "--not-needed with --abort: a redo or an abort is always a needed pause; drop --not-needed, or continue instead"},
	} {
		var out bytes.Buffer
		err := (&Resume{}).Run(context.Background(), append(tc.args, "--address", "127.0.0.1:1"), &out)
		assert.ErrorIs(t, err, ErrUsage, "%v", tc.args)
		assert.ErrorContains(t, err, tc.want)
	}
}

// The status says of each closed gate whether its pause was needed and
// which rule said so.
func TestStatusSaysWhetherEachPauseWasNeeded(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	at := t0.Add(time.Hour)
	yes, no := true, false
	s := overseer.Status{Mode: overseer.ModeManage, Assessments: []overseer.Assessment{}, Gates: []overseer.Gate{
		{ID: "code-1", Phase: "code", Reason: "off track", PausedAt: t0, ResumedAt: &at, By: "ana", Action: overseer.ActionContinue,
			Note: "find the root cause", Needed: &yes, NeededBy: overseer.NeededByNote},
		{ID: "test-2", Phase: "test", Reason: "off track", PausedAt: t0, ResumedAt: &at, By: "bo", Action: overseer.ActionContinue,
			Needed: &no, NeededBy: overseer.NeededByReviewer},
		{ID: "test-3", Phase: "test", Reason: "off track", PausedAt: t0, ResumedAt: &at, By: "bo", Action: overseer.ActionContinue},
	}}
	var out bytes.Buffer
	writeStatus(&out, "job-1", s, "")
	text := out.String()
	assert.Contains(t, text, "continue by ana at 2026-11-30T11:00:00Z: find the root cause\n  pause needed: a continue with a note counts as needed\n")
	assert.Contains(t, text, "continue by bo at 2026-11-30T11:00:00Z\n  pause not needed (a false alarm), the reviewer said\n")
	assert.NotContains(t, text, "Gate test-3: paused after test at 2026-11-30T10:00:00Z: off track\n  continue by bo at 2026-11-30T11:00:00Z\n  pause", "a gate recorded before the judgement says none")
}
