package supervision

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// GitRevision returns a revision for the git working tree at dir that
// covers uncommitted and untracked changes: HEAD alone is not enough, since
// a receipt for HEAD would otherwise "verify" edits made after it. The
// revision is "git:" + the SHA-256 of HEAD, the binary diff of the working
// tree against HEAD (staged and unstaged) and the path and content of every
// untracked, non-ignored file. Equal trees give equal revisions.
func GitRevision(ctx context.Context, dir string) (string, error) {
	h := sha256.New()
	head, err := git(ctx, dir, "rev-parse", "--verify", "HEAD")
	if err != nil {
		head = []byte("no-commits")
	}
	fmt.Fprintf(h, "head %s\n", bytes.TrimSpace(head))
	diffArgs := []string{"diff", "--binary", "--no-color", "--no-ext-diff", "HEAD"}
	if string(head) == "no-commits" {
		diffArgs = []string{"diff", "--binary", "--no-color", "--no-ext-diff", "--cached"}
	}
	diff, err := git(ctx, dir, diffArgs...)
	if err != nil {
		return "", fmt.Errorf("git revision: diff: %w", err)
	}
	fmt.Fprintf(h, "diff %d\n", len(diff))
	h.Write(diff)
	untracked, err := git(ctx, dir, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return "", fmt.Errorf("git revision: untracked files: %w", err)
	}
	for _, name := range strings.Split(strings.TrimRight(string(untracked), "\x00"), "\x00") {
		if name == "" {
			continue
		}
		if err := hashFile(h, filepath.Join(dir, name), name); err != nil {
			return "", fmt.Errorf("git revision: %w", err)
		}
	}
	return "git:" + hex.EncodeToString(h.Sum(nil)), nil
}

func hashFile(w io.Writer, path, name string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(w, "untracked %s\n", name)
	_, err = io.Copy(w, f)
	return err
}

func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}
