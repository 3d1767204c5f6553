package testsuite

import (
	"os"
	"path/filepath"
	"testing"
)

// SharedTraces is the folder of the team's shared sample of recorded
// agent runs called name (real runs with known outcomes, kept beside the
// repository's clone rather than in it: the folder that holds the clone,
// found from the go.work above the test's directory, has them under
// shared, data, traces). When it is absent the test is skipped, except
// under $CI, where they are checked out beside the repository and their
// absence fails the test.
func SharedTraces(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.work above the test's directory")
		}
		dir = parent
	}
	data := filepath.Join(dir, "..", "shared", "data", "traces", name)
	if _, err := os.Stat(filepath.Join(data, "labels.json")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI runs with shared/ beside the repository, but %s is missing", data)
		}
		t.Skipf("no ../shared/data/traces/%s beside the repository", name)
	}
	return data
}
