package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// ImportOpenAIChat converts OpenAI chat-completions message logs with tool
// calls to step-unit records. The input is a .json file (one run), a
// .jsonl file (one run per line), or a directory: its .json and .jsonl
// files, those of its subdirectories and those two levels down (as in
// OpenHands' trajs/<instance_id>/<model>-<time>.json); labels.json and
// mini-swe-agent's *.traj.json are not logs. The runs of .json logs come
// in order of id, then those of .jsonl lines in file and line order.
//
// A log is a JSON object with a messages array: system and user messages,
// assistant messages whose tool_calls (id, function name and arguments, a
// JSON string or object) are the agent's actions, and role "tool" replies
// that answer one call each by tool_call_id. An OpenHands LLM completion
// log has the conversation twice: messages, with the tool calls inline as
// text, and fncall_messages, with native tool calls; the one that has tool
// calls is read (fncall_messages first). A log of one LLM call (with a
// response or fncall_response beside its messages) adds the reply,
// choices[0].message, as the last assistant message.
//
// The run's id: the log's instance_id; else, for a log of one LLM call
// (OpenHands writes one per call under <instance_id>/), the name of its
// directory; else the file's name without .json. A .jsonl line's id is its
// instance_id or id, and a line with neither is an error. Of several .json
// logs with one run id, the longest conversation is the run (on a tie, the
// latest timestamp, then the last by name): OpenHands' last call holds the
// whole run. The outcome comes from a labels.json (run id → true when
// resolved): the first one beside the file or above it, up to the
// directory given (its root) or, for a file given, two levels up; without
// one, from the published results of its evaluation over the same folders,
// as for SWE-agent runs ([ImportSWEAgent]). A run without a label is an
// error naming the run and the labels file: label it or remove it. So is
// a log without any tool call. In a directory, a JSON file (or a .jsonl
// file whose first line is JSON) without a messages array is not a log and
// is skipped, as the results.json of a published evaluation is.
//
// Each tool call is a step, classified as the SWE-agent importer does
// ([ImportSWEAgent]):
//
//   - phase: a shell tool's command (execute_bash, bash, shell, … with a
//     command argument) is classified by a [Classifier]; an editor tool
//     (str_replace_editor and its kin) is read for view, edit — or
//     reproduce for a scratch file — for create, str_replace, insert and
//     undo_edit; finish, submit and the like are submit; other tools are
//     classified by their name (test, edit/write/create/replace/patch/insert,
//     else read). The repository's directory, when the task names it
//     (OpenHands' <uploaded_files>), is read as the repository's top;
//   - failed: when the tool's reply shows that it failed. An exit code in
//     it decides alone ("[Command finished with exit code N]",
//     "<returncode>N</returncode>", "exit code: N"): failed when not 0.
//     Without one, the reply is failed when it starts with "ERROR" or
//     "Error" or "Usage:", has a Python traceback, says "command not
//     found", "No such file or directory", "No replacement was performed",
//     "timed out", that the command has had no new output for a while or was
//     not executed (OpenHands), or has a pytest summary with failed tests
//     (for a test). A call without a reply, such as the final one, has not
//     failed;
//   - an assistant message without a tool call that the user answers (as
//     OpenHands does, "Please continue working on the task …") is a failed
//     step with no phase, of category "format", like a turn mini-swe-agent
//     rejected; the last message of a log, when it is an assistant's
//     answer without a tool call, is the submit step (its output missing
//     when it is empty);
//   - texts, for a model judge's content window: excerpts of the call (a
//     shell tool's command, else the tool's name and arguments: Command),
//     of the tool's reply (Printed) and of the assistant message's text,
//     on its first call (Message); a step is known by its Text, with no
//     call digest;
//   - tokens and cost: an assistant message's usage (prompt_tokens,
//     completion_tokens) and cost, split over its tool calls; else the
//     log's own usage and cost (totals), spread evenly over the steps. A
//     reply's usage is that one call's and is not read. OpenHands' logs
//     carry neither; no log has durations.
func ImportOpenAIChat(p string) ([]Record, error) {
	return importOpenAIChat(p, &Source{})
}

