package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/corohq/temporal-overseer/overseer"
)

func TestStatusTextShowsObjectiveInPhaseAdviceAndAbort(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	resumed := t0.Add(time.Hour)
	s := overseer.Status{
		Mode: overseer.ModeManage, Objective: "Add CSV export", Phase: "code", Assessments: []overseer.Assessment{},
		Gates: []overseer.Gate{{ID: "code-1", Phase: "code", Reason: "off track", PausedAt: t0, ResumedAt: &resumed,
			By: "alice", Action: overseer.ActionAbort}},
		InPhase: []overseer.InPhaseAdvice{{ActivityType: "coro.code", ActivityID: "7", Assessment: 3, Advice: "REQUEST_VERIFICATION",
			Status: "DECIDED", Reason: "CURRENT_VERIFICATION_REQUIRED", Final: true, At: t0}},
	}
	var out bytes.Buffer
	writeStatus(&out, "job-1", s, "")
	text := out.String()
	assert.Regexp(t, `Objective\s+Add CSV export`, text)
	assert.Regexp(t, `Outcome\s+aborted by alice at 2026-11-30T11:00:00Z after code`, text)
	assert.Contains(t, text, "In-phase advice")
	assert.Regexp(t, `coro\.code 7\s+REQUEST_VERIFICATION\s+DECIDED\s+CURRENT_VERIFICATION_REQUIRED\s+3 \(final\)`, text)
	assert.NotContains(t, text, "Next phase note")
}

// A job terminated at a gate still reports the pause it last recorded (no
// code ran to clear it); the status says it closed and offers no resume.
func TestStatusOfAJobClosedAtAGate(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	s := overseer.Status{Mode: overseer.ModeManage, Paused: true, PausedSince: &t0, PauseReason: "off track", GateID: "code-1",
		Assessments: []overseer.Assessment{}}
	var out bytes.Buffer
	writeStatus(&out, "job-1", s, "terminated")
	text := out.String()
	assert.Regexp(t, `Status\s+terminated while paused at gate code-1: nothing to resume`, text)
	assert.Regexp(t, `Temporal\s+terminated`, text)
	assert.NotContains(t, text, "overseer resume", "no resume command for a closed job")

	out.Reset()
	writeStatus(&out, "job-1", s, "")
	assert.Regexp(t, `Status\s+Paused`, out.String())
	assert.Contains(t, out.String(), "overseer resume job-1 --gate code-1", "a running job at a gate gets its resume command")
}
