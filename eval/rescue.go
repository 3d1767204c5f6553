package eval

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// Should pauses be on? The published rule for a monitor that intervenes:
// intervene only when the failure rate p of the runs it flags exceeds
// d/(r+d), with r the share of flagged failing runs an intervention
// rescues and d the share of flagged succeeding runs it disrupts
// (equivalently p·r > (1−p)·d: more rescued than disrupted). [EstimateRescue]
// estimates p, r and d for one workflow type from its closed jobs; see
// docs/decision-quality.md for the definitions and their assumptions.

// MinRescueJobs is the fewest jobs of each kind — paused jobs with a
// reviewer's decision (labelled gates), and flagged jobs left alone in
// observe mode — behind an estimate of rescue and disruption. Below it
// one job more or less moves r, d or p by a tenth or more (as
// MinRunsPerOutcome for an AUROC), and the estimate refuses in one
// sentence.
const MinRescueJobs = 10

// rescueResamples and rescueSeed make the joint bootstrap reproducible:
// the same jobs always give the same intervals.
const (
	rescueResamples = 2000
	rescueSeed      = 1
)

// RescueCounts are the counts an estimate of rescue and disruption rests
// on, for one workflow type.
type RescueCounts struct {
	// Paused are the jobs with at least one reviewer's decision at a gate
	// (eval.GateDecision); Needed those of them with a gate judged needed
	// (GateDecision.PauseNeeded), NotNeeded the others.
	Paused    int `json:"paused"`
	Needed    int `json:"needed"`
	NotNeeded int `json:"not_needed"`
	// Rescued are the jobs judged needed that then succeeded (not aborted);
	// Disrupted the jobs judged not needed that then failed or were
	// aborted.
	Rescued   int `json:"rescued"`
	Disrupted int `json:"disrupted"`
	// Unjudged counts the paused jobs whose gates were exported before
	// gates recorded whether the pause was needed (the old rule judged
	// them: an abort or redo needed, a continue not).
	Unjudged int `json:"unjudged,omitempty"`
	// Observed are the flagged jobs no gate held (observe mode: a
	// recorded assessment flagged, no reviewer's decision), and
	// ObservedFailed those of them that failed: the outcome of a flagged
	// job without a pause.
	Observed       int `json:"observed"`
	ObservedFailed int `json:"observed_failed"`
	// WaitMinutes is how long the paused jobs' gates waited for their
	// reviewers, in all.
	WaitMinutes float64 `json:"wait_minutes"`
}

// Rescue verdicts.
const (
	RescueTooFew  = "too_few"
	RescueHelps   = "helps"
	RescueHurts   = "hurts"
	RescueUnclear = "unclear"
)

// RescueEstimate is rescue against disruption for one workflow type:
// p, r, d and the rule's threshold d/(r+d), each with a 95 % interval
// from one joint bootstrap (the paused and the observed jobs resampled
// with replacement, each kind apart, and p, r and d recomputed together
// on each resample), and a recommendation. It never switches a mode.
type RescueEstimate struct {
	Type string `json:"type"`
	RescueCounts
	// P is the failure rate of flagged jobs left alone (ObservedFailed /
	// Observed); R = min(1, Rescued / (Paused·P)); D = min(1, Disrupted /
	// (Paused·(1−P))); Threshold = D/(R+D); Margin = P − Threshold.
	P         Num `json:"p"`
	R         Num `json:"r"`
	D         Num `json:"d"`
	Threshold Num `json:"threshold"`
	Margin    Num `json:"margin"`
	// The 95 % bootstrap intervals.
	PLow          Num `json:"p_low"`
	PHigh         Num `json:"p_high"`
	RLow          Num `json:"r_low"`
	RHigh         Num `json:"r_high"`
	DLow          Num `json:"d_low"`
	DHigh         Num `json:"d_high"`
	ThresholdLow  Num `json:"threshold_low"`
	ThresholdHigh Num `json:"threshold_high"`
	MarginLow     Num `json:"margin_low"`
	MarginHigh    Num `json:"margin_high"`
	// MinutesPerRescue is WaitMinutes / Rescued: the reviewers' time (the
	// gates' wait, an upper bound of their effort) per job rescued.
	MinutesPerRescue Num `json:"minutes_per_rescue"`
	// Verdict is RescueTooFew, RescueHelps (the margin's interval is above
	// 0), RescueHurts (below 0) or RescueUnclear.
	Verdict  string `json:"verdict"`
	Sentence string `json:"sentence"`
}

