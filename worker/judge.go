package worker

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/jev/jevhttp"
	"github.com/corohq/temporal-overseer/overseer/jev/jevopenai"
)

// The judges a worker can use.
const (
	// JudgeLearned is overseer.LearnedJudge: a small fitted model, offline.
	// The default.
	JudgeLearned = "learned"
	// JudgeHeuristic is overseer.HeuristicJudge: rules, not a model.
	JudgeHeuristic = "heuristic"
	// JudgeJev asks a Jev HTTP endpoint (or `overseer judge serve`).
	JudgeJev = "jev"
	// JudgeOpenAI asks an OpenAI-compatible chat-completions endpoint.
	JudgeOpenAI = "openai"
)

// Environment variables read by JudgeConfigFromEnv. API keys are read only
// from the environment, never from flags, so they do not show in ps.
const (
	EnvJudge         = "OVERSEER_JUDGE"               // learned, heuristic, jev or openai
	EnvModel         = "OVERSEER_MODEL"               // model file of the learned judge
	EnvPolicy        = "OVERSEER_POLICY"              // policy file (overseer calibrate)
	EnvJudgeBudget   = "OVERSEER_JUDGE_BUDGET"        // a Go duration, e.g. 3s; at most 30s
	EnvJevURL        = "OVERSEER_JEV_URL"             // the Jev decide endpoint
	EnvJevAPIKey     = "OVERSEER_JEV_API_KEY"         // bearer key of the Jev endpoint
	EnvOpenAIBaseURL = "OPENAI_BASE_URL"              // e.g. http://127.0.0.1:11434/v1
	EnvOpenAIAPIKey  = "OPENAI_API_KEY"               // bearer key of the OpenAI-compatible API
	EnvOpenAIModel   = "OVERSEER_OPENAI_MODEL"        // the model to ask
	EnvServeAPIKey   = "OVERSEER_JUDGE_SERVE_API_KEY" // key `overseer judge serve` requires
)

// JudgeConfig selects and configures the judge of a worker. The zero value
// is the learned judge with its shipped model. The API keys are kept out of every rendering of
// the value (String, GoString, MarshalJSON) and out of every error.
type JudgeConfig struct {
	// Kind is JudgeLearned, JudgeHeuristic, JudgeJev or JudgeOpenAI. If
	// not set, JudgeLearned.
	Kind string
	// Model is the learned judge's model file (overseer train). If not set,
	// the shipped default model.
	Model string
	// Budget bounds one judge call. If not set, 3 s; more than 30 s is an
	// error.
	Budget time.Duration
	// JevURL is the decide endpoint of the Jev judge. If not set, a judge
	// service on this machine (jevhttp.DefaultURL).
	JevURL string
	// JevAPIKey is sent to the Jev endpoint as a bearer token.
	JevAPIKey string
	// OpenAIBaseURL of the OpenAI-compatible API. If not set, the OpenAI API.
	OpenAIBaseURL string
	// OpenAIAPIKey is sent to the OpenAI-compatible API as a bearer token.
	OpenAIAPIKey string
	// OpenAIModel to ask. If not set, jevopenai.DefaultModel.
	OpenAIModel string
}

// JudgeConfigFromEnv reads the judge configuration from the environment
// through getenv (os.Getenv in production).
func JudgeConfigFromEnv(getenv func(string) string) (JudgeConfig, error) {
	c := JudgeConfig{
		Kind:          strings.TrimSpace(getenv(EnvJudge)),
		Model:         strings.TrimSpace(getenv(EnvModel)),
		JevURL:        strings.TrimSpace(getenv(EnvJevURL)),
		JevAPIKey:     strings.TrimSpace(getenv(EnvJevAPIKey)),
		OpenAIBaseURL: strings.TrimSpace(getenv(EnvOpenAIBaseURL)),
		OpenAIAPIKey:  strings.TrimSpace(getenv(EnvOpenAIAPIKey)),
		OpenAIModel:   strings.TrimSpace(getenv(EnvOpenAIModel)),
	}
	if s := strings.TrimSpace(getenv(EnvJudgeBudget)); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return c, fmt.Errorf("%s=%q is not a duration such as 3s", EnvJudgeBudget, s)
		}
		c.Budget = d
	}
	return c, nil
}

// Validate reports the first problem of c in one sentence.
func (c JudgeConfig) Validate() error {
	_, err := c.NewJudge()
	return err
}

