package testsuite

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"go.temporal.io/sdk/log"
)

// StartDevServerForTest starts a dev server for t ([StartDevServer], its
// output and the client's log discarded unless opts names them) and stops
// it when t ends. Without a Temporal CLI it skips t, except where the CI
// environment variable is set: CI must really run the test, so there it
// fails t.
func StartDevServerForTest(t testing.TB, opts DevServerOptions) *DevServer {
	t.Helper()
	if _, err := TemporalCLIPath(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI needs the Temporal CLI: %v", err)
		}
		t.Skipf("no Temporal CLI: %v", err)
	}
	if opts.Output == nil {
		opts.Output = io.Discard
	}
	if opts.Logger == nil {
		opts.Logger = log.NewStructuredLogger(slog.New(slog.DiscardHandler))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := StartDevServer(ctx, opts)
	if err != nil {
		t.Fatalf("start the dev server: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return srv
}