func importOpenAIChat(p string, src *Source) ([]Record, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("runs: %w", err)
	}
	paths := []string{p}
	if fi.IsDir() {
		paths = chatLogPaths(p)
	}
	labels := newLabelFinder(p, fi.IsDir(), src)
	type run struct {
		rec       Record
		file      string
		messages  int
		timestamp float64
	}
	var lines []run
	byID := map[string]*run{}
	var ids []string
	for _, fp := range paths {
		if isJSONL(fp) {
			if first, ok := firstFileLine(fp); fi.IsDir() && ok && json.Valid(first) && !isChatData(first) {
				continue
			}
			recs, err := readChatLines(fp)
			if err != nil {
				return nil, err
			}
			src.use(fp)
			for _, r := range recs {
				lines = append(lines, run{rec: r, file: fp})
			}
			continue
		}
		data, err := os.ReadFile(fp)
		if err != nil {
			return nil, fmt.Errorf("runs: %w", err)
		}
		if fi.IsDir() && json.Valid(data) && !isChatData(data) {
			continue
		}
		src.use(fp)
		var log chatLog
		if err := json.Unmarshal(data, &log); err != nil {
			return nil, fmt.Errorf("%s: %w: not a chat log: %v", relPath(filepath.Dir(p), fp), ErrInvalidRecord, err)
		}
		id := log.InstanceID
		if id == "" && log.oneCall() {
			id = filepath.Base(filepath.Dir(fp))
		} else if id == "" {
			id = strings.TrimSuffix(filepath.Base(fp), filepath.Ext(fp))
		}
		rec, err := parseChatLog(id, &log)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", relPath(filepath.Dir(p), fp), err)
		}
		r := run{rec: rec, file: fp, messages: len(log.conversation()), timestamp: log.Timestamp}
		if old, ok := byID[id]; ok {
			if r.messages > old.messages || r.messages == old.messages && r.timestamp >= old.timestamp {
				*old = r
			}
			continue
		}
		byID[id] = &r
		ids = append(ids, id)
	}
	out := make([]Record, 0, len(ids)+len(lines))
	add := func(r run) error {
		resolved, err := labels.outcome(r.file, r.rec.ID)
		if errors.Is(err, ErrNoLabels) {
			n := len(ids) + len(lines)
			return fmt.Errorf("chat runs: %d %s but %w", n, plural(n, "run", "runs"), err)
		}
		if err != nil {
			return fmt.Errorf("chat runs: %w", err)
		}
		if resolved {
			r.rec.Outcome = OutcomeSucceeded
		}
		out = append(out, r.rec)
		return nil
	}
	sort.Strings(ids)
	for _, id := range ids {
		if err := add(*byID[id]); err != nil {
			return nil, err
		}
	}
	for _, r := range lines {
		if err := add(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

type chatLog struct {
	InstanceID     string          `json:"instance_id"`
	ID             json.RawMessage `json:"id"`
	Messages       []chatMessage   `json:"messages"`
	FncallMessages []chatMessage   `json:"fncall_messages"`
	Response       *chatResponse   `json:"response"`
	FncallResponse *chatResponse   `json:"fncall_response"`
	Usage          *chatUsage      `json:"usage"`
	Cost           float64         `json:"cost"`
	Timestamp      float64         `json:"timestamp"`
}

type chatResponse struct {
	Choices []struct {
		Message chatMessage `json:"message"`
	} `json:"choices"`
}

type chatUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

type chatMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []chatToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	Usage      *chatUsage      `json:"usage"`
	Cost       float64         `json:"cost"`
}

type chatToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// oneCall reports whether the log is of one LLM call: its messages and the
// model's reply.
func (l *chatLog) oneCall() bool { return l.Response != nil || l.FncallResponse != nil }

// conversation is the messages with tool calls (fncall_messages first),
// the reply of a one-call log appended.
func (l *chatLog) conversation() []chatMessage {
	msgs, resp := l.FncallMessages, l.FncallResponse
	if !hasToolCalls(msgs, resp) {
		msgs, resp = l.Messages, l.Response
	}
	if resp != nil && len(resp.Choices) > 0 {
		msgs = append(msgs[:len(msgs):len(msgs)], resp.Choices[0].Message)
	}
	return msgs
}

func hasToolCalls(msgs []chatMessage, resp *chatResponse) bool {
	for _, m := range msgs {
		if len(m.ToolCalls) > 0 {
			return true
		}
	}
	return resp != nil && len(resp.Choices) > 0 && len(resp.Choices[0].Message.ToolCalls) > 0
}

// text is a message's content: a string, or the text of its parts.
func (m chatMessage) text() string {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(m.Content, &parts) == nil {
		texts := make([]string, 0, len(parts))
		for _, p := range parts {
			texts = append(texts, p.Text)
		}
		return strings.Join(texts, "\n")
	}
	return ""
}

var (
	uploadedFiles = regexp.MustCompile(`<uploaded_files>\s*(\S+?)/?\s*</uploaded_files>`)
	issueText     = regexp.MustCompile(`(?s)<issue_description>\s*(.*?)\s*</issue_description>`)
)

// ParseOpenAIChat converts one chat log, a JSON object (see
// [ImportOpenAIChat]), to a record of the given outcome.
func ParseOpenAIChat(id string, data []byte, resolved bool) (Record, error) {
	var log chatLog
	if err := json.Unmarshal(data, &log); err != nil {
		return Record{}, fmt.Errorf("%w: not a chat log: %v", ErrInvalidRecord, err)
	}
	rec, err := parseChatLog(id, &log)
	if err == nil && resolved {
		rec.Outcome = OutcomeSucceeded
	}
	return rec, err
}

// parseChatLog converts one chat log to a record of outcome failed.
func parseChatLog(id string, log *chatLog) (Record, error) {
	msgs := log.conversation()
	if !hasToolCalls(msgs, nil) {
		return Record{}, fmt.Errorf("%w: run %q has no tool calls (assistant messages with tool_calls)", ErrInvalidRecord, id)
	}
	agent := "openai-chat"
	if log.FncallMessages != nil {
		agent = "openhands"
	}
	rec := Record{Format: RecordFormat, ID: id, Outcome: OutcomeFailed, Agent: agent, Unit: UnitStep, Task: Task{Family: FamilyOf(id)}}
	replies := map[string]string{}
	repo := ""
	for _, m := range msgs {
		switch m.Role {
		case "tool":
			replies[m.ToolCallID] = m.text()
		case "user":
			if rec.Task.Objective == "" {
				task := m.text()
				if u := uploadedFiles.FindStringSubmatch(task); u != nil {
					repo = u[1]
				}
				if is := issueText.FindStringSubmatch(task); is != nil {
					task = is[1]
				}
				rec.Task.Objective = clipText(strings.TrimSpace(task), 2000)
			}
		}
	}
	var cls Classifier
	perMessage := false
	for i, m := range msgs {
		if m.Role != "assistant" {
			continue
		}
		var in, out []int64
		cost := 0.0
		if n := max(1, len(m.ToolCalls)); m.Usage != nil || m.Cost > 0 {
			perMessage = true
			if m.Usage != nil {
				in, out = spread(m.Usage.PromptTokens, n), spread(m.Usage.CompletionTokens, n)
			}
			cost = m.Cost / float64(n)
		}
		if len(m.ToolCalls) == 0 {
			last := i == len(msgs)-1
			if !last && msgs[i+1].Role != "user" {
				continue // a thought before the next assistant message
			}
			st := Step{Phase: "", Failed: true, FailureCategory: "format", Text: clipText(firstLine(strings.TrimSpace(m.text())), 200), CostUSD: cost,
				Message: stepText(m.text())}
			if last {
				st = Step{Phase: string(Submit), Text: st.Text, CostUSD: cost, OutputMissing: strings.TrimSpace(m.text()) == "", Message: st.Message}
			}
			if in != nil {
				st.InputTokens, st.OutputTokens = in[0], out[0]
			}
			rec.Steps = append(rec.Steps, st)
			continue
		}
		for j, tc := range m.ToolCalls {
			args := chatArgs(tc.Function.Arguments)
			class, text := chatClass(&cls, tc.Function.Name, args, repo)
			st := Step{Phase: string(class), Text: clipText(text, 200), CostUSD: cost, Command: stepText(chatCommand(tc.Function.Name, args))}
			if j == 0 {
				st.Message = stepText(m.text()) // said once for all its calls
			}
			if reply, ok := replies[tc.ID]; ok && tc.ID != "" {
				st.Failed = chatFailed(class, reply)
				st.Printed = stepText(reply)
			}
			if in != nil {
				st.InputTokens, st.OutputTokens = in[j], out[j]
			}
			rec.Steps = append(rec.Steps, st)
		}
	}
	if !perMessage {
		n := len(rec.Steps)
		var in, out []int64
		if log.Usage != nil {
			in, out = spread(log.Usage.PromptTokens, n), spread(log.Usage.CompletionTokens, n)
		}
		for i := range rec.Steps {
			if in != nil {
				rec.Steps[i].InputTokens, rec.Steps[i].OutputTokens = in[i], out[i]
			}
			if log.Cost > 0 {
				rec.Steps[i].CostUSD = log.Cost / float64(n)
			}
		}
	}
	return rec, nil
}

// chatArgs decodes a tool call's arguments: a JSON string holding an
// object, or an object. Arguments that do not decode are none.
func chatArgs(raw json.RawMessage) map[string]any {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		raw = json.RawMessage(s)
	}
	var args map[string]any
	_ = json.Unmarshal(raw, &args)
	return args
}

