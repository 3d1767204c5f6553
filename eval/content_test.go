package eval_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/workflows"
)

// An excerpt keeps a text within its bytes: its head and its tail, with
// the bytes cut said between them, on rune boundaries.
func TestExcerpt(t *testing.T) {
	assert.Equal(t, "short", eval.Excerpt("short", 100))
	assert.Equal(t, "", eval.Excerpt("anything", 0))
	long := "HEAD " + strings.Repeat("é", 500) + " TAIL"
	got := eval.Excerpt(long, 200)
	assert.LessOrEqual(t, len(got), 200)
	assert.True(t, utf8.ValidString(got))
	assert.True(t, strings.HasPrefix(got, "HEAD "), got)
	assert.True(t, strings.HasSuffix(got, " TAIL"), got)
	m := regexp.MustCompile(`\[… (\d+) bytes cut …\]`).FindStringSubmatch(got)
	require.NotNil(t, m, got)
	assert.Equal(t, len(long)-len(got)+len("\n"+m[0]+"\n"), atoi(t, m[1]), "the note says how many bytes were cut")
	assert.Equal(t, got, eval.Excerpt(long, 200), "a function of its text")
	assert.Len(t, eval.Excerpt(strings.Repeat("x", 50), 10), 10, "too little room for a note: the head")
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	require.NoError(t, json.Unmarshal([]byte(s), &n))
	return n
}

// The mini-swe-agent importer keeps the command, what it printed and the
// model's thought beside their digests.
func TestMiniSWEKeepsTheTexts(t *testing.T) {
	tr, err := eval.ParseTrace([]byte(miniTrace))
	require.NoError(t, err)
	rec := eval.RecordOfTrace(tr, false)
	first := rec.Steps[0]
	assert.Equal(t, "grep -n frob x.py", first.Command)
	assert.Equal(t, eval.Digest("grep -n frob x.py"), first.Call, "the digest is unchanged")
	assert.Equal(t, "THOUGHT: look", first.Message)
	assert.Equal(t, "<returncode>1</returncode>\n<output>\n</output>", first.Printed)
	format := rec.Steps[1]
	assert.Empty(t, format.Command, "a format error ran nothing")
	assert.Contains(t, format.Message, "two blocks", "what the model said instead")
	assert.Equal(t, "Done.", rec.Steps[4].Message)
}

// The SWE-agent and chat importers keep the texts; their steps are known
// by their Text, not by a digest.
func TestSWEAgentAndChatKeepTheTexts(t *testing.T) {
	rec, err := eval.ParseSWEAgent("a-1", []byte(`{"trajectory":[
		{"action":"edit 3:3\n    return x + 1\nend_of_edit","observation":"[File: /repo/a.py (10 lines total)]","thought":"Fix the off-by-one."}]}`), true)
	require.NoError(t, err)
	s := rec.Steps[0]
	assert.Equal(t, "edit 3:3", s.Text)
	assert.Equal(t, "edit 3:3\n    return x + 1\nend_of_edit", s.Command)
	assert.Equal(t, "[File: /repo/a.py (10 lines total)]", s.Printed)
	assert.Equal(t, "Fix the off-by-one.", s.Message)
	assert.Empty(t, s.Call)

	rec, err = eval.ParseOpenAIChat("c-1", []byte(`{"messages":[
		{"role":"user","content":"Fix it."},
		{"role":"assistant","content":"Let me look & see.","tool_calls":[
			{"id":"1","function":{"name":"execute_bash","arguments":"{\"command\":\"cat a.py | grep '<x>'\"}"}},
			{"id":"2","function":{"name":"str_replace_editor","arguments":{"command":"view","path":"/repo/a.py"}}}]},
		{"role":"tool","tool_call_id":"1","content":"x = 1"},
		{"role":"tool","tool_call_id":"2","content":"1\tx = 1"}]}`), false)
	require.NoError(t, err)
	require.Len(t, rec.Steps, 2)
	assert.Equal(t, "cat a.py | grep '<x>'", rec.Steps[0].Command)
	assert.Equal(t, "x = 1", rec.Steps[0].Printed)
	assert.Equal(t, "Let me look & see.", rec.Steps[0].Message)
	assert.Equal(t, `str_replace_editor {"command":"view","path":"/repo/a.py"}`, rec.Steps[1].Command)
	assert.Equal(t, "1\tx = 1", rec.Steps[1].Printed)
	assert.Empty(t, rec.Steps[1].Message, "said once, with the message's first call")
}

