package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// The input formats [LoadRuns] reads.
const (
	// FormatRecords is run records, JSON Lines (a .jsonl file, or a
	// directory of them).
	FormatRecords = "records"
	// FormatMiniSWE is a mini-swe-agent-1 run directory: labels.json and
	// trajs/*.traj.json.
	FormatMiniSWE = "mini-swe-agent-1"
	// FormatSWEAgent is SWE-agent trajectories (*.traj) with a labels.json
	// beside them or at the run directory's root, or with the results.json
	// of a published evaluation: Multi-SWE-bench's runs among them, one
	// folder per model or run (trajs/<model>/<id>.traj or
	// <run>/trajs/<id>.traj).
	FormatSWEAgent = "swe-agent"
	// FormatOpenAIChat is OpenAI chat-completions message logs with tool
	// calls (OpenHands' LLM completion logs among them), one run per JSON
	// file or per JSON Lines line, with a labels.json (see
	// [ImportOpenAIChat]).
	FormatOpenAIChat = "openai-chat"
	// FormatLetters is the phase-letter sequence CSV (id,outcome,sequence).
	FormatLetters = "letters"
)

// Formats lists the formats LoadRuns reads.
var Formats = []string{FormatRecords, FormatMiniSWE, FormatSWEAgent, FormatOpenAIChat, FormatLetters}

// ErrNoRuns is returned when an input holds no run.
var ErrNoRuns = errors.New("no runs")

// ErrUnknownFormat is returned for a format name or an input whose format
// cannot be told.
var ErrUnknownFormat = errors.New("unknown run format")

// ErrNoLabels is returned when runs are found but no file gives their
// outcomes.
var ErrNoLabels = errors.New("no labels file")

// Layouts says in one sentence which inputs [LoadSource] reads, and the
// format name of each: every error of an input of which nothing is read
// ends with it.
var Layouts = "overseer reads " + joinSemicolons([]string{
	"a mini-swe-agent run directory, trajs/*.traj.json with labels.json (" + FormatMiniSWE + ")",
	"SWE-agent .traj files with a labels.json (" + FormatSWEAgent + ")",
	"Multi-SWE-bench's published SWE-agent runs, trajs/<model>/<id>.traj or <run>/trajs/<id>.traj, with a labels.json keyed <model>/<id> or <id>, or each run's results/results.json (" + FormatSWEAgent + ")",
	"OpenAI chat logs with tool calls, OpenHands' among them, with a labels.json (" + FormatOpenAIChat + ")",
	"run-record .jsonl files (" + FormatRecords + ")",
	"a phase-letter .csv of id,outcome,sequence (" + FormatLetters + ")",
}) + "."

// joinSemicolons joins "a", "b", "c" as "a; b; or c".
func joinSemicolons(items []string) string {
	return strings.Join(items[:len(items)-1], "; ") + "; or " + items[len(items)-1]
}

// notReadError is an error of an input of which nothing was read: it ends
// with [Layouts].
type notReadError struct{ err error }

func (e notReadError) Error() string { return e.err.Error() + ". " + Layouts }
func (e notReadError) Unwrap() error { return e.err }

// notRead ends err with [Layouts] when nothing was read for it: no runs,
// or runs without a labels file (an input whose format is not known says
// it already). Other errors, such as a broken file or a run without a
// label, are returned as they are.
func notRead(err error) error {
	var done notReadError
	if err == nil || errors.As(err, &done) {
		return err
	}
	if errors.Is(err, ErrNoRuns) || errors.Is(err, ErrNoLabels) {
		return notReadError{err}
	}
	return err
}

