package jevopenai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

// DefaultModel is the model asked when none is configured.
const DefaultModel = "gpt-4o-mini"

// SchemaName names the structured-output format in the request.
const SchemaName = "jev_answers"

// DefaultSystemPrompt tells the model what the Jev protocol asks of it.
const DefaultSystemPrompt = `You are a structured-decision judge. The user message is a JSON object with "state" (what you judge) and "questions" (name -> question). Answer every question, under its name, from the state alone:
- "noul": give "probability", the probability in [0,1] that the statement in "instructions" is true.
- "choice": pick "choice", one option named in "criteria" (option -> description; null means the option's name says it all); give "confidence" in [0,1] and "probabilities", one per option.
- "score": place the state on the ordered scale "criteria" (lowest first) with "score" from 0 to the number of levels minus 1, fractions allowed; give "confidence" in [0,1] and "probabilities", one per level.
Reply with the JSON object the response format describes and nothing else.`

// Options configure a Judge. The zero value works against the OpenAI API
// with the key in $OPENAI_API_KEY.
type Options struct {
	// BaseURL of the OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1
	// for Ollama. If not set, the client library's default: $OPENAI_BASE_URL,
	// else https://api.openai.com/v1.
	BaseURL string
	// APIKey is sent as a bearer token and never appears in an error. If not
	// set, the client library's default: $OPENAI_API_KEY, else no key
	// (local model servers need none).
	APIKey string
	// Model to ask. If not set, DefaultModel.
	Model string
	// Budget bounds one Decide call. If not set, jev.DefaultBudget; more
	// than jev.MaxBudget is an error.
	Budget time.Duration
	// MaxCompletionTokens caps the answer's tokens (max_completion_tokens).
	// If not set, no cap is sent: the schema bounds the answer.
	MaxCompletionTokens int64
	// Temperature, when set, is sent. If not set, the server's default
	// (reasoning models accept no other).
	Temperature *float64
	// SystemPrompt replaces DefaultSystemPrompt.
	SystemPrompt string
	// Transport sends the requests. If not set, a clone of
	// http.DefaultTransport.
	Transport http.RoundTripper
}

// Judge asks an OpenAI-compatible chat-completions endpoint. It is safe
// for concurrent use.
type Judge struct {
	client openai.Client
	model  string
	budget time.Duration
	key    string
	prompt string
	opts   Options
	where  string // base URL without user information, for errors
}

var _ jev.Judge = (*Judge)(nil)

// New returns a Judge for opts, or an error naming the first bad option.
func New(opts Options) (*Judge, error) {
	budget, err := jev.CheckBudget(opts.Budget)
	if err != nil {
		return nil, fmt.Errorf("jevopenai: budget: %w", err)
	}
	if opts.MaxCompletionTokens < 0 {
		return nil, fmt.Errorf("jevopenai: MaxCompletionTokens %d is negative", opts.MaxCompletionTokens)
	}
	j := &Judge{model: opts.Model, budget: budget, key: opts.APIKey, prompt: opts.SystemPrompt, opts: opts, where: "the OpenAI-compatible API"}
	if j.model == "" {
		j.model = DefaultModel
	}
	if j.prompt == "" {
		j.prompt = DefaultSystemPrompt
	}
	transport := opts.Transport
	if transport == nil {
		transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	ropts := []option.RequestOption{
		option.WithMaxRetries(0),
		option.WithHTTPClient(&http.Client{Transport: transport}),
	}
	if opts.BaseURL != "" {
		u, err := url.Parse(opts.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("jevopenai: base URL %q is not an absolute http or https URL", jev.RedactURL(opts.BaseURL))
		}
		ropts = append(ropts, option.WithBaseURL(opts.BaseURL))
		j.where = u.Redacted()
	}
	if opts.APIKey != "" {
		ropts = append(ropts, option.WithAPIKey(opts.APIKey))
	} else {
		j.key = os.Getenv("OPENAI_API_KEY") // what the library sends: scrub it too
	}
	j.client = openai.NewClient(ropts...)
	return j, nil
}

// Model returns the model the judge asks.
func (j *Judge) Model() string { return j.model }

// Budget returns the budget of one call.
func (j *Judge) Budget() time.Duration { return j.budget }

// Params returns the chat-completions request for req.
func (j *Judge) Params(req jev.Request) (openai.ChatCompletionNewParams, error) {
	if err := jev.ValidateRequest(req); err != nil {
		return openai.ChatCompletionNewParams{}, fmt.Errorf("jevopenai: %w: %w", jev.ErrRejected, err)
	}
	req, calls := splitCalls(req)
	user, err := json.Marshal(req)
	if err != nil {
		return openai.ChatCompletionNewParams{}, fmt.Errorf("jevopenai: encode request: %w: %w", jev.ErrRejected, err)
	}
	system := j.prompt
	if calls != "" && j.opts.SystemPrompt == "" {
		system += "\n" + WindowSystemNote
	}
	messages := []openai.ChatCompletionMessageParamUnion{
		openai.SystemMessage(system),
		openai.UserMessage(string(user)),
	}
	if calls != "" {
		messages = append(messages, openai.UserMessage(calls))
	}
	p := openai.ChatCompletionNewParams{
		Model:    j.model,
		Messages: messages,
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
					Name:        SchemaName,
					Description: openai.String("Typed answers to the Jev questions."),
					Strict:      openai.Bool(true),
					Schema:      Schema(req),
				},
			},
		},
	}
	if j.opts.MaxCompletionTokens > 0 {
		p.MaxCompletionTokens = openai.Int(j.opts.MaxCompletionTokens)
	}
	if j.opts.Temperature != nil {
		p.Temperature = openai.Float(*j.opts.Temperature)
	}
	return p, nil
}

