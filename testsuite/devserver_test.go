package testsuite_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/testsuite"
)

// The dev server process gets only what a server needs of this process'
// environment: never the judge's, the webhook's or the dashboard's
// secrets. A stand-in for the Temporal CLI writes the environment it got
// and exits.
func TestDevServerGetsNoSecretOfItsParent(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in CLI is a shell script")
	}
	secrets := map[string]string{
		"OVERSEER_JUDGE_SERVE_API_KEY":   "serve-key-DISTINCTIVE",
		"OVERSEER_JEV_API_KEY":           "jev-key-DISTINCTIVE",
		"OPENAI_API_KEY":                 "openai-key-DISTINCTIVE",
		"OVERSEER_WEBHOOK_SECRET":        "webhook-secret-DISTINCTIVE",
		"OVERSEER_SLACK_WEBHOOK_URL":     "https://hooks.example/DISTINCTIVE",
		"OVERSEER_OIDC_CLIENT_SECRET":    "oidc-secret-DISTINCTIVE",
		"OVERSEER_DASHBOARD_SESSION_KEY": "session-key-DISTINCTIVE",
		"AWS_SECRET_ACCESS_KEY":          "aws-secret-DISTINCTIVE",
		"TEMPORAL_API_KEY":               "temporal-key-DISTINCTIVE",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("TZ", "Europe/Paris")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("LC_ALL", "C.UTF-8")
	dir := t.TempDir()
	dump := filepath.Join(dir, "env")
	cli := filepath.Join(dir, "temporal")
	require.NoError(t, os.WriteFile(cli, []byte("#!/bin/sh\nenv > '"+dump+"'\n"), 0o755))

	_, err := testsuite.StartDevServer(context.Background(), testsuite.DevServerOptions{ExistingPath: cli, Output: os.Stderr})
	require.ErrorContains(t, err, "the server exited before it was ready")
	b, err := os.ReadFile(dump)
	require.NoError(t, err)
	env := string(b)
	for k, v := range secrets {
		assert.NotContains(t, env, k+"=", "no %s", k)
		assert.NotContains(t, env, v)
	}
	for _, kv := range []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TZ=Europe/Paris", "LC_ALL=C.UTF-8"} {
		assert.Contains(t, strings.Split(env, "\n"), kv, "what a server needs is kept")
	}
}

func TestServerEnvKeepsOnlyWhatAServerNeeds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		environ []string
		want    []string
	}{
		{name: "nothing to keep is an empty environment, not the whole one", environ: []string{"OVERSEER_WEBHOOK_SECRET=s"}, want: []string{}},
		{name: "Windows' own names in its case", environ: []string{"Path=C:\\bin", "SystemRoot=C:\\Windows", "OPENAI_API_KEY=k"},
			want: []string{"Path=C:\\bin", "SystemRoot=C:\\Windows"}},
		{name: "the locale", environ: []string{"LANG=C", "LC_TIME=fr_FR", "LCX=1"}, want: []string{"LANG=C", "LC_TIME=fr_FR"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := testsuite.ServerEnv(tc.environ)
			require.NotNil(t, got)
			assert.Equal(t, tc.want, got)
		})
	}
}
