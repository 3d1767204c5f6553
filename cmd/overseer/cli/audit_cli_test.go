package cli_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/ops"
)

// The audit of a recorded job with two gates (ops' golden file), and the
// same in overseer-audit/v1.
const (
	auditFile   = "../../../ops/testdata/audit_job_with_plugin.jsonl"
	auditFileV1 = "../../../ops/testdata/audit_v1_job_with_plugin.jsonl"
)

// `overseer audit verify` passes the file as written and fails, exit 1 and
// one sentence naming the line, on a one-byte edit, a dropped record and a
// swapped pair; a v1 file passes and says what v1 cannot show. The outputs
// are golden (testdata/audit_verify.txt).
func TestAuditVerify(t *testing.T) {
	data, err := os.ReadFile(auditFile)
	require.NoError(t, err)
	v1, err := os.ReadFile(auditFileV1)
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
		{"a v1 file", string(v1), 0},
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
		{[]string{"audit", "verify"}, 2, "give the audit file to verify (overseer audit verify [--head HASH] FILE)"},
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

// writeJobs writes an audit file of the jobs, each a gate opened and
// resumed, as overseer audit does, and returns its lines and head.
func writeJobs(t *testing.T, ids ...string) ([]string, string) {
	t.Helper()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var recs []ops.AuditRecord
	for _, id := range ids {
		for i, kind := range []string{ops.AuditOpened, ops.AuditResumed} {
			recs = append(recs, ops.AuditRecord{Format: ops.AuditFormat, Job: ops.AuditJob{WorkflowID: id, RunID: "r1", WorkflowType: "CoroJob"},
				Seq: i + 1, Of: 2, Run: "r1", Gate: "code-1", Kind: kind, At: t0.Add(time.Duration(i) * time.Minute), Sources: []string{ops.SourceNotification}})
		}
	}
	var b bytes.Buffer
	head, err := ops.WriteAudit(&b, recs)
	require.NoError(t, err)
	lines := strings.SplitAfter(b.String(), "\n")
	return lines[:len(lines)-1], head
}

// A file cut between two jobs fails verify at its last line; cut and sealed
// again it verifies on its own, with another head, and fails against the
// head kept from when it was written (--head). The file as written passes
// with it; a head that is not one is a usage error.
func TestAuditVerifyAgainstTheHead(t *testing.T) {
	lines, head := writeJobs(t, "job-a", "job-b", "job-c")
	require.Len(t, lines, 6)
	resealedLines, resealed := writeJobs(t, "job-a", "job-b")
	dir := t.TempDir()
	for _, tc := range []struct {
		name, file string
		head       string
		code       int
		want       string
	}{
		{"as written", strings.Join(lines, ""), head, 0, "6 records of 3 jobs verified (overseer-audit/v2): none was edited, dropped, inserted or reordered, and its head is the one you kept: sha256 " + head},
		{"as written, no head given", strings.Join(lines, ""), "", 0, "6 records of 3 jobs verified (overseer-audit/v2): none was edited, dropped, inserted or reordered; head sha256 " + head + ": compare it with the head overseer audit printed, or give that with --head"},
		{"cut between jobs", strings.Join(lines[:4], ""), "", 1, "line 4 is the file's last, record 4 of 6: the 2 records after it were dropped"},
		{"cut between jobs and sealed again", strings.Join(resealedLines, ""), head, 1, "line 4 is the file's last, and the file's head sha256 is " + resealed + ", not the head you kept (" + head + "): records were cut, added or changed and the file sealed again, or that head is another file's"},
		{"cut between jobs and sealed again, no head given", strings.Join(resealedLines, ""), "", 0, "4 records of 2 jobs verified (overseer-audit/v2)"},
		{"a head that is not one", strings.Join(lines, ""), "dc829abd", 2, "--head dc829abd: give the 64 hex digits of the head sha256 overseer audit printed"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".jsonl")
		require.NoError(t, os.WriteFile(path, []byte(tc.file), 0o644))
		args := []string{"audit", "verify", path}
		if tc.head != "" {
			args = []string{"audit", "verify", "--head", tc.head, path}
		}
		code, out, errOut := run(args...)
		assert.Equal(t, tc.code, code, "%s: %s%s", tc.name, out, errOut)
		assert.Contains(t, out+errOut, tc.want, tc.name)
		assert.Equal(t, 1, strings.Count(out+errOut, "\n"), "%s: one line: %s%s", tc.name, out, errOut)
	}
}