// importers convert one input (a file or directory) of a format to
// records, noting in src the files they read.
var importers = map[string]func(path string, src *Source) ([]Record, error){
	FormatRecords:    func(p string, src *Source) ([]Record, error) { return readFiles(p, "*.jsonl", ReadRecords, src) },
	FormatMiniSWE:    importMiniSWE,
	FormatLetters:    func(p string, src *Source) ([]Record, error) { return readFiles(p, "*.csv", ReadLetters, src) },
	FormatSWEAgent:   importSWEAgent,
	FormatOpenAIChat: importOpenAIChat,
}

// Source says what [LoadSource] read: the format of the runs, the labels
// files their outcomes came from, and the files beside them it skipped.
type Source struct {
	Path   string `json:"path"`
	Format string `json:"format"`
	// Detected is true when the format was told from the input's files
	// rather than given.
	Detected bool `json:"detected"`
	Runs     int  `json:"runs"`
	// Labels are the labels files read, none when the runs carry their
	// outcomes (run records, letters).
	Labels []string `json:"labels,omitempty"`
	// Skipped are the files and directories of a directory input that hold
	// no run, relative to it (a directory with a trailing /): sources
	// publish runs with their results, metadata and README beside them.
	Skipped []string `json:"skipped,omitempty"`

	used map[string]bool // the files read, as runs or labels
}

// use notes a file read as runs or labels.
func (s *Source) use(p string) {
	if s.used == nil {
		s.used = map[string]bool{}
	}
	s.used[filepath.Clean(p)] = true
}

// String says in one line which runs were read, in which format, and where
// their outcomes came from.
func (s Source) String() string {
	how := "given"
	if s.Detected {
		how = "detected"
	}
	outcomes := "no labels file (the runs carry their outcomes)"
	if len(s.Labels) > 0 {
		outcomes = "outcomes from " + joinAnd(s.Labels, "and")
	}
	return fmt.Sprintf("read %d runs of format %s (%s) from %s; %s", s.Runs, s.Format, how, s.Path, outcomes)
}

// SkippedNote says in one line which files beside the runs were skipped,
// or is "" when none was.
func (s Source) SkippedNote() string {
	if len(s.Skipped) == 0 {
		return ""
	}
	const shown = 8
	names := s.Skipped
	if len(names) > shown {
		names = append(names[:shown:shown], fmt.Sprintf("%d more", len(s.Skipped)-shown))
	}
	return fmt.Sprintf("skipped %s: not runs", joinAnd(names, "and"))
}

// skippedBeside lists what a directory input holds besides the files read:
// the other files of each directory that holds one, and the directories
// that hold none (once each, not their contents: a published evaluation
// has a logs/ folder per task). Hidden files are left out.
func skippedBeside(root string, used map[string]bool) []string {
	holds := map[string]bool{root: true}
	for p := range used {
		for d := filepath.Dir(p); len(d) > len(root); d = filepath.Dir(d) {
			holds[d] = true
		}
	}
	var out []string
	var walk func(dir string)
	walk = func(dir string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			p := filepath.Join(dir, e.Name())
			switch {
			case e.IsDir() && holds[p]:
				walk(p)
			case e.IsDir():
				out = append(out, relPath(root, p)+"/")
			case !used[p]:
				out = append(out, relPath(root, p))
			}
		}
	}
	walk(root)
	return out
}

