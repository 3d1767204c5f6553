package eval_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/testsuite"
)

type chatStep struct {
	phase  string
	failed bool
}

func chatSteps(r eval.Record) []chatStep {
	var out []chatStep
	for _, s := range r.Steps {
		out = append(out, chatStep{s.Phase, s.Failed})
	}
	return out
}

func TestImportOpenAIChatFixture(t *testing.T) {
	dir := filepath.Join("testdata", "chat")
	format, err := eval.DetectFormat(dir)
	require.NoError(t, err)
	assert.Equal(t, eval.FormatOpenAIChat, format)
	recs, err := eval.LoadRuns(dir, "")
	require.NoError(t, err)
	require.Len(t, recs, 3, "logs/req-7.json and the two lines of runs.jsonl")

	req, f1, f2 := recs[0], recs[1], recs[2]
	for _, tc := range []struct {
		rec       eval.Record
		id        string
		outcome   eval.Outcome
		objective string
		steps     []chatStep
	}{
		{req, "req-7", eval.OutcomeFailed, "Make requests retry on 503.", []chatStep{
			{"read", false},   // read_file: named as a read
			{"edit", false},   // write_file of a repository file
			{"test", true},    // run_tests: exit code 2
			{"submit", false}, // the closing answer without a tool call
		}},
		{f1, "flask-1", eval.OutcomeSucceeded, "Blueprint names may not contain dots.", []chatStep{
			{"read", false},      // grep, exit code 0
			{"reproduce", false}, // str_replace_editor create of a scratch file at the repository's top
			{"reproduce", true},  // python reproduce.py: exit code 1
			{"edit", true},       // str_replace: ERROR
			{"test", false},      // pytest: exit code 0
			{"submit", false},    // finish
		}},
		{f2, "flask-2", eval.OutcomeFailed, "Fix the bug in flask.", []chatStep{
			{"read", true},      // ls: No such file or directory (no exit code)
			{"", true},          // an answer without a tool call that the user answers
			{"reproduce", true}, // no new output after 30 seconds
		}},
	} {
		t.Run(tc.id, func(t *testing.T) {
			assert.Equal(t, tc.id, tc.rec.ID)
			assert.Equal(t, tc.outcome, tc.rec.Outcome)
			assert.Equal(t, tc.objective, tc.rec.Task.Objective)
			assert.Equal(t, tc.steps, chatSteps(tc.rec))
			assert.Equal(t, "openai-chat", tc.rec.Agent)
		})
	}
	assert.Equal(t, "format", f2.Steps[1].FailureCategory)
	assert.False(t, req.Steps[3].OutputMissing)

	// The log's totals are spread over its steps: 4003 tokens over 4.
	var in int64
	var cost float64
	for _, s := range req.Steps {
		in += s.InputTokens
		cost += s.CostUSD
		assert.Equal(t, int64(100), s.OutputTokens)
	}
	assert.Equal(t, int64(4003), in)
	assert.InDelta(t, 0.4, cost, 1e-9)
	// A message's usage and cost are split over its tool calls.
	assert.Equal(t, []int64{1000, 601, 600, 1500, 1600, 1700}, []int64{f1.Steps[0].InputTokens, f1.Steps[1].InputTokens,
		f1.Steps[2].InputTokens, f1.Steps[3].InputTokens, f1.Steps[4].InputTokens, f1.Steps[5].InputTokens})
	assert.Equal(t, int64(41), f1.Steps[1].OutputTokens)
	assert.InDelta(t, 0.01, f1.Steps[2].CostUSD, 1e-9)
	assert.Zero(t, f2.Steps[0].InputTokens, "no usage anywhere")
}

// OpenHands writes one log per LLM call under trajs/<instance_id>/: the
// last (longest) is the run, read from fncall_messages and its reply.
func TestImportOpenHandsFixture(t *testing.T) {
	dir := filepath.Join("testdata", "openhands")
	recs, err := eval.LoadRuns(dir, "")
	require.NoError(t, err)
	require.Len(t, recs, 1)
	r := recs[0]
	assert.Equal(t, "astropy__astropy-1", r.ID)
	assert.Equal(t, eval.OutcomeSucceeded, r.Outcome)
	assert.Equal(t, "openhands", r.Agent)
	assert.Equal(t, []chatStep{{"read", false}, {"read", false}, {"submit", false}}, chatSteps(r))
	assert.Zero(t, r.Steps[2].InputTokens, "the reply's usage is one call's, not read")

	// One log given on its own: its run is still the directory's name, and
	// labels.json two levels up is found.
	one, err := eval.LoadRuns(filepath.Join(dir, "trajs", "astropy__astropy-1", "Claude-3.5-Sonnet(Oct)-1743405700.5.json"), "")
	require.NoError(t, err)
	require.Len(t, one, 1)
	assert.Equal(t, "astropy__astropy-1", one[0].ID)
	assert.Equal(t, []chatStep{{"read", false}}, chatSteps(one[0]), "the first call's log holds only its reply")
}