// rescueJob is one job as the estimate reads it.
type rescueJob struct {
	paused, needed, failed bool
	wait                   float64
}

// rescueJobOf classifies rec: ok is false for a job neither paused nor
// flagged, which says nothing about pauses.
func rescueJobOf(rec Record) (j rescueJob, unjudged, ok bool) {
	j.failed = rec.Outcome.Failed()
	for _, g := range rec.Gates {
		if g.Action == GateAbort {
			j.failed = true // an abort is a confirmed failure, as UseGateLabels says
		}
		if g.Budget() {
			continue // not the judge's pause
		}
		j.paused = true
		if g.PauseNeeded() {
			j.needed = true
		}
		if g.Needed == nil {
			unjudged = true
		}
		j.wait += float64(g.WaitMS) / 60000
	}
	if j.paused {
		return j, unjudged, true
	}
	flagged := slices.ContainsFunc(rec.Steps, func(s Step) bool { return s.Assessment != nil && s.Assessment.Flagged })
	return j, false, flagged
}

// rescueFigures are p, r, d and the rule's threshold and margin of one
// set of jobs.
type rescueFigures struct{ p, r, d, threshold, margin float64 }

func figuresOf(c RescueCounts) rescueFigures {
	nan := math.NaN()
	f := rescueFigures{p: nan, r: nan, d: nan, threshold: nan, margin: nan}
	if c.Observed == 0 || c.Paused == 0 {
		return f
	}
	f.p = float64(c.ObservedFailed) / float64(c.Observed)
	// The paused jobs heading to failure, had nobody paused them: the
	// flagged jobs left alone fail at p (the counterfactual).
	if failing := float64(c.Paused) * f.p; failing > 0 {
		f.r = math.Min(1, float64(c.Rescued)/failing)
	}
	if succeeding := float64(c.Paused) * (1 - f.p); succeeding > 0 {
		f.d = math.Min(1, float64(c.Disrupted)/succeeding)
	}
	switch {
	case f.p == 0:
		// No flagged job fails unpaused: a pause can only disrupt.
		f.r, f.threshold = 0, 0
		if !math.IsNaN(f.d) && f.d > 0 {
			f.threshold = 1
		}
	case f.p == 1:
		f.d, f.threshold = 0, 0
	case f.r+f.d > 0:
		f.threshold = f.d / (f.r + f.d)
	default:
		f.threshold = math.NaN() // neither rescued nor disrupted: no rule to apply
	}
	f.margin = f.p - f.threshold
	return f
}

func countsOf(jobs []rescueJob) RescueCounts {
	var c RescueCounts
	for _, j := range jobs {
		if !j.paused {
			c.Observed++
			if j.failed {
				c.ObservedFailed++
			}
			continue
		}
		c.Paused++
		c.WaitMinutes += j.wait
		switch {
		case j.needed:
			c.Needed++
			if !j.failed {
				c.Rescued++
			}
		default:
			c.NotNeeded++
			if j.failed {
				c.Disrupted++
			}
		}
	}
	return c
}

