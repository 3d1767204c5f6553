package supervision_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/supervision"
)

func TestGitRevisionCoversUncommittedAndUntrackedChanges(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	write := func(name, content string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	rev := func() string {
		r, err := supervision.GitRevision(context.Background(), dir)
		require.NoError(t, err)
		return r
	}
	run("init", "-q")
	write("a.go", "package a\n")
	run("add", "a.go")
	run("commit", "-q", "-m", "one")
	clean := rev()
	assert.Equal(t, clean, rev(), "stable for the same tree")

	write("a.go", "package a // edited\n")
	edited := rev()
	assert.NotEqual(t, clean, edited, "an unstaged edit changes the revision")
	run("add", "a.go")
	assert.Equal(t, edited, rev(), "staging does not change the content")

	write("b.go", "package a\n")
	untracked := rev()
	assert.NotEqual(t, edited, untracked, "an untracked file changes the revision")
	write("b.go", "package a // v2\n")
	assert.NotEqual(t, untracked, rev(), "so does its content")

	write(".gitignore", "*.log\nb.go\n")
	write("x.log", "noise")
	withIgnore := rev()
	write("x.log", "more noise")
	assert.Equal(t, withIgnore, rev(), "ignored files do not count")

	_, err := supervision.GitRevision(context.Background(), t.TempDir())
	assert.Error(t, err, "not a repository")
}