var (
	shellTools  = map[string]bool{"execute_bash": true, "bash": true, "shell": true, "run_shell_command": true, "run_command": true, "execute_command": true, "terminal": true, "run": true, "exec": true, "cmd_run": true}
	editorTools = map[string]bool{"str_replace_editor": true, "str_replace_based_edit_tool": true, "text_editor": true, "file_editor": true, "editor": true, "edit_file": true}
	submitTools = map[string]bool{"finish": true, "submit": true, "done": true, "task_complete": true, "attempt_completion": true, "complete_task": true}
	nameTest    = regexp.MustCompile(`(?i)test`)
	nameEdit    = regexp.MustCompile(`(?i)edit|write|create|replace|patch|insert|apply|delete|remove|move|rename`)
)

// chatClass is the class of one tool call, and its text.
func chatClass(cls *Classifier, name string, args map[string]any, repo string) (Class, string) {
	str := func(keys ...string) string {
		for _, k := range keys {
			if s, ok := args[k].(string); ok {
				return s
			}
		}
		return ""
	}
	atTop := func(s string) string {
		if repo == "" || repo == "/" {
			return s
		}
		return strings.ReplaceAll(s, repo, "/testbed")
	}
	switch lower := strings.ToLower(name); {
	case shellTools[lower]:
		cmd := str("command", "cmd", "script", "code")
		return cls.Classify(atTop(cmd)), firstLine(strings.TrimSpace(cmd))
	case editorTools[lower]:
		sub, file := str("command"), str("path", "file", "file_path")
		text := strings.TrimSpace(name + " " + sub + " " + file)
		switch sub {
		case "view", "":
			return Read, text
		case "create", "str_replace", "insert", "undo_edit", "write", "edit":
			if file == "" {
				return Edit, text
			}
			return fileClass(atTop(file), "/testbed"), text
		}
		return Read, text
	case submitTools[lower]:
		return Submit, name
	}
	text := name
	if len(args) > 0 {
		b, _ := json.Marshal(args)
		text += " " + string(b)
	}
	text = firstLine(text)
	switch {
	case nameTest.MatchString(name):
		return Test, text
	case nameEdit.MatchString(name):
		if file := str("path", "file", "file_path"); file != "" {
			return fileClass(atTop(file), "/testbed"), text
		}
		return Edit, text
	}
	return Read, text
}

