package trajectory_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

func jsonPayload(t *testing.T, v any) *commonpb.Payload {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	require.NoError(t, err)
	return p
}

// A recorder with a window keeps the latest calls' excerpts, oldest
// first, each cut to the call's bytes, the window to the request's, and
// redacted; without one it keeps none.
func TestAContentWindowKeepsTheLatestCallsCutAndRedacted(t *testing.T) {
	calls := []trajectory.ActivityCall{
		{Phase: "model", Args: []any{map[string]string{"prompt": "fix the export"}}, Result: jsonPayload(t, map[string]string{"command": "pytest -x"})},
		{Phase: "bash", Args: []any{map[string]string{"command": "pytest -x"}}, Err: errors.New("exit status 1: TestExport: want 3 rows, got 0")},
		{Phase: "model", Args: []any{map[string]string{"prompt": "again"}}, Result: jsonPayload(t, map[string]string{"command": "curl -H 'Authorization: Bearer abcdefghijklmnop1234' https://api.example.com"})},
		{Phase: "bash", Args: []any{map[string]string{"command": "cat big.log"}}, Result: jsonPayload(t, map[string]string{"output": strings.Repeat("x", 5000)})},
	}
	var off trajectory.TrajectoryRecorder
	var on trajectory.TrajectoryRecorder
	on.SetContentWindow(trajectory.ContentWindow{Calls: 3, CallBytes: 256}, nil)
	for _, c := range calls {
		off.RecordCall(c)
		on.RecordCall(c)
	}
	assert.Empty(t, off.Trajectory().Content, "off by default")

	got := on.Trajectory().Content
	require.Len(t, got, 3, "the latest three calls")
	assert.Equal(t, []int{2, 3, 4}, []int{got[0].Run, got[1].Run, got[2].Run}, "oldest first")
	assert.Equal(t, "bash", got[0].Call)
	assert.Equal(t, `{"command":"pytest -x"}`, got[0].Input)
	assert.Equal(t, "exit status 1: TestExport: want 3 rows, got 0", got[0].Error)
	assert.Contains(t, got[1].Output, "Authorization: [REDACTED]")
	assert.NotContains(t, got[1].Output, "abcdefghijklmnop1234")
	assert.True(t, got[2].Cut)
	assert.LessOrEqual(t, len(got[2].Call)+len(got[2].Input)+len(got[2].Output)+len(got[2].Error), 256+len("…"))

	// The request's bytes drop the oldest calls first.
	var small trajectory.TrajectoryRecorder
	small.SetContentWindow(trajectory.ContentWindow{Calls: 4, CallBytes: 2048, RequestBytes: 2100}, nil)
	for _, c := range calls {
		small.RecordCall(c)
	}
	kept := small.Trajectory().Content
	require.Len(t, kept, 1, "the big last call alone fits")
	assert.Equal(t, 4, kept[0].Run)
}

func TestRedactSecrets(t *testing.T) {
	for in, want := range map[string]string{
		"export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwx":               "export OPENAI_API_KEY=[REDACTED]",
		"key sk-ant-api03-abcdefghijklmnopqrst in a log":                       "key [REDACTED] in a log",
		"aws AKIAABCDEFGHIJKLMNOP ok":                                          "aws [REDACTED] ok",
		"git clone https://bob:hunter2secret@github.com/x/y":                   "git clone https://bob:[REDACTED]@github.com/x/y",
		`{"password": "correct-horse"}`:                                        `{"password": "[REDACTED]"}`,
		"token ghp_abcdefghijklmnopqrstuvwxyz0123456789":                       "token [REDACTED]",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----": "[REDACTED]",
		"pytest -x tests/test_export.py":                                       "pytest -x tests/test_export.py",
	} {
		assert.Equal(t, want, trajectory.RedactSecrets(in), in)
	}
}

func TestContentWindowValidate(t *testing.T) {
	require.NoError(t, trajectory.ContentWindow{}.Validate())
	require.NoError(t, trajectory.ContentWindow{Calls: 8}.Validate())
	assert.ErrorContains(t, trajectory.ContentWindow{Calls: 100}.Validate(), "calls 100 is outside 0–64")
	assert.ErrorContains(t, trajectory.ContentWindow{Calls: 2, CallBytes: 10}.Validate(), "call_bytes 10 is below 64")
	assert.ErrorContains(t, trajectory.ContentWindow{Calls: 2, RequestBytes: 1 << 20}.Validate(), "request_bytes 1048576 is outside")
}

// What RedactSecrets leaves alone: token counts, numbers, the lines after
// a redacted value.
func TestRedactSecretsLeavesCountsAndTheNextLine(t *testing.T) {
	for in, want := range map[string]string{
		`{"input_tokens":1200,"output_tokens":30}`: `{"input_tokens":1200,"output_tokens":30}`,
		`max_token=4096`: `max_token=4096`,
		`{"printed":"API_KEY=abcdef123456\nnext line"}`: `{"printed":"API_KEY=[REDACTED]\nnext line"}`,
	} {
		assert.Equal(t, want, trajectory.RedactSecrets(in), in)
	}
}

// A window reads < > & plainly, keeps a failed tool's printed details and
// keeps each call within its bytes, the cut mark included.
func TestAContentWindowReadsPlainly(t *testing.T) {
	var r trajectory.TrajectoryRecorder
	r.SetContentWindow(trajectory.ContentWindow{Calls: 2, CallBytes: 100}, nil)
	r.RecordCall(trajectory.ActivityCall{Phase: "bash", Result: jsonPayload(t, map[string]string{"out": "<returncode>0</returncode> & done"})})
	r.RecordCall(trajectory.ActivityCall{Phase: "bash", Err: temporal.NewApplicationError("exit status 2", "ToolFailed", "E   AssertionError: 3 != 0"),
		Args: []any{strings.Repeat("y", 300)}})
	got := r.Trajectory().Content
	require.Len(t, got, 2)
	assert.Equal(t, `{"out":"<returncode>0</returncode> & done"}`, got[0].Output)
	assert.Equal(t, "exit status 2\nE   AssertionError: 3 != 0", got[1].Error)
	assert.LessOrEqual(t, len(got[1].Call)+len(got[1].Input)+len(got[1].Output)+len(got[1].Error), 100)
	assert.True(t, got[1].Cut)
}