// Decide implements jev.Judge.
func (j *Judge) Decide(ctx context.Context, req jev.Request) (*jev.Response, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, j.budget,
		fmt.Errorf("no answer within the budget of %v: %w", j.budget, context.DeadlineExceeded))
	defer cancel()
	params, err := j.Params(req)
	if err != nil {
		return nil, err
	}
	var (
		raw    []byte
		status int
	)
	record := func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(r)
		if resp != nil {
			status = resp.StatusCode
		}
		return resp, err
	}
	start := time.Now()
	_, err = j.client.Chat.Completions.New(ctx, params, option.WithMiddleware(record), option.WithResponseBodyInto(&raw))
	latency := time.Since(start)
	if err != nil {
		return nil, j.callError(ctx, status, err)
	}
	resp, err := ParseCompletion(req, raw)
	if err != nil {
		return nil, fmt.Errorf("jevopenai: chat completion from %s: %w", j.where, jev.RedactError(err, j.key))
	}
	if resp.ModelVersion == "" {
		resp.ModelVersion = j.model
	}
	resp.Latency = latency
	return resp, nil
}

// callError classifies a failed call: the context's cause first, then the
// HTTP status, else a transport error. Nothing of the request (which holds
// the key) is kept.
func (j *Judge) callError(ctx context.Context, status int, err error) error {
	prefix := "jevopenai: chat completion from " + j.where
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", prefix, context.Cause(ctx))
	}
	if status >= 300 {
		msg := ""
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			msg = apiErr.Message
			if apiErr.Code != "" {
				msg = apiErr.Code + ": " + msg
			}
		}
		msg = jev.Redact(jev.Clip(msg, 300), j.key)
		text := fmt.Sprintf("%s: %d %s", prefix, status, http.StatusText(status))
		if msg != "" {
			text += ": " + msg
		}
		if status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500 {
			return errors.New(text)
		}
		return fmt.Errorf("%s: %w", text, jev.ErrRejected)
	}
	var nerr net.Error
	if errors.As(err, &nerr) {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			return fmt.Errorf("%s: %w", prefix, uerr.Err)
		}
		return fmt.Errorf("%s: %w", prefix, nerr)
	}
	return fmt.Errorf("%s: %s", prefix, jev.Redact(jev.Clip(err.Error(), 300), j.key))
}

// Schema derives the structured-output JSON Schema of the answers to req:
// an object with one required property per question (see the package
// documentation). It follows the strict-mode subset: every property is
// required and no additional properties are allowed.
func Schema(req jev.Request) map[string]any {
	names := slices.Sorted(maps.Keys(req.Questions))
	props := make(map[string]any, len(names))
	for _, name := range names {
		props[name] = questionSchema(req.Questions[name])
	}
	return object(props, "One answer per question, under the question's name.")
}

