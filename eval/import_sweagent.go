package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// ImportSWEAgent converts SWE-agent trajectories to step-unit records: a
// .traj file, or every *.traj file of a directory and of its
// subdirectories up to three levels down, in name order: SWE-agent writes
// <run>/<id>/<id>.traj, sources publish trajs/<id>.traj, and
// Multi-SWE-bench's leaderboard one folder per run (a model, with an
// agent), evaluation/<language>/verified/<run>/trajs/<id>.traj, which a
// team may also gather as trajs/<model>/<id>.traj.
//
// A run's instance id is its file's name without .traj. Its id is the
// instance id, prefixed by its run's folder when it has one, as in
// <run>/<id> or <model>/<id> (the folders between the directory given and
// the file, less trajs/ and the run's own <id>/ folder): so the runs of
// one instance by several models are several runs. Its task family is the
// instance id without its trailing number: for a SWE-bench or
// Multi-SWE-bench instance, its repository (astropy__astropy-12907 →
// astropy__astropy, fasterxml__jackson-databind-4048 →
// fasterxml__jackson-databind), whatever the model, so that
// cross-validation never trains and tests on one repository.
//
// Its outcome comes from a labels.json (run id or instance id → true when
// resolved): the first one beside the file or above it, up to the
// directory given (its root, as in DIR/labels.json with DIR/trajs/*.traj)
// or, for a file given, two levels up. Without one, from the published
// results of its evaluation over the same folders: a results/results.json
// or results.json with resolved or resolved_ids (each run's, on
// Multi-SWE-bench's leaderboard, whose ids org/repo:pr-N are the instances
// org__repo-N). A run without a label is an error naming it and the labels
// file: label it or remove it.
//
// Each entry of the trajectory is a step:
//
//   - phase: the class of its action. SWE-agent's viewing and search tools
//     (open, goto, scroll_up/down, search_file, search_dir, find_file,
//     str_replace_editor view) are read; edit, and str_replace_editor
//     create, str_replace, insert and undo_edit are edit — or reproduce when
//     the file is a scratch file (see [Classify]; for edit, the open file of
//     the step's state); create is the same; submit is submit; any other
//     action is a shell command, classified by a [Classifier] (python runs
//     are reproduce, test runners test, …). CodeR's actions (a multi-agent
//     system on SWE-agent): its searches (rover_search_*,
//     stackoverflow_search) are read, and so are plan, succeed and fail (a
//     role plans or hands over; nothing touches the repository);
//     SWE-agent's exit_cost, exit_context, exit_format, exit_api and
//     exit_error (the run stopped at a limit or an error and its patch was
//     submitted for it) are a failed submit;
//   - failed: conservatively, only when the observation shows that the
//     command or tool failed: it starts with "Error" or "Usage:", or says
//     "command not found", "No such file or directory", "syntax error"
//     (SWE-agent's rejected edit), "No replacement was performed",
//     "timed out" (in any case), or has a Python traceback, or a pytest summary with
//     failed tests or errors. A silent failure counts as success;
//   - duration: execution_time (seconds);
//   - cost and tokens: a trajectory carries only totals (info.model_stats
//     instance_cost, tokens_sent, tokens_received), so they are spread
//     evenly over the steps — the features the learned judge reads from
//     them then grow steadily through the run, as averages do;
//   - the submit step of an empty info.submission misses its output;
//   - texts, for a model judge's content window: excerpts of the action
//     (Command), the observation (Printed) and the thought (Message). The
//     step is known by its action's first line (Text): no call digest.
func ImportSWEAgent(p string) ([]Record, error) {
	return importSWEAgent(p, &Source{})
}

