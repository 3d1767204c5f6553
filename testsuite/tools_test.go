package testsuite_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/testsuite"
)

func TestMakeDemoInstallsOnlyTheTemporalCLI(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	root, err := testsuite.RepoRoot()
	require.NoError(t, err)
	out, err := exec.Command("make", "-n", "-C", root, "demo").CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "scripts/install-tools.sh temporal\n")
	assert.NotContains(t, string(out), "staticcheck")
	assert.NotContains(t, string(out), "workflowcheck")
	assert.NotContains(t, string(out), "kubeconform")

	out, err = exec.Command("bash", root+"/scripts/install-tools.sh", "gofmt").CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 2, exit.ExitCode())
	assert.Equal(t, "install-tools: unknown tool 'gofmt': use temporal, staticcheck, workflowcheck, kubeconform, kustomize or k8s-schemas", strings.TrimSpace(string(out)))
}
