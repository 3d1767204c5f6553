package trajectory

import (
	"errors"
	"regexp"
	"strconv"
	"strings"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// ContentWindow is what a model judge may read of the calls themselves:
// for the latest Calls calls (phase runs), an excerpt of each one's input,
// its result and its error text, cut to CallBytes per call and RequestBytes
// in all, redacted, in [Trajectory].Content. The zero value is off: the
// trajectory carries counters only. The learned judge and the rules never
// read it; a model judge (jevopenai, a Jev service) does.
type ContentWindow struct {
	// Calls is how many of the latest calls the window keeps; 0 is off.
	Calls int `json:"calls,omitempty"`
	// CallBytes bounds one call's excerpt (input, output and error
	// together); 0 is DefaultContentCallBytes.
	CallBytes int `json:"call_bytes,omitempty"`
	// RequestBytes bounds the window in all, the objective's excerpt
	// aside; the oldest calls are dropped first to fit. 0 is
	// DefaultContentRequestBytes.
	RequestBytes int `json:"request_bytes,omitempty"`
}

// Defaults and bounds of a ContentWindow.
const (
	DefaultContentCallBytes    = 2 << 10
	DefaultContentRequestBytes = 12 << 10
	// MaxContentCalls and MaxContentRequestBytes bound what a window may
	// ask: the request stays far below Temporal's payload limits.
	MaxContentCalls        = 64
	MaxContentRequestBytes = 128 << 10
	minContentCallBytes    = 64
)

// On says the window keeps any call.
func (w ContentWindow) On() bool { return w.Calls > 0 }

// Validate refuses a window outside its bounds, in one sentence.
func (w ContentWindow) Validate() error {
	switch {
	case w.Calls < 0 || w.Calls > MaxContentCalls:
		return contentError("calls " + strconv.Itoa(w.Calls) + " is outside 0–" + strconv.Itoa(MaxContentCalls) + "; give how many of the latest calls the judge reads")
	case w.CallBytes != 0 && w.CallBytes < minContentCallBytes:
		return contentError("call_bytes " + strconv.Itoa(w.CallBytes) + " is below " + strconv.Itoa(minContentCallBytes) + "; give at least that, or 0 for the default")
	case w.RequestBytes < 0 || w.RequestBytes > MaxContentRequestBytes:
		return contentError("request_bytes " + strconv.Itoa(w.RequestBytes) + " is outside 0–" + strconv.Itoa(MaxContentRequestBytes) + "; give the window's bytes in all, or 0 for the default")
	}
	return nil
}

type contentError string

func (e contentError) Error() string { return "overseer: content window: " + string(e) }

func (w ContentWindow) callBytes() int {
	if w.CallBytes > 0 {
		return w.CallBytes
	}
	return DefaultContentCallBytes
}

func (w ContentWindow) requestBytes() int {
	if w.RequestBytes > 0 {
		return w.RequestBytes
	}
	return DefaultContentRequestBytes
}

// CallContent is an excerpt of one call in a ContentWindow.
type CallContent struct {
	// Run is the call's number among the job's phase runs (1 for the
	// first), Call its phase's name.
	Run  int    `json:"run"`
	Call string `json:"call"`
	// Input, Output and Error are excerpts of the activity's input, its
	// result and its error text, redacted; Cut says one was cut to fit.
	Input  string `json:"input,omitempty"`
	Output string `json:"output,omitempty"`
	Error  string `json:"error,omitempty"`
	Cut    bool   `json:"cut,omitempty"`
}

func (c CallContent) size() int { return len(c.Call) + len(c.Input) + len(c.Output) + len(c.Error) }

// Redactor rewrites a text before it enters the window. It runs in
// workflow code, so it must be a pure function of its input.
type Redactor func(string) string

// RecordContent adds call's excerpt to t's window as w bounds it, after
// the phase run RecordPhase recorded for it: input is the call's input as
// text (PayloadsText), redact the redactor (RedactSecrets when nil).
func (t *Trajectory) RecordContent(w ContentWindow, call ActivityCall, input string, redact Redactor) {
	if !w.On() {
		return
	}
	if redact == nil {
		redact = RedactSecrets
	}
	c := CallContent{Run: t.PhaseRuns, Call: Clip(call.Phase, maxNameChars)}
	if call.Err != nil {
		c.Error = DescribeError(call.Err)
		// A tool that fails as an error may say what it printed in the
		// error's details.
		var app *temporal.ApplicationError
		var printed string
		if errors.As(call.Err, &app) && app.HasDetails() && app.Details(&printed) == nil && printed != "" {
			c.Error += "\n" + printed
		}
	}
	c.Input, c.Output, c.Error = redact(input), redact(PayloadText(call.Result)), redact(c.Error)
	// Error first, then input, then output, each to what the call's bytes
	// leave: what failed says most in the fewest bytes.
	left := w.callBytes() - len(c.Call)
	for _, f := range []*string{&c.Error, &c.Input, &c.Output} {
		if len(*f) > max(left, 0) {
			// Clip marks the cut with "…": it counts in the budget.
			*f, c.Cut = Clip(*f, max(left-len("…"), 0)), true
			if left <= len("…") {
				*f = ""
			}
		}
		left -= len(*f)
	}
	t.Content = Window(t.Content, c, w.Calls)
	total := 0
	for _, x := range t.Content {
		total += x.size()
	}
	for total > w.requestBytes() && len(t.Content) > 1 {
		total -= t.Content[0].size()
		t.Content = t.Content[1:]
	}
}

// PayloadText is a payload as text for a content window: its data when
// its encoding is text (JSON, plain), a note of its size when binary or
// still encoded by a codec; "" for none.
func PayloadText(p *commonpb.Payload) string {
	if p == nil {
		return ""
	}
	switch enc := string(p.GetMetadata()[converter.MetadataEncoding]); enc {
	case converter.MetadataEncodingNil:
		return ""
	case converter.MetadataEncodingJSON, converter.MetadataEncodingProtoJSON, "":
		// Go's JSON escapes <, > and & for HTML: a model reads them plain.
		return htmlUnescaper.Replace(strings.ToValidUTF8(string(p.GetData()), ""))
	case converter.MetadataEncodingBinary, converter.MetadataEncodingProto:
		return "[" + enc + ", " + strconv.Itoa(len(p.GetData())) + " bytes]"
	default:
		// A codec's encoding (binary/encrypted, …) the SDK did not undo.
		return "[" + enc + " payload, " + strconv.Itoa(len(p.GetData())) + " bytes: not readable here]"
	}
}

var htmlUnescaper = strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&")

// PayloadsText is an activity's arguments as text: each payload's
// PayloadText, one per line.
func PayloadsText(ps []*commonpb.Payload) string {
	parts := make([]string, 0, len(ps))
	for _, p := range ps {
		if s := PayloadText(p); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, "\n")
}

// secretPatterns are the credentials RedactSecrets removes: provider keys
// and tokens by their shapes, bearer and basic credentials, private key
// blocks, and the value of any key=value or "key": "value" whose key names
// a secret.
var secretPatterns = []*regexp.Regexp{
	regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(-----END [A-Z ]*PRIVATE KEY-----|$)`),
	regexp.MustCompile(`\b(sk|pk|rk)-(proj-|ant-|live-|test-)?[A-Za-z0-9_\-]{16,}`),
	regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`),
	regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{30,}\b`),
	regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{30,}\b`),
	regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9\-]{10,}`),
	regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}\b`),
	regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}`),
	regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{12,}`),
}

