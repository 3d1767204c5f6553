package judge

import (
	"math"
	"slices"
	"strings"

	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// PhaseKind is what a phase does, read from its name. The learned judge's
// features count edits and verifications by kind, so that phases named by
// different agents ("code", "edit"; "test", "verify") mean the same.
type PhaseKind string

// The phase kinds.
const (
	PhaseKindOther  PhaseKind = "other"
	PhaseKindEdit   PhaseKind = "edit"
	PhaseKindVerify PhaseKind = "verify"
)

// PhaseKindOf maps a phase name to its kind, case-insensitively: a name
// that is or starts with edit, code, implement, fix or patch is an edit; one
// that is or starts with test, verify, check or validate is a verification;
// anything else is other.
func PhaseKindOf(phase string) PhaseKind {
	p := strings.ToLower(strings.TrimSpace(phase))
	for _, prefix := range []string{"edit", "code", "implement", "fix", "patch"} {
		if strings.HasPrefix(p, prefix) {
			return PhaseKindEdit
		}
	}
	for _, prefix := range []string{"test", "verify", "check", "validate"} {
		if strings.HasPrefix(p, prefix) {
			return PhaseKindVerify
		}
	}
	return PhaseKindOther
}

// A feature is one number the learned judge reads from a trajectory. ok is
// false when the trajectory does not carry what the feature needs (no token
// counts, no cost): the judge then uses the training mean, so a model still
// answers for agents that report less.
type feature func(t trajectory.Trajectory) (v float64, ok bool)

// features are the learned judge's inputs, by the names model files use.
// Every one is computed from the bounded trajectory alone — what the plugin
// sends at a boundary — so that training on recorded runs and judging live
// jobs see the same numbers.
var features = map[string]feature{
	// Size of the run so far.
	"log_steps":      func(t trajectory.Trajectory) (float64, bool) { return math.Log1p(float64(steps(t))), true },
	"log_phase_runs": func(t trajectory.Trajectory) (float64, bool) { return math.Log1p(float64(t.PhaseRuns)), true },
	"log_cost_cents": func(t trajectory.Trajectory) (float64, bool) {
		return math.Log1p(100 * t.CostUSD), t.CostUSD > 0
	},
	// Tokens: the context the agent carries and the reasoning it spends.
	"log_input_tokens": func(t trajectory.Trajectory) (float64, bool) {
		return math.Log1p(float64(t.InputTokens)), t.InputTokens > 0
	},
	"log_output_tokens": func(t trajectory.Trajectory) (float64, bool) {
		return math.Log1p(float64(t.OutputTokens)), t.OutputTokens > 0
	},
	"log_input_tokens_per_step": func(t trajectory.Trajectory) (float64, bool) {
		return math.Log1p(float64(t.InputTokens) / float64(max(1, steps(t)))), t.InputTokens > 0
	},
	"log_output_tokens_per_step": func(t trajectory.Trajectory) (float64, bool) {
		return math.Log1p(float64(t.OutputTokens) / float64(max(1, steps(t)))), t.OutputTokens > 0
	},
	"log_recent_output_tokens_per_step": func(t trajectory.Trajectory) (float64, bool) {
		w := recent(t)
		return math.Log1p(float64(w.outputTokens) / float64(max(1, w.steps))), w.outputTokens > 0
	},
	// Failed tool calls, over the run and in the recent window.
	"failed_tool_rate": func(t trajectory.Trajectory) (float64, bool) {
		return float64(failedTools(t)) / float64(max(1, steps(t))), true
	},
	"recent_failed_tool_rate": func(t trajectory.Trajectory) (float64, bool) {
		w := recent(t)
		return float64(w.failedTools) / float64(max(1, w.steps)), true
	},
	// How the agent moves between phases.
	"phase_switch_rate": func(t trajectory.Trajectory) (float64, bool) {
		return float64(t.PhaseRuns) / float64(max(1, steps(t))), true
	},
	"repeat_rate": func(t trajectory.Trajectory) (float64, bool) {
		return float64(t.Repeats) / float64(max(1, t.PhaseRuns)), true
	},
	"log_rework":   func(t trajectory.Trajectory) (float64, bool) { return math.Log1p(float64(t.Rework)), true },
	"edit_share":   func(t trajectory.Trajectory) (float64, bool) { return kindShare(t, PhaseKindEdit), true },
	"verify_share": func(t trajectory.Trajectory) (float64, bool) { return kindShare(t, PhaseKindVerify), true },
	"unverified_edits": func(t trajectory.Trajectory) (float64, bool) {
		return float64(unverifiedEdits(t)), true
	},
	"longest_recent_run_share": func(t trajectory.Trajectory) (float64, bool) {
		w := recent(t)
		return float64(w.longest) / float64(max(1, w.steps)), true
	},
	// Phases that failed as activities, and missing outputs.
	"failure_streak": func(t trajectory.Trajectory) (float64, bool) { return float64(t.FailureStreak), true },
	"failed_phase_rate": func(t trajectory.Trajectory) (float64, bool) {
		return float64(t.FailedPhases) / float64(max(1, t.PhaseRuns)), true
	},
	"missing_outputs": func(t trajectory.Trajectory) (float64, bool) { return float64(min(t.MissingOutputs, 3)), true },

	// An agent loop's calls over the whole run (Trajectory.Loop); a
	// trajectory of any other shape has none to give.
	"loop_tool_failure_rate": loopFeature(func(s trajectory.LoopStats) float64 {
		return float64(s.ToolFailures) / float64(max(1, s.ToolCalls))
	}),
	"loop_fail_streak":        loopFeature(func(s trajectory.LoopStats) float64 { return math.Log1p(float64(s.FailStreak)) }),
	"loop_max_fail_streak":    loopFeature(func(s trajectory.LoopStats) float64 { return math.Log1p(float64(s.MaxFailStreak)) }),
	"loop_same_error_streak":  loopFeature(func(s trajectory.LoopStats) float64 { return math.Log1p(float64(s.SameErrorStreak)) }),
	"loop_looping_rate":       loopFeature(func(s trajectory.LoopStats) float64 { return float64(s.Looping) / float64(max(1, s.ToolCalls)) }),
	"loop_log_since_new":      loopFeature(func(s trajectory.LoopStats) float64 { return math.Log1p(float64(s.SinceNew)) }),
	"loop_log_turns":          loopFeature(func(s trajectory.LoopStats) float64 { return math.Log1p(float64(s.ModelCalls)) }),
	"loop_model_failure_rate": loopFeature(func(s trajectory.LoopStats) float64 { return float64(s.ModelFailures) / float64(max(1, s.ModelCalls)) }),
	"loop_reported_failure_share": loopFeature(func(s trajectory.LoopStats) float64 {
		return float64(s.ReportedFailures) / float64(max(1, s.ToolFailures))
	}),
	"loop_log_input_tokens_per_turn": func(t trajectory.Trajectory) (float64, bool) {
		return math.Log1p(float64(t.InputTokens) / float64(max(1, t.Loop.ModelCalls))), t.Loop.ModelCalls > 0 && t.InputTokens > 0
	},
	"loop_log_output_tokens_per_turn": func(t trajectory.Trajectory) (float64, bool) {
		return math.Log1p(float64(t.OutputTokens) / float64(max(1, t.Loop.ModelCalls))), t.Loop.ModelCalls > 0 && t.OutputTokens > 0
	},
}

// loopFeature is a feature of an agent loop's whole-run counts; a
// trajectory with no loop calls cannot supply it.
func loopFeature(f func(trajectory.LoopStats) float64) feature {
	return func(t trajectory.Trajectory) (float64, bool) {
		if t.Loop.ModelCalls+t.Loop.ToolCalls == 0 {
			return 0, false
		}
		return f(t.Loop), true
	}
}

// LoopFeatures are the features of an agent loop's whole run the loop
// model is fit on (`overseer train --shape loop`).
func LoopFeatures() []string {
	var names []string
	for _, n := range FeatureNames() {
		if strings.HasPrefix(n, "loop_") {
			names = append(names, n)
		}
	}
	return names
}

// telemetryFeatures need what the agent reports of its model use (tokens,
// cost); the others read the trajectory's structure, which every job has.
var telemetryFeatures = []string{"log_cost_cents", "log_input_tokens", "log_output_tokens", "log_input_tokens_per_step",
	"log_output_tokens_per_step", "log_recent_output_tokens_per_step", "loop_log_input_tokens_per_turn", "loop_log_output_tokens_per_turn",
	"loop_log_input_tokens_vs_succeeded", "loop_log_output_tokens_vs_succeeded"}

// IsTelemetryFeature reports whether a feature needs the agent's token or
// cost telemetry, which not every agent reports; the other features read
// the trajectory's structure (phases, repeats, rework, failures).
func IsTelemetryFeature(name string) bool { return slices.Contains(telemetryFeatures, name) }

// cumulativeFeatures grow with the length of the job, without bound.
var cumulativeFeatures = []string{"log_steps", "log_phase_runs", "log_cost_cents", "log_input_tokens", "log_output_tokens", "loop_log_turns"}

// IsCumulativeFeature reports whether a feature measures the job's size so
// far (steps, phase runs, cost or tokens) rather than a rate or share: such
// a feature keeps growing as long as the job runs.
func IsCumulativeFeature(name string) bool { return slices.Contains(cumulativeFeatures, name) }

// agentScaleFeatures measure an agent loop on its agent's own scale
// (tokens per turn, which a larger prompt or context raises from the
// first call); the loop model reads them against the type's succeeded
// runs instead (LoopReference).
var agentScaleFeatures = []string{"loop_log_input_tokens_per_turn", "loop_log_output_tokens_per_turn"}

// IsAgentScaleFeature reports whether a feature of an agent loop measures
// it on its agent's own scale (tokens per turn): a model that learned one
// agent's scale would read another's larger context as a run going wrong
// from its first call.
func IsAgentScaleFeature(name string) bool { return slices.Contains(agentScaleFeatures, name) }

// isFeature reports whether name is a feature a learned model may use.
func isFeature(name string) bool {
	_, ok := features[name]
	return ok || NeedsLoopReference(name)
}

// FeatureNames lists every feature a learned model may use, sorted.
func FeatureNames() []string {
	names := make([]string, 0, len(features)+len(referenceFeatures))
	for n := range features {
		names = append(names, n)
	}
	for n := range referenceFeatures {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Features computes the named features of a trajectory. A feature the
// trajectory cannot supply (see the ok of each) is NaN, as is one that
// reads it against a LoopReference (see [FeaturesAgainst]). An unknown name
// is an error.
func Features(t trajectory.Trajectory, names []string) ([]float64, error) {
	return FeaturesAgainst(t, nil, names)
}

// FeaturesAgainst is [Features] with the relative features of an agent
// loop read against ref (nil: none).
func FeaturesAgainst(t trajectory.Trajectory, ref *LoopReference, names []string) ([]float64, error) {
	out := make([]float64, len(names))
	for i, n := range names {
		if !isFeature(n) {
			return nil, unknownFeature(n)
		}
		v, ok := featureValue(n, t, ref)
		if !ok {
			v = math.NaN()
		}
		out[i] = v
	}
	return out, nil
}

// featureValue is a known feature's value, false when the trajectory
// cannot supply it (or it is not finite), or when it reads the run against
// a LoopReference and ref is nil. Before the first phase has run there is
// nothing to read.
func featureValue(name string, t trajectory.Trajectory, ref *LoopReference) (float64, bool) {
	if t.PhaseRuns == 0 {
		return 0, false
	}
	var v float64
	var ok bool
	if f, plain := features[name]; plain {
		v, ok = f(t)
	} else if ref != nil {
		v, ok = referenceFeatures[name](t, ref)
	}
	return v, ok && !math.IsNaN(v) && !math.IsInf(v, 0)
}

// steps is the number of agent steps so far: the turns the phases reported,
// or one per phase run when they reported none.
func steps(t trajectory.Trajectory) int { return max(t.Turns, t.PhaseRuns) }

func failedTools(t trajectory.Trajectory) int {
	n := 0
	for _, c := range t.FailedToolCategories {
		n += c.Count
	}
	return n
}

type recentWindow struct {
	steps, failedTools int
	outputTokens       int64
	longest            int
}

// recent sums the recent-phase window.
func recent(t trajectory.Trajectory) recentWindow {
	var w recentWindow
	for _, p := range t.RecentPhases {
		turns := max(1, p.Turns)
		w.steps += turns
		w.failedTools += p.FailedTools
		w.outputTokens += p.OutputTokens
		w.longest = max(w.longest, turns)
	}
	return w
}

func kindShare(t trajectory.Trajectory, kind PhaseKind) float64 {
	n := 0
	for _, c := range t.RunsByPhase {
		if PhaseKindOf(c.Name) == kind {
			n += c.Count
		}
	}
	return float64(n) / float64(max(1, t.PhaseRuns))
}

// unverifiedEdits counts the edit runs in the recent window after its last
// verification.
func unverifiedEdits(t trajectory.Trajectory) int {
	n := 0
	for _, p := range t.RecentPhases {
		switch PhaseKindOf(p.Phase) {
		case PhaseKindEdit:
			n++
		case PhaseKindVerify:
			n = 0
		}
	}
	return n
}