// chatCommand is a tool call as text: a shell tool's command, or the
// tool's name and its arguments as JSON.
func chatCommand(name string, args map[string]any) string {
	if shellTools[strings.ToLower(name)] {
		for _, k := range []string{"command", "cmd", "script", "code"} {
			if s, ok := args[k].(string); ok {
				return s
			}
		}
	}
	if len(args) == 0 {
		return name
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(args)
	return name + " " + strings.TrimSpace(b.String())
}

var (
	exitCodeText  = regexp.MustCompile(`(?i)\[Command finished with exit code (-?\d+)\]|<returncode>(-?\d+)</returncode>|\bexit(?:ed with)? (?:code|status)[:=]? ?(-?\d+)`)
	chatErrorText = []string{"has no new output after", "is NOT executed", "timed out"}
)

// chatFailed is the failure rule of ImportOpenAIChat for a tool's reply.
func chatFailed(class Class, reply string) bool {
	if m := exitCodeText.FindAllStringSubmatch(reply, -1); len(m) > 0 {
		last := m[len(m)-1]
		code := last[1] + last[2] + last[3]
		n, err := strconv.Atoi(code)
		return err != nil || n != 0
	}
	obs := strings.TrimSpace(reply)
	if strings.HasPrefix(obs, "ERROR") {
		return true
	}
	for _, s := range chatErrorText {
		if strings.Contains(obs, s) {
			return true
		}
	}
	return sweFailed(class, obs)
}

// chatLogPaths lists the chat logs of a directory: its .json and .jsonl
// files and those one and two levels down, in name order.
func chatLogPaths(dir string) []string {
	var out []string
	for _, pattern := range []string{"*.json", "*.jsonl", "*.ndjson", "*/*.json", "*/*.jsonl", "*/*.ndjson", "*/*/*.json"} {
		m, _ := filepath.Glob(filepath.Join(dir, filepath.FromSlash(pattern)))
		for _, p := range m {
			if base := filepath.Base(p); base != "labels.json" && !strings.HasSuffix(base, ".traj.json") {
				out = append(out, p)
			}
		}
	}
	sort.Strings(out)
	return out
}

// firstChatLog is the first chat log of a directory (see
// [DetectFormat]), or "" when none of the first files is one.
func firstChatLog(dir string) string {
	for i, p := range chatLogPaths(dir) {
		if i == 20 {
			break
		}
		if isChatLog(p) {
			return p
		}
	}
	return ""
}

func isJSONL(p string) bool {
	ext := strings.ToLower(filepath.Ext(p))
	return ext == ".jsonl" || ext == ".ndjson"
}

// isChatLog reports whether a .json file, or the first line of a .jsonl
// file, is an object with a messages or fncall_messages array.
func isChatLog(p string) bool {
	if isJSONL(p) {
		line, ok := firstFileLine(p)
		return ok && isChatData(line)
	}
	data, err := os.ReadFile(p)
	return err == nil && isChatData(data)
}

// firstFileLine is the first non-blank line of a file.
func firstFileLine(p string) ([]byte, bool) {
	f, err := os.Open(p)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			return line, true
		}
		if err != nil {
			return nil, false
		}
	}
}

