package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEvalTracesUsage(t *testing.T) {
	code, _, errOut := run("eval-traces")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--dir")

	code, _, errOut = run("eval-traces", "--dir", t.TempDir())
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "labels.json")
}

// On five real traces when the shared data is beside the clone (the repo
// root is three levels up from this package).
func TestEvalTracesOnRealTraces(t *testing.T) {
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "..", "shared", "data", "traces", "mini-swe-agent-gemini-3-pro"))
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(dir, "labels.json")); err != nil {
		t.Skip("no ../shared/data/traces beside the repository")
	}
	code, out, errOut := run("eval-traces", "--dir", dir, "--limit", "5", "--runs")
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{
		"runs", "AUROC of 1 − min P(on objective)", "precision of flagged ⇒ failed", "recall of flagged ⇒ failed",
		"median elapsed at first flag", "COMPLETION SIGNAL",
		"runs/s", "rules, not models", "nothing more",
	} {
		assert.Contains(t, out, want)
	}
	assert.Regexp(t, `check: no REVIEW_COMPLETION without a receipt\s+ok`, out)
	assert.Contains(t, out, "astropy__astropy-12907", "the per-run table")
}