func questionSchema(q jev.Question) map[string]any {
	prob := func(desc string) map[string]any {
		return map[string]any{"type": "number", "minimum": 0, "maximum": 1, "description": desc}
	}
	switch q.Type {
	case jev.Noul:
		return object(map[string]any{
			"probability": prob("Probability that the statement is true: " + q.Instructions),
		}, "noul: "+q.Instructions)
	case jev.Choice:
		names := make([]string, len(q.Options))
		per := make(map[string]any, len(q.Options))
		for i, o := range q.Options {
			names[i] = o.Name
			desc := o.Description
			if desc == "" {
				desc = o.Name
			}
			per[o.Name] = prob(desc)
		}
		return object(map[string]any{
			"choice":        map[string]any{"type": "string", "enum": names, "description": "The chosen option."},
			"confidence":    prob("Confidence in the choice."),
			"probabilities": object(per, "Probability of each option."),
		}, "choice: "+describe(q))
	case jev.Score:
		per := make(map[string]any, len(q.Levels))
		for _, l := range q.Levels {
			per[l] = prob("Probability of the level " + l + ".")
		}
		return object(map[string]any{
			"score": map[string]any{"type": "number", "minimum": 0, "maximum": len(q.Levels) - 1,
				"description": fmt.Sprintf("Position on the scale %s: 0 = %s, %d = %s; fractions allowed.",
					strings.Join(q.Levels, " < "), q.Levels[0], len(q.Levels)-1, q.Levels[len(q.Levels)-1])},
			"confidence":    prob("Confidence in the score."),
			"probabilities": object(per, "Probability of each level."),
		}, "score: "+describe(q))
	}
	return map[string]any{"type": "object"}
}

func describe(q jev.Question) string {
	if q.Instructions != "" {
		return q.Instructions
	}
	switch q.Type {
	case jev.Choice:
		return "pick one option"
	case jev.Score:
		return "place on the scale"
	}
	return string(q.Type)
}

func object(props map[string]any, desc string) map[string]any {
	return map[string]any{
		"type":                 "object",
		"description":          desc,
		"properties":           props,
		"required":             slices.Sorted(maps.Keys(props)),
		"additionalProperties": false,
	}
}