// EstimateRescue estimates rescue against disruption for workflowType
// from its closed jobs' records (as a learn round reads them: outcomes,
// gates with the reviewers' decisions, the recorded assessments). A paused
// job is one with a reviewer's decision at a gate; a flagged job left
// alone is one whose recorded assessment flagged it and no gate held (in
// observe mode). Other jobs say nothing about pauses and are not counted.
func EstimateRescue(workflowType string, records []Record) RescueEstimate {
	var paused, observed []rescueJob
	e := RescueEstimate{Type: workflowType}
	for _, rec := range records {
		j, unjudged, ok := rescueJobOf(rec)
		switch {
		case !ok:
		case j.paused:
			paused = append(paused, j)
			if unjudged {
				e.Unjudged++
			}
		default:
			observed = append(observed, j)
		}
	}
	unjudged := e.Unjudged
	e.RescueCounts = countsOf(append(slices.Clone(paused), observed...))
	e.Unjudged = unjudged
	f := figuresOf(e.RescueCounts)
	e.P, e.R, e.D, e.Threshold, e.Margin = Num(f.p), Num(f.r), Num(f.d), Num(f.threshold), Num(f.margin)
	e.MinutesPerRescue = Num(math.NaN())
	if e.Rescued > 0 {
		e.MinutesPerRescue = Num(e.WaitMinutes / float64(e.Rescued))
	}
	if e.Paused < MinRescueJobs || e.Observed < MinRescueJobs {
		// Refused: no figure below the minimum, only the counts.
		e.Verdict = RescueTooFew
		nan := Num(math.NaN())
		e.P, e.R, e.D, e.Threshold, e.Margin = nan, nan, nan, nan, nan
		e.PLow, e.PHigh, e.RLow, e.RHigh, e.DLow, e.DHigh = nan, nan, nan, nan, nan, nan
		e.ThresholdLow, e.ThresholdHigh, e.MarginLow, e.MarginHigh = nan, nan, nan, nan
		e.Sentence = e.say()
		return e
	}
	e.bootstrap(paused, observed)
	switch {
	case float64(e.MarginLow) > 0:
		e.Verdict = RescueHelps
	case float64(e.MarginHigh) < 0:
		e.Verdict = RescueHurts
	default:
		e.Verdict = RescueUnclear
	}
	e.Sentence = e.say()
	return e
}

// bootstrap sets the intervals: each resample draws as many paused and as
// many observed jobs as there are, with replacement, and recomputes p, r
// and d together, so that their intervals hold the dependence of r and d
// on p.
func (e *RescueEstimate) bootstrap(paused, observed []rescueJob) {
	rng := rand.New(rand.NewPCG(rescueSeed, rescueSeed^0x9e3779b97f4a7c15))
	var ps, rs, ds, ts, ms []float64
	undefined := make(map[*[]float64]int)
	sample := make([]rescueJob, len(paused)+len(observed))
	for range rescueResamples {
		for i := range paused {
			sample[i] = paused[rng.IntN(len(paused))]
		}
		for i := range observed {
			sample[len(paused)+i] = observed[rng.IntN(len(observed))]
		}
		f := figuresOf(countsOf(sample))
		for _, x := range []struct {
			v  float64
			to *[]float64
		}{{f.p, &ps}, {f.r, &rs}, {f.d, &ds}, {f.threshold, &ts}, {f.margin, &ms}} {
			if math.IsNaN(x.v) {
				undefined[x.to]++
			} else {
				*x.to = append(*x.to, x.v)
			}
		}
	}
	e.PLow, e.PHigh = percentileInterval(ps, undefined[&ps])
	e.RLow, e.RHigh = percentileInterval(rs, undefined[&rs])
	e.DLow, e.DHigh = percentileInterval(ds, undefined[&ds])
	e.ThresholdLow, e.ThresholdHigh = percentileInterval(ts, undefined[&ts])
	e.MarginLow, e.MarginHigh = percentileInterval(ms, undefined[&ms])
}

