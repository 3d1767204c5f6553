package trajectory

import (
	"hash/fnv"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

// ActivityCall is one finished activity as the plugin observes it at a
// phase boundary: what the interceptor sees of a live workflow's activity,
// and what `overseer eval` rebuilds from a recorded run, so that both record
// it through one piece of code ([TrajectoryRecorder.RecordCall]).
type ActivityCall struct {
	// Phase is the phase's name: the activity type after its last ".".
	Phase    string
	Duration time.Duration
	// Err is the activity's error; nil when it completed.
	Err error
	// Args are the activity's arguments, as the workflow passed them; nil
	// when unknown. In an agent loop they tell a call made again with the
	// same input (PhaseRun.SameCall).
	Args []any
	// Result is the activity's result as its worker encoded it; nil when
	// it returned nothing or failed. In an agent loop it tells a call that
	// answered as its previous one did (PhaseRun.SameResult).
	Result *commonpb.Payload
	// Report is what the result reported about the phase
	// ([ReportCarrier]); nil when it reported nothing.
	Report *PhaseReport
	// Input is the activity's input as the worker's data converter
	// encodes it, the codec undone (for a content window); nil when not
	// known, and then Args stand for it.
	Input []*commonpb.Payload
}

// CallTracker remembers, for an agent loop, each phase's latest input and
// result and the inputs seen lately, so that a call is known as the same
// call, with the same result, or a new one. It lives in the run's memory
// (or the recorder's), never in history.
type CallTracker struct {
	last map[string]callKeys
	// seen are the latest inputs of tool calls, oldest first.
	seen []uint64
}

type callKeys struct{ call, result uint64 }

// maxSeenCalls bounds the inputs a tracker remembers for NewCall.
const maxSeenCalls = 256

// PhaseRun is the phase run the plugin records for call in trajectory t:
// the name, duration, failure and error it observed, and, in an agent
// loop (or at a model call, which makes one), whether the call repeats its
// phase's previous input and result. Inputs and results are hashed only
// there, so that no other run pays for it at its boundaries.
func (c *CallTracker) PhaseRun(t Trajectory, call ActivityCall) PhaseRun {
	pr := PhaseRun{Phase: call.Phase, Duration: call.Duration, Failed: call.Err != nil}
	if call.Err != nil {
		pr.Error = DescribeError(call.Err)
	}
	if call.Args == nil || (ShapeOf(t) != ShapeAgentLoop && (t.Shape != "" || !IsModelCall(call.Phase))) {
		return pr
	}
	key := callKeyOf(call.Args)
	if key == 0 {
		return pr
	}
	res := resultKeyOf(call.Result)
	if c.last == nil {
		c.last = map[string]callKeys{}
	}
	prev, had := c.last[call.Phase]
	pr.SameCall = had && prev.call == key
	pr.SameResult = pr.SameCall && res != 0 && prev.result == res
	c.last[call.Phase] = callKeys{call: key, result: res}
	if !IsModelCall(call.Phase) {
		pr.NewCall = true
		for _, s := range c.seen {
			if s == key {
				pr.NewCall = false
				break
			}
		}
		if pr.NewCall {
			c.seen = Window(c.seen, key, maxSeenCalls)
		}
	}
	return pr
}

// resultKeyOf identifies a result as its worker encoded it; 0 when there
// is none. A codec that encrypts with a fresh nonce makes every result
// look new: such a loop is never taken for one answering the same way.
func resultKeyOf(p *commonpb.Payload) uint64 {
	if p == nil {
		return 0
	}
	h := fnv.New64a()
	_, _ = h.Write(p.GetData())
	return h.Sum64() | 1
}

// RecordCall adds one finished activity, as the interceptor does at a
// phase boundary (see [ActivityCall]), and its excerpt to the content
// window, if one is set (SetContentWindow): its input is call.Input when
// set, else its Args as the default data converter encodes them.
func (r *TrajectoryRecorder) RecordCall(call ActivityCall) {
	r.t.RecordPhase(r.calls.PhaseRun(r.t, call), call.Report)
	if r.window.On() {
		r.t.RecordContent(r.window, call, InputText(call, nil), r.redact)
	}
}

// InputText is call's input as a content window shows it: call.Input when
// set, else its Args encoded with encode (the default data converter when
// nil), each as PayloadText.
func InputText(call ActivityCall, encode converter.DataConverter) string {
	if call.Input != nil {
		return PayloadsText(call.Input)
	}
	if len(call.Args) == 0 {
		return ""
	}
	if encode == nil {
		encode = converter.GetDefaultDataConverter()
	}
	ps, err := encode.ToPayloads(call.Args...)
	if err != nil {
		return "[input not encodable: " + Clip(err.Error(), 120) + "]"
	}
	return PayloadsText(ps.GetPayloads())
}

// LoopStats are an agent loop's counts over the whole run so far, which
// the loop judge reads: the recent window alone cannot tell a run that
// keeps failing from one that failed a while.
type LoopStats struct {
	ModelCalls int `json:"model_calls"`
	ToolCalls  int `json:"tool_calls"`
	// ModelFailures are model calls that failed (the agent's own format
	// errors among them); ToolFailures are tool calls that failed, as
	// activities or as results that reported a failed tool call
	// (PhaseReport.FailedToolCategories), ReportedFailures the latter.
	ModelFailures    int `json:"model_failures,omitempty"`
	ToolFailures     int `json:"tool_failures,omitempty"`
	ReportedFailures int `json:"reported_failures,omitempty"`
	// FailStreak is the tool calls in a row that failed, up to now;
	// MaxFailStreak the longest such run.
	FailStreak    int `json:"fail_streak,omitempty"`
	MaxFailStreak int `json:"max_fail_streak,omitempty"`
	// SameErrorStreak is how many times in a row the latest failing tool
	// failed with the same error; LastError is that error (clipped).
	SameErrorStreak int    `json:"same_error_streak,omitempty"`
	LastError       string `json:"last_error,omitempty"`
	// Looping counts tool calls made with the same input as the tool's
	// previous call that got the same result: an agent going in a circle.
	// A call repeated with a new result (a status check, a test run after
	// an edit) is not looping. LoopStreak is the latest run of them.
	Looping    int `json:"looping,omitempty"`
	LoopStreak int `json:"loop_streak,omitempty"`
	// SinceNew is the tool calls since the last new thing: a command not
	// seen lately, or a tool succeeding after it failed.
	SinceNew int `json:"since_new,omitempty"`
}

// recordLoop counts run in the loop's statistics (recordPhase has set
// run's report fields).
func (s *LoopStats) recordLoop(run PhaseRun) {
	failed := run.CallFailed()
	if IsModelCall(run.Phase) {
		s.ModelCalls++
		if failed {
			s.ModelFailures++
		}
		return
	}
	s.ToolCalls++
	errText := run.Error
	if errText == "" && run.FailedTools > 0 {
		errText = run.Phase + " reported a failed " + run.FailedToolCategories[0]
	}
	// Something new: a command not seen lately, or a success after failures.
	progress := run.NewCall || (!failed && s.FailStreak > 0)
	if failed {
		s.ToolFailures++
		if !run.Failed {
			s.ReportedFailures++
		}
		s.FailStreak++
		s.MaxFailStreak = max(s.MaxFailStreak, s.FailStreak)
		if errText != "" && Clip(errText, MaxErrorChars) == s.LastError {
			s.SameErrorStreak++
		} else {
			s.SameErrorStreak = 1
		}
		s.LastError = Clip(errText, MaxErrorChars)
	} else {
		s.FailStreak, s.SameErrorStreak, s.LastError = 0, 0, ""
	}
	if run.SameResult {
		s.Looping++
		s.LoopStreak++
	} else {
		s.LoopStreak = 0
	}
	if progress {
		s.SinceNew = 0
	} else {
		s.SinceNew++
	}
}

// CallFailed says the call failed: its activity did, or its result
// reported a failed tool call (PhaseReport.FailedToolCategories).
func (r PhaseRun) CallFailed() bool { return r.Failed || r.FailedTools > 0 }
