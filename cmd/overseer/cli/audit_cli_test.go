package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The audit of a recorded job with two gates (ops' golden file).
const auditFile = "../../../ops/testdata/audit_job_with_plugin.jsonl"

// `overseer audit verify` passes the file as written and fails, exit 1 and
// one sentence naming the line, on a one-byte edit, a dropped record and a
// swapped pair. The outputs are golden (testdata/audit_verify.txt).
func TestAuditVerify(t *testing.T) {
	data, err := os.ReadFile(auditFile)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	lines = lines[:len(lines)-1]
	require.Len(t, lines, 4)
	dir := t.TempDir()
	var transcript strings.Builder
	for _, tc := range []struct {
		name string
		file string
		code int
	}{
		{"as written", string(data), 0},
		{"one byte edited", strings.Join(lines[:2], "") + strings.Replace(lines[2], `"kind":"opened"`, `"kind":"opener"`, 1) + lines[3], 1},
		{"a record dropped", lines[0] + lines[2] + lines[3], 1},
		{"the last record dropped", strings.Join(lines[:3], ""), 1},
		{"a pair swapped", lines[0] + lines[2] + lines[1] + lines[3], 1},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".jsonl")
		require.NoError(t, os.WriteFile(path, []byte(tc.file), 0o644))
		code, out, errOut := run("audit", "verify", path)
		assert.Equal(t, tc.code, code, "%s: %s%s", tc.name, out, errOut)
		if tc.code != 0 {
			assert.Empty(t, out)
			assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %s", errOut)
			assert.Contains(t, errOut, "the audit file was changed after it was written: line ")
		}
		text := strings.ReplaceAll(out+errOut, path, tc.name+".jsonl")
		transcript.WriteString("$ overseer audit verify " + tc.name + ".jsonl  # exit " + string(rune('0'+code)) + "\n" + text)
	}
	golden(t, "audit_verify.txt", transcript.String())
}

// Bad input is one sentence that says what to fix.
func TestAuditBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"audit", "verify"}, 2, "give the audit file to verify (overseer audit verify FILE)"},
		{[]string{"audit", "verify", "a.jsonl", "b.jsonl"}, 2, ""},
		{[]string{"audit", "verify", filepath.Join(t.TempDir(), "none.jsonl")}, 1, "no such file"},
		{[]string{"audit", "--limit", "-1"}, 2, "--limit -1: give a positive number, or 0 for all"},
		{[]string{"audit", "extra"}, 2, ""},
	} {
		code, _, errOut := run(tc.args...)
		assert.Equal(t, tc.code, code, "%v: %s", tc.args, errOut)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), "%v: one line: %s", tc.args, errOut)
		assert.Contains(t, errOut, "overseer audit: ")
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
	empty := filepath.Join(t.TempDir(), "empty.jsonl")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	code, _, errOut := run("audit", "verify", empty)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "the file holds no record: give a file `overseer audit --out` wrote")
}
