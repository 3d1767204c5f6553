package eval

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestImportLettersFixture(t *testing.T) {
	path := filepath.Join("testdata", "letters", "runs.csv")
	format, err := DetectFormat(path)
	require.NoError(t, err)
	assert.Equal(t, FormatLetters, format)
	recs, err := LoadRuns(path, "")
	require.NoError(t, err)
	require.Len(t, recs, 5)

	phases := func(r Record) string {
		var b strings.Builder
		for _, s := range r.Steps {
			switch {
			case s.Failed:
				b.WriteString("X")
			default:
				b.WriteString(s.Phase[:1])
			}
		}
		return b.String()
	}
	for i, want := range []struct {
		id, family, steps string
		outcome           Outcome
	}{
		{"astropy-1", "astropy", "rrseevv", OutcomeSucceeded},
		{"astropy-2", "astropy", "rrXeXve", OutcomeFailed},
		{"django-7", "django", "Xrsrevg", OutcomeSucceeded},
		{"django-8", "django", "rsevevevh", OutcomeFailed},
		{"flask-3", "webapps", "ro", OutcomeBlocked},
	} {
		r := recs[i]
		assert.Equal(t, want.id, r.ID)
		assert.Equal(t, want.outcome, r.Outcome, r.ID)
		assert.Equal(t, want.family, r.FamilyName(), r.ID)
		assert.Equal(t, want.steps, phases(r), r.ID)
	}
	// P is reproduce (its first letter r above): check the names themselves.
	assert.Equal(t, []string{"", "read", "search", "reproduce", "edit", "verify", "git"}, stepPhases(recs[2]))

	// A failed step joins the phase run in progress: astropy-2 is
	// read(2) + X, edit + X, verify, edit: 4 boundaries, the first and
	// second with one failed tool call each.
	b := recs[1].Boundaries()
	require.Len(t, b, 4)
	assert.Equal(t, "read", b[0].Run.Phase)
	assert.Equal(t, 3, b[0].Report.Turns)
	assert.Equal(t, []string{"failed"}, b[0].Report.FailedToolCategories, "an X step has no category of its own")
	assert.Equal(t, "edit", b[1].Run.Phase)
	assert.Equal(t, []string{"failed"}, b[1].Report.FailedToolCategories)
	assert.Equal(t, 1, b[3].Report.Rework, "an edit after a verified edit is rework")
	// A leading failed step joins the first phase run.
	b = recs[2].Boundaries()
	assert.Equal(t, 2, b[0].Report.Turns)
	assert.Equal(t, []string{"failed"}, b[0].Report.FailedToolCategories)
}

func stepPhases(r Record) []string {
	out := make([]string, len(r.Steps))
	for i, s := range r.Steps {
		out[i] = s.Phase
	}
	return out
}

func TestReadLettersErrors(t *testing.T) {
	for _, tc := range []struct {
		name, csv, want string
	}{
		{"unknown letter", "id,outcome,sequence\na-1,failed,RRE\na-2,failed,RRZE\n", "row 3 column sequence: character 3 is 'Z'"},
		{"digit", "id,outcome,sequence\na-1,failed,R1\n", "row 2 column sequence: character 2 is '1'"},
		{"no outcome", "id,outcome,sequence\na-1,,RE\n", "row 2 column outcome: the run has no outcome"},
		{"bad outcome", "id,outcome,sequence\na-1,maybe,RE\n", `row 2 column outcome: outcome "maybe"`},
		{"no id", "id,outcome,sequence\n ,failed,RE\n", "row 2 column id: the run has no id"},
		{"empty sequence", "id,outcome,sequence\na-1,failed,\n", "empty sequence"},
		{"only failed steps", "id,outcome,sequence\na-1,failed,XX\n", "only failed steps"},
		{"missing column", "id,sequence\na-1,RE\n", `no "outcome" column`},
		{"unknown column", "id,outcome,sequence,repo\na-1,failed,RE,x\n", `row 1 column 4: unknown column "repo"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadLetters(strings.NewReader(tc.csv))
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrInvalidRecord), err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestReadLettersOutcomes(t *testing.T) {
	recs, err := ReadLetters(strings.NewReader("sequence,id,outcome\nRE,a-1,TRUE\nRE,a-2,1\nRE,a-3,False\nre,a-4,0\nRE,a-5,Blocked\n"))
	require.NoError(t, err)
	var got []Outcome
	for _, r := range recs {
		got = append(got, r.Outcome)
	}
	assert.Equal(t, []Outcome{OutcomeSucceeded, OutcomeSucceeded, OutcomeFailed, OutcomeFailed, OutcomeBlocked}, got)
}

func TestImportLettersEmpty(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "empty.csv")
	require.NoError(t, os.WriteFile(path, []byte("id,outcome,sequence\n"), 0o644))
	_, err := LoadRuns(path, FormatLetters)
	assert.ErrorIs(t, err, ErrNoRuns)
}