// percentileInterval is the 95 % percentile interval of the resampled
// values vs, of which undefined more resamples had none (nothing rescued
// or disrupted in them). Those are not dropped, which would narrow the
// interval towards the resamples that had events: they may lie anywhere,
// so they sit at both ends, and an end that falls among them is NaN
// (unknown), which no verdict reads as above or below 0.
func percentileInterval(vs []float64, undefined int) (lo, hi Num) {
	n := len(vs) + undefined
	if len(vs) == 0 {
		return Num(math.NaN()), Num(math.NaN())
	}
	sort.Float64s(vs)
	index := func(q float64) int { return min(max(int(math.Round(q*float64(n-1))), 0), n-1) }
	lo, hi = Num(math.NaN()), Num(math.NaN())
	if i := index(0.025) - undefined; i >= 0 {
		lo = Num(vs[i])
	}
	if j := index(0.975); j < len(vs) {
		hi = Num(vs[j])
	}
	return lo, hi
}

// say is the estimate's sentence: its recommendation first, then the
// figures and the counts they rest on.
func (e RescueEstimate) say() string {
	switch {
	case e.Paused < MinRescueJobs:
		return fmt.Sprintf("keep observing: %d labelled %s too few to say whether pausing %s helps (need %d)",
			e.Paused, plural(e.Paused, "gate is", "gates are"), e.Type, MinRescueJobs)
	case e.Observed < MinRescueJobs:
		return fmt.Sprintf("keep observing: %d flagged %s in observe mode %s too few to say how flagged %s jobs end without a pause (need %d; pauses were judged needed on %d of %d paused jobs)",
			e.Observed, plural(e.Observed, "job", "jobs"), plural(e.Observed, "is", "are"), e.Type, MinRescueJobs, e.Needed, e.Paused)
	}
	head := fmt.Sprintf("pauses here were needed %s (%d of %d paused jobs)", timesIn(e.Needed, e.Paused), e.Needed, e.Paused)
	rule := fmt.Sprintf("p %s %s d/(r+d) %s", e.P, compare(float64(e.P), float64(e.Threshold)), e.Threshold)
	var verdict string
	switch e.Verdict {
	case RescueHelps:
		verdict = "pausing helps"
	case RescueHurts:
		verdict = "pausing hurts: keep observing"
	default:
		verdict = fmt.Sprintf("not yet clear whether pausing helps: p − d/(r+d) is %s–%s at 95%%; keep observing", e.MarginLow, e.MarginHigh)
	}
	minutes := "no job rescued"
	switch m := float64(e.MinutesPerRescue); {
	case math.IsNaN(m):
	case m < 1:
		minutes = "under a reviewer minute per rescued job"
	default:
		minutes = fmt.Sprintf("%.0f reviewer minutes per rescued job", m)
	}
	s := fmt.Sprintf("%s; %s: %s (rescue r %s, %s–%s: %d judged needed then succeeded; disruption d %s, %s–%s: %d judged not needed then failed or aborted; p %s, %s–%s: %d of %d flagged jobs left alone in observe mode failed); %s",
		head, rule, verdict, e.R, e.RLow, e.RHigh, e.Rescued, e.D, e.DLow, e.DHigh, e.Disrupted, e.P, e.PLow, e.PHigh, e.ObservedFailed, e.Observed, minutes)
	if e.Unjudged > 0 {
		s += fmt.Sprintf("; %d paused %s exported before gates recorded whether the pause was needed, judged by the old rule (an abort or redo needed, a continue not)",
			e.Unjudged, plural(e.Unjudged, "job was", "jobs were"))
	}
	return s
}

// timesIn says k of n as "9 times in 10", rounded to tenths of n.
func timesIn(k, n int) string {
	if n == 0 {
		return "never"
	}
	tenths := int(math.Round(10 * float64(k) / float64(n)))
	return fmt.Sprintf("%d %s in 10", tenths, plural(tenths, "time", "times"))
}

func compare(a, b float64) string {
	switch {
	case math.IsNaN(a) || math.IsNaN(b):
		return "against"
	case a > b:
		return ">"
	case a < b:
		return "<"
	}
	return "="
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
