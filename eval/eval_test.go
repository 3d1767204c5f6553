package eval_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name, cmd string
		want      eval.Class
	}{
		{"grep", `grep -n "def separability_matrix" astropy/modeling/separable.py`, eval.Read},
		{"nl piped to sed -n", `nl -ba django/db/models/query.py | sed -n '100,140p'`, eval.Read},
		{"sed -n", `sed -n '10,20p' django/forms/models.py`, eval.Read},
		{"ls and find", `ls -R | head -50 && find . -name "*.py" | grep forms`, eval.Read},
		{"git diff", `git diff`, eval.Read},
		{"shell test builtin", `test -f setup.py && echo yes`, eval.Read},
		{"stderr to stdout is no write", `ls tests 2>&1 | head`, eval.Read},
		{"redirect to /dev/null", `grep -r foo . > /dev/null`, eval.Read},
		{"comment with a quote", "# I'll look at the file first\ncat django/forms/models.py", eval.Read},
		{"test runner named in grep", `grep -rn "pytest" setup.cfg`, eval.Read},

		{"write a scratch script", "cat <<'EOF' > reproduce_issue.py\nprint(1)\nEOF", eval.Reproduce},
		{"run a scratch script", `python reproduce_issue.py`, eval.Reproduce},
		{"write and run", "cat <<'EOF' > reproduce.py\nimport django\nEOF\npython3 reproduce.py", eval.Reproduce},
		{"python -c", `python -c "import sympy; print(sympy.__version__)"`, eval.Reproduce},
		{"remove scratch", `rm reproduce_issue.py check.py`, eval.Reproduce},
		{"write under /tmp", `echo hello > /tmp/out.txt`, eval.Reproduce},
		{"other program", `sphinx-build -b html docs docs/_build`, eval.Reproduce},

		{"pytest", `pytest astropy/modeling/tests/test_separable.py -q`, eval.Test},
		{"python -m pytest with env", `PYTHONPATH=. python3 -m pytest -x tests/test_a.py`, eval.Test},
		{"django runtests", `cd tests && ./runtests.py migrations.test_operations`, eval.Test},
		{"python runtests", `python tests/runtests.py queries --parallel 1`, eval.Test},
		{"sympy bin/test", `bin/test sympy/core/tests/test_basic.py`, eval.Test},
		{"unittest", `python -m unittest discover -s tests`, eval.Test},

		{"sed -i", `sed -i 's/return 1/return right/' astropy/modeling/separable.py`, eval.Edit},
		{"perl -pi", `perl -pi -e 's/foo/bar/' django/utils/html.py`, eval.Edit},
		{"heredoc into the repository", "cat <<'EOF' > tests/test_regression.py\ndef test_x():\n    pass\nEOF", eval.Edit},
		{"append to a source file", `echo "x = 1" >> django/conf/global_settings.py`, eval.Edit},
		{"project file at the top", "cat <<EOF > setup.cfg\n[metadata]\nEOF", eval.Edit},
		{"inline python writes a source file", "python - <<'EOF'\nwith open('django/utils/html.py', 'w') as f:\n    f.write('x')\nEOF", eval.Edit},
		{"edit then run", `sed -i 's/a/b/' django/x.py && python reproduce_issue.py`, eval.Edit},
		{"edit then test", `sed -i 's/a/b/' django/x.py && pytest tests/x`, eval.Edit},
		{"git checkout a file", `git checkout django/forms/models.py`, eval.Edit},
		{"patch", `patch -p1 < fix.diff`, eval.Edit},
		{"remove a repository file", `rm reproduce_issue.py tests/test_scratch.py`, eval.Edit},
		{"write after cd into the repository", "cd tests && cat <<'EOF' > test_x.py\nx = 1\nEOF", eval.Edit},
		{"write after cd out of it", "cd /tmp && echo x > notes.txt", eval.Reproduce},
		{"a here-string is no heredoc", "python3 <<< 'print(1)'\nsed -i 's/a/b/' django/x.py", eval.Edit},

		{"submit", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached", eval.Submit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, eval.Classify(tc.cmd), "%s", tc.cmd)
		})
	}
}

