package cli

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
)

// The status of a paused job says what happened before the rule that
// fired, and each gate of its history says it in one line.
func TestStatusTextSaysTheEvidenceFirst(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	reason := `obligation[2] "The phase made progress instead of repeating earlier work." appears unmet (confidence 0.60, severity 1.8 ≈ Review)`
	evidence := []string{"test ran 4 times in the last 8 phase runs, each time with failed tool calls in the category pytest",
		"test succeeded although 1 of its tool calls failed (category pytest)"}
	s := overseer.Status{Mode: overseer.ModeManage, Paused: true, PausedSince: &t0, PauseReason: reason, GateID: "test-1",
		Assessments: []overseer.Assessment{},
		Gates:       []overseer.Gate{{ID: "test-1", Phase: "test", Reason: reason, Evidence: evidence, PausedAt: t0}}}
	var out bytes.Buffer
	writeStatus(&out, "job-1", s, "")
	text := out.String()
	first, second, rule := strings.Index(text, "What happened  "+evidence[0]+"\n"), strings.Index(text, evidence[1]+"\n"), strings.Index(text, "Pause reason")
	require.GreaterOrEqual(t, first, 0, text)
	assert.Less(t, first, second, text)
	assert.Less(t, second, rule, "the evidence comes before the rule:\n%s", text)
	assert.Regexp(t, `\n\s+`+regexp.QuoteMeta(evidence[1])+`\n`, text, "its further sentences are rows without a label")
	assert.Contains(t, text, "\nGate test-1: paused after test at 2026-11-30T10:00:00Z: "+evidence[0]+"; "+evidence[1]+"\n")

	// A gate recorded before evidence existed says its reason.
	s.Gates[0].Evidence = nil
	out.Reset()
	writeStatus(&out, "job-1", s, "")
	assert.NotContains(t, out.String(), "What happened")
	assert.Contains(t, out.String(), "\nGate test-1: paused after test at 2026-11-30T10:00:00Z: "+reason+"\n")
}

// The demos print a pause's evidence first and its rule under it.
func TestDemoPauseLinesSayTheEvidenceFirst(t *testing.T) {
	var out bytes.Buffer
	writePause(&out, "looping", 10, "test", []string{"test ran 4 times since the last plan", "work item W-2 was reopened twice"},
		`obligation[2] "The phase made progress instead of repeating earlier work." appears unmet (confidence 0.60, severity 1.8 ≈ Review)`)
	assert.Equal(t, "looping    ⏸  PAUSED after test: test ran 4 times since the last plan; work item W-2 was reopened twice\n"+
		`looping       rule: obligation[2] "The phase made progress instead of repeating earlier work." appears unmet (confidence 0.60, severity 1.8 ≈ Review)`+"\n",
		out.String())

	out.Reset()
	writePause(&out, "old", 5, "code", nil, "P(on objective) 0.100 is at or below the pause threshold 0.250")
	assert.Equal(t, "old   ⏸  PAUSED after code: P(on objective) 0.100 is at or below the pause threshold 0.250\n", out.String())
}
