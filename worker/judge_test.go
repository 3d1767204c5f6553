package worker_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev/jevhttp"
	"github.com/corohq/temporal-overseer/overseer/jev/jevopenai"
	"github.com/corohq/temporal-overseer/worker"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestJudgeConfigFromEnv(t *testing.T) {
	c, err := worker.JudgeConfigFromEnv(env(map[string]string{
		worker.EnvJudge: "jev", worker.EnvJevURL: "http://jev.internal:8700", worker.EnvJevAPIKey: "k1",
		worker.EnvJudgeBudget: "5s", worker.EnvOpenAIModel: "llama3.1:8b",
	}))
	require.NoError(t, err)
	assert.Equal(t, worker.JudgeConfig{Kind: "jev", JevURL: "http://jev.internal:8700", JevAPIKey: "k1", Budget: 5 * time.Second, OpenAIModel: "llama3.1:8b"}, c)

	_, err = worker.JudgeConfigFromEnv(env(map[string]string{worker.EnvJudgeBudget: "3"}))
	assert.EqualError(t, err, `OVERSEER_JUDGE_BUDGET="3" is not a duration such as 3s`)
}

func TestJudgeConfigNewJudge(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     worker.JudgeConfig
		check   func(t *testing.T, j any)
		wantErr string
	}{
		{name: "zero is learned", check: func(t *testing.T, j any) { assert.IsType(t, &overseer.LearnedJudge{}, j) }},
		{name: "heuristic", cfg: worker.JudgeConfig{Kind: "heuristic"}, check: func(t *testing.T, j any) { assert.IsType(t, overseer.HeuristicJudge{}, j) }},
		{name: "model file only for learned", cfg: worker.JudgeConfig{Kind: "heuristic", Model: "m.json"}, wantErr: "only for the learned judge"},
		{name: "missing model file", cfg: worker.JudgeConfig{Model: "/nonexistent/m.json"}, wantErr: "learned model"},
		{name: "jev", cfg: worker.JudgeConfig{Kind: "jev", JevURL: "https://jev.example.com", Budget: 7 * time.Second}, check: func(t *testing.T, j any) {
			require.IsType(t, &jevhttp.Judge{}, j)
			assert.Equal(t, "https://jev.example.com/v1/decide", j.(*jevhttp.Judge).URL())
			assert.Equal(t, 7*time.Second, j.(*jevhttp.Judge).Budget())
		}},
		{name: "openai", cfg: worker.JudgeConfig{Kind: "OpenAI", OpenAIBaseURL: "http://127.0.0.1:11434/v1", OpenAIModel: "llama3.1:8b"}, check: func(t *testing.T, j any) {
			require.IsType(t, &jevopenai.Judge{}, j)
			assert.Equal(t, "llama3.1:8b", j.(*jevopenai.Judge).Model())
		}},
		{name: "unknown kind", cfg: worker.JudgeConfig{Kind: "gpt"}, wantErr: `unknown judge "gpt": use learned, heuristic, jev or openai`},
		{name: "budget above 30s", cfg: worker.JudgeConfig{Kind: "jev", Budget: 31 * time.Second}, wantErr: "judge budget 31s: must be positive and at most 30s"},
		{name: "negative budget", cfg: worker.JudgeConfig{Budget: -time.Second}, wantErr: "must be positive"},
		{name: "bad jev URL", cfg: worker.JudgeConfig{Kind: "jev", JevURL: "jev.example.com:8700"}, wantErr: "jev judge: jevhttp: endpoint URL"},
		{name: "bad openai URL", cfg: worker.JudgeConfig{Kind: "openai", OpenAIBaseURL: "localhost"}, wantErr: "openai judge: jevopenai: base URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := tc.cfg.NewJudge()
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				assert.Equal(t, err, tc.cfg.Validate())
				return
			}
			require.NoError(t, err)
			tc.check(t, j)
		})
	}
}

func TestJudgeConfigNeverRendersKeys(t *testing.T) {
	const jevKey, openaiKey = "jev-KEY-do-not-print", "sk-KEY-do-not-print"
	for _, c := range []worker.JudgeConfig{
		{Kind: "jev", JevURL: "http://127.0.0.1:8700", JevAPIKey: jevKey, OpenAIAPIKey: openaiKey},
		{Kind: "openai", OpenAIBaseURL: "http://u:" + openaiKey + "@127.0.0.1:1/v1", JevAPIKey: jevKey, OpenAIAPIKey: openaiKey},
	} {
		js, err := json.Marshal(c)
		require.NoError(t, err)
		core, logs := observer.New(zap.DebugLevel)
		zap.New(core).Info("config", zap.Any("judge", c), zap.Stringer("judge_s", c))
		rendered := []string{c.String(), fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c), string(js), fmt.Sprint(logs.All()[0].ContextMap())}
		for _, r := range rendered {
			assert.NotContains(t, r, jevKey)
			assert.NotContains(t, r, openaiKey)
		}
		assert.Contains(t, c.String(), "API key set")
	}
}

func TestAssessTimeoutFitsTheBudget(t *testing.T) {
	assert.Zero(t, worker.Config{}.PluginOptions().AssessTimeout, "the overseer's default of 10s fits the default budget")
	assert.Equal(t, 22*time.Second, worker.Config{JudgeConfig: worker.JudgeConfig{Kind: "jev", Budget: 20 * time.Second}}.PluginOptions().AssessTimeout)
}