// DetectFormat tells the format of an input from the files it holds.
//
// A file: .csv is the letter format, .traj SWE-agent; a .json file, or a
// .jsonl (.ndjson) file whose first line is, an object with a messages or
// fncall_messages array is an OpenAI chat log, any other .json or .jsonl
// file run records.
//
// A directory is probed for each format: mini-swe-agent-1 when it has
// trajs/*.traj.json, SWE-agent when it has *.traj files up to three levels
// down (trajs/*.traj, <id>/<id>.traj, and Multi-SWE-bench's
// trajs/<model>/<id>.traj and <run>/trajs/<id>.traj), OpenAI chat when a
// .json or .jsonl file at its top or up to two levels down is a chat log
// (as above; labels.json and *.traj.json are not), run records when a
// *.jsonl file at its top is not (and its first line is not JSON of
// another kind, such as the all_preds.jsonl of a published evaluation),
// letters when it has *.csv files. Exactly one format must match: when
// several do, the error (wrapping [ErrUnknownFormat]) names them and the
// --format to pass; when none does, it ends with [Layouts].
func DetectFormat(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("runs: %w", err)
	}
	if !fi.IsDir() {
		switch strings.ToLower(filepath.Ext(path)) {
		case ".jsonl", ".json", ".ndjson":
			if isChatLog(path) {
				return FormatOpenAIChat, nil
			}
			return FormatRecords, nil
		case ".csv":
			return FormatLetters, nil
		case ".traj":
			return FormatSWEAgent, nil
		}
		return "", notReadError{fmt.Errorf("%w: cannot tell the format of %s from its extension: use --format %s", ErrUnknownFormat, path, strings.Join(Formats, "|"))}
	}
	type found struct{ format, evidence string }
	var matched []found
	glob := func(pattern string) []string {
		m, _ := filepath.Glob(filepath.Join(path, pattern))
		return m
	}
	if m := glob(filepath.Join("trajs", "*.traj.json")); len(m) > 0 {
		matched = append(matched, found{FormatMiniSWE, "trajs/*.traj.json"})
	}
	if m := trajFiles(path); len(m) > 0 {
		matched = append(matched, found{FormatSWEAgent, relGlob(path, m[0], "*.traj")})
	}
	if p := firstChatLog(path); p != "" {
		matched = append(matched, found{FormatOpenAIChat, "chat log " + relPath(path, p)})
	}
	for _, p := range glob("*.jsonl") {
		if !isChatLog(p) && !notRecords(p) {
			matched = append(matched, found{FormatRecords, "*.jsonl"})
			break
		}
	}
	if m := glob("*.csv"); len(m) > 0 {
		matched = append(matched, found{FormatLetters, "*.csv"})
	}
	switch len(matched) {
	case 1:
		return matched[0].format, nil
	case 0:
		return "", notReadError{fmt.Errorf("%w: %s holds no runs of a known format", ErrUnknownFormat, path)}
	}
	names, flags := make([]string, len(matched)), make([]string, len(matched))
	for i, m := range matched {
		names[i] = fmt.Sprintf("%s (%s)", m.format, m.evidence)
		flags[i] = "--format " + m.format
	}
	return "", fmt.Errorf("%w: %s holds runs of %d formats, %s: pass %s", ErrUnknownFormat, path, len(matched),
		joinAnd(names, "and"), joinAnd(flags, "or"))
}