// handmade is a small agent run with its texts: a look, a failed test, the
// same look twice with the same output (looping), a secret in an output.
func handmade() eval.Record {
	step := func(phase, cmd, printed, msg string, exit int) eval.Step {
		return eval.Step{Phase: phase, Call: eval.Digest(cmd), Command: cmd, Output: eval.Digest(printed), Printed: printed,
			Message: msg, ExitCode: exit, Failed: exit != 0}
	}
	return eval.Record{Format: eval.RecordFormat, ID: "hand-1", Outcome: eval.OutcomeFailed, Task: eval.Task{Objective: "Fix the parser."},
		Steps: []eval.Step{
			step("read", "cat parser.py", "def parse(s):\n    return s.split(',')", "THOUGHT: read the parser first", 0),
			step("test", "pytest -q tests/test_parser.py", "E   AssertionError: assert ['a'] == ['a', 'b']\n1 failed", "THOUGHT: run its tests", 1),
			step("read", "cat parser.py", "def parse(s):\n    return s.split(',')", "THOUGHT: look again", 0),
			step("read", "cat parser.py", "def parse(s):\n    return s.split(',')", "THOUGHT: and again", 0),
			step("read", "env | grep KEY", "OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx0123 "+strings.Repeat("KEYBOARD=us ", 20), "THOUGHT: which key?", 0),
		}}
}

// Replayed with a content window, an agent's run shows the judge its
// latest calls as the recorded loop's activities carry them: the model's
// thought on its call, the command on the tool's input, what it printed on
// its result, the failed command's error; oldest first, the latest Calls
// only, each cut to its bytes, redacted. Off, the trajectory is what it
// was: the texts change no counter.
func TestReplayContentOfAHandmadeRun(t *testing.T) {
	rec := handmade()
	require.NoError(t, rec.Validate())
	w := trajectory.ContentWindow{Calls: 4, CallBytes: 160}
	on := eval.ReplayContent(rec, w)
	off := eval.Replay(rec)
	require.Len(t, on, 10, "a model call and a tool call per step")
	require.Len(t, off, len(on))
	for i := range off {
		assert.Empty(t, off[i].Trajectory.Content, "boundary %d: off by default", i)
		got := on[i].Trajectory
		require.NotEmpty(t, got.Content, "boundary %d", i)
		got.Content = nil
		assert.Equal(t, off[i].Trajectory, got, "boundary %d: the window changes nothing else", i)
	}

	// After the failed test (call 4), the window holds calls 1–4.
	c := on[3].Trajectory.Content
	require.Len(t, c, 4)
	for i, x := range c {
		assert.Equal(t, i+1, x.Run, "oldest first")
	}
	assert.Equal(t, "model", c[0].Call)
	assert.Equal(t, `{"turn":1}`, c[0].Input)
	assert.Contains(t, c[0].Output, `"message":"THOUGHT: read the parser first"`)
	assert.Equal(t, "bash", c[1].Call)
	assert.Contains(t, c[1].Input, `"text":"cat parser.py"`)
	assert.Contains(t, c[1].Output, `"printed":"def parse(s):\n    return s.split(',')"`)
	assert.Contains(t, c[3].Input, `"text":"pytest -q tests/test_parser.py"`)
	assert.True(t, strings.HasPrefix(c[3].Error, "exit status 1\nE   AssertionError"), "a failed command fails the tool's activity, what it printed in the error's details: %q", c[3].Error)
	assert.Empty(t, c[3].Output)

	// At the end: the latest 4 calls only, each within its bytes, the key
	// redacted.
	last := on[len(on)-1].Trajectory
	require.Len(t, last.Content, 4)
	assert.Equal(t, []int{7, 8, 9, 10}, runsOf(last.Content))
	for _, x := range last.Content {
		assert.LessOrEqual(t, contentSize(x), w.CallBytes+len("…"), "call %d", x.Run)
	}
	key := last.Content[3]
	assert.Contains(t, key.Input, "env | grep KEY")
	assert.NotContains(t, key.Output, "sk-proj-abcdefghijklmnopqrstuvwx0123")
	assert.Contains(t, key.Output, "[REDACTED]")
	assert.True(t, key.Cut, "the output is cut to the call's bytes: %+v", key)

	// The texts change no figure: the looking again is looping as it was
	// without them.
	bare := rec
	bare.Steps = append([]eval.Step(nil), rec.Steps...)
	for i := range bare.Steps {
		bare.Steps[i].Command, bare.Steps[i].Printed, bare.Steps[i].Message = "", "", ""
	}
	plain := eval.Replay(bare)
	assert.Equal(t, 1, plain[7].Trajectory.Loop.Looping, "the third look, the same as the one before")
	for i := range plain {
		assert.Equal(t, plain[i].Trajectory.Loop, off[i].Trajectory.Loop, "boundary %d", i)
		assert.Equal(t, plain[i].Trajectory.RecentPhases, off[i].Trajectory.RecentPhases, "boundary %d", i)
	}
	assert.Equal(t, `{"exit_code":0,"output":"`+eval.Digest("def parse(s):\n    return s.split(',')")+`"}`,
		eval.ReplayContent(bare, w)[1].Trajectory.Content[1].Output, "without its texts, a record shows the digests only")
}