// completion is the part of a chat completion the judge reads.
type completion struct {
	Model   string `json:"model"`
	Choices []struct {
		FinishReason string `json:"finish_reason"`
		Message      struct {
			Content *string `json:"content"`
			Refusal *string `json:"refusal"`
		} `json:"message"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

// structured is one answer in the structured-output shape.
type structured struct {
	Probability   *float64           `json:"probability"`
	Choice        *string            `json:"choice"`
	Score         *float64           `json:"score"`
	Confidence    *float64           `json:"confidence"`
	Probabilities map[string]float64 `json:"probabilities"`
}

// ParseCompletion reads a chat-completions body: the first choice's content
// holds the structured answers. The answers are typed from req's questions
// and validated with jev.Validate. Every failure wraps jev.ErrInvalidAnswer:
// an empty or non-JSON body, no choice, a refusal, a completion cut off at
// its token limit or filtered, empty content, content that is not the
// answers' JSON (a bare NaN, a string for a number), answers that do not fit
// the questions. Content in a single Markdown code fence is accepted.
func ParseCompletion(req jev.Request, body []byte) (*jev.Response, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, fmt.Errorf("%w: empty body", jev.ErrInvalidAnswer)
	}
	var c completion
	if err := strictDecode(body, &c); err != nil {
		return nil, fmt.Errorf("%w: body is not a chat completion: %s", jev.ErrInvalidAnswer, jev.Clip(err.Error(), 200))
	}
	if len(c.Choices) == 0 {
		return nil, fmt.Errorf("%w: chat completion without choices", jev.ErrInvalidAnswer)
	}
	ch := c.Choices[0]
	if r := ch.Message.Refusal; r != nil && *r != "" {
		return nil, fmt.Errorf("%w: the model refused: %s", jev.ErrInvalidAnswer, jev.Clip(*r, 200))
	}
	switch ch.FinishReason {
	case "length":
		return nil, fmt.Errorf("%w: the answer was cut off at the token limit", jev.ErrInvalidAnswer)
	case "content_filter":
		return nil, fmt.Errorf("%w: the answer was withheld by a content filter", jev.ErrInvalidAnswer)
	}
	if ch.Message.Content == nil || strings.TrimSpace(*ch.Message.Content) == "" {
		return nil, fmt.Errorf("%w: empty content", jev.ErrInvalidAnswer)
	}
	content := unfence(strings.TrimSpace(*ch.Message.Content))
	var raw map[string]json.RawMessage
	if err := strictDecode([]byte(content), &raw); err != nil || raw == nil {
		return nil, fmt.Errorf("%w: content is not a JSON object of answers: %s", jev.ErrInvalidAnswer, jev.Clip(content, 120))
	}
	resp := &jev.Response{
		ModelVersion: c.Model,
		Usage:        jev.Usage{InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens},
		Answers:      make(map[string]jev.Answer, len(raw)),
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(raw)) {
		var s structured
		if err := strictDecode(raw[name], &s); err != nil {
			errs = append(errs, fmt.Errorf("answer %q: %s", name, jev.Clip(err.Error(), 120)))
			continue
		}
		a := jev.Answer{Type: req.Questions[name].Type, Probability: s.Probability, Score: s.Score, Confidence: s.Confidence, Probabilities: s.Probabilities}
		if s.Choice != nil {
			a.Choice = *s.Choice
		}
		resp.Answers[name] = a
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", jev.ErrInvalidAnswer, errors.Join(errs...))
	}
	if err := jev.Validate(req, resp); err != nil {
		return nil, err
	}
	return resp, nil
}

// strictDecode decodes exactly one JSON value.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON value")
	}
	return nil
}

// unfence strips one Markdown code fence (``` or ```json) around s.
func unfence(s string) string {
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "```"), "```")
	if i := strings.IndexByte(s, '\n'); i >= 0 && !strings.ContainsAny(s[:i], "{[") {
		s = s[i+1:]
	}
	return strings.TrimSpace(s)
}

// windowState is the part of the overseer's request state a content
// window fills (trajectory.State, trajectory.Content): read loosely, so
// that any other state passes through untouched.
type windowState struct {
	Trajectory struct {
		Objective string       `json:"objective"`
		Content   []windowCall `json:"content"`
	} `json:"trajectory"`
}

type windowCall struct {
	Run    int    `json:"run"`
	Call   string `json:"call"`
	Input  string `json:"input"`
	Output string `json:"output"`
	Error  string `json:"error"`
	Cut    bool   `json:"cut"`
}

// WindowSystemNote follows DefaultSystemPrompt when the request carries a
// content window.
const WindowSystemNote = "A second user message shows excerpts of the run's latest calls (what the agent sent and got back): judge from the state and from them."

// WindowPreamble opens the message that shows a content window.
const WindowPreamble = "What the agent did lately: its latest calls, oldest first, as excerpts (cut to a byte budget and redacted). " +
	"The state above counts the whole run; read these calls to answer the same questions about it, and quote them where they are your evidence."

// splitCalls takes the overseer's content window (the state's
// trajectory.content) out of req's state and renders it as a message of
// its own: the latest calls, oldest first, each with its input, output
// and error, then the objective they serve. A request without a window is
// returned as it is, with no message.
func splitCalls(req jev.Request) (jev.Request, string) {
	var ws windowState
	if json.Unmarshal(req.State, &ws) != nil || len(ws.Trajectory.Content) == 0 {
		return req, ""
	}
	var state map[string]json.RawMessage
	var traj map[string]json.RawMessage
	if json.Unmarshal(req.State, &state) != nil || json.Unmarshal(state["trajectory"], &traj) != nil {
		return req, ""
	}
	delete(traj, "content")
	t, err := json.Marshal(traj)
	if err != nil {
		return req, ""
	}
	state["trajectory"] = t
	s, err := json.Marshal(state)
	if err != nil {
		return req, ""
	}
	req.State = s
	var b strings.Builder
	b.WriteString(WindowPreamble)
	b.WriteString("\n")
	for _, c := range ws.Trajectory.Content {
		fmt.Fprintf(&b, "\n## Call %d: %s\n", c.Run, c.Call)
		for _, part := range []struct{ name, text string }{{"input", c.Input}, {"output", c.Output}, {"error", c.Error}} {
			if part.text != "" {
				fmt.Fprintf(&b, "<%s>\n%s\n</%s>\n", part.name, part.text, part.name)
			}
		}
		if c.Cut {
			b.WriteString("(cut to fit the budget)\n")
		}
	}
	if ws.Trajectory.Objective != "" {
		fmt.Fprintf(&b, "\nThe objective these calls serve: %s\n", ws.Trajectory.Objective)
	}
	return req, b.String()
}
