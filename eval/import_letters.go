package eval

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Letters maps each letter of the phase-letter sequence format to the phase
// of its step. X (a failed step of no phase) is not in the map: see
// [ImportLetters].
var Letters = map[rune]string{
	'R': "read",
	'S': "search",
	'P': "reproduce",
	'E': "edit",
	'V': "verify",
	'G': "git",
	'H': "housekeeping",
	'O': "other",
}

// FailedLetter marks a failed step of no phase in a letter sequence.
const FailedLetter = 'X'

// ImportLetters converts a phase-letter sequence CSV file (or every *.csv
// file of a directory, in name order) to step-unit records.
//
// The header names the columns id, outcome and sequence, and optionally
// family, in any order; other columns are refused. Each row is one run:
//
//   - outcome is succeeded, failed or blocked; true or 1 (the task was
//     resolved) read as succeeded, false or 0 as failed;
//   - sequence has one letter per agent step, upper or lower case: R read,
//     S search, P reproduce, E edit, V verify, G git, H housekeeping,
//     O other, and X a failed step of no phase, which joins the phase run in
//     progress (or the first one, at the start). Spaces are ignored; any
//     other character is an error naming the row and the column;
//   - family, when given and not empty, is the run's task family.
//
// A letter carries no duration, cost or tokens: records of this format
// give a judge the shape of the run only.
func ImportLetters(path string) ([]Record, error) {
	return readFiles(path, "*.csv", ReadLetters, &Source{})
}

// ReadLetters reads the phase-letter sequence CSV format (see
// [ImportLetters]). Errors name the row (the header is row 1) and column.
func ReadLetters(r io.Reader) ([]Record, error) {
	cr := csv.NewReader(r)
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidRecord, err)
	}
	col := map[string]int{}
	for i, name := range header {
		name = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(name, "\ufeff")))
		switch name {
		case "id", "outcome", "sequence", "family":
		default:
			return nil, fmt.Errorf("%w: row 1 column %d: unknown column %q: the header is id,outcome,sequence with an optional family", ErrInvalidRecord, i+1, name)
		}
		if _, dup := col[name]; dup {
			return nil, fmt.Errorf("%w: row 1: column %q appears twice", ErrInvalidRecord, name)
		}
		col[name] = i
	}
	for _, need := range []string{"id", "outcome", "sequence"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("%w: row 1: the header has no %q column: it must name id, outcome and sequence", ErrInvalidRecord, need)
		}
	}
	var out []Record
	for row := 2; ; row++ {
		fields, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidRecord, err)
		}
		rec, err := letterRecord(fields, col, row)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
}

func letterRecord(fields []string, col map[string]int, row int) (Record, error) {
	bad := func(column, format string, args ...any) error {
		return fmt.Errorf("%w: row %d column %s: %s", ErrInvalidRecord, row, column, fmt.Sprintf(format, args...))
	}
	id := strings.TrimSpace(fields[col["id"]])
	if id == "" {
		return Record{}, bad("id", "the run has no id")
	}
	outcome, err := letterOutcome(fields[col["outcome"]])
	if err != nil {
		return Record{}, bad("outcome", "%v", err)
	}
	rec := Record{Format: RecordFormat, ID: id, Outcome: outcome, Unit: UnitStep, Agent: "letters"}
	if i, ok := col["family"]; ok {
		rec.Task.Family = strings.TrimSpace(fields[i])
	}
	seq := fields[col["sequence"]]
	pos := 0
	for _, c := range seq {
		pos++
		if c == ' ' || c == '\t' {
			continue
		}
		u := toUpper(c)
		if u == FailedLetter {
			rec.Steps = append(rec.Steps, Step{Failed: true})
			continue
		}
		phase, ok := Letters[u]
		if !ok {
			if c == utf8.RuneError {
				return Record{}, bad("sequence", "character %d is not valid UTF-8: use the letters R S P E V G H X O", pos)
			}
			return Record{}, bad("sequence", "character %d is %q, not a phase letter: use R S P E V G H X O", pos, c)
		}
		rec.Steps = append(rec.Steps, Step{Phase: phase})
	}
	if len(rec.Steps) == 0 {
		return Record{}, bad("sequence", "run %q has an empty sequence: give one letter per step", id)
	}
	if rec.Steps[0].Phase == "" && !hasPhase(rec.Steps) {
		return Record{}, bad("sequence", "run %q has only failed steps (X): at least one step needs a phase letter", id)
	}
	return rec, nil
}

func hasPhase(steps []Step) bool {
	for _, s := range steps {
		if s.Phase != "" {
			return true
		}
	}
	return false
}

func toUpper(c rune) rune {
	if c >= 'a' && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

func letterOutcome(s string) (Outcome, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "succeeded", "true", "1":
		return OutcomeSucceeded, nil
	case "failed", "false", "0":
		return OutcomeFailed, nil
	case "blocked":
		return OutcomeBlocked, nil
	case "":
		return "", errors.New("the run has no outcome: use succeeded, failed or blocked (or true/false, 1/0 for resolved)")
	default:
		return "", fmt.Errorf("outcome %q: use succeeded, failed or blocked (or true/false, 1/0 for resolved)", strings.TrimSpace(s))
	}
}
