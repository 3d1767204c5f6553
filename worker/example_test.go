package worker_test

import (
	"encoding/json"
	"fmt"
	"log"

	"github.com/corohq/temporal-overseer/worker"
)

// Read the judge's configuration from the environment (a map here, os.Getenv
// in a real worker) and build the judge. The API key is used, never shown.
func ExampleJudgeConfigFromEnv() {
	env := map[string]string{
		worker.EnvJudge:       "jev",
		worker.EnvJevURL:      "https://judge.internal.example",
		worker.EnvJevAPIKey:   "s3cret",
		worker.EnvJudgeBudget: "5s",
	}
	cfg, err := worker.JudgeConfigFromEnv(func(k string) string { return env[k] })
	if err != nil {
		log.Fatal(err)
	}
	if _, err := cfg.NewJudge(); err != nil {
		log.Fatal(err)
	}
	fmt.Println(cfg)
	b, err := json.Marshal(cfg) // for structured logs
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(b))
	// Output:
	// Jev judge at https://judge.internal.example/v1/decide (API key set), budget 5s
	// {"kind":"jev","budget":5000000000,"jev_url":"https://judge.internal.example","jev_api_key_set":true,"openai_api_key_set":false}
}
