package trajectory

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// digestFmt is the fmt version of Digest, kept to check Digest against.
func (t Trajectory) digestFmt() string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s", t.Phase)
	if t.Lane != "" {
		fmt.Fprintf(&b, " (lane %s)", t.Lane)
	}
	fmt.Fprintf(&b, "; %d phase runs, %d repeats, %d failed (streak %d)", t.PhaseRuns, t.Repeats, t.FailedPhases, t.FailureStreak)
	if t.Turns > 0 || t.CostUSD > 0 {
		fmt.Fprintf(&b, "; %d turns, $%.2f", t.Turns, t.CostUSD)
	}
	if t.InputTokens > 0 || t.OutputTokens > 0 {
		fmt.Fprintf(&b, "; tokens %d in, %d out", t.InputTokens, t.OutputTokens)
	}
	if t.Rework > 0 {
		fmt.Fprintf(&b, "; rework %d", t.Rework)
	}
	if t.MissingOutputs > 0 {
		fmt.Fprintf(&b, "; %d phases without required output", t.MissingOutputs)
	}
	if t.LaneSwitches > 0 {
		fmt.Fprintf(&b, "; %d lane switches", t.LaneSwitches)
	}
	if len(t.FailedToolCategories) > 0 {
		parts := make([]string, len(t.FailedToolCategories))
		for i, c := range t.FailedToolCategories {
			parts[i] = fmt.Sprintf("%s×%d", c.Name, c.Count)
		}
		fmt.Fprintf(&b, "; failed tools: %s", strings.Join(parts, ", "))
	}
	if n := len(t.WorkItems); n > 0 {
		loops := 0
		for _, w := range t.WorkItems {
			loops += w.Loops
		}
		fmt.Fprintf(&b, "; %d work items (%d loops)", n, loops)
	}
	if n := len(t.OpenPullRequests); n > 0 {
		fmt.Fprintf(&b, "; %d open PRs", n)
	}
	return b.String()
}

// Digest writes, without fmt, exactly what the fmt version wrote: histories
// and statuses keep the same text.
func TestDigestMatchesTheFmtVersion(t *testing.T) {
	var tr Trajectory
	assert.Equal(t, tr.digestFmt(), tr.Digest())
	for i := range 60 {
		if i%7 == 3 {
			tr.SetLane(fmt.Sprintf("lane-%d", i%3))
		}
		if i%5 == 1 {
			tr.SetWorkItem(fmt.Sprintf("W-%d", i), []string{"in_progress", "done", "review"}[i%3])
		}
		report := &PhaseReport{Turns: i % 4, CostUSD: float64(i) * 0.0137, InputTokens: int64(i * 31), OutputTokens: int64(i), Rework: i % 2,
			OutputMissing: i%9 == 0, FailedToolCategories: []string{"test", "büild"}[:i%3%2+i%2], OpenPullRequests: []string{"#1", "#2"}[:i%3%2]}
		if i%4 == 0 {
			report = nil
		}
		tr.RecordPhase(PhaseRun{Phase: fmt.Sprintf("phase-%d", i%5), Failed: i%6 == 0}, report)
		assert.Equal(t, tr.digestFmt(), tr.Digest(), "after phase %d", i)
	}
	tr.CostUSD, tr.Turns = 2.675, 0 // rounding as %.2f rounds
	assert.Equal(t, tr.digestFmt(), tr.Digest())
}
