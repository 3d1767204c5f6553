package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Format is the trajectory format this package reads.
const Format = "mini-swe-agent-1"

// Trace is one recorded agent run.
type Trace struct {
	ID string
	// Task is the problem statement of the first user message.
	Task       string
	ExitStatus string
	Submission string
	CostUSD    float64
	APICalls   int
	// Actions are the assistant turns after the task, in order.
	Actions []Action
	// LastOutput is the text of the last assistant turn.
	LastOutput string
}

// Action is one assistant turn: its command and what came back.
type Action struct {
	// Command is the turn's bash block; empty for a format error.
	Command string
	Class   Class
	// ReturnCode is the observation's return code; 0 when there was none
	// (a format error, or the submission).
	ReturnCode int
	// FormatError is true when the turn did not hold exactly one bash block:
	// nothing ran, the agent was asked again.
	FormatError bool
	// TimedOut is true when the harness killed the command.
	TimedOut bool
	// Output is a digest of the observation the command got back
	// ([Digest]); empty when there was none.
	Output string
	// Printed is an excerpt of that observation ([Excerpt]); Thought one of
	// what the model said beside its command (the whole turn on a format
	// error).
	Printed, Thought string
	At               time.Time
	CostUSD          float64
	// InputTokens and OutputTokens are the turn's prompt and completion
	// (reasoning included) tokens.
	InputTokens, OutputTokens int64
}

// Failed reports whether the action is a failed tool call: a non-zero
// return code, a command killed on timeout, or a turn the agent's harness
// rejected.
func (a Action) Failed() bool { return a.ReturnCode != 0 || a.TimedOut || a.FormatError }

// FailureCategory is the category of a failed action: its class, or
// "format" for a rejected turn.
func (a Action) FailureCategory() string {
	if a.FormatError {
		return "format"
	}
	return string(a.Class)
}

type rawTrace struct {
	Format     string `json:"trajectory_format"`
	InstanceID string `json:"instance_id"`
	Info       struct {
		ExitStatus string `json:"exit_status"`
		Submission string `json:"submission"`
		ModelStats struct {
			InstanceCost float64 `json:"instance_cost"`
			APICalls     int     `json:"api_calls"`
		} `json:"model_stats"`
	} `json:"info"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Extra   *struct {
			Response struct {
				Created int64 `json:"created"`
				Usage   struct {
					Cost             float64 `json:"cost"`
					PromptTokens     int64   `json:"prompt_tokens"`
					CompletionTokens int64   `json:"completion_tokens"`
				} `json:"usage"`
			} `json:"response"`
		} `json:"extra"`
	} `json:"messages"`
}

var (
	// The action regex of mini-swe-agent: a turn must hold exactly one.
	bashBlock  = regexp.MustCompile("(?s)```bash\\s*\\n(.*?)\\n```")
	returnCode = regexp.MustCompile(`^\s*<returncode>(-?\d+)</returncode>`)
	timedOut   = regexp.MustCompile(`^\s*The last command <command>(?s:.*?)</command> timed out`)
	prStart    = "Consider the following PR description:"
)

// LoadTrace reads one trajectory file.
func LoadTrace(path string) (*Trace, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	tr, err := ParseTrace(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	if tr.ID == "" {
		tr.ID = strings.TrimSuffix(filepath.Base(path), ".traj.json")
	}
	return tr, nil
}

// ParseTrace parses a trajectory in the mini-swe-agent-1 format: a system
// message, the task as the first user message, then assistant turns each
// followed by a user turn with the observation.
func ParseTrace(data []byte) (*Trace, error) {
	var raw rawTrace
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("not a trajectory: %w", err)
	}
	if raw.Format != "" && raw.Format != Format {
		return nil, fmt.Errorf("trajectory format %q, want %q", raw.Format, Format)
	}
	tr := &Trace{ID: raw.InstanceID, ExitStatus: raw.Info.ExitStatus, Submission: raw.Info.Submission,
		CostUSD: raw.Info.ModelStats.InstanceCost, APICalls: raw.Info.ModelStats.APICalls}
	texts := make([]string, len(raw.Messages))
	for i, m := range raw.Messages {
		if err := json.Unmarshal(m.Content, &texts[i]); err != nil {
			return nil, fmt.Errorf("message %d: content is not text", i)
		}
	}
	var cls Classifier
	taskSeen := false
	for i, m := range raw.Messages {
		switch m.Role {
		case "user":
			if !taskSeen {
				tr.Task, taskSeen = problemStatement(texts[i]), true
			}
		case "assistant":
			if !taskSeen {
				return nil, fmt.Errorf("message %d: an assistant turn before the task", i)
			}
			a := Action{}
			if m.Extra != nil {
				if c := m.Extra.Response.Created; c > 0 {
					a.At = time.Unix(c, 0).UTC()
				}
				a.CostUSD = m.Extra.Response.Usage.Cost
				a.InputTokens = m.Extra.Response.Usage.PromptTokens
				a.OutputTokens = m.Extra.Response.Usage.CompletionTokens
			}
			blocks := bashBlock.FindAllStringSubmatch(texts[i], -1)
			if len(blocks) == 1 {
				a.Command = strings.TrimSpace(blocks[0][1])
				a.Class = cls.Classify(a.Command)
				a.Thought = stepText(bashBlock.ReplaceAllString(texts[i], ""))
			} else {
				a.FormatError = true
				a.Thought = stepText(texts[i])
			}
			if i+1 < len(raw.Messages) && raw.Messages[i+1].Role == "user" {
				next := texts[i+1]
				a.Output, a.Printed = Digest(next), stepText(next)
				if mm := returnCode.FindStringSubmatch(next); mm != nil && !a.FormatError {
					a.ReturnCode, _ = strconv.Atoi(mm[1])
				} else if !a.FormatError && timedOut.MatchString(next) {
					a.TimedOut = true
				}
			}
			tr.Actions = append(tr.Actions, a)
			tr.LastOutput = texts[i]
		}
	}
	if !taskSeen {
		return nil, errors.New("no task (first user message)")
	}
	if len(tr.Actions) == 0 {
		return nil, errors.New("no assistant turns")
	}
	return tr, nil
}

// problemStatement extracts the PR description from mini-swe-agent's task
// message, or returns the message when it has no such section.
func problemStatement(msg string) string {
	s := msg
	if _, after, ok := strings.Cut(s, "<pr_description>"); ok {
		s = after
		if before, _, ok := strings.Cut(s, "</pr_description>"); ok {
			s = before
		}
	}
	s = strings.TrimSpace(s)
	s = strings.TrimSpace(strings.TrimPrefix(s, prStart))
	return s
}

// LoadLabels reads labels.json: instance id → resolved.
func LoadLabels(path string) (map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var labels map[string]bool
	if err := json.Unmarshal(data, &labels); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return labels, nil
}

// TracePaths lists the trajectory files of a data directory (its trajs/
// folder), sorted by name.
func TracePaths(dir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "trajs", "*.traj.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	return paths, nil
}
