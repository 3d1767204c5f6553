package trajectory

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// Bounds of the compact trajectory. They keep its serialized size bounded
// however long the job runs: windows and counts, never full lists.
const (
	MaxObjectiveChars = 2000
	maxNameChars      = 120
	maxRecentPhases   = 8
	maxPhaseCounts    = 24
	maxWorkItems      = 16
	maxToolCategories = 12
	maxLaneSwitches   = 6
	maxPullRequests   = 8
	MaxErrorChars     = 240
	// maxRunToolCategories and maxRunMissingOutputs bound the names one
	// phase run keeps.
	maxRunToolCategories = 4
	maxRunMissingOutputs = 4
)

// Trajectory is the compact, bounded view of a job that the judge sees. It
// is deliberately not a second agent context: no transcript, no diff; a
// bounded window of the latest calls' excerpts only where a team turns it
// on for a model judge (ContentWindow).
//
// The interceptor fills what it observes itself (phase runs, repeats,
// durations, attempts, failures, lane switches); the workflow supplies the
// rest with [SetObjective], [SetLane], [SetWorkItem], [SetPullRequests] and
// through a [PhaseReport] on phase results.
type Trajectory struct {
	Objective string `json:"objective"`
	Phase     string `json:"phase"`
	Lane      string `json:"lane,omitempty"`
	// Shape is what a phase is in this workflow, as the workflow declared
	// it (SetShape): ShapeAgentLoop when each phase is one model or tool
	// call of an agent loop. Empty: not declared (ShapeOf guesses).
	Shape Shape `json:"shape,omitempty"`

	// Totals over the whole job.
	PhaseRuns    int     `json:"phase_runs"`
	FailedPhases int     `json:"failed_phases"`
	Turns        int     `json:"turns"`
	CostUSD      float64 `json:"cost_usd"`
	// InputTokens and OutputTokens total the model tokens the phases
	// reported (prompt and completion, reasoning included).
	InputTokens  int64 `json:"input_tokens,omitempty"`
	OutputTokens int64 `json:"output_tokens,omitempty"`
	// PhaseTime totals the phase runs' own durations: the job's time in
	// its phases, without its time at gates or waiting for the judge
	// between them (a relative budget compares it with the succeeded
	// jobs' own, SpendBudget).
	PhaseTime      time.Duration `json:"phase_time_ns,omitempty"`
	Rework         int           `json:"rework"`
	MissingOutputs int           `json:"missing_outputs"`
	LaneSwitches   int           `json:"lane_switches"`
	// Repeats counts phase runs that re-ran a phase already completed.
	Repeats int `json:"repeats"`
	// FailureStreak counts consecutive failed phase runs up to now.
	FailureStreak int `json:"failure_streak"`
	// Loop counts an agent loop's calls over the whole run (the zero
	// value for any other shape).
	Loop LoopStats `json:"loop,omitzero"`

	// RunsByPhase counts runs per phase name (bounded number of names).
	RunsByPhase []Count `json:"runs_by_phase,omitempty"`
	// RecentPhases is a window of the latest phase runs, oldest first.
	RecentPhases []PhaseRun `json:"recent_phases,omitempty"`
	// WorkItems are the most recently updated work items.
	WorkItems []WorkItem `json:"work_items,omitempty"`
	// FailedToolCategories counts failed tool calls by category.
	FailedToolCategories []Count `json:"failed_tool_categories,omitempty"`
	// RecentLaneSwitches is a window of the latest lane switches.
	RecentLaneSwitches []LaneSwitch `json:"recent_lane_switches,omitempty"`
	OpenPullRequests   []string     `json:"open_pull_requests,omitempty"`
	// Content is the content window, oldest call first: excerpts of the
	// latest calls' inputs, results and errors, for a model judge to read
	// (ContentWindow; empty when the window is off, the default). The
	// learned judge and the rules never read it.
	Content []CallContent `json:"content,omitempty"`
}

// Count is a named counter.
type Count struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

