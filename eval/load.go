package eval

import (
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
	// beside them.
	FormatSWEAgent = "swe-agent"
	// FormatLetters is the phase-letter sequence CSV (id,outcome,sequence).
	FormatLetters = "letters"
)

// Formats lists the formats LoadRuns reads.
var Formats = []string{FormatRecords, FormatMiniSWE, FormatSWEAgent, FormatLetters}

// ErrNoRuns is returned when an input holds no run.
var ErrNoRuns = errors.New("no runs")

// ErrUnknownFormat is returned for a format name or an input whose format
// cannot be told.
var ErrUnknownFormat = errors.New("unknown run format")

// importers convert one input (a file or directory) of a format to records.
var importers = map[string]func(path string) ([]Record, error){
	FormatRecords:  loadRecordFiles,
	FormatMiniSWE:  ImportMiniSWE,
	FormatLetters:  ImportLetters,
	FormatSWEAgent: ImportSWEAgent,
}

// DetectFormat tells the format of an input from its layout: a directory
// with trajs/ is mini-swe-agent-1, one with *.traj files SWE-agent, one with
// *.jsonl files run records; a .csv file is the letter format, a .jsonl or
// .json file run records.
func DetectFormat(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("runs: %w", err)
	}
	if !fi.IsDir() {
		switch strings.ToLower(filepath.Ext(path)) {
		case ".jsonl", ".json", ".ndjson":
			return FormatRecords, nil
		case ".csv":
			return FormatLetters, nil
		case ".traj":
			return FormatSWEAgent, nil
		}
		return "", fmt.Errorf("%w: cannot tell the format of %s from its extension: use --format %s", ErrUnknownFormat, path, strings.Join(Formats, "|"))
	}
	if st, err := os.Stat(filepath.Join(path, "trajs")); err == nil && st.IsDir() {
		return FormatMiniSWE, nil
	}
	for _, probe := range []struct{ glob, format string }{
		{"*.traj", FormatSWEAgent}, {"*/*.traj", FormatSWEAgent}, {"*.jsonl", FormatRecords}, {"*.csv", FormatLetters},
	} {
		if m, _ := filepath.Glob(filepath.Join(path, probe.glob)); len(m) > 0 {
			return probe.format, nil
		}
	}
	return "", fmt.Errorf("%w: %s holds no trajs/, *.traj, *.jsonl or *.csv: use --format %s", ErrUnknownFormat, path, strings.Join(Formats, "|"))
}

// LoadRuns reads the runs of an input (a file or a directory) in the given
// format, or the detected one when format is empty. Every record is
// validated; an input without runs is an error wrapping ErrNoRuns.
func LoadRuns(path, format string) ([]Record, error) {
	if format == "" {
		f, err := DetectFormat(path)
		if err != nil {
			return nil, err
		}
		format = f
	}
	imp, ok := importers[format]
	if !ok {
		return nil, fmt.Errorf("%w %q: use %s", ErrUnknownFormat, format, strings.Join(Formats, ", "))
	}
	recs, err := imp(path)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("%w in %s (format %s)", ErrNoRuns, path, format)
	}
	seen := make(map[string]bool, len(recs))
	for _, r := range recs {
		if err := r.Validate(); err != nil {
			return nil, err
		}
		if seen[r.ID] {
			return nil, fmt.Errorf("%w: run id %q appears twice in %s", ErrInvalidRecord, r.ID, path)
		}
		seen[r.ID] = true
	}
	return recs, nil
}

// loadRecordFiles reads one .jsonl file or every *.jsonl file of a
// directory, in name order.
func loadRecordFiles(path string) ([]Record, error) {
	return readFiles(path, "*.jsonl", ReadRecords)
}

// readFiles reads one file, or every file of a directory that matches glob
// (in name order), with read; errors name the file.
func readFiles(path, glob string, read func(io.Reader) ([]Record, error)) ([]Record, error) {
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
// output. A run without a label is an error: label it or remove it.
func ImportMiniSWE(dir string) ([]Record, error) {
	labels, err := LoadLabels(filepath.Join(dir, "labels.json"))
	if err != nil {
		return nil, fmt.Errorf("mini-swe-agent runs: %w", err)
	}
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
			Text: clipText(a.Command, 200)}
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
