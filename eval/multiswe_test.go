package eval_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/eval"
)

// The two runs of testdata/multi-swe-bench/java/verified, Multi-SWE-bench's
// leaderboard folders (see its README).
const (
	gpt4oRun  = "20240825_SWE-agent_gpt-4o-2024-05-13"
	claudeRun = "20250329_MSWE-agent_Claude-3.7-Sonnet"
)

var multiSWEJava = filepath.Join("testdata", "multi-swe-bench", "java", "verified")

type runOutcome struct {
	id      string
	outcome eval.Outcome
	family  string
}

func outcomesOf(recs []eval.Record) []runOutcome {
	out := make([]runOutcome, len(recs))
	for i, r := range recs {
		out[i] = runOutcome{r.ID, r.Outcome, r.FamilyName()}
	}
	return out
}

// TestLoadMultiSWEBenchAsPublished reads the Java split of Multi-SWE-bench's
// leaderboard as published: one folder per run, each with its
// trajs/<id>.traj and results/results.json (an early submission's, keyed
// by instance id with a resolved list; the harness's final report, keyed
// org/repo:pr-N with resolved_ids), all_preds.jsonl, logs/ and
// metadata.yaml beside them. The runs of one instance by two models are
// two runs, of the instance's repository.
func TestLoadMultiSWEBenchAsPublished(t *testing.T) {
	want := []runOutcome{
		{gpt4oRun + "/apache__dubbo-10638", eval.OutcomeFailed, "apache__dubbo"}, // empty_patch_ids
		{gpt4oRun + "/fasterxml__jackson-databind-4048", eval.OutcomeSucceeded, "fasterxml__jackson-databind"},
		{gpt4oRun + "/google__gson-1093", eval.OutcomeFailed, "google__gson"},
		{claudeRun + "/apache__dubbo-10638", eval.OutcomeSucceeded, "apache__dubbo"}, // apache/dubbo:pr-10638
		{claudeRun + "/fasterxml__jackson-databind-4048", eval.OutcomeFailed, "fasterxml__jackson-databind"},
		{claudeRun + "/google__gson-1093", eval.OutcomeSucceeded, "google__gson"},
	}
	results := []string{
		filepath.Join(multiSWEJava, gpt4oRun, "results", "results.json"),
		filepath.Join(multiSWEJava, claudeRun, "results", "results.json"),
	}
	for _, format := range []string{"", eval.FormatSWEAgent} {
		t.Run("format "+format, func(t *testing.T) {
			recs, src, err := eval.LoadSource(multiSWEJava, format)
			require.NoError(t, err)
			assert.Equal(t, want, outcomesOf(recs))
			assert.Equal(t, eval.FormatSWEAgent, src.Format)
			assert.Equal(t, format == "", src.Detected)
			assert.Equal(t, results, src.Labels)
			assert.Equal(t, []string{
				gpt4oRun + "/README.md", gpt4oRun + "/all_preds.jsonl", gpt4oRun + "/logs/", gpt4oRun + "/metadata.yaml",
				claudeRun + "/all_preds.jsonl", claudeRun + "/logs/", claudeRun + "/metadata.yaml",
			}, src.Skipped)
			assert.Contains(t, src.String(), "read 6 runs of format swe-agent")
			assert.Contains(t, src.String(), "outcomes from "+results[0]+" and "+results[1])
		})
	}

	// The language's folder above it reads the same runs.
	recs, err := eval.LoadRuns(filepath.Dir(multiSWEJava), "")
	require.NoError(t, err)
	for i, r := range outcomesOf(recs) {
		assert.Equal(t, runOutcome{"verified/" + want[i].id, want[i].outcome, want[i].family}, r)
	}

	recs, err = eval.LoadRuns(multiSWEJava, "")
	require.NoError(t, err)
	families := map[string][]string{}
	for _, r := range recs {
		families[r.FamilyName()] = append(families[r.FamilyName()], r.ID)
		assert.Equal(t, "swe-agent", r.Agent)
		assert.Equal(t, eval.UnitStep, r.Unit)
	}
	assert.Len(t, families, 3, "grouped by repository, not by model: %v", families)
	for fam, ids := range families {
		assert.Len(t, ids, 2, "%s: one run by each model", fam)
	}
	// What the trajectories hold is read as for any SWE-agent run.
	byID := map[string]eval.Record{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	gson := byID[gpt4oRun+"/google__gson-1093"]
	require.Len(t, gson.Steps, 5)
	assert.Equal(t, []string{"read", "read", "edit", "edit", "submit"}, phasesOf(gson))
	assert.True(t, gson.Steps[2].Failed, "the edit SWE-agent rejected for a syntax error")
	dubbo := byID[gpt4oRun+"/apache__dubbo-10638"]
	last := dubbo.Steps[len(dubbo.Steps)-1]
	assert.Equal(t, "exit_cost", last.FailureCategory, "the run stopped at its cost limit")
	assert.True(t, last.OutputMissing, "and submitted nothing")
}

func phasesOf(r eval.Record) []string {
	out := make([]string, len(r.Steps))
	for i, s := range r.Steps {
		out[i] = s.Phase
	}
	return out
}

// One run's folder, or one of its .traj files, is read with that run's
// results: the runs' ids are then their instance ids.
func TestLoadOneMultiSWEBenchRun(t *testing.T) {
	dir := filepath.Join(multiSWEJava, claudeRun)
	recs, src, err := eval.LoadSource(dir, "")
	require.NoError(t, err)
	assert.Equal(t, []runOutcome{
		{"apache__dubbo-10638", eval.OutcomeSucceeded, "apache__dubbo"},
		{"fasterxml__jackson-databind-4048", eval.OutcomeFailed, "fasterxml__jackson-databind"},
		{"google__gson-1093", eval.OutcomeSucceeded, "google__gson"},
	}, outcomesOf(recs))
	assert.Equal(t, []string{filepath.Join(dir, "results", "results.json")}, src.Labels)
	assert.Equal(t, []string{"all_preds.jsonl", "logs/", "metadata.yaml"}, src.Skipped)

	for file, outcome := range map[string]eval.Outcome{
		filepath.Join(dir, "trajs", "fasterxml__jackson-databind-4048.traj"):                    eval.OutcomeFailed,
		filepath.Join(multiSWEJava, gpt4oRun, "trajs", "fasterxml__jackson-databind-4048.traj"): eval.OutcomeSucceeded,
	} {
		recs, err := eval.LoadRuns(file, "")
		require.NoError(t, err, file)
		require.Len(t, recs, 1)
		assert.Equal(t, "fasterxml__jackson-databind-4048", recs[0].ID)
		assert.Equal(t, outcome, recs[0].Outcome, file)
	}
}

// TestLoadMultiSWEBenchGathered reads Multi-SWE-bench's runs gathered as
// trajs/<model>/<id>.traj with one labels.json: a run's label is found by
// <model>/<id> first, then by its instance id alone (or that instance's
// Multi-SWE-bench id, org/repo:pr-N). A labels.json wins over the
// evaluations' results.
func TestLoadMultiSWEBenchGathered(t *testing.T) {
	dir := t.TempDir()
	for model, run := range map[string]string{"gpt-4o": gpt4oRun, "claude-3.7": claudeRun} {
		for _, id := range []string{"apache__dubbo-10638", "fasterxml__jackson-databind-4048", "google__gson-1093"} {
			data, err := os.ReadFile(filepath.Join(multiSWEJava, run, "trajs", id+".traj"))
			require.NoError(t, err)
			p := filepath.Join(dir, "trajs", model, id+".traj")
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, data, 0o644))
		}
	}
	// A results.json that says otherwise is not read: labels.json is.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trajs", "gpt-4o", "results.json"), []byte(`{"resolved_ids": ["google__gson-1093"]}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "labels.json"), []byte(`{
		"gpt-4o/apache__dubbo-10638": false,
		"gpt-4o/fasterxml__jackson-databind-4048": true,
		"gpt-4o/google__gson-1093": false,
		"claude-3.7/google__gson-1093": true,
		"apache/dubbo:pr-10638": true,
		"fasterxml__jackson-databind-4048": false
	}`), 0o644))

	format, err := eval.DetectFormat(dir)
	require.NoError(t, err)
	assert.Equal(t, eval.FormatSWEAgent, format)
	recs, src, err := eval.LoadSource(dir, "")
	require.NoError(t, err)
	assert.Equal(t, []runOutcome{
		{"claude-3.7/apache__dubbo-10638", eval.OutcomeSucceeded, "apache__dubbo"},                         // by org/repo:pr-N
		{"claude-3.7/fasterxml__jackson-databind-4048", eval.OutcomeFailed, "fasterxml__jackson-databind"}, // by instance id
		{"claude-3.7/google__gson-1093", eval.OutcomeSucceeded, "google__gson"},
		{"gpt-4o/apache__dubbo-10638", eval.OutcomeFailed, "apache__dubbo"}, // <model>/<id> before apache/dubbo:pr-10638
		{"gpt-4o/fasterxml__jackson-databind-4048", eval.OutcomeSucceeded, "fasterxml__jackson-databind"},
		{"gpt-4o/google__gson-1093", eval.OutcomeFailed, "google__gson"},
	}, outcomesOf(recs))
	assert.Equal(t, []string{filepath.Join(dir, "labels.json")}, src.Labels)
	assert.Equal(t, []string{"trajs/gpt-4o/results.json"}, src.Skipped)

	// A run labelled nowhere is named, with the labels file.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "labels.json"), []byte(`{"gpt-4o/apache__dubbo-10638": false}`), 0o644))
	_, err = eval.LoadRuns(dir, "")
	assert.ErrorIs(t, err, eval.ErrInvalidRecord)
	assert.ErrorContains(t, err, `run "claude-3.7/apache__dubbo-10638" has no outcome in `+filepath.Join(dir, "labels.json")+": label it or remove it")
	assert.NotContains(t, err.Error(), eval.Layouts, "the runs were found and labelled: this is not a layout that is not read")
}

func TestFamilyOfMultiSWEBenchIDs(t *testing.T) {
	for id, want := range map[string]string{
		"fasterxml/jackson-core:pr-1016":        "fasterxml__jackson-core",
		"fasterxml__jackson-core-1016":          "fasterxml__jackson-core",
		"gpt-4o/google/gson:pr-1093":            "google__gson",
		"alibaba/fastjson2:pr-82":               "alibaba__fastjson2",
		"googlecontainertools__jib-4035":        "googlecontainertools__jib",
		"django__django-11099":                  "django__django",
		"job-17":                                "job",
		"mockito/mockito:release-3":             "mockito/mockito:release",
		"fasterxml__jackson-dataformat-xml-544": "fasterxml__jackson-dataformat-xml",
	} {
		assert.Equal(t, want, eval.FamilyOf(id), id)
	}
}

// TestNothingReadSaysTheLayouts: an input of which nothing is read says
// why, then, in one sentence, the layouts that are read. An input whose
// runs are found and labelled but wrong says what is wrong, and not that.
func TestNothingReadSaysTheLayouts(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	traj, err := os.ReadFile(filepath.Join(multiSWEJava, gpt4oRun, "trajs", "google__gson-1093.traj"))
	require.NoError(t, err)
	write("other/notes.txt", "x")
	write("other/data/runs.xml", "<runs/>")
	write("nolabels/trajs/a-1.traj", string(traj))
	write("nolabels/trajs/a-2.traj", string(traj))
	write("nolabels/results.json", `{"resolved": ["a-1",],}`) // CodeR's: not strict JSON, not a labels file
	write("nolabels/README.md", "# runs")
	write("multi/java/verified/run-1/trajs/a-1.traj", string(traj))
	write("mini/trajs/a-1.traj.json", `{"messages":[]}`)
	write("chat/a-1.json", `{"messages":[{"role":"assistant","content":"","tool_calls":[{"id":"c","type":"function","function":{"name":"bash","arguments":"{\"command\":\"ls\"}"}}]}]}`)
	write("unlabelled/trajs/a-1.traj", string(traj))
	write("unlabelled/labels.json", `{"a-2": true}`)
	write("both/trajs/a-1.traj.json", "{}")
	write("both/trajs/a-2.traj", "{}")
	runsTxt := write("runs.txt", "x")

	for _, tc := range []struct {
		name, path, format, reason string
		layouts                    bool
	}{
		{"a folder of something else", "other", "", filepath.Join(dir, "other") + " holds no runs of a known format", true},
		{"SWE-agent runs without labels", "nolabels", "", "SWE-agent runs: 2 .traj files but no labels file: no labels.json (run id → true when resolved), results/results.json or results.json (resolved_ids) of a published evaluation in " + filepath.Join(dir, "nolabels") + " or beside trajs/a-1.traj", true},
		{"a Multi-SWE-bench folder without its results", "multi/java", "", "SWE-agent runs: 1 .traj file but no labels file", true},
		{"a mini-swe-agent directory without labels", "mini", "", "mini-swe-agent runs: 1 trajs/*.traj.json file but no labels file: no labels.json (run id → true when resolved) in " + filepath.Join(dir, "mini"), true},
		{"chat logs without labels", "chat", "", "chat runs: 1 run but no labels file", true},
		{"swe-agent given for a folder without .traj files", "other", eval.FormatSWEAgent, "no runs in " + filepath.Join(dir, "other") + " (format swe-agent)", true},
		{"mini-swe-agent given for Multi-SWE-bench's folder", "multi", eval.FormatMiniSWE, "no runs in " + filepath.Join(dir, "multi") + " (format mini-swe-agent-1)", true},
		{"a file of an unknown extension", runsTxt, "", "cannot tell the format of " + runsTxt + " from its extension", true},
		{"an unknown format name", "other", "multi-swe-bench", `unknown run format "multi-swe-bench": use records, mini-swe-agent-1, swe-agent, openai-chat, letters`, true},
		{"a run without a label", "unlabelled", "", `run "a-1" has no outcome in ` + filepath.Join(dir, "unlabelled", "labels.json"), false},
		{"runs of two formats", "both", "", "holds runs of 2 formats, mini-swe-agent-1 (trajs/*.traj.json) and swe-agent (trajs/*.traj): pass --format mini-swe-agent-1 or --format swe-agent", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if !filepath.IsAbs(path) {
				path = filepath.Join(dir, path)
			}
			_, _, err := eval.LoadSource(path, tc.format)
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.reason)
			if !tc.layouts {
				assert.NotContains(t, err.Error(), eval.Layouts)
				return
			}
			assert.True(t, strings.HasSuffix(err.Error(), ". "+eval.Layouts), "ends with the layouts: %v", err)
			assert.Equal(t, 1, strings.Count(err.Error(), eval.Layouts), "said once")
		})
	}
}

// Layouts is one sentence naming every layout and format read.
func TestLayoutsSentence(t *testing.T) {
	s := eval.Layouts
	assert.True(t, strings.HasPrefix(s, "overseer reads "), s)
	assert.True(t, strings.HasSuffix(s, "."), s)
	assert.NotContains(t, strings.TrimSuffix(s, "."), ". ", "one sentence")
	for _, f := range eval.Formats {
		assert.Contains(t, s, "("+f+")")
	}
	for _, layout := range []string{"trajs/*.traj.json with labels.json", "SWE-agent .traj files", "Multi-SWE-bench", "trajs/<model>/<id>.traj", "<run>/trajs/<id>.traj", "results/results.json", "OpenAI chat logs", ".jsonl", ".csv"} {
		assert.Contains(t, s, layout)
	}
}