func importSWEAgent(p string, src *Source) ([]Record, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("runs: %w", err)
	}
	paths := []string{p}
	if fi.IsDir() {
		paths = trajFiles(p)
	}
	labels := newLabelFinder(p, fi.IsDir(), src)
	out := make([]Record, 0, len(paths))
	for _, tp := range paths {
		instance := strings.TrimSuffix(filepath.Base(tp), ".traj")
		id := instance
		if run := trajRun(p, tp, instance); fi.IsDir() && run != "" {
			id = run + "/" + instance
		}
		resolved, err := labels.outcome(tp, id, instance)
		if errors.Is(err, ErrNoLabels) {
			return nil, fmt.Errorf("SWE-agent runs: %d %s but %w", len(paths), plural(len(paths), ".traj file", ".traj files"), err)
		}
		if err != nil {
			return nil, fmt.Errorf("SWE-agent runs: %w", err)
		}
		data, err := os.ReadFile(tp)
		if err != nil {
			return nil, fmt.Errorf("runs: %w", err)
		}
		rec, err := ParseSWEAgent(id, data, resolved)
		if err != nil {
			name := filepath.Base(tp)
			if fi.IsDir() {
				name = relPath(p, tp)
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		rec.Task.Family = FamilyOf(instance)
		src.use(tp)
		out = append(out, rec)
	}
	return out, nil
}

// trajFiles lists the *.traj files of a directory and of its
// subdirectories up to three levels down, in name order: SWE-agent writes
// <run>/<id>/<id>.traj, sources publish trajs/<id>.traj, and
// Multi-SWE-bench one folder per model or run, trajs/<model>/<id>.traj or
// <run>/trajs/<id>.traj.
func trajFiles(dir string) []string {
	var out []string
	pattern := "*.traj"
	for range 4 {
		m, _ := filepath.Glob(filepath.Join(dir, pattern))
		out = append(out, m...)
		pattern = filepath.Join("*", pattern)
	}
	sort.Strings(out)
	return out
}

// trajRun is the run, or model, that a .traj file below dir is of: the
// folders between them less trajs/ and the run's own <instance>/ folder,
// joined by /, or "" when none is left (dir/trajs/<id>.traj,
// dir/<id>/<id>.traj).
func trajRun(dir, file, instance string) string {
	rel := relPath(dir, filepath.Dir(file))
	if rel == "." || strings.HasPrefix(rel, "..") {
		return ""
	}
	parts := strings.Split(rel, "/")
	if parts[len(parts)-1] == instance {
		parts = parts[:len(parts)-1]
	}
	run := parts[:0]
	for _, part := range parts {
		if part != "trajs" {
			run = append(run, part)
		}
	}
	return strings.Join(run, "/")
}

type sweTraj struct {
	Trajectory []struct {
		Action        string   `json:"action"`
		Observation   string   `json:"observation"`
		Response      string   `json:"response"`
		Thought       string   `json:"thought"`
		ExecutionTime *float64 `json:"execution_time"`
		State         any      `json:"state"`
	} `json:"trajectory"`
	Info struct {
		ExitStatus string `json:"exit_status"`
		ModelStats struct {
			InstanceCost   float64 `json:"instance_cost"`
			TokensSent     int64   `json:"tokens_sent"`
			TokensReceived int64   `json:"tokens_received"`
			APICalls       int     `json:"api_calls"`
		} `json:"model_stats"`
	} `json:"info"`
}

// ParseSWEAgent converts one SWE-agent trajectory (see [ImportSWEAgent]).
func ParseSWEAgent(id string, data []byte, resolved bool) (Record, error) {
	var t sweTraj
	if err := json.Unmarshal(data, &t); err != nil {
		return Record{}, fmt.Errorf("%w: not a SWE-agent trajectory: %v", ErrInvalidRecord, err)
	}
	// info.submission may be absent, null or a string.
	var info struct {
		Info map[string]json.RawMessage `json:"info"`
	}
	_ = json.Unmarshal(data, &info)
	submission := ""
	if raw, ok := info.Info["submission"]; ok {
		_ = json.Unmarshal(raw, &submission)
	}
	if len(t.Trajectory) == 0 {
		return Record{}, fmt.Errorf("%w: run %q has no trajectory steps", ErrInvalidRecord, id)
	}
	rec := Record{Format: RecordFormat, ID: id, Outcome: OutcomeFailed, Agent: "swe-agent", Unit: UnitStep, Task: Task{Family: FamilyOf(id)}}
	if resolved {
		rec.Outcome = OutcomeSucceeded
	}
	n := len(t.Trajectory)
	stats := t.Info.ModelStats
	in, outTok := spread(stats.TokensSent, n), spread(stats.TokensReceived, n)
	var cls Classifier
	for i, s := range t.Trajectory {
		action := strings.TrimSpace(s.Action)
		openFile, wd := sweState(s.State)
		class := sweClass(&cls, action, openFile, wd)
		st := Step{Phase: string(class), Failed: sweFailed(class, s.Observation), Text: clipText(firstLine(action), 200),
			CostUSD: stats.InstanceCost / float64(n), InputTokens: in[i], OutputTokens: outTok[i],
			Command: stepText(action), Printed: stepText(s.Observation), Message: stepText(s.Thought)}
		if s.ExecutionTime != nil && *s.ExecutionTime > 0 {
			st.DurationMS = int64(*s.ExecutionTime * 1000)
		}
		if class == Submit && strings.TrimSpace(submission) == "" {
			st.OutputMissing = true
		}
		if fields := strings.Fields(action); len(fields) > 0 && sweExit[fields[0]] {
			st.Failed, st.FailureCategory = true, fields[0]
		}
		rec.Steps = append(rec.Steps, st)
	}
	return rec, nil
}

// spread divides total into n integer parts that sum to it.
func spread(total int64, n int) []int64 {
	out := make([]int64, n)
	if n == 0 || total <= 0 {
		return out
	}
	q, r := total/int64(n), total%int64(n)
	for i := range out {
		out[i] = q
		if int64(i) < r {
			out[i]++
		}
	}
	return out
}

// sweState reads the open file and working directory of a step's state: a
// JSON object, or a string holding one.
func sweState(state any) (openFile, wd string) {
	var m map[string]any
	switch v := state.(type) {
	case map[string]any:
		m = v
	case string:
		_ = json.Unmarshal([]byte(v), &m)
	}
	str := func(k string) string {
		s, _ := m[k].(string)
		if s == "n/a" {
			return ""
		}
		return s
	}
	return str("open_file"), str("working_dir")
}

var sweRead = map[string]bool{
	"open": true, "goto": true, "scroll_up": true, "scroll_down": true, "search_file": true,
	"search_dir": true, "find_file": true, "filemap": true,
	// CodeR: searches, and a role's plan or hand-over.
	"rover_search_method": true, "rover_search_code": true, "rover_search_class": true, "rover_search_file": true,
	"stackoverflow_search": true, "plan": true, "succeed": true, "fail": true,
}

// sweExit are SWE-agent's forced ends: a limit or an error stopped the run
// and its patch was submitted for it.
var sweExit = map[string]bool{
	"exit_cost": true, "exit_context": true, "exit_format": true, "exit_api": true, "exit_error": true,
}

func sweClass(cls *Classifier, action, openFile, wd string) Class {
	fields := strings.Fields(action)
	if len(fields) == 0 {
		return Read
	}
	switch tool := fields[0]; {
	case tool == "submit" || sweExit[tool]:
		return Submit
	case sweRead[tool]:
		return Read
	case tool == "edit":
		return fileClass(openFile, wd)
	case tool == "create":
		if len(fields) > 1 {
			return fileClass(fields[1], wd)
		}
		return Edit
	case tool == "str_replace_editor":
		if len(fields) < 2 {
			return Read
		}
		switch fields[1] {
		case "view":
			return Read
		case "create", "str_replace", "insert", "undo_edit":
			if len(fields) > 2 {
				return fileClass(fields[2], wd)
			}
			return Edit
		}
		return Read
	}
	return cls.Classify(action)
}

// fileClass is edit for a repository file, reproduce for a scratch file.
func fileClass(file, wd string) Class {
	if file == "" {
		return Edit
	}
	if wd != "" && strings.HasPrefix(file, strings.TrimSuffix(wd, "/")+"/") {
		file = strings.TrimPrefix(file, strings.TrimSuffix(wd, "/")+"/")
	} else if strings.HasPrefix(file, "/") && !strings.HasPrefix(file, "/tmp/") && !strings.HasPrefix(file, "/testbed/") {
		// An absolute path elsewhere: the repository's top is its first
		// directory (SWE-agent checks repositories out at /<repo>).
		if rest := strings.SplitN(strings.TrimPrefix(path.Clean(file), "/"), "/", 2); len(rest) == 2 {
			file = rest[1]
		}
	}
	if isScratch(file) {
		return Reproduce
	}
	return Edit
}

var (
	pytestFailed = regexp.MustCompile(`(?m)^=+ .*\b\d+ (failed|errors?)\b.* =+\s*$`)
	sweErrorText = []string{"command not found", "No such file or directory", "syntax error", "No replacement was performed",
		"Traceback (most recent call last):"}
)

// sweFailed is the conservative failure rule of ImportSWEAgent.
func sweFailed(class Class, observation string) bool {
	obs := strings.TrimSpace(observation)
	if strings.HasPrefix(obs, "Error") || strings.HasPrefix(obs, "Usage:") {
		return true
	}
	for _, s := range sweErrorText {
		if strings.Contains(obs, s) {
			return true
		}
	}
	if strings.Contains(strings.ToLower(obs), "timed out") {
		return true
	}
	return class == Test && pytestFailed.MatchString(obs)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
