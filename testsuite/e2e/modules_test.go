package e2e_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/testsuite"
)

// pluginModule is the module a plugin user imports.
const pluginModule = "github.com/corohq/temporal-overseer"

// pluginPackages are what a plugin user imports from it.
var pluginPackages = []string{
	pluginModule + "/codec",
	pluginModule + "/overseer",
	pluginModule + "/overseer/jev",
	pluginModule + "/overseer/jev/jevhttp",
	pluginModule + "/overseer/registry",
	pluginModule + "/supervision",
	pluginModule + "/testsuite",
	pluginModule + "/testsuite/judgetest",
}

// allowedRequirements are the only modules the plugin's module may require
// directly; everything else it needs comes with them.
var allowedRequirements = []string{"go.temporal.io/sdk", "go.temporal.io/api", "go.uber.org/zap", "github.com/stretchr/testify"}

// A user who imports the plugin gets the Temporal SDK and API, zap and
// testify, and what they bring — nothing of the CLI, the dashboard, the
// OpenAI judge, metrics exporters, evaluation or browser tests. A scratch
// module that imports the plugin's packages must list no module that a
// scratch module importing only those four does not list too.
func TestPluginModuleDependencies(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two scratch modules")
	}
	root, err := testsuite.RepoRoot()
	require.NoError(t, err)
	versions := requiredVersions(t, filepath.Join(root, "go.mod"))

	withPlugin := listModules(t, pluginPackages, []string{pluginModule + " v0.0.0-00010101000000-000000000000"}, "replace "+pluginModule+" => "+root)

	var baseImports, baseRequires []string
	for _, m := range allowedRequirements {
		v, ok := versions[m]
		require.True(t, ok, "the plugin's go.mod requires %s", m)
		baseRequires = append(baseRequires, m+" "+v)
	}
	baseImports = []string{"go.temporal.io/sdk/client", "go.temporal.io/sdk/workflow", "go.temporal.io/api/workflowservice/v1",
		"go.uber.org/zap", "github.com/stretchr/testify/assert"}
	base := listModules(t, baseImports, baseRequires, "")

	var extra []string
	for _, m := range withPlugin {
		if m != pluginModule && !slices.Contains(base, m) {
			extra = append(extra, m)
		}
	}
	assert.Empty(t, extra, "modules a plugin user gets beyond the Temporal SDK and API, zap and testify")
	t.Logf("a plugin user's modules (go list -m all): %s", strings.Join(withPlugin, " "))
}

// The modules of the repository agree everywhere they are listed: go.work,
// the Makefile and the Dockerfile name every directory with a go.mod.
func TestModulesAreListedEverywhere(t *testing.T) {
	root, err := testsuite.RepoRoot()
	require.NoError(t, err)
	var dirs []string
	require.NoError(t, filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// scripts/ holds the modules of tools the scripts build (the cluster's
		// server): not part of the workspace.
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != root || d.Name() == "testdata" || path == filepath.Join(root, "scripts")) {
			return filepath.SkipDir
		}
		if d.Name() == "go.mod" {
			rel, _ := filepath.Rel(root, filepath.Dir(path))
			dirs = append(dirs, filepath.ToSlash(rel))
		}
		return nil
	}))
	slices.Sort(dirs)

	work := string(mustRead(t, filepath.Join(root, "go.work")))
	var used []string
	for _, m := range regexp.MustCompile(`(?m)^\s+\./?(\S*)$`).FindAllStringSubmatch(work, -1) {
		used = append(used, dirOrDot(m[1]))
	}
	slices.Sort(used)
	assert.Equal(t, dirs, used, "go.work uses every module")

	mk := regexp.MustCompile(`(?m)^MODULES := (.*)$`).FindSubmatch(mustRead(t, filepath.Join(root, "Makefile")))
	require.NotNil(t, mk)
	listed := strings.Fields(string(mk[1]))
	slices.Sort(listed)
	assert.Equal(t, dirs, listed, "the Makefile's MODULES")

	df := string(mustRead(t, filepath.Join(root, "Dockerfile")))
	for _, d := range dirs {
		if d == "." {
			assert.Contains(t, df, "COPY go.work go.work.sum go.mod go.sum ./")
			continue
		}
		assert.Contains(t, df, "COPY "+d+"/go.mod "+d+"/go.sum "+d+"/", "the Dockerfile's download layer")
	}
}

func dirOrDot(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

// requiredVersions reads the direct requirements of a go.mod.
func requiredVersions(t *testing.T, goMod string) map[string]string {
	t.Helper()
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(mustRead(t, goMod)))
	for sc.Scan() {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "require "))
		if len(f) >= 2 && strings.Contains(f[0], ".") && strings.HasPrefix(f[1], "v") {
			out[f[0]] = f[1]
		}
	}
	return out
}

// listModules builds a scratch module that imports imports and prints its
// go list -m all (module paths only).
func listModules(t *testing.T, imports, requires []string, replace string) []string {
	t.Helper()
	dir := t.TempDir()
	var src strings.Builder
	src.WriteString("package main\n\nimport (\n")
	for _, p := range imports {
		src.WriteString("\t_ \"" + p + "\"\n")
	}
	src.WriteString(")\n\nfunc main() {}\n")
	mod := "module example.com/consumer\n\ngo 1.26.0\n\nrequire (\n\t" + strings.Join(requires, "\n\t") + "\n)\n" + replace + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(src.String()), 0o644))
	run := func(args ...string) string {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go %s: %s", strings.Join(args, " "), out)
		return string(out)
	}
	run("mod", "tidy")
	run("build", "./...")
	var mods []string
	for _, line := range strings.Split(strings.TrimSpace(run("list", "-m", "-f", "{{.Path}}", "all")), "\n") {
		if line != "example.com/consumer" {
			mods = append(mods, line)
		}
	}
	return mods
}
