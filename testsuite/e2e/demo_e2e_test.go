package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/cmd/overseer/cli"
)

// TestDemoTellsTheTruth runs `overseer demo` with the default model and
// settings, as a newcomer does: the healthy job ends On track, the drifting
// and looping ones end Off track or paused, and every verdict names its
// basis and calibration stage.
func TestDemoTellsTheTruth(t *testing.T) {
	skipOnCluster(t) // the demo starts its own dev server
	requireCLI(t)
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), []string{"demo", "--agent-work", "20ms", "--review-delay", "100ms", "--retry-delay", "200ms"}, &out, &errOut)
	require.Equal(t, 0, code, "stdout %s\nstderr %s", out.String(), errOut.String())

	summary := regexp.MustCompile(`(?m)^demo-(\w+)-\d+\s+(\w+)\s+((?:On track|Needs a look|Off track)(?:, \d+%)?)\s+(.+?, stage \d+)\s+(\d+)\s+(\d+)\s+(\d+)\s`)
	rows := map[string][]string{}
	for _, m := range summary.FindAllStringSubmatch(out.String(), -1) {
		rows[m[1]] = m
	}
	require.Len(t, rows, 4, out.String())
	assert.True(t, strings.HasPrefix(rows["on_track"][3], "On track"), "on_track ends %q", rows["on_track"][3])
	for _, sc := range []string{"drifting", "looping"} {
		pauses, err := strconv.Atoi(rows[sc][5])
		require.NoError(t, err)
		assert.True(t, pauses > 0 || strings.HasPrefix(rows[sc][3], "Off track"), "%s ends %q after %d pauses", sc, rows[sc][3], pauses)
	}
	for sc, row := range rows {
		assert.Equal(t, "telemetry sub-model, stage 0", row[4], "%s's final basis", sc)
	}
	// Resumed with notes that redirect them, the pauses were needed: no
	// false pause (on_track's reviewer calls a pause of its a false alarm).
	resumes := strings.Count(out.String(), "▶  resumed by demo-reviewer")
	assert.Equal(t, resumes, strings.Count(out.String(), "pause needed: a continue with a note counts as needed\n")+
		strings.Count(out.String(), "pause not needed (a false alarm), the reviewer said\n"), "each resume says its judgement")
	if rows["on_track"][5] == "0" && resumes > 0 {
		// The budgeted loop's stop is said apart from the judge's pauses.
		budgetStops := strings.Count(out.String(), "(budget raised to ")
		assert.Contains(t, out.String(), fmt.Sprintf("False pauses: none; each of the judge's %d pauses was judged needed", resumes-budgetStops))
		assert.Contains(t, out.String(), fmt.Sprintf("Apart from them, %d stop at a budget.", budgetStops))
	}
	// The agent loops: a new type, judged by the agent-loop rules until the
	// loop model has its own succeeded runs to read them against; the
	// healthy one never paused, the failing and the looping ones did.
	loops := map[string][]string{}
	loopRow := regexp.MustCompile(`(?m)^demo-agent-loop-(\w+)-\d+\s+(done|gave up)\s+((?:On track|Needs a look|Off track)(?:, \d+%)?)\s+(agent-loop rules, stage 0)\s+(\d+)\s+(\d+)\s+(\d+)\s`)
	for _, m := range loopRow.FindAllStringSubmatch(out.String(), -1) {
		loops[m[1]] = m
	}
	require.Len(t, loops, 5, out.String())
	assert.Equal(t, []string{"done", "0"}, []string{loops["healthy"][2], loops["healthy"][5]})
	assert.True(t, strings.HasPrefix(loops["healthy"][3], "On track"), loops["healthy"][3])
	assert.Equal(t, "done", loops["blocked"][2], "the reviewer's note unblocked it")
	for _, sc := range []string{"tool_failing", "looping", "blocked"} {
		assert.NotEqual(t, "0", loops[sc][5], "%s paused", sc)
	}
	// A loop's note is for its next call, and names the call.
	assert.Regexp(t, `(?m)^loop/tool_failing\s+note for the next call: Process note from the overseer: the last call \(run_tests\) was flagged: run_tests failed`, out.String())
	assert.Regexp(t, `(?m)^looping\s+note for the next phase: Process note from the overseer: the previous phase \(test\) was flagged`, out.String())
	// The budgeted loop (healthy, 6,000 tokens) stopped once, at its
	// budget, and finished with the raised one.
	assert.Equal(t, []string{"done", "1"}, []string{loops["budget"][2], loops["budget"][5]})
	assert.Regexp(t, `(?m)^budget\s+⏸  PAUSED after model: the job spent \d+ tokens of its budget of 6000 tokens \(\d+%\)$`, out.String())
	assert.Contains(t, out.String(), `budget     ▶  resumed by demo-reviewer: "Worth finishing: the budget is raised. (budget raised to 20000 tokens)"`)
	verdicts := regexp.MustCompile(`(?m)^\w+\s+\w+\s+(On track|Needs a look|Off track)\s+P\(on objective\) \S+\s+basis: (.*)$`).FindAllStringSubmatch(out.String(), -1)
	require.NotEmpty(t, verdicts)
	for _, v := range verdicts {
		assert.Regexp(t, `(sub-model|agent-loop rules), stage 0`, v[2], "every verdict names its basis and stage: %q", v[0])
	}
}
