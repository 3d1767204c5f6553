// Package clitest runs overseer subcommands in-process for tests, the way a
// user would start them, so that tests of several packages share one way of
// doing it.
package clitest

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/cmd/overseer/cli"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/judge"
)

// SyncBuffer is a bytes.Buffer that a running command writes to while the
// test reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var endpointLine = regexp.MustCompile(`POST (http://\S+)`)

// ServeJudge runs `overseer judge serve` in-process on a free loopback port
// and returns its decide URL and its output. When the test ends the service
// is stopped and must have exited cleanly.
func ServeJudge(t *testing.T, args ...string) (url string, out *SyncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out = &SyncBuffer{}
	errOut := &SyncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, append([]string{"judge", "serve", "--listen", "127.0.0.1:0"}, args...), out, errOut)
	}()
	t.Cleanup(func() {
		cancel()
		assert.Equal(t, 0, <-done, errOut.String())
		assert.Contains(t, out.String(), "Judge service stopped.")
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := endpointLine.FindStringSubmatch(out.String()); m != nil {
			return m[1], out
		}
		select {
		case code := <-done:
			t.Fatalf("judge serve exited with %d: %s", code, errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("judge serve printed no endpoint: %q", out.String())
		}
		time.Sleep(20 * time.Millisecond) // polling interval
	}
}

// KeptInForce asserts that a calibration that certified no pause policy
// said so on out and wrote the policy in force to path, uncertified, with
// a relative budget whose promise assumes their spend is log-normal (what
// a handful of runs back), and removes the file.
func KeptInForce(t *testing.T, out, path string) {
	t.Helper()
	assert.Contains(t, out, "no pause policy certified; relative budget in the policy: ")
	kept, err := overseer.LoadPolicy(path)
	require.NoError(t, err)
	assert.False(t, kept.Promise.Certified())
	require.NotNil(t, kept.Spend)
	assert.Equal(t, judge.SpendAssumesLogNormal, kept.Spend.Assumes)
	require.NoError(t, os.Remove(path))
}
