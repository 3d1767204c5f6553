package cli

import (
	"bytes"
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/corohq/temporal-overseer/overseer"
)

func runMain(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := Main(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestMainVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		code, out, _ := runMain(arg)
		assert.Equal(t, 0, code)
		assert.Regexp(t, `^overseer \S+.*go1\.\d+`, out) // a test binary records no dependencies
		assert.Contains(t, out, "overseer "+overseer.Release+", built as ", "the release first")
	}
}

func TestVersionString(t *testing.T) {
	sdk := []*debug.Module{{Path: "go.temporal.io/sdk", Version: "v1.51.0"}, {Path: "go.uber.org/zap", Version: "v1.28.0"}}
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	const rev = "6378e30b0e2190d0ad508408f7de4cd84f54bf8b"
	for _, tc := range []struct {
		name string
		set  string
		bi   *debug.BuildInfo
		want string
	}{
		{"go install …@version", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.4.0"}, Deps: sdk},
			"v0.4.0, Temporal Go SDK v1.51.0, go1.26.8"},
		{"built from a checkout: the pseudo-version of the commit", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261201214103-440e2be098fa+dirty"},
			Settings: vcs("vcs.revision", "440e2be098fa0000000000000000000000000000", "vcs.modified", "true")},
			"v0.0.0-20261201214103-440e2be098fa+dirty, go1.26.8"},
		{"a version set with -ldflags wins", "v0.5.0-rc1", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", rev, "vcs.time", "2026-12-01T21:25:00Z", "vcs.modified", "false")},
			"v0.5.0-rc1, go1.26.8"},
		{"(devel) beside a revision: a clean checkout", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Deps: sdk,
			Settings: vcs("-buildmode", "exe", "vcs", "git", "vcs.revision", rev, "vcs.time", "2026-12-01T21:25:00Z", "vcs.modified", "false")},
			"commit 6378e30b0e21 (2026-12-01T21:25:00Z), Temporal Go SDK v1.51.0, go1.26.8"},
		{"(devel) beside a revision: a modified checkout", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", rev, "vcs.time", "2026-12-01T21:25:00Z", "vcs.modified", "true")},
			"commit 6378e30b0e21 (2026-12-01T21:25:00Z, modified), go1.26.8"},
		{"a short revision without a time", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: vcs("vcs.revision", "abc123")},
			"commit abc123, go1.26.8"},
		{"no VCS recorded (-buildvcs=false)", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Deps: sdk},
			"(devel, no commit recorded), Temporal Go SDK v1.51.0, go1.26.8"},
		{"no build info", "", nil, "(unknown)"},
		{"no build info, version set", "v0.5.0", nil, "v0.5.0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, versionString(tc.set, tc.bi))
		})
	}
}

func TestMainErrorsHaveOnePrefix(t *testing.T) {
	code, _, errOut := runMain("start", "--objective", "x", "--scenario", "on_track", "--mode", "bogus")
	assert.Equal(t, 2, code)
	assert.Equal(t, "overseer start: job spec: unknown mode \"bogus\": use off, observe or manage\n", errOut)

	code, _, errOut = runMain("worker", "--mode", "bogus")
	assert.Equal(t, 2, code)
	assert.Equal(t, 1, strings.Count(errOut, "overseer"), errOut)
	assert.NotContains(t, errOut, "usage:")
}

// A worker's memory limit that is not a size is refused in one sentence
// that says what to give, before the worker connects.
func TestWorkerRefusesAMemoryLimitThatIsNotASize(t *testing.T) {
	for _, bad := range []string{"lots", "200MB", "-1", "1.5GiB"} {
		code, _, errOut := runMain("worker", "--memory-limit", bad)
		assert.Equal(t, 2, code, bad)
		assert.Contains(t, errOut, fmt.Sprintf("--memory-limit %q: give a size such as 200MiB or 1GiB, or 0 for none", bad))
	}
}

// A negative workflow cache is refused in one sentence that says what to
// give, before the worker connects.
func TestWorkerRefusesANegativeWorkflowCache(t *testing.T) {
	code, _, errOut := runMain("worker", "--workflow-cache", "-5")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--workflow-cache -5: give a number of runs, or 0 for the SDK's default")
}