// urlPassword is a URL's password: the user stays, the password goes.
var urlPassword = regexp.MustCompile(`(?i)(://[^/\s:@]+:)[^@\s/]+@`)

// secretAssignment is a key that names a secret, then its value.
// A key that counts tokens (input_tokens) names no secret, and a value of
// digits is no secret; the value stops at a JSON escape (\n), so that it
// never runs into the next line of an output.
var secretAssignment = regexp.MustCompile(`(?i)((?:api[_-]?key|secret|token|passw(?:or)?d|pwd|credential|private[_-]?key|access[_-]?key)[A-Za-z0-9_\-]*["']?\s*[:=]\s*["']?)([^\s"',;&\\]{4,})`)

// RedactSecrets is the shipped Redactor: it replaces credentials a
// command or its output may hold with [REDACTED]. It is a safety net, not a
// guarantee: a team that knows its secrets' shapes passes its own
// Redactor as well (Options.ContentRedactor).
func RedactSecrets(s string) string {
	for _, re := range secretPatterns {
		s = re.ReplaceAllLiteralString(s, "[REDACTED]")
	}
	s = urlPassword.ReplaceAllString(s, "${1}[REDACTED]@")
	return secretAssignment.ReplaceAllStringFunc(s, func(m string) string {
		sub := secretAssignment.FindStringSubmatch(m)
		key := strings.TrimRight(strings.ToLower(sub[1]), "\"' \t:=")
		if strings.HasSuffix(key, "tokens") || strings.Trim(sub[2], "0123456789.") == "" {
			return m
		}
		return sub[1] + "[REDACTED]"
	})
}
