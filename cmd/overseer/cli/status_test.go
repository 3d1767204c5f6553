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

// An agent loop's status speaks of calls; a job of phases' of phases.
func TestStatusTextOfAnAgentLoopSpeaksOfCalls(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		shape overseer.Shape
		want  []string
	}{
		{overseer.ShapeAgentLoop, []string{"Last call", "Next call note", "10 calls, 10 assessments", "Gate run_tests-1: paused after call run_tests"}},
		{"", []string{"Last phase", "Next phase note", "10 phases, 10 assessments", "Gate run_tests-1: paused after run_tests"}},
	} {
		s := overseer.Status{Mode: overseer.ModeManage, Shape: tc.shape, Phase: "run_tests", Paused: true, PausedSince: &t0, GateID: "run_tests-1",
			PendingNote: "Process note", Assessments: []overseer.Assessment{}, Counters: overseer.Counters{Phases: 10, Assessments: 10},
			Gates: []overseer.Gate{{ID: "run_tests-1", Phase: "run_tests", Reason: "off track", PausedAt: t0}}}
		var out bytes.Buffer
		writeStatus(&out, "job-1", s, "")
		for _, w := range tc.want {
			assert.Contains(t, out.String(), w, "shape %q", tc.shape)
		}
	}
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

// The status text shows the basis, who may resume, an open gate's deadline,
// an escalation and an expiry by its rule (not a resume "by" nobody).
func TestStatusTextShowsBasisApprovalDeadlineAndExpiry(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	esc, closed, deadline := t0.Add(24*time.Hour), t0.Add(72*time.Hour), t0.Add(96*time.Hour)
	s := overseer.Status{
		Mode: overseer.ModeManage, Assessed: true, Band: overseer.BandUnknown, Basis: "not assessed: the trajectory lacks the inputs of every sub-model",
		Approval: overseer.Approval{Approvers: []string{"alice", "group:sre"}, FourEyes: true},
		Paused:   true, PausedSince: &closed, PauseReason: "off track", GateID: "test-2", GateDeadline: &deadline,
		Assessments: []overseer.Assessment{{Seq: 1, Phase: "code", Answers: &overseer.Answers{OnObjectiveUnknown: true, Breach: overseer.BreachNone},
			Verdict: &overseer.Verdict{Band: overseer.BandUnknown}, Model: "m/telemetry"}},
		Gates: []overseer.Gate{
			{ID: "code-1", Phase: "code", Reason: "off track", PausedAt: t0, EscalatedAt: &esc, EscalatedBy: "deadline 24h: escalate",
				Expired: true, ExpiredBy: "deadline 72h: abort", ExpiredLate: 5100 * time.Millisecond, ResumedAt: &closed, Action: overseer.ActionAbort},
			{ID: "test-2", Phase: "test", Reason: "off track", PausedAt: closed, Deadline: &deadline},
		},
	}
	var out bytes.Buffer
	writeStatus(&out, "job-1", s, "")
	text := out.String()
	assert.Regexp(t, `Basis\s+not assessed: the trajectory lacks`, text)
	assert.Regexp(t, `Who may resume\s+alice, group:sre \(not the job's starter\)`, text)
	assert.Regexp(t, `Gate deadline\s+2026-12-04T10:00:00Z`, text)
	assert.Regexp(t, `1\s+code\s+Not assessed\s+-\s`, text, "no P where the judge abstained")
	assert.Contains(t, text, "escalated at 2026-12-01T10:00:00Z (deadline 24h: escalate)\n", "one on time says nothing more")
	assert.Contains(t, text, "expired at 2026-12-03T10:00:00Z (deadline 72h: abort, 5.1s late): abort", "an expiry that came late says how late")
	assert.NotContains(t, text, "abort by  at", "an expiry is not a resume by nobody")
	assert.Contains(t, text, "deadline 2026-12-04T10:00:00Z")
}

// A job its gate's deadline aborted says which deadline did it (not "by"
// nobody), and a failed or closed job lists nobody who may resume it.
func TestStatusOfAJobAbortedByItsDeadline(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	esc, closed := t0.Add(24*time.Hour), t0.Add(72*time.Hour)
	s := overseer.Status{
		Mode: overseer.ModeManage, Phase: "code", Assessments: []overseer.Assessment{},
		Approval: overseer.Approval{Approvers: []string{"alice"}, FourEyes: true},
		Gates: []overseer.Gate{{ID: "code-1", Phase: "code", Reason: "off track", PausedAt: t0, EscalatedAt: &esc,
			EscalatedBy: "deadline 24h: escalate", Expired: true, ExpiredBy: "deadline 72h: abort", ExpiredLate: 2 * time.Second,
			ResumedAt: &closed, Action: overseer.ActionAbort}},
	}
	for _, state := range []string{"failed", ""} {
		var out bytes.Buffer
		writeStatus(&out, "job-1", s, state)
		text := out.String()
		assert.Regexp(t, `Outcome\s+aborted by its deadline \(deadline 72h: abort, 2s late\) at 2026-12-03T10:00:00Z after code\n`, text, state)
		assert.NotContains(t, text, "aborted by  at", state)
		assert.NotContains(t, text, "Who may resume", "an aborted job has no gate to open (%q)", state)
	}

	// A job closed otherwise (terminated, here) has none either.
	s.Gates = nil
	var out bytes.Buffer
	writeStatus(&out, "job-1", s, "terminated")
	assert.NotContains(t, out.String(), "Who may resume")
}

// An escalated gate's pause lines say when and by which rule it escalated,
// and what its final deadline will do.
func TestStatusTextOfAnEscalatedGate(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	esc, final := t0.Add(24*time.Hour+3*time.Second), t0.Add(72*time.Hour)
	s := overseer.Status{
		Mode: overseer.ModeManage, Paused: true, PausedSince: &t0, PauseReason: "off track", GateID: "code-1", GateDeadline: &final,
		Assessments: []overseer.Assessment{},
		Gates: []overseer.Gate{{ID: "code-1", Phase: "code", Reason: "off track", PausedAt: t0, EscalatedAt: &esc,
			EscalatedBy: "deadline 24h: escalate", EscalatedLate: 3 * time.Second, Deadline: &final, DeadlineBy: "deadline 72h: abort"}},
	}
	var out bytes.Buffer
	writeStatus(&out, "job-1", s, "")
	text := out.String()
	assert.Regexp(t, `\nEscalated\s+2026-12-01T10:00:03Z \(deadline 24h: escalate, 3s late\): nobody had resumed it by then\n`, text)
	assert.Regexp(t, `Gate deadline\s+2026-12-03T10:00:00Z \(deadline 72h: abort\)\n`, text)
}