// PhaseRun is one run of a phase as the overseer saw it.
type PhaseRun struct {
	Phase    string        `json:"phase"`
	Lane     string        `json:"lane,omitempty"`
	Failed   bool          `json:"failed,omitempty"`
	Error    string        `json:"error,omitempty"`
	Attempts int32         `json:"attempts,omitempty"`
	Duration time.Duration `json:"duration_ns"`
	Turns    int           `json:"turns,omitempty"`
	CostUSD  float64       `json:"cost_usd,omitempty"`
	// InputTokens and OutputTokens are the model tokens the phase reported.
	InputTokens  int64 `json:"input_tokens,omitempty"`
	OutputTokens int64 `json:"output_tokens,omitempty"`
	Rework       int   `json:"rework,omitempty"`
	// FailedTools counts failed tool calls the phase reported;
	// FailedToolCategories names their categories, each once, in the order
	// reported (at most maxRunToolCategories), so that evidence can say
	// which tool kept failing.
	FailedTools          int      `json:"failed_tools,omitempty"`
	FailedToolCategories []string `json:"failed_tool_categories,omitempty"`
	// Repeat is true when this phase had already completed earlier.
	Repeat bool `json:"repeat,omitempty"`
	// Reviewed is true when a person resumed a gate after this run: what
	// came before it has been seen.
	Reviewed bool `json:"reviewed,omitempty"`
	// SameCall is true when the phase ran with the same input as its
	// previous run: an agent calling the same tool with the same arguments
	// again. Set by the interceptor for inputs the default data converter
	// encodes. SameResult is true when such a call also got the same
	// result as the previous one; NewCall when a tool ran with an input
	// not seen lately (agent loops only).
	SameCall   bool `json:"same_call,omitempty"`
	SameResult bool `json:"same_result,omitempty"`
	NewCall    bool `json:"new_call,omitempty"`
	// NoOutput is true when the phase reported it produced no required
	// output; MissingOutputs names the outputs, when it said which
	// (PhaseReport.MissingOutputs).
	NoOutput       bool     `json:"no_output,omitempty"`
	MissingOutputs []string `json:"missing_outputs,omitempty"`
}

// WorkItem is one unit of work with its status and loop count.
type WorkItem struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Loops  int    `json:"loops,omitempty"`
}

// LaneSwitch records the workflow moving from one lane to another.
type LaneSwitch struct {
	From    string `json:"from"`
	To      string `json:"to"`
	AtPhase string `json:"at_phase,omitempty"`
	// AtRun is the number of phase runs before the switch.
	AtRun int `json:"at_run"`
}

// PhaseReport is what a phase may tell the overseer about itself. Put it in
// the phase activity's result under the JSON key "overseer_report" (embed
// [ReportCarrier] or add the field yourself); the interceptor reads it from
// the result without changing what the workflow receives.
type PhaseReport struct {
	Turns   int     `json:"turns,omitempty"`
	CostUSD float64 `json:"cost_usd,omitempty"`
	// InputTokens and OutputTokens are the model tokens the phase used:
	// prompt tokens, and completion tokens including reasoning. The learned
	// judge reads them; leave them zero when unknown.
	InputTokens  int64 `json:"input_tokens,omitempty"`
	OutputTokens int64 `json:"output_tokens,omitempty"`
	// Rework counts units of earlier work this phase had to redo.
	Rework int `json:"rework,omitempty"`
	// FailedToolCategories lists categories of failed tool calls ("test",
	// "build", "credentials", …), one entry per failure.
	FailedToolCategories []string `json:"failed_tool_categories,omitempty"`
	// OutputMissing is true when the phase did not produce the output its
	// workflow contract requires.
	OutputMissing bool `json:"output_missing,omitempty"`
	// MissingOutputs names the required outputs the phase did not produce
	// ("patch"), for the evidence a reviewer reads; naming one implies
	// OutputMissing.
	MissingOutputs []string `json:"missing_outputs,omitempty"`
	// OpenPullRequests replaces the job's open pull requests when non-nil.
	OpenPullRequests []string `json:"open_pull_requests,omitempty"`
}

