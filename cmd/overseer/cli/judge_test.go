package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/cmd/overseer/cli/clitest"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/jev/jevhttp"
	"github.com/corohq/temporal-overseer/testsuite/judgetest"
	"github.com/corohq/temporal-overseer/worker"
)

func TestJudgeServeAnswersTheJevHTTPJudge(t *testing.T) {
	const key = "serve-key-DISTINCTIVE"
	t.Setenv(worker.EnvServeAPIKey, key)
	url, out := clitest.ServeJudge(t, "-v")
	assert.Contains(t, out.String(), "Serving the learned judge")
	assert.Contains(t, out.String(), "API key          required")

	req := judgetest.BoundaryRequest()
	j, err := jevhttp.New(jevhttp.Options{URL: url, APIKey: key})
	require.NoError(t, err)
	resp, err := j.Decide(context.Background(), req)
	require.NoError(t, err)
	require.NoError(t, jev.Validate(req, resp))
	assert.True(t, strings.HasPrefix(resp.ModelVersion, overseer.DefaultLearnedModel().Version+"/"), "the model version names the sub-model: %s", resp.ModelVersion)
	assert.NotEmpty(t, resp.Basis, "the judge says what it saw")

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
		{name: "unknown backend", args: []string{"judge", "serve", "--backend", "gpt"}, want: `unknown judge "gpt": use learned, heuristic, jev or openai`},
		{name: "budget above 30s", args: []string{"judge", "serve", "--judge-budget", "45s"}, want: "judge budget 45s: must be positive and at most 30s"},
		{name: "bad budget in env", env: map[string]string{worker.EnvJudgeBudget: "soon"}, args: []string{"judge", "serve"}, want: `OVERSEER_JUDGE_BUDGET="soon" is not a duration`},
		{name: "jev backend calling itself", args: []string{"judge", "serve", "--backend", "jev"}, want: "is this service itself"},
		{name: "beyond loopback without a key", env: map[string]string{worker.EnvServeAPIKey: ""}, args: []string{"judge", "serve", "--listen", "0.0.0.0:0"},
			want: "--listen 0.0.0.0:0 reaches beyond loopback and no API key is set: set $OVERSEER_JUDGE_SERVE_API_KEY, listen on 127.0.0.1, or pass --insecure"},
		{name: "a wildcard address without a key", env: map[string]string{worker.EnvServeAPIKey: ""}, args: []string{"judge", "serve", "--listen", ":0"},
			want: "reaches beyond loopback and no API key is set"},
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

// --insecure serves anyone beyond loopback without a key, and says so in
// one line; with a key there is nothing to say.
func TestJudgeServeInsecureBeyondLoopback(t *testing.T) {
	t.Setenv(worker.EnvServeAPIKey, "")
	url, out := clitest.ServeJudge(t, "--listen", "0.0.0.0:0", "--insecure")
	assert.Equal(t, 1, strings.Count(out.String(), "Warning"), out.String())
	assert.Contains(t, out.String(), "Warning: --insecure: no API key, and 0.0.0.0:0 reaches beyond loopback: anyone who reaches it can call the judge\n")
	anon, err := jevhttp.New(jevhttp.Options{URL: url})
	require.NoError(t, err)
	_, err = anon.Decide(context.Background(), judgetest.BoundaryRequest())
	require.NoError(t, err, "served without a key")

	t.Setenv(worker.EnvServeAPIKey, "serve-key")
	_, out = clitest.ServeJudge(t, "--listen", "0.0.0.0:0")
	assert.NotContains(t, out.String(), "Warning", "a key guards it")
	_, out = clitest.ServeJudge(t, "--insecure")
	assert.NotContains(t, out.String(), "Warning", "loopback needs no warning")
}

func TestJudgeServeRefusesABusyAddress(t *testing.T) {
	url, _ := clitest.ServeJudge(t)
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
		url, _ := clitest.ServeJudge(t)
		j, err := jevhttp.New(jevhttp.Options{URL: url})
		require.NoError(t, err)
		return &judgetest.Harness{Judge: j, ValidatesAnswers: true}
	})
}
