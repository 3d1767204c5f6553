package e2e_test

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/testsuite"
)

// A binary built from this checkout names the commit it was built from.
// -buildvcs=true stands for Go's default in a checkout, which a machine's
// GOFLAGS may turn off.
func TestBuiltBinaryNamesItsCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the overseer binary")
	}
	root, err := testsuite.RepoRoot()
	require.NoError(t, err)
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	require.NoError(t, err)
	rev := strings.TrimSpace(string(head))[:12]

	bin := filepath.Join(t.TempDir(), "overseer")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/overseer")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	// The release first, then the build: the commit's pseudo-version, or
	// "commit <rev>" beside "(devel)".
	assert.Regexp(t, `^overseer `+regexp.QuoteMeta(overseer.Release)+`, built as (v0\.0\.0-\d{14}-|commit )`+regexp.QuoteMeta(rev)+`\b`, string(out))
}
