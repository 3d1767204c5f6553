package overseer

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheSummaryStaysSmallWithManyGatesAndLongEvidence: however many gates
// are open and however long their evidence, the summary holds the oldest
// few, counts the rest and clips every text.
func TestTheSummaryStaysSmallWithManyGatesAndLongEvidence(t *testing.T) {
	r := &run{loop: true, st: Status{Mode: ModeManage, Basis: strings.Repeat("telemetry sub-model ", 20)}}
	start := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for i := 10; i > 0; i-- {
		r.open = append(r.open, &Gate{ID: fmt.Sprintf("code-%d", i), Phase: "code", PausedAt: start.Add(time.Duration(i) * time.Minute),
			Evidence: []string{strings.Repeat("the agent repeated the same failing test run ", 20)}})
	}
	s := r.summary()
	require.Len(t, s.Gates, maxSummaryGates)
	assert.Equal(t, 10-maxSummaryGates, s.MoreGates)
	assert.Equal(t, "code-1", s.Gates[0].ID, "oldest first")
	for _, g := range s.Gates {
		assert.LessOrEqual(t, len(g.Why), maxSummaryText+len("…"))
	}
	assert.LessOrEqual(t, len(s.Basis), maxSummaryBasis+len("…"))
	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.Less(t, len(b), 1024, "%s", b)
}

// The approvers past the eighth are counted, not dropped silently, and the
// starter (whom the starter names) is clipped like every other text.
func TestTheSummaryCountsTheApproversItLeavesOutAndClipsTheStarter(t *testing.T) {
	var approvers []string
	for i := 1; i <= 10; i++ {
		approvers = append(approvers, fmt.Sprintf("approver%d@example.com", i))
	}
	r := &run{loop: true, st: Status{Mode: ModeManage, Approval: Approval{Approvers: approvers, FourEyes: true},
		StartedBy: strings.Repeat("a very long starter name ", 4000)}}
	s := r.summary()
	assert.Len(t, s.Approval.Approvers, maxSummaryApprovers)
	assert.Equal(t, 2, s.MoreApprovers)
	assert.LessOrEqual(t, len(s.StartedBy), maxSummaryText+len("…"))
	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.Less(t, len(b), 1024, "%s", b)
}