// ReportCarrier can be embedded in a phase result to carry a PhaseReport.
type ReportCarrier struct {
	OverseerReport *PhaseReport `json:"overseer_report,omitempty"`
}

// Clip cuts s to at most n bytes, on a rune boundary, and marks the cut
// with "…".
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	cut := n
	for cut > 0 && (s[cut]&0xC0) == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

func bump(counts []Count, name string, by, limit int) []Count {
	name = Clip(name, maxNameChars)
	for i := range counts {
		if counts[i].Name == name {
			counts[i].Count += by
			return counts
		}
	}
	if len(counts) >= limit {
		// Fold new names into one bucket instead of growing.
		return bump(counts, "other", by, limit+1)
	}
	return append(counts, Count{Name: name, Count: by})
}

// CountOf is name's count in counts; 0 when it has none.
func CountOf(counts []Count, name string) int {
	for _, c := range counts {
		if c.Name == name {
			return c.Count
		}
	}
	return 0
}

// Window appends v to s and keeps its last limit elements. A full window
// shifts in place, allocating nothing: every copy kept elsewhere is a deep
// one (Trajectory.clone, run.status).
func Window[T any](s []T, v T, limit int) []T {
	if limit <= 0 {
		return s[:0]
	}
	if len(s) < limit {
		return append(s, v)
	}
	s = s[:copy(s, s[len(s)-limit+1:])]
	return append(s, v)
}

// SetLane records a lane change.
func (t *Trajectory) SetLane(lane string) {
	lane = Clip(lane, maxNameChars)
	if lane == t.Lane {
		return
	}
	if t.Lane != "" {
		t.LaneSwitches++
		t.RecentLaneSwitches = Window(t.RecentLaneSwitches, LaneSwitch{From: t.Lane, To: lane, AtPhase: t.Phase, AtRun: t.PhaseRuns}, maxLaneSwitches)
	}
	t.Lane = lane
}

// SetWorkItem records a work item's status.
func (t *Trajectory) SetWorkItem(id, status string) {
	id, status = Clip(id, maxNameChars), Clip(status, maxNameChars)
	for i, w := range t.WorkItems {
		if w.ID == id {
			if w.Status != status && isReopen(w.Status, status) {
				w.Loops++
			}
			w.Status = status
			// Most recently updated last.
			t.WorkItems = append(append(t.WorkItems[:i:i], t.WorkItems[i+1:]...), w)
			return
		}
	}
	t.WorkItems = Window(t.WorkItems, WorkItem{ID: id, Status: status}, maxWorkItems)
}

// isReopen is true when a work item moves back from a later status to an
// earlier one, which is what a loop looks like.
func isReopen(from, to string) bool {
	rank := func(s string) int {
		switch strings.ToLower(s) {
		case "done", "complete", "completed", "merged":
			return 3
		case "review", "in_review", "testing":
			return 2
		case "in_progress", "doing", "active":
			return 1
		}
		return 0
	}
	return rank(to) < rank(from)
}

// RecordPhase adds one finished phase run.
func (t *Trajectory) RecordPhase(run PhaseRun, report *PhaseReport) {
	run.Phase = Clip(run.Phase, maxNameChars)
	run.Error = Clip(run.Error, MaxErrorChars)
	run.Lane = t.Lane
	t.Phase = run.Phase
	run.Repeat = CountOf(t.RunsByPhase, run.Phase) > 0
	t.RunsByPhase = bump(t.RunsByPhase, run.Phase, 1, maxPhaseCounts)
	t.PhaseRuns++
	t.PhaseTime += max(0, run.Duration)
	if run.Repeat {
		t.Repeats++
	}
	if run.Failed {
		t.FailedPhases++
		t.FailureStreak++
	} else {
		t.FailureStreak = 0
	}
	if report != nil {
		run.Turns, run.CostUSD, run.Rework = report.Turns, report.CostUSD, report.Rework
		run.NoOutput = report.OutputMissing || len(report.MissingOutputs) > 0
		run.InputTokens, run.OutputTokens = max(0, report.InputTokens), max(0, report.OutputTokens)
		run.FailedTools = len(report.FailedToolCategories)
		run.FailedToolCategories = distinctNames(report.FailedToolCategories, maxRunToolCategories)
		run.MissingOutputs = distinctNames(report.MissingOutputs, maxRunMissingOutputs)
		t.Turns += report.Turns
		t.CostUSD += report.CostUSD
		t.InputTokens += run.InputTokens
		t.OutputTokens += run.OutputTokens
		t.Rework += report.Rework
		if run.NoOutput {
			t.MissingOutputs++
		}
		for _, c := range report.FailedToolCategories {
			t.FailedToolCategories = bump(t.FailedToolCategories, c, 1, maxToolCategories)
		}
		if report.OpenPullRequests != nil {
			t.SetPullRequests(report.OpenPullRequests)
		}
	}
	if ShapeOf(*t) == ShapeAgentLoop {
		t.Loop.recordLoop(run)
	}
	t.RecentPhases = Window(t.RecentPhases, run, maxRecentPhases)
}