// A step known by its Text (no call digest: SWE-agent, chat logs) gives
// the tool that Text, and the model's answer the whole command: the tool's
// input still tells the same call by its first line, as it did.
func TestReplayContentOfAStepWithoutADigest(t *testing.T) {
	rec := eval.Record{Format: eval.RecordFormat, ID: "s-1", Outcome: eval.OutcomeSucceeded, Steps: []eval.Step{
		{Phase: "edit", Text: "edit 3:3", Command: "edit 3:3\n    return x + 1\nend_of_edit", Message: "Fix it."},
		{Phase: "edit", Text: "edit 3:3", Command: "edit 3:3\n    return x + 2\nend_of_edit", Message: "Fix it again."},
	}}
	in := eval.LoopInput(rec)
	assert.Equal(t, in.Turns[0].Command, in.Turns[1].Command, "known by the first line, as before")
	assert.Equal(t, "edit 3:3", in.Turns[0].Text)
	assert.Equal(t, "Fix it.\n\nedit 3:3\n    return x + 1\nend_of_edit", in.Turns[0].Message)
	c := eval.ReplayContent(rec, trajectory.ContentWindow{Calls: 4})[3].Trajectory.Content
	require.Len(t, c, 4)
	assert.Contains(t, c[2].Output, `return x + 2`)
	assert.Contains(t, c[3].Input, `"text":"edit 3:3"`)
}

func runsOf(c []trajectory.CallContent) []int {
	var out []int
	for _, x := range c {
		out = append(out, x.Run)
	}
	return out
}

func contentSize(c trajectory.CallContent) int {
	return len(c.Call) + len(c.Input) + len(c.Output) + len(c.Error)
}

