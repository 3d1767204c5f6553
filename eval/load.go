package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
	// beside them or at the run directory's root.
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
// trajs/*.traj.json, SWE-agent when it has *.traj files (at its top or one
// level down, e.g. trajs/*.traj), OpenAI chat when a .json or .jsonl file at
// its top or up to two levels down is a chat log (as above; labels.json and
// *.traj.json are not), run records when a *.jsonl file at its top is not
// (and its first line is not JSON of another kind, such as the
// all_preds.jsonl of a published evaluation), letters when it has *.csv
// files. Exactly one format must match: when none or several do, the error
// (wrapping [ErrUnknownFormat]) names the formats considered and the
// --format to pass.
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
		return "", fmt.Errorf("%w: cannot tell the format of %s from its extension: use --format %s", ErrUnknownFormat, path, strings.Join(Formats, "|"))
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
	if m := append(glob("*.traj"), glob(filepath.Join("*", "*.traj"))...); len(m) > 0 {
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
		return "", fmt.Errorf("%w: %s holds no runs of a known format (looked for %s trajs/*.traj.json, %s *.traj at its top or one level down, %s chat logs *.json or *.jsonl with a messages array up to two levels down, %s *.jsonl and %s *.csv): pass --format %s",
			ErrUnknownFormat, path, FormatMiniSWE, FormatSWEAgent, FormatOpenAIChat, FormatRecords, FormatLetters, strings.Join(Formats, "|"))
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

// labelFinder finds the labels.json (run id → resolved) of each run file
// and reads each labels file once: the first labels.json in the file's
// directory or above it, up to the input directory (for a directory input)
// or two levels up (for a file input). It notes the labels files it reads
// in src.
type labelFinder struct {
	root   string // the input directory, or "" for a file input
	input  string
	loaded map[string]map[string]bool
	src    *Source
}

func newLabelFinder(input string, isDir bool, src *Source) *labelFinder {
	lf := &labelFinder{input: filepath.Clean(input), loaded: map[string]map[string]bool{}, src: src}
	if isDir {
		lf.root = lf.input
	}
	return lf
}

// find returns the labels of file and the labels file's path.
func (lf *labelFinder) find(file string) (map[string]bool, string, error) {
	dir := filepath.Dir(filepath.Clean(file))
	for up := 0; ; up++ {
		p := filepath.Join(dir, "labels.json")
		if labels, ok := lf.loaded[p]; ok {
			return labels, p, nil
		}
		if _, err := os.Stat(p); err == nil {
			labels, err := LoadLabels(p)
			if err != nil {
				return nil, p, err
			}
			lf.loaded[p] = labels
			lf.src.use(p)
			lf.src.Labels = append(lf.src.Labels, p)
			return labels, p, nil
		}
		parent := filepath.Dir(dir)
		if dir == lf.root || parent == dir || (lf.root == "" && up == 2) {
			break
		}
		dir = parent
	}
	where := lf.input
	if lf.root == "" {
		where = filepath.Dir(lf.input)
	}
	if file == lf.input || filepath.Dir(file) == where {
		return nil, "", fmt.Errorf("no labels.json (run id → true when resolved) in %s", where)
	}
	return nil, "", fmt.Errorf("no labels.json (run id → true when resolved) in %s or beside %s", where, relPath(where, file))
}

// outcome is the labelled outcome of run id of file: a run without a label
// is an error naming it and the labels file.
func (lf *labelFinder) outcome(file, id string) (bool, error) {
	labels, p, err := lf.find(file)
	if err != nil {
		return false, err
	}
	resolved, ok := labels[id]
	if !ok {
		return false, fmt.Errorf("%w: run %q has no outcome in %s: label it or remove it", ErrInvalidRecord, id, p)
	}
	return resolved, nil
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
		return nil, src, fmt.Errorf("%w %q: use %s", ErrUnknownFormat, src.Format, strings.Join(Formats, ", "))
	}
	recs, err := imp(path, &src)
	if err != nil {
		return nil, src, err
	}
	if len(recs) == 0 {
		return nil, src, fmt.Errorf("%w in %s (format %s)", ErrNoRuns, path, src.Format)
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
	labelsFile := filepath.Join(dir, "labels.json")
	labels, err := LoadLabels(labelsFile)
	if err != nil {
		return nil, fmt.Errorf("mini-swe-agent runs: %w", err)
	}
	src.use(labelsFile)
	src.Labels = append(src.Labels, labelsFile)
	paths, err := TracePaths(dir)
	if err != nil {
		return nil, err
	}
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