// notRecords reports whether a .jsonl file's first line is JSON but not a
// run record (an object without format, outcome or steps): a file of
// another kind, not a broken record file, whose errors the records
// importer names.
func notRecords(p string) bool {
	line, ok := firstFileLine(p)
	if !ok || !json.Valid(line) {
		return false
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(line, &probe) != nil {
		return true
	}
	_, format := probe["format"]
	_, outcome := probe["outcome"]
	_, steps := probe["steps"]
	return !format && !outcome && !steps
}

// joinAnd joins "a", "b", "c" as "a, b and c".
func joinAnd(items []string, conj string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " " + conj + " " + items[len(items)-1]
}

// relPath is p relative to dir, with slashes.
func relPath(dir, p string) string {
	if r, err := filepath.Rel(dir, p); err == nil {
		return filepath.ToSlash(r)
	}
	return p
}

// relGlob names the pattern file matched under dir: pattern itself at the
// top, sub/pattern one level down.
func relGlob(dir, file, pattern string) string {
	if sub := filepath.Dir(relPath(dir, file)); sub != "." {
		return sub + "/" + pattern
	}
	return pattern
}

// labelFinder finds the labels (run id → resolved) of each run file and
// reads each labels file once: the first labels.json in the file's
// directory or above it, up to the input directory (for a directory input)
// or two levels up (for a file input); else, over the same directories,
// the first results/results.json or results.json of a published
// evaluation (see [readResults]). It notes the labels files it reads in
// src.
type labelFinder struct {
	root   string // the input directory, or "" for a file input
	input  string
	loaded map[string]map[string]bool // labels by file; nil: not a labels file
	src    *Source
}

func newLabelFinder(input string, isDir bool, src *Source) *labelFinder {
	lf := &labelFinder{input: filepath.Clean(input), loaded: map[string]map[string]bool{}, src: src}
	if isDir {
		lf.root = lf.input
	}
	return lf
}

// dirsUp are the directories searched for the labels of file, nearest
// first.
func (lf *labelFinder) dirsUp(file string) []string {
	var out []string
	dir := filepath.Dir(filepath.Clean(file))
	for up := 0; ; up++ {
		out = append(out, dir)
		parent := filepath.Dir(dir)
		if dir == lf.root || parent == dir || (lf.root == "" && up == 2) {
			return out
		}
		dir = parent
	}
}

// load reads the labels file p once: a labels.json, or a published
// results file (nil when it is not one). A labels.json that cannot be read
// is an error.
func (lf *labelFinder) load(p string, results bool) (map[string]bool, error) {
	if labels, ok := lf.loaded[p]; ok {
		return labels, nil
	}
	var labels map[string]bool
	if results {
		labels = readResults(p)
	} else {
		var err error
		if labels, err = LoadLabels(p); err != nil {
			return nil, err
		}
		labels = withInstanceAliases(labels)
	}
	lf.loaded[p] = labels
	if labels != nil {
		lf.src.use(p)
		lf.src.Labels = append(lf.src.Labels, p)
	}
	return labels, nil
}

// find returns the labels of file and the labels file's path.
func (lf *labelFinder) find(file string) (map[string]bool, string, error) {
	dirs := lf.dirsUp(file)
	for _, dir := range dirs {
		p := filepath.Join(dir, "labels.json")
		if _, err := os.Stat(p); err != nil {
			continue
		}
		labels, err := lf.load(p, false)
		return labels, p, err
	}
	for _, dir := range dirs {
		for _, name := range []string{filepath.Join("results", "results.json"), "results.json"} {
			p := filepath.Join(dir, name)
			if _, err := os.Stat(p); err != nil {
				continue
			}
			if labels, _ := lf.load(p, true); labels != nil {
				return labels, p, nil
			}
		}
	}
	where := lf.input
	if lf.root == "" {
		where = filepath.Dir(lf.input)
	}
	const what = "no labels.json (run id → true when resolved), results/results.json or results.json (resolved_ids) of a published evaluation"
	if file == lf.input || filepath.Dir(file) == where {
		return nil, "", fmt.Errorf("%w: %s in %s", ErrNoLabels, what, where)
	}
	return nil, "", fmt.Errorf("%w: %s in %s or beside %s", ErrNoLabels, what, where, relPath(where, file))
}

// outcome is the labelled outcome of a run of file, known in the labels by
// the first of ids it has (a run's id, then its instance id): a run
// without a label is an error naming it and the labels file.
func (lf *labelFinder) outcome(file string, ids ...string) (bool, error) {
	labels, p, err := lf.find(file)
	if err != nil {
		return false, err
	}
	for _, id := range ids {
		if resolved, ok := labels[id]; ok {
			return resolved, nil
		}
	}
	return false, fmt.Errorf("%w: run %q has no outcome in %s: label it or remove it", ErrInvalidRecord, ids[0], p)
}

// readResults reads the results.json of a published evaluation as labels:
// a JSON object with a resolved or resolved_ids list of instance ids (as
// SWE-bench's and Multi-SWE-bench's evaluations write, and their
// leaderboards publish in results/results.json). Its resolved instances
// succeeded; every other instance it lists (unresolved_ids,
// empty_patch_ids, error_ids, completed_ids, …) failed. Multi-SWE-bench's
// ids, org/repo:pr-N, are also known as its instance ids, org__repo-N. It
// is nil for a file that is not such an object: CodeR's results.json, not
// strict JSON, or an evaluation's summary of another kind.
func readResults(p string) map[string]bool {
	data, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	var lists map[string]json.RawMessage
	if json.Unmarshal(data, &lists) != nil {
		return nil
	}
	ids := func(key string) ([]string, bool) {
		raw, ok := lists[key]
		var out []string
		return out, ok && json.Unmarshal(raw, &out) == nil
	}
	var resolved []string
	report := false
	for _, key := range []string{"resolved", "resolved_ids"} {
		if some, ok := ids(key); ok {
			resolved, report = append(resolved, some...), true
		}
	}
	if !report {
		return nil
	}
	labels := map[string]bool{}
	for key := range lists {
		if some, ok := ids(key); ok {
			for _, id := range some {
				labels[id] = false
			}
		}
	}
	for _, id := range resolved {
		labels[id] = true
	}
	return withInstanceAliases(labels)
}

// multiSWEID is a Multi-SWE-bench evaluation's run id, [prefix/]org/repo:pr-N.
var multiSWEID = regexp.MustCompile(`^(.*/)?([^/:]+)/([^/:]+):pr-(\d+)$`)

// instanceID is the instance id of a Multi-SWE-bench evaluation's run id
// (org/repo:pr-N → org__repo-N, a prefix kept), or id as it is.
func instanceID(id string) string {
	return multiSWEID.ReplaceAllString(id, "${1}${2}__${3}-${4}")
}

// withInstanceAliases adds to labels each Multi-SWE-bench run id's label
// under its instance id, where that is not a label already.
func withInstanceAliases(labels map[string]bool) map[string]bool {
	aliases := map[string]bool{}
	for id, resolved := range labels {
		if alias := instanceID(id); alias != id {
			if _, ok := labels[alias]; !ok {
				aliases[alias] = resolved
			}
		}
	}
	maps.Copy(labels, aliases)
	return labels
}

// LoadRuns reads the runs of an input (a file or a directory) in the given
// format, or the detected one when format is empty. Every record is
// validated; an input without runs is an error wrapping ErrNoRuns.
func LoadRuns(path, format string) ([]Record, error) {
	recs, _, err := LoadSource(path, format)
	return recs, err
}

// LoadSource is [LoadRuns], and says what it read: the format, the labels
// files, and the files beside the runs that are not runs (a source's
// results.json, metadata.yaml, README.md), which are skipped.
func LoadSource(path, format string) ([]Record, Source, error) {
	src := Source{Path: path, Format: format}
	if format == "" {
		f, err := DetectFormat(path)
		if err != nil {
			return nil, src, err
		}
		src.Format, src.Detected = f, true
	}
	imp, ok := importers[src.Format]
	if !ok {
		return nil, src, notReadError{fmt.Errorf("%w %q: use %s", ErrUnknownFormat, src.Format, strings.Join(Formats, ", "))}
	}
	recs, err := imp(path, &src)
	if err != nil {
		return nil, src, notRead(err)
	}
	if len(recs) == 0 {
		return nil, src, notRead(fmt.Errorf("%w in %s (format %s)", ErrNoRuns, path, src.Format))
	}
	seen := make(map[string]bool, len(recs))
	for _, r := range recs {
		if err := r.Validate(); err != nil {
			return nil, src, err
		}
		if seen[r.ID] {
			return nil, src, fmt.Errorf("%w: run id %q appears twice in %s", ErrInvalidRecord, r.ID, path)
		}
		seen[r.ID] = true
	}
	src.Runs = len(recs)
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		src.Skipped = skippedBeside(filepath.Clean(path), src.used)
	}
	return recs, src, nil
}