// A Classifier remembers what earlier actions of the run wrote.
func TestClassifierRemembersTheRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		cmds []string
		want []eval.Class
	}{
		{
			name: "a written fix script edits when it runs",
			cmds: []string{
				"cat <<'EOF' > apply_fix.py\npath = 'django/db/models/base.py'\nwith open(path, 'w') as f:\n    f.write('x')\nEOF",
				"python apply_fix.py",
			},
			want: []eval.Class{eval.Reproduce, eval.Edit},
		},
		{
			name: "a written reproduction script reproduces",
			cmds: []string{"cat <<'EOF' > repro.py\nprint(open('django/VERSION').read())\nEOF", "python3 repro.py"},
			want: []eval.Class{eval.Reproduce, eval.Reproduce},
		},
		{
			name: "a directory the agent made is scratch",
			cmds: []string{"mkdir -p repro_app", "cat <<'EOF' > repro_app/models.py\nx = 1\nEOF"},
			want: []eval.Class{eval.Reproduce, eval.Reproduce},
		},
		{
			name: "a directory named before is the repository's",
			cmds: []string{"ls tests/forms_tests", "mkdir -p tests/forms_tests/new", "cat <<'EOF' > tests/forms_tests/new/test_a.py\nx = 1\nEOF"},
			want: []eval.Class{eval.Read, eval.Edit, eval.Edit},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c eval.Classifier
			var got []eval.Class
			for _, cmd := range tc.cmds {
				got = append(got, c.Classify(cmd))
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func act(c eval.Class, rc int) eval.Action {
	return eval.Action{Command: string(c), Class: c, ReturnCode: rc}
}

var formatError = eval.Action{FormatError: true}

func TestPhases(t *testing.T) {
	type phase struct {
		Class       eval.Class
		First, End  int
		FailedTools []string
		Rework      bool
		Looping     bool
	}
	for _, tc := range []struct {
		name    string
		actions []eval.Action
		want    []phase
	}{
		{
			name:    "consecutive actions of a class are one phase",
			actions: []eval.Action{act(eval.Read, 0), act(eval.Read, 1), act(eval.Edit, 0), act(eval.Test, 0), act(eval.Submit, 0)},
			want: []phase{
				{Class: eval.Read, First: 0, End: 2, FailedTools: []string{"read"}},
				{Class: eval.Edit, First: 2, End: 3},
				{Class: eval.Test, First: 3, End: 4},
				{Class: eval.Submit, First: 4, End: 5},
			},
		},
		{
			name:    "test then edit after an edit is rework; the first edit is not",
			actions: []eval.Action{act(eval.Test, 1), act(eval.Edit, 0), act(eval.Test, 1), act(eval.Read, 0), act(eval.Edit, 0), act(eval.Edit, 0)},
			want: []phase{
				{Class: eval.Test, First: 0, End: 1, FailedTools: []string{"test"}},
				{Class: eval.Edit, First: 1, End: 2},
				{Class: eval.Test, First: 2, End: 3, FailedTools: []string{"test"}},
				{Class: eval.Read, First: 3, End: 4},
				{Class: eval.Edit, First: 4, End: 6, Rework: true},
			},
		},
		{
			name:    "a class repeated without a new edit loops",
			actions: []eval.Action{act(eval.Read, 0), act(eval.Reproduce, 0), act(eval.Read, 0), act(eval.Edit, 0), act(eval.Read, 0), act(eval.Reproduce, 0), act(eval.Reproduce, 0)},
			want: []phase{
				{Class: eval.Read, First: 0, End: 1},
				{Class: eval.Reproduce, First: 1, End: 2},
				{Class: eval.Read, First: 2, End: 3, Looping: true},
				{Class: eval.Edit, First: 3, End: 4},
				{Class: eval.Read, First: 4, End: 5},
				{Class: eval.Reproduce, First: 5, End: 7},
			},
		},
		{
			name:    "format errors join the phase in progress, or the first phase",
			actions: []eval.Action{formatError, act(eval.Read, 0), formatError, act(eval.Read, 0), act(eval.Edit, 0), formatError},
			want: []phase{
				{Class: eval.Read, First: 0, End: 4, FailedTools: []string{"format", "format"}},
				{Class: eval.Edit, First: 4, End: 6, FailedTools: []string{"format"}},
			},
		},
		{
			name:    "only format errors: no phase",
			actions: []eval.Action{formatError, formatError},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []phase
			for _, p := range eval.Phases(tc.actions) {
				got = append(got, phase{p.Class, p.First, p.End, p.FailedTools, p.Rework, p.Looping})
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestPhaseDurations(t *testing.T) {
	t0 := time.Unix(1_763_510_516, 0)
	actions := []eval.Action{act(eval.Read, 0), act(eval.Read, 0), act(eval.Edit, 0), act(eval.Submit, 0)}
	for i := range actions {
		actions[i].At = t0.Add(time.Duration(i*10) * time.Second)
	}
	ps := eval.Phases(actions)
	require.Len(t, ps, 3)
	assert.Equal(t, 20*time.Second, ps[0].Duration, "to the next phase's first action")
	assert.Equal(t, 10*time.Second, ps[1].Duration)
	assert.Equal(t, time.Duration(0), ps[2].Duration, "a one-action last phase")
}

const miniTrace = `{
  "trajectory_format": "mini-swe-agent-1",
  "instance_id": "demo__demo-1",
  "info": {"exit_status": "Submitted", "submission": "diff --git a/x.py b/x.py\n", "model_stats": {"instance_cost": 0.5, "api_calls": 5}},
  "messages": [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "<pr_description>\nConsider the following PR description:\nFix the frobnicator.\n</pr_description>\n<instructions>…</instructions>"},
    {"role": "assistant", "content": "THOUGHT: look\n\n` + "```bash\\ngrep -n frob x.py\\n```" + `", "extra": {"response": {"created": 100, "usage": {"cost": 0.01}}}},
    {"role": "user", "content": "<returncode>1</returncode>\n<output>\n</output>"},
    {"role": "assistant", "content": "two blocks ` + "```bash\\nls\\n``` ```bash\\npwd\\n```" + `", "extra": {"response": {"created": 110, "usage": {"cost": 0.01}}}},
    {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."},
    {"role": "assistant", "content": "` + "```bash\\npytest -q\\n```" + `", "extra": {"response": {"created": 120, "usage": {"cost": 0.02}}}},
    {"role": "user", "content": "The last command <command>pytest -q</command> timed out and has been killed.\nThe output of the command was:\n <output>\n</output>"},
    {"role": "assistant", "content": "` + "```bash\\nsed -i 's/a/b/' pkg/x.py\\n```" + `", "extra": {"response": {"created": 130, "usage": {"cost": 0.02}}}},
    {"role": "user", "content": "<returncode>0</returncode>\n<output>\n</output>"},
    {"role": "assistant", "content": "Done.\n\n` + "```bash\\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached\\n```" + `", "extra": {"response": {"created": 140, "usage": {"cost": 0.03}}}},
    {"role": "user", "content": "diff --git a/x.py b/x.py\n"}
  ]
}`

func TestParseTrace(t *testing.T) {
	tr, err := eval.ParseTrace([]byte(miniTrace))
	require.NoError(t, err)
	assert.Equal(t, "demo__demo-1", tr.ID)
	assert.Equal(t, "Fix the frobnicator.", tr.Task)
	assert.Equal(t, "Submitted", tr.ExitStatus)
	assert.Equal(t, 5, tr.APICalls)
	require.Len(t, tr.Actions, 5)
	var classes []eval.Class
	var failed []bool
	for _, a := range tr.Actions {
		classes = append(classes, a.Class)
		failed = append(failed, a.Failed())
	}
	assert.Equal(t, []eval.Class{eval.Read, "", eval.Test, eval.Edit, eval.Submit}, classes)
	assert.Equal(t, []bool{true, true, true, false, false}, failed)
	assert.Equal(t, 1, tr.Actions[0].ReturnCode)
	assert.True(t, tr.Actions[1].FormatError)
	assert.True(t, tr.Actions[2].TimedOut)
	assert.Equal(t, time.Unix(100, 0).UTC(), tr.Actions[0].At)
	assert.InDelta(t, 0.03, tr.Actions[4].CostUSD, 1e-9)
	assert.True(t, strings.HasPrefix(tr.LastOutput, "Done."))

	_, err = eval.ParseTrace([]byte(`{"trajectory_format": "other", "messages": []}`))
	assert.ErrorContains(t, err, "mini-swe-agent-1")
}

func TestAUROC(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name     string
		scores   []float64
		positive []bool
		want     float64
	}{
		{"textbook example", []float64{0.1, 0.4, 0.35, 0.8}, []bool{false, false, true, true}, 0.75},
		{"perfect", []float64{0.1, 0.2, 0.8, 0.9}, []bool{false, false, true, true}, 1},
		{"inverted", []float64{0.9, 0.8, 0.2, 0.1}, []bool{false, false, true, true}, 0},
		{"all tied", []float64{0.5, 0.5, 0.5}, []bool{true, false, false}, 0.5},
		{"ties count one half", []float64{0.2, 0.5, 0.5, 0.9}, []bool{false, true, false, true}, 0.875},
		{"one class only", []float64{0.1, 0.2}, []bool{true, true}, nan},
		{"empty", nil, nil, nan},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := eval.AUROC(tc.scores, tc.positive)
			if math.IsNaN(tc.want) {
				assert.True(t, math.IsNaN(got), "got %v", got)
				return
			}
			assert.InDelta(t, tc.want, got, 1e-12)
		})
	}
}

func TestAUROCInterval(t *testing.T) {
	scores := []float64{0.1, 0.4, 0.35, 0.8, 0.3, 0.7, 0.2, 0.6}
	positive := []bool{false, false, true, true, false, true, false, true}
	lo, hi := eval.AUROCInterval(scores, positive, 0.95, 500, 1)
	auc := eval.AUROC(scores, positive)
	assert.LessOrEqual(t, lo, auc)
	assert.GreaterOrEqual(t, hi, auc)
	lo2, hi2 := eval.AUROCInterval(scores, positive, 0.95, 500, 1)
	assert.Equal(t, [2]float64{lo, hi}, [2]float64{lo2, hi2}, "a fixed seed gives the same interval")
}

func TestMedian(t *testing.T) {
	assert.Equal(t, 2.0, eval.Median([]float64{3, 1, 2}))
	assert.Equal(t, 2.5, eval.Median([]float64{4, 1, 2, 3}))
	assert.True(t, math.IsNaN(eval.Median(nil)))
}
