package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/cmd/overseer/cli"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/jev/jevhttp"
	"github.com/corohq/temporal-overseer/testsuite/judgetest"
	"github.com/corohq/temporal-overseer/worker"
)

// syncBuffer is a bytes.Buffer that a running command writes to while the
// test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var endpointLine = regexp.MustCompile(`POST (http://\S+)`)

// serveJudge runs `overseer judge serve` in-process on a free port and
// returns its decide URL; the service stops when the test ends.
func serveJudge(t *testing.T, args ...string) (url string, out *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out = &syncBuffer{}
	var errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Main(ctx, append([]string{"judge", "serve", "--listen", "127.0.0.1:0"}, args...), out, &errOut)
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

func TestJudgeServeAnswersTheJevHTTPJudge(t *testing.T) {
	const key = "serve-key-DISTINCTIVE"
	t.Setenv(worker.EnvServeAPIKey, key)
	url, out := serveJudge(t, "-v")
	assert.Contains(t, out.String(), "Serving the heuristic judge")
	assert.Contains(t, out.String(), "API key          required")

	req := judgetest.BoundaryRequest()
	j, err := jevhttp.New(jevhttp.Options{URL: url, APIKey: key})
	require.NoError(t, err)
	resp, err := j.Decide(context.Background(), req)
	require.NoError(t, err)
	require.NoError(t, jev.Validate(req, resp))
	assert.Equal(t, "overseer-heuristic-v1", resp.ModelVersion)

	anon, err := jevhttp.New(jevhttp.Options{URL: url})
	require.NoError(t, err)
	_, err = anon.Decide(context.Background(), req)
	require.ErrorIs(t, err, jev.ErrRejected)
	assert.ErrorContains(t, err, "401 Unauthorized")

	health, err := http.Get(strings.TrimSuffix(url, jevhttp.DecidePath) + jevhttp.ReadyPath)
	require.NoError(t, err)
	var body map[string]string
	require.NoError(t, json.NewDecoder(health.Body).Decode(&body))
	health.Body.Close()
	assert.Equal(t, "ready", body["status"])

	assert.Contains(t, out.String(), "jev decision", "-v logs decisions")
	assert.NotContains(t, out.String(), key, "the key is never printed")
}

func TestJudgeBadConfigIsOneSentence(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{name: "no subcommand", args: []string{"judge"}, want: "one subcommand: overseer judge serve"},
		{name: "unknown backend", args: []string{"judge", "serve", "--backend", "gpt"}, want: `unknown judge "gpt": use heuristic, jev or openai`},
		{name: "budget above 30s", args: []string{"judge", "serve", "--judge-budget", "45s"}, want: "judge budget 45s: must be positive and at most 30s"},
		{name: "bad budget in env", env: map[string]string{worker.EnvJudgeBudget: "soon"}, args: []string{"judge", "serve"}, want: `OVERSEER_JUDGE_BUDGET="soon" is not a duration`},
		{name: "jev backend calling itself", args: []string{"judge", "serve", "--backend", "jev"}, want: "is this service itself"},
		{name: "worker with an unknown judge", args: []string{"worker", "--judge", "oracle"}, want: `unknown judge "oracle"`},
		{name: "worker with a bad Jev URL", args: []string{"worker", "--judge", "jev", "--judge-url", "jev:8700"}, want: "is not an absolute http or https URL"},
		{name: "unknown judge in env", env: map[string]string{worker.EnvJudge: "magic"}, args: []string{"worker"}, want: `unknown judge "magic"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, _, stderr := run(tc.args...)
			assert.Equal(t, 2, code, stderr)
			assert.Contains(t, stderr, tc.want)
			assert.Equal(t, 1, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line: %q", stderr)
		})
	}
}

func TestJudgeServeRefusesABusyAddress(t *testing.T) {
	url, _ := serveJudge(t)
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), jevhttp.DecidePath)
	code, _, stderr := run("judge", "serve", "--listen", addr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "cannot listen on "+addr)
}

// TestConformanceJudgeServe runs the judge conformance suite against the
// Jev HTTP judge talking to `overseer judge serve` (heuristic backend), as
// started from the command line.
func TestConformanceJudgeServe(t *testing.T) {
	judgetest.Run(t, func(t *testing.T) *judgetest.Harness {
		url, _ := serveJudge(t)
		j, err := jevhttp.New(jevhttp.Options{URL: url})
		require.NoError(t, err)
		return &judgetest.Harness{Judge: j, ValidatesAnswers: true}
	})
}