// readFiles reads one file, or every file of a directory that matches glob
// (in name order), with read; errors name the file.
func readFiles(path, glob string, read func(io.Reader) ([]Record, error), src *Source) ([]Record, error) {
	paths := []string{path}
	if fi, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("runs: %w", err)
	} else if fi.IsDir() {
		paths, _ = filepath.Glob(filepath.Join(path, glob))
	}
	var out []Record
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("runs: %w", err)
		}
		recs, err := read(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(p), err)
		}
		src.use(p)
		out = append(out, recs...)
	}
	return out, nil
}

// ImportMiniSWE converts a mini-swe-agent-1 run directory (labels.json and
// trajs/*.traj.json) to records, in name order. Each assistant turn is a
// step: its phase is the action's [Class] (none for a turn the harness
// rejected, which is a failed step of category "format"), failed when its
// return code is not 0 or it timed out, with its cost and tokens and the
// time to the next turn; the submit step of an empty submission misses its
// output. Its command and the observation it got back are known by their
// digests (Call, Output) and kept as excerpts (Command, Printed) with what
// the model said beside the command (Message), for a model judge's content
// window. A run without a label is an error: label it or remove it.
func ImportMiniSWE(dir string) ([]Record, error) {
	return importMiniSWE(dir, &Source{})
}