func TestChatFailedRule(t *testing.T) {
	for _, tc := range []struct {
		name, reply string
		want        bool
	}{
		{"OpenHands exit code 0", "ok\n[Command finished with exit code 0]", false},
		{"OpenHands exit code 1", "FAILED\n[Command finished with exit code 1]", true},
		{"exit code decides over a traceback", "Traceback (most recent call last):\n  caught\n[Command finished with exit code 0]", false},
		{"the last exit code counts", "exit code: 1\n...\n[Command finished with exit code 0]", false},
		{"mini-swe-agent return code", "<returncode>2</returncode>\nno", true},
		{"editor error", "ERROR:\nInvalid `path` parameter: /workspace/x.py does not exist.", true},
		{"traceback", "Traceback (most recent call last):\n  File \"r.py\"", true},
		{"hung command", "[The command has no new output after 30 seconds. You may wait longer ...]", true},
		{"not executed", `[Your command "ls" is NOT executed. The previous command is still running]`, true},
		{"file view", "Here's the result of running `cat -n` on /workspace/a.py:\n 1\tx = 1", false},
		{"created", "File created successfully at: /workspace/reproduce.py", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log := `{"instance_id":"a-1","messages":[{"role":"user","content":"x"},` +
				`{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"execute_bash","arguments":"{\"command\":\"python r.py\"}"}}]},` +
				`{"role":"tool","tool_call_id":"c","content":` + quote(tc.reply) + `}]}`
			require.NoError(t, os.WriteFile(filepath.Join(dir, "a.json"), []byte(log), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "labels.json"), []byte(`{"a-1": false}`), 0o644))
			recs, err := eval.LoadRuns(dir, eval.FormatOpenAIChat)
			require.NoError(t, err)
			assert.Equal(t, tc.want, recs[0].Steps[0].Failed, "%q", tc.reply)
		})
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestImportOpenAIChatErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	call := `{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]}`
	noLabels := write("nolabels/runs.jsonl", `{"id":"a-1","messages":[`+call+`]}`+"\n")
	write("unlabelled/trajs/a-1.json", `{"messages":[`+call+`]}`)
	write("unlabelled/labels.json", `{"a-2": true}`)
	noID := write("noid/runs.jsonl", `{"id":"a-1","messages":[`+call+`]}`+"\n"+`{"messages":[`+call+`]}`+"\n")
	noCalls := write("nocalls/a-1.json", `{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"hello"}]}`)
	write("nocalls/labels.json", `{"a-1": true}`)
	for _, tc := range []struct {
		name, path, want string
	}{
		{"no labels file", noLabels, "chat runs: 1 run but no labels file: no labels.json (run id → true when resolved), results/results.json or results.json (resolved_ids) of a published evaluation in " + filepath.Dir(noLabels) + ". " + eval.Layouts},
		{"a run without a label", filepath.Join(dir, "unlabelled"),
			`run "a-1" has no outcome in ` + filepath.Join(dir, "unlabelled", "labels.json") + ": label it or remove it"},
		{"a line without an id", noID, "runs.jsonl line 2: invalid run record: the run has no id: give it an instance_id or id"},
		{"a log without tool calls", noCalls, `run "a-1" has no tool calls`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := eval.LoadRuns(tc.path, eval.FormatOpenAIChat)
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
			if tc.name == "a run without a label" {
				assert.ErrorIs(t, err, eval.ErrInvalidRecord)
			}
		})
	}
}

func TestDetectFormatByFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	chat := `{"messages":[{"role":"user","content":"x"}]}`
	write("mini/trajs/a-1.traj.json", `{"messages":[]}`)
	write("mini/labels.json", `{}`)
	write("swe/trajs/a-1.traj", `{}`)
	write("swe/labels.json", `{}`)
	write("swe-nested/a-1/a-1.traj", `{}`)
	write("chat/trajs/a-1/log-1.json", chat)
	write("chat/metadata.json", `{"run": "x"}`)
	write("chatlines/runs.jsonl", chat+"\n")
	write("records/runs.jsonl", `{"format":"overseer-run/v1","id":"a-1"}`+"\n")
	write("letters/runs.csv", "id,outcome,sequence\n")
	write("both/trajs/a-1.traj.json", `{}`)
	write("both/trajs/a-2.traj", `{}`)
	write("three/runs.jsonl", `{"format":"overseer-run/v1"}`+"\n")
	write("three/runs.csv", "id,outcome,sequence\n")
	write("three/logs/a.json", chat)
	write("none/trajs/README.md", "x")
	write("file.json", chat)
	write("records.json", `{"format":"overseer-run/v1"}`)
	for _, tc := range []struct {
		path, want, err string
	}{
		{"mini", eval.FormatMiniSWE, ""},
		{"swe", eval.FormatSWEAgent, ""},
		{"swe-nested", eval.FormatSWEAgent, ""},
		{"chat", eval.FormatOpenAIChat, ""},
		{"chatlines", eval.FormatOpenAIChat, ""},
		{"chatlines/runs.jsonl", eval.FormatOpenAIChat, ""},
		{"records", eval.FormatRecords, ""},
		{"letters", eval.FormatLetters, ""},
		{"file.json", eval.FormatOpenAIChat, ""},
		{"records.json", eval.FormatRecords, ""},
		{"both", "", "both holds runs of 2 formats, mini-swe-agent-1 (trajs/*.traj.json) and swe-agent (trajs/*.traj): pass --format mini-swe-agent-1 or --format swe-agent"},
		{"three", "", "three holds runs of 3 formats, openai-chat (chat log logs/a.json), records (*.jsonl) and letters (*.csv): pass --format openai-chat, --format records or --format letters"},
		{"none", "", "none holds no runs of a known format. " + eval.Layouts},
	} {
		t.Run(tc.path, func(t *testing.T) {
			got, err := eval.DetectFormat(filepath.Join(dir, tc.path))
			if tc.err != "" {
				assert.ErrorIs(t, err, eval.ErrUnknownFormat)
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

type sampleFigures struct {
	runs, succeeded, steps, failedSteps, submits int
	phases                                       map[string]int
}

func figuresOf(recs []eval.Record) sampleFigures {
	f := sampleFigures{runs: len(recs), phases: map[string]int{}}
	for _, r := range recs {
		if r.Outcome == eval.OutcomeSucceeded {
			f.succeeded++
		}
		for _, s := range r.Steps {
			f.steps++
			f.phases[s.Phase]++
			if s.Failed {
				f.failedSteps++
			}
		}
		if r.Steps[len(r.Steps)-1].Phase == string(eval.Submit) {
			f.submits++
		}
	}
	return f
}

// The shared samples are read as they are, with their format detected.
func TestSharedAgentSamples(t *testing.T) {
	for _, tc := range []struct {
		sample, format          string
		runs, succeeded, submit int
		minSteps, maxSteps      int
		steps, failed           int
		phases                  []eval.Class
	}{
		// OpenHands: 58 runs, 24 resolved; 40 end with finish, 18 hit the
		// 50-call cap; 13 to 50 LLM calls a run, one step each (2,008 tool
		// calls, 4 answers without one, 58 final replies); 347 failed
		// calls (197 non-zero exit codes among them).
		{"openhands-sample", eval.FormatOpenAIChat, 58, 24, 40, 13, 50, 2070, 347,
			[]eval.Class{eval.Read, eval.Reproduce, eval.Test, eval.Edit, eval.Submit}},
		// CodeR on SWE-agent: 16 runs, 2 resolved; 14 end with the
		// Manager's submit, 2 with exit_cost (a failed submit); 16 to 49
		// steps. Its Tester runs reproduction scripts, not a test runner.
		{"sweagent-sample", eval.FormatSWEAgent, 16, 2, 16, 16, 49, 480, 69,
			[]eval.Class{eval.Read, eval.Reproduce, eval.Edit, eval.Submit}},
	} {
		t.Run(tc.sample, func(t *testing.T) {
			dir := testsuite.SharedTraces(t, tc.sample)
			format, err := eval.DetectFormat(dir)
			require.NoError(t, err)
			assert.Equal(t, tc.format, format)
			recs, err := eval.LoadRuns(dir, "")
			require.NoError(t, err)
			f := figuresOf(recs)
			assert.Equal(t, tc.runs, f.runs)
			assert.Equal(t, tc.succeeded, f.succeeded)
			assert.Equal(t, tc.submit, f.submits, "runs that end in a submit step")
			for _, r := range recs {
				assert.GreaterOrEqual(t, len(r.Steps), tc.minSteps, r.ID)
				assert.LessOrEqual(t, len(r.Steps), tc.maxSteps, r.ID)
				assert.Equal(t, r.FamilyName(), eval.FamilyOf(r.ID))
			}
			assert.Equal(t, tc.steps, f.steps)
			assert.Equal(t, tc.failed, f.failedSteps, "failed tool calls")
			for _, p := range tc.phases {
				assert.Positive(t, f.phases[string(p)], "phase %s", p)
			}
			t.Logf("%s: %d runs, %d succeeded, %d steps, %d failed, phases %v", tc.sample, f.runs, f.succeeded, f.steps, f.failedSteps, f.phases)
		})
	}
}