// isChatData reports whether data is an object with a messages or
// fncall_messages array.
func isChatData(data []byte) bool {
	var probe struct {
		Messages       json.RawMessage `json:"messages"`
		FncallMessages json.RawMessage `json:"fncall_messages"`
	}
	if json.Unmarshal(data, &probe) != nil {
		return false
	}
	isArray := func(raw json.RawMessage) bool { return len(bytes.TrimSpace(raw)) > 0 && bytes.TrimSpace(raw)[0] == '[' }
	return isArray(probe.Messages) || isArray(probe.FncallMessages)
}

// readChatLines reads a .jsonl file of chat logs, one run per line; a
// line's id is its instance_id or id.
func readChatLines(p string) ([]Record, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("runs: %w", err)
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var out []Record
	for n := 1; ; n++ {
		line, rerr := r.ReadBytes('\n')
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return nil, fmt.Errorf("%s: %w", filepath.Base(p), rerr)
		}
		if len(bytes.TrimSpace(line)) > 0 {
			var log chatLog
			if err := json.Unmarshal(line, &log); err != nil {
				return nil, fmt.Errorf("%s line %d: %w: not a chat log: %v", filepath.Base(p), n, ErrInvalidRecord, err)
			}
			id := log.InstanceID
			if id == "" {
				var s string
				if json.Unmarshal(log.ID, &s) == nil {
					id = s
				} else if len(log.ID) > 0 && string(log.ID) != "null" {
					id = string(log.ID)
				}
			}
			if strings.TrimSpace(id) == "" {
				return nil, fmt.Errorf("%s line %d: %w: the run has no id: give it an instance_id or id", filepath.Base(p), n, ErrInvalidRecord)
			}
			rec, err := parseChatLog(id, &log)
			if err != nil {
				return nil, fmt.Errorf("%s line %d: %w", filepath.Base(p), n, err)
			}
			out = append(out, rec)
		}
		if rerr != nil {
			return out, nil
		}
	}
}