func importMiniSWE(dir string, src *Source) ([]Record, error) {
	paths, err := TracePaths(dir)
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, nil // no runs, said by LoadSource
	}
	labelsFile := filepath.Join(dir, "labels.json")
	labels, err := LoadLabels(labelsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("mini-swe-agent runs: %d trajs/*.traj.json %s but %w: no labels.json (run id → true when resolved) in %s",
			len(paths), plural(len(paths), "file", "files"), ErrNoLabels, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("mini-swe-agent runs: %w", err)
	}
	src.use(labelsFile)
	src.Labels = append(src.Labels, labelsFile)
	out := make([]Record, 0, len(paths))
	for _, p := range paths {
		tr, err := LoadTrace(p)
		if err != nil {
			return nil, err
		}
		resolved, ok := labels[tr.ID]
		if !ok {
			return nil, fmt.Errorf("%w: run %q has no outcome in labels.json", ErrInvalidRecord, tr.ID)
		}
		src.use(p)
		out = append(out, RecordOfTrace(tr, resolved))
	}
	return out, nil
}

// RecordOfTrace converts one mini-swe-agent trace (see [ImportMiniSWE]).
func RecordOfTrace(tr *Trace, resolved bool) Record {
	rec := Record{Format: RecordFormat, ID: tr.ID, Outcome: OutcomeFailed, Agent: "mini-swe-agent",
		Task: Task{Family: FamilyOf(tr.ID), Objective: clipText(tr.Task, 2000)}}
	if resolved {
		rec.Outcome = OutcomeSucceeded
	}
	for i, a := range tr.Actions {
		s := Step{Phase: string(a.Class), Failed: a.Failed(), CostUSD: a.CostUSD, InputTokens: a.InputTokens, OutputTokens: a.OutputTokens,
			Text: clipText(a.Command, 200), Output: a.Output, ExitCode: a.ReturnCode, TimedOut: a.TimedOut,
			Printed: a.Printed, Message: a.Thought}
		if a.Command != "" {
			s.Call, s.Command = Digest(a.Command), stepText(a.Command)
		}
		if a.FormatError {
			s.Phase, s.FailureCategory = "", "format"
		}
		if i+1 < len(tr.Actions) && !a.At.IsZero() && tr.Actions[i+1].At.After(a.At) {
			s.DurationMS = tr.Actions[i+1].At.Sub(a.At).Milliseconds()
		}
		if a.Class == Submit && !a.FormatError && strings.TrimSpace(tr.Submission) == "" {
			s.OutputMissing = true
		}
		rec.Steps = append(rec.Steps, s)
	}
	return rec
}

func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