// distinctNames is names without repeats, clipped, in their first order,
// at most limit of them; nil when there are none.
func distinctNames(names []string, limit int) []string {
	var out []string
	for _, n := range names {
		n = Clip(n, maxNameChars)
		if len(out) < limit && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// MarkReviewed marks phase run number run (1 for the job's first, as
// PhaseRuns counts them) as seen by a person who resumed the job after
// it, if the window still holds it.
func (t *Trajectory) MarkReviewed(run int) {
	if i := len(t.RecentPhases) - 1 - (t.PhaseRuns - run); i >= 0 && i < len(t.RecentPhases) {
		t.RecentPhases[i].Reviewed = true
	}
}

// SetPullRequests replaces the job's open pull requests.
func (t *Trajectory) SetPullRequests(prs []string) {
	t.OpenPullRequests = nil
	for _, pr := range prs {
		t.OpenPullRequests = Window(t.OpenPullRequests, Clip(pr, maxNameChars), maxPullRequests)
	}
}

// Digest is a readable one-paragraph summary of the trajectory, recorded
// with each assessment so a person sees what was evaluated; on an agent
// loop (ShapeOf) it speaks of calls, not phase runs. It runs at every
// boundary, in workflow code: it appends with strconv rather than fmt (the
// same text, %d and %.2f).
func (t Trajectory) Digest() string {
	if ShapeOf(t) == ShapeAgentLoop {
		return t.loopDigest()
	}
	b := make([]byte, 0, 128)
	b = append(b, "phase "...)
	b = append(b, t.Phase...)
	if t.Lane != "" {
		b = append(append(append(b, " (lane "...), t.Lane...), ')')
	}
	b = strconv.AppendInt(append(b, "; "...), int64(t.PhaseRuns), 10)
	b = strconv.AppendInt(append(b, " phase runs, "...), int64(t.Repeats), 10)
	b = strconv.AppendInt(append(b, " repeats, "...), int64(t.FailedPhases), 10)
	b = strconv.AppendInt(append(b, " failed (streak "...), int64(t.FailureStreak), 10)
	b = append(b, ')')
	if t.Turns > 0 || t.CostUSD > 0 {
		b = strconv.AppendInt(append(b, "; "...), int64(t.Turns), 10)
		b = strconv.AppendFloat(append(b, " turns, $"...), t.CostUSD, 'f', 2, 64)
	}
	if t.InputTokens > 0 || t.OutputTokens > 0 {
		b = strconv.AppendInt(append(b, "; tokens "...), t.InputTokens, 10)
		b = append(strconv.AppendInt(append(b, " in, "...), t.OutputTokens, 10), " out"...)
	}
	if t.Rework > 0 {
		b = strconv.AppendInt(append(b, "; rework "...), int64(t.Rework), 10)
	}
	if t.MissingOutputs > 0 {
		b = append(strconv.AppendInt(append(b, "; "...), int64(t.MissingOutputs), 10), " phases without required output"...)
	}
	if t.LaneSwitches > 0 {
		b = append(strconv.AppendInt(append(b, "; "...), int64(t.LaneSwitches), 10), " lane switches"...)
	}
	return string(t.appendDigestTail(b))
}

// loopDigest is Digest on an agent loop, in a loop's words: its calls, the
// tool calls that failed and how, looping and the calls since anything
// new; never phase runs and repeats, which every single-tool loop has.
func (t Trajectory) loopDigest() string {
	s := t.Loop
	b := make([]byte, 0, 160)
	b = append(append(b, "agent loop, last call "...), t.Phase...)
	b = strconv.AppendInt(append(b, "; "...), int64(s.ModelCalls), 10)
	b = append(b, " model calls"...)
	if s.ModelFailures > 0 {
		b = append(strconv.AppendInt(append(b, " ("...), int64(s.ModelFailures), 10), " failed)"...)
	}
	b = strconv.AppendInt(append(b, ", "...), int64(s.ToolCalls), 10)
	b = strconv.AppendInt(append(b, " tool calls, "...), int64(s.ToolFailures), 10)
	b = append(b, " failed"...)
	if s.ReportedFailures > 0 {
		b = append(strconv.AppendInt(append(b, " ("...), int64(s.ReportedFailures), 10), " reported as results)"...)
	}
	if s.FailStreak > 1 {
		b = append(strconv.AppendInt(append(b, ", the last "...), int64(s.FailStreak), 10), " in a row"...)
	}
	if s.Looping > 0 {
		b = append(strconv.AppendInt(append(b, "; "...), int64(s.Looping), 10), " looping (the same call answered the same way)"...)
	}
	if s.SinceNew > 1 {
		b = append(strconv.AppendInt(append(b, "; nothing new for "...), int64(s.SinceNew), 10), " tool calls"...)
	}
	if t.CostUSD > 0 {
		b = strconv.AppendFloat(append(b, "; $"...), t.CostUSD, 'f', 2, 64)
	}
	if t.InputTokens > 0 || t.OutputTokens > 0 {
		b = strconv.AppendInt(append(b, "; tokens "...), t.InputTokens, 10)
		b = append(strconv.AppendInt(append(b, " in, "...), t.OutputTokens, 10), " out"...)
	}
	return string(t.appendDigestTail(b))
}

// appendDigestTail appends what Digest says the same way of either shape:
// the failed tools, the work items and the open pull requests.
func (t Trajectory) appendDigestTail(b []byte) []byte {
	if len(t.FailedToolCategories) > 0 {
		b = append(b, "; failed tools: "...)
		for i, c := range t.FailedToolCategories {
			if i > 0 {
				b = append(b, ", "...)
			}
			b = strconv.AppendInt(append(append(b, c.Name...), "×"...), int64(c.Count), 10)
		}
	}
	if n := len(t.WorkItems); n > 0 {
		loops := 0
		for _, w := range t.WorkItems {
			loops += w.Loops
		}
		b = strconv.AppendInt(append(b, "; "...), int64(n), 10)
		b = append(strconv.AppendInt(append(b, " work items ("...), int64(loops), 10), " loops)"...)
	}
	if n := len(t.OpenPullRequests); n > 0 {
		b = append(strconv.AppendInt(append(b, "; "...), int64(n), 10), " open PRs"...)
	}
	return b
}

// Clone returns a deep copy, so that a local activity (which receives its
// input as a Go value) never shares memory with the workflow's state.
func (t Trajectory) Clone() Trajectory {
	t.RunsByPhase = slices.Clone(t.RunsByPhase)
	// A phase run's own slices (FailedToolCategories, MissingOutputs) are
	// made fresh by recordPhase and never written again: sharing them is safe.
	t.RecentPhases = slices.Clone(t.RecentPhases)
	t.WorkItems = slices.Clone(t.WorkItems)
	t.FailedToolCategories = slices.Clone(t.FailedToolCategories)
	t.RecentLaneSwitches = slices.Clone(t.RecentLaneSwitches)
	t.OpenPullRequests = slices.Clone(t.OpenPullRequests)
	t.Content = slices.Clone(t.Content)
	return t
}