// NewJudge builds the configured judge.
func (c JudgeConfig) NewJudge() (jev.Judge, error) {
	if _, err := jev.CheckBudget(c.Budget); err != nil {
		return nil, fmt.Errorf("judge budget %v: must be positive and at most %v", c.Budget, jev.MaxBudget)
	}
	if c.Model != "" && !c.isLearned() {
		return nil, fmt.Errorf("a model file (%s) is only for the learned judge, not %q", c.Model, c.Kind)
	}
	switch strings.ToLower(c.Kind) {
	case "", JudgeLearned:
		if c.Model == "" {
			return &overseer.LearnedJudge{}, nil
		}
		m, err := overseer.LoadLearnedModel(c.Model)
		if err != nil {
			return nil, err
		}
		return &overseer.LearnedJudge{Model: m}, nil
	case JudgeHeuristic:
		return overseer.HeuristicJudge{}, nil
	case JudgeJev:
		j, err := jevhttp.New(jevhttp.Options{URL: c.JevURL, APIKey: c.JevAPIKey, Budget: c.Budget})
		if err != nil {
			return nil, fmt.Errorf("jev judge: %w", err)
		}
		return j, nil
	case JudgeOpenAI:
		j, err := jevopenai.New(jevopenai.Options{BaseURL: c.OpenAIBaseURL, APIKey: c.OpenAIAPIKey, Model: c.OpenAIModel, Budget: c.Budget})
		if err != nil {
			return nil, fmt.Errorf("openai judge: %w", err)
		}
		return j, nil
	default:
		return nil, fmt.Errorf("unknown judge %q: use %s, %s, %s or %s", c.Kind, JudgeLearned, JudgeHeuristic, JudgeJev, JudgeOpenAI)
	}
}

// String describes the configuration for logs and banners, without keys.
func (c JudgeConfig) String() string {
	budget := c.Budget
	if budget == 0 {
		budget = jev.DefaultBudget
	}
	keyState := func(k string) string {
		if k == "" {
			return "no API key"
		}
		return "API key set"
	}
	switch strings.ToLower(c.Kind) {
	case "", JudgeLearned:
		if c.Model == "" {
			return "learned judge (shipped models " + overseer.DefaultLearnedModel().Version + " for phases, " +
				overseer.DefaultLoopModel().Version + " for agent loops)"
		}
		return "learned judge (model file " + c.Model + ")"
	case JudgeHeuristic:
		return "heuristic judge (rules, not a model)"
	case JudgeJev:
		url := jevhttp.DefaultURL
		if j, err := jevhttp.New(jevhttp.Options{URL: c.JevURL}); err == nil {
			url = j.URL()
		}
		return fmt.Sprintf("Jev judge at %s (%s), budget %v", url, keyState(c.JevAPIKey), budget)
	case JudgeOpenAI:
		base, model := c.OpenAIBaseURL, c.OpenAIModel
		if base == "" {
			base = "the OpenAI API"
		} else {
			base = redactURL(base)
		}
		if model == "" {
			model = jevopenai.DefaultModel
		}
		return fmt.Sprintf("OpenAI-compatible judge %s at %s (%s), budget %v", model, base, keyState(c.OpenAIAPIKey), budget)
	}
	return fmt.Sprintf("unknown judge %q", c.Kind)
}

func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// MarshalJSON renders c without its keys (whether each is set instead)
// and with passwords in URLs masked, for structured logs.
func (c JudgeConfig) MarshalJSON() ([]byte, error) {
	orEmpty := func(u string) string {
		if u == "" {
			return ""
		}
		return redactURL(u)
	}
	return json.Marshal(struct {
		Kind          string        `json:"kind,omitempty"`
		Budget        time.Duration `json:"budget,omitempty"`
		JevURL        string        `json:"jev_url,omitempty"`
		JevAPIKey     bool          `json:"jev_api_key_set"`
		OpenAIBaseURL string        `json:"openai_base_url,omitempty"`
		OpenAIAPIKey  bool          `json:"openai_api_key_set"`
		OpenAIModel   string        `json:"openai_model,omitempty"`
	}{c.Kind, c.Budget, orEmpty(c.JevURL), c.JevAPIKey != "", orEmpty(c.OpenAIBaseURL), c.OpenAIAPIKey != "", c.OpenAIModel})
}

// GoString is String, so that %#v does not print the keys either.
func (c JudgeConfig) GoString() string { return c.String() }

// assessTimeout is the Overseer activity's attempt timeout that fits the
// budget: 0 (the overseer's default of 10 s) unless the budget needs more.
func (c JudgeConfig) assessTimeout() time.Duration {
	if c.Budget+2*time.Second > overseer.DefaultAssessTimeout {
		return c.Budget + 2*time.Second
	}
	return 0
}

func (c JudgeConfig) isLearned() bool {
	return c.Kind == "" || strings.EqualFold(c.Kind, JudgeLearned)
}
