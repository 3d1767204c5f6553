package cli

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/notify"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
)

func TestWorkerGateFlagsAndEnvironment(t *testing.T) {
	env := map[string]string{
		envGateDeadline:         "4h:continue",
		envDashboardURL:         "https://overseer.example.com",
		notify.EnvWebhookURL:    "https://hooks.example.com/overseer",
		notify.EnvWebhookSecret: "s3cret",
	}
	w := workerFlags{gateDeadlines: "CoroJob=24h:escalate,72h:abort; Other=1h:abort"}
	var cfg worker.Config
	require.NoError(t, w.applyGates(&cfg, func(k string) string { return env[k] }))
	assert.Equal(t, overseer.GateDeadline{After: 4 * time.Hour, Action: overseer.DeadlineContinue}, cfg.GateDeadline, "from the environment")
	assert.Equal(t, map[string]overseer.GateDeadline{
		"CoroJob": {After: 24 * time.Hour, Action: overseer.DeadlineEscalate, FinalAfter: 72 * time.Hour, FinalAction: overseer.DeadlineAbort},
		"Other":   {After: time.Hour, Action: overseer.DeadlineAbort},
	}, cfg.GateDeadlines)
	assert.Equal(t, "https://overseer.example.com", cfg.DashboardURL)
	require.NotNil(t, cfg.Notifier)
	assert.NotContains(t, fmt.Sprint(cfg.Notifier), "s3cret")
	opts := cfg.PluginOptions()
	assert.Equal(t, cfg.Notifier, opts.Notifier)
	assert.Equal(t, cfg.GateDeadlines, opts.GateDeadlines)

	for flags, msg := range map[string]workerFlags{
		"--gate-deadline":  {gateDeadline: "soon:abort"},
		"--gate-deadlines": {gateDeadlines: "CoroJob"},
	} {
		var cfg worker.Config
		err := msg.applyGates(&cfg, func(string) string { return "" })
		assert.ErrorIs(t, err, ErrUsage)
		assert.ErrorContains(t, err, flags)
	}
	err := (&workerFlags{}).applyGates(&cfg, func(k string) string {
		return map[string]string{notify.EnvWebhookURL: "https://hooks.example.com/x"}[k]
	})
	assert.ErrorContains(t, err, notify.EnvWebhookSecret, "a webhook without its secret is refused")
}
