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
	writeStatus(&out, "job-1", s)
	text := out.String()
	assert.Regexp(t, `Objective\s+Add CSV export`, text)
	assert.Regexp(t, `Outcome\s+aborted by alice at 2026-11-30T11:00:00Z after code`, text)
	assert.Contains(t, text, "In-phase advice")
	assert.Regexp(t, `coro\.code 7\s+REQUEST_VERIFICATION\s+DECIDED\s+CURRENT_VERIFICATION_REQUIRED\s+3 \(final\)`, text)
	assert.NotContains(t, text, "Next phase note")
}
