package cli

import (
	"flag"
	"io"
	"os"
	"path/filepath"
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
