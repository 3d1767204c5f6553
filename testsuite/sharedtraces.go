package testsuite

import (
	"os"
	"path/filepath"
	"testing"
)

// SharedTraces is the folder of the shared sample of recorded agent runs
// named name (../shared/data/traces/NAME beside the repository's clone,
// found from the go.work above the test's directory). When it is absent the
// test is skipped, except under $CI, where shared/ is checked out beside
// the repository and its absence fails the test.
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