// On a real recorded run, the window shows the judge the run's own
// commands and what they printed, as the trace recorded them: oldest
// first, the latest calls only, each cut to its bytes; off, nothing.
func TestReplayContentOfARecordedRun(t *testing.T) {
	dir := testsuite.SharedTraces(t, "mini-swe-agent-gemini-3-pro")
	const id = "astropy__astropy-12907"
	recs, err := eval.LoadRuns(dir, "")
	require.NoError(t, err)
	var rec eval.Record
	for _, r := range recs {
		if r.ID == id {
			rec = r
		}
	}
	require.Equal(t, id, rec.ID)

	// The trace itself: the second assistant turn writes a reproduction
	// script; the user turn after it is what the command printed.
	data, err := os.ReadFile(filepath.Join(dir, "trajs", id+".traj.json"))
	require.NoError(t, err)
	var raw struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	require.NoError(t, json.Unmarshal(data, &raw))
	var turns, observations []string
	for i, m := range raw.Messages {
		if m.Role == "assistant" {
			turns = append(turns, m.Content)
			observations = append(observations, raw.Messages[i+1].Content)
		}
	}
	cmd := regexp.MustCompile("(?s)```bash\\s*\\n(.*?)\\n```").FindStringSubmatch(turns[1])[1]
	require.Contains(t, cmd, "reproduce_issue.py", "the known step")

	w := trajectory.ContentWindow{Calls: 8, CallBytes: 1024}
	replayed := eval.ReplayContent(rec, w)
	// Call 4 is turn 2's tool call (turns 1 and 2 each a model call, then
	// the tool's).
	c := replayed[3].Trajectory.Content
	require.Len(t, c, 4)
	assert.Equal(t, []int{1, 2, 3, 4}, runsOf(c), "oldest first")
	assert.Equal(t, "bash", c[3].Call)
	// The command is longer than the call's bytes: its head.
	assert.True(t, strings.HasPrefix(c[3].Input, `{"command":"`+eval.Digest(strings.TrimSpace(cmd))+`","text":"`+jsonText(t, strings.TrimSpace(cmd)[:300])),
		"the command as the trace recorded it: %s", c[3].Input)
	assert.True(t, c[3].Cut)
	assert.LessOrEqual(t, contentSize(c[3]), w.CallBytes+len("…"))
	assert.True(t, strings.HasPrefix(c[2].Output, `{"command":"`+eval.Digest(strings.TrimSpace(cmd))+`","message":"THOUGHT: The PR description mentions`),
		"what the model said with it: %s", c[2].Output)
	// What turn 1 printed (ls -R: long) is cut to the call's bytes, its
	// head kept.
	assert.True(t, c[1].Cut)
	assert.LessOrEqual(t, contentSize(c[1]), w.CallBytes+len("…"))
	assert.Contains(t, c[1].Output, `"printed":"`+jsonText(t, observations[0][:40]))

	// Further on, the window holds the latest 8 calls, each within its
	// bytes, the latest the boundary's own.
	for i, b := range replayed {
		c := b.Trajectory.Content
		require.LessOrEqual(t, len(c), w.Calls, "boundary %d", i)
		require.Equal(t, i+1, c[len(c)-1].Run, "boundary %d: its own call last", i)
		for j, x := range c {
			require.LessOrEqual(t, contentSize(x), w.CallBytes+len("…"), "boundary %d call %d", i, x.Run)
			if j > 0 {
				require.Equal(t, c[j-1].Run+1, x.Run, "boundary %d: consecutive, oldest first", i)
			}
		}
	}
	assert.Len(t, replayed[len(replayed)-1].Trajectory.Content, w.Calls)

	// Off, as every figure is measured: nothing.
	for i, b := range eval.Replay(rec) {
		require.Empty(t, b.Trajectory.Content, "boundary %d", i)
	}
	assert.Empty(t, eval.ReplayLoop(rec, workflows.ToolFailuresAsResults, trajectory.ContentWindow{})[3].Trajectory.Content)
}

// jsonText is s as it reads inside a JSON string, without the quotes.
// jsonText is s as a window shows it inside a JSON string.
func jsonText(_ *testing.T, s string) string { return testsuite.WindowText(s) }

// A trial's sample is the same runs whatever order they were read in, as
// many failed as succeeded where the runs allow, in their order.
func TestSample(t *testing.T) {
	var recs []eval.Record
	for i := range 30 {
		outcome := eval.OutcomeSucceeded
		if i%5 == 0 {
			outcome = eval.OutcomeFailed // 6 failed, 24 succeeded
		}
		recs = append(recs, eval.Record{ID: "run-" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Outcome: outcome})
	}
	ids := func(rs []eval.Record) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	got := eval.Sample(recs, 8)
	require.Len(t, got, 8)
	failed := 0
	pos := map[string]int{}
	for i, r := range recs {
		pos[r.ID] = i
	}
	for i, r := range got {
		if r.Outcome.Failed() {
			failed++
		}
		if i > 0 {
			assert.Less(t, pos[got[i-1].ID], pos[r.ID], "in their input order")
		}
	}
	assert.Equal(t, 4, failed, "as many failed as succeeded")
	assert.Equal(t, 6, countFailed(eval.Sample(recs, 20)), "every failed run, then succeeded ones")

	reversed := append([]eval.Record(nil), recs...)
	slices.Reverse(reversed)
	assert.ElementsMatch(t, ids(got), ids(eval.Sample(reversed, 8)), "the same runs in any order")
	assert.Len(t, eval.Sample(recs, 0), 30)
	assert.Len(t, eval.Sample(recs, 31), 30)
}

func countFailed(rs []eval.Record) int {
	n := 0
	for _, r := range rs {
		if r.Outcome.Failed() {
			n++
		}
	}
	return n
}
