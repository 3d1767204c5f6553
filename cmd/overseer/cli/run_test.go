package cli

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/supervision"
	"github.com/corohq/temporal-overseer/worker"
)

func TestWorkerSupervisionConfigFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(doc), 0o600))
		return p
	}
	apply := func(args ...string) (worker.Config, error) {
		var wf workerFlags
		fs := flag.NewFlagSet("worker", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		wf.register(fs)
		require.NoError(t, fs.Parse(args))
		var cfg worker.Config
		return cfg, wf.apply(&cfg)
	}

	good := write("good.json", `{"jev":{"supervision":{"mode":"SHADOW","threshold":0.9,"rejectionThreshold":0.1,"minIntervalMillis":2000}}}`)
	cfg, err := apply("--supervision-config", good)
	require.NoError(t, err)
	require.NotNil(t, cfg.Supervision.Config)
	assert.Equal(t, supervision.ModeShadow, cfg.Supervision.Config.Mode)
	assert.Equal(t, supervision.Thresholds{No: 0.1, Yes: 0.9}, cfg.Supervision.Config.Thresholds)
	assert.Equal(t, 2*time.Second, cfg.Supervision.Config.Schedule.MinInterval)

	bad := write("bad.json", `{"jev":{"supervision":{"mode":"SHADOW","threshold":0.9,"rejectionThreshold":0.1,"apiKey":"x"}}}`)
	_, err = apply("--supervision-config", bad)
	require.ErrorIs(t, err, ErrUsage)
	assert.ErrorContains(t, err, `"apiKey"`)

	_, err = apply("--supervision-config", filepath.Join(dir, "missing.json"))
	require.ErrorIs(t, err, ErrUsage)
	assert.ErrorContains(t, err, "missing.json")

	cfg, err = apply()
	require.NoError(t, err)
	assert.Nil(t, cfg.Supervision.Config, "without the flag, the default supervision")
}

// overseer dev prints one line per gate, approval, notification and
// sign-in setting it took, naming where a secret comes from, never its
// value.
func TestDevSettingsSayWhatTookEffectWithoutSecrets(t *testing.T) {
	const webhookSecret, slackToken, oidcSecret = "whsec-do-not-print", "T000/B000/slack-token", "oidc-do-not-print"
	t.Setenv("OVERSEER_WEBHOOK_URL", "https://hooks.example.com/overseer?token=url-token")
	t.Setenv("OVERSEER_WEBHOOK_SECRET", webhookSecret)
	t.Setenv("OVERSEER_SLACK_WEBHOOK_URL", "https://hooks.slack.com/services/"+slackToken)
	t.Setenv("OVERSEER_OIDC_CLIENT_SECRET", oidcSecret)
	var wf workerFlags
	var df dashboardFlags
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	wf.register(fs)
	df.register(fs, DefaultDashboardListen)
	require.NoError(t, fs.Parse([]string{"--approvers", "alice,group:sre", "--four-eyes", "--gate-deadline", "24h:escalate,72h:abort",
		"--gate-deadlines", "Other=4h:continue", "--trusted-proxy", "10.0.0.0/8", "--oidc-issuer", "https://id.example.com", "--oidc-client-id", "overseer"}))
	var cfg worker.Config
	require.NoError(t, wf.apply(&cfg))

	text := strings.Join(devSettings(cfg, &df, true), "\n") + "\n"
	assert.Contains(t, text, "Gate deadline        24h:escalate,72h:abort\n")
	assert.Contains(t, text, "Gate deadline        4h:continue for Other\n")
	assert.Contains(t, text, "Approvers            alice, group:sre may resume gates\n")
	assert.Contains(t, text, "Four-eyes            on: a job's starter may not resume its gates; start jobs with overseer start --by NAME (memo overseer.started_by)\n")
	assert.Contains(t, text, "Notifications        webhook https://hooks.example.com/… + slack incoming webhook (webhooks signed with the key in $OVERSEER_WEBHOOK_SECRET)\n")
	assert.Contains(t, text, "Dashboard sign-in    trusted proxy 10.0.0.0/8: user from X-Forwarded-User, groups from X-Forwarded-Groups\n")
	assert.Contains(t, text, "Dashboard sign-in    OpenID Connect https://id.example.com, client overseer, client secret from $OVERSEER_OIDC_CLIENT_SECRET\n")
	for _, secret := range []string{webhookSecret, slackToken, oidcSecret, "url-token"} {
		assert.NotContains(t, text, secret)
	}

	// Without the dashboard its sign-in is not taken; with nothing set,
	// nothing is said.
	assert.NotContains(t, strings.Join(devSettings(cfg, &df, false), "\n"), "Dashboard sign-in")
	assert.Empty(t, devSettings(worker.Config{}, &dashboardFlags{}, true))
}
