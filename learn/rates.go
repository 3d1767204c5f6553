package learn

import (
	"fmt"
	"slices"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
)

// DefaultRateWindow is how many of the newest closed jobs [MeasureRates]
// measures by default.
const DefaultRateWindow = 200

// Rates are the false-pause and catch rates measured on closed jobs: how
// often the gates they met paused a job that then succeeded without need
// (a reviewer continued it and judged the pause not needed, or continued
// it without a note: a false pause; see eval.GateDecision.PauseNeeded) and
// a job that failed (a catch). A job that succeeded after a needed pause
// (a note that redirected it) is no false pause. A job counts as paused
// when its record carries a reviewer's decision at a gate; a gate its
// deadline closed, with nobody deciding, is no label and is not counted.
type Rates struct {
	// Jobs are the closed jobs measured: the newest, at most the window.
	Jobs int `json:"jobs"`
	// Succeeded jobs, and FalsePauses those of them with a false pause
	// (Record.FalsePauses). NeededPauses are the other succeeded jobs that
	// paused: every pause of theirs was needed. Unjudged counts the
	// false pauses judged by the old rule (every continue a false pause):
	// jobs exported before gates recorded whether the pause was needed.
	Succeeded    int `json:"succeeded"`
	FalsePauses  int `json:"false_pauses"`
	NeededPauses int `json:"needed_pauses,omitempty"`
	Unjudged     int `json:"unjudged,omitempty"`
	// Failed jobs (an abort at a gate makes one), and Caught those of them
	// that paused at a gate.
	Failed int `json:"failed"`
	Caught int `json:"caught"`
	// Model is the version current for the type when measured, Promise its
	// policy's false-pause promise (nil when it makes none).
	Model   string            `json:"model,omitempty"`
	Promise *overseer.Promise `json:"promise,omitempty"`
	// Check is the measured false-pause rate checked against the promise.
	Check *eval.PromiseCheck `json:"check,omitempty"`
	// Sentence says the rates and what they say of the promise.
	Sentence string `json:"sentence"`
}

// FalsePauseRate is FalsePauses / Succeeded, 0 without succeeded jobs.
func (r Rates) FalsePauseRate() float64 { return share(r.FalsePauses, r.Succeeded) }

// CatchRate is Caught / Failed, 0 without failed jobs.
func (r Rates) CatchRate() float64 { return share(r.Caught, r.Failed) }

// Broken reports whether the measured false pauses break the promise
// beyond sampling error (even the 95 % lower bound is above it).
func (r Rates) Broken() bool { return r.Check != nil && r.Check.Verdict == eval.PromiseBroken }

// Above reports whether the measured false-pause rate is above the
// promise, broken or within sampling error.
func (r Rates) Above() bool {
	return r.Check != nil && (r.Check.Verdict == eval.PromiseBroken || r.Check.Verdict == eval.PromiseAbove)
}

// newestWindow is the newest window of records, newest first
// (DefaultRateWindow when window is 0 or less): the jobs a round measures.
func newestWindow(records []eval.Record, window int) []eval.Record {
	if window <= 0 {
		window = DefaultRateWindow
	}
	return records[:min(window, len(records))]
}

func share(k, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(k) / float64(n)
}

// MeasureRates measures the rates on the newest window (DefaultRateWindow
// when 0 or less) of records — labelled by eval.UseGateLabels, newest
// first — and checks the false-pause rate against promise, the promise of
// model, the version current for the type.
func MeasureRates(records []eval.Record, window int, model string, promise overseer.Promise) Rates {
	return measureRates(records, window, model, promise, nil)
}

// measureRates is MeasureRates; unread, when not nil, is why the current
// model's promise could not be read, which the sentence then says instead
// of saying there is none.
func measureRates(records []eval.Record, window int, model string, promise overseer.Promise, unread error) Rates {
	records = newestWindow(records, window)
	r := Rates{Jobs: len(records), Model: model}
	for _, rec := range records {
		paused := len(rec.JudgeGates()) > 0 // a budget's stop is not the judge's
		if rec.Outcome.Failed() {
			r.Failed++
			if paused {
				r.Caught++
			}
		} else {
			r.Succeeded++
			switch {
			case rec.FalsePauses() > 0:
				r.FalsePauses++
				if slices.ContainsFunc(rec.JudgeGates(), func(g eval.GateDecision) bool { return g.Needed == nil }) {
					r.Unjudged++
				}
			case paused:
				r.NeededPauses++
			}
		}
	}
	if promise.Certified() {
		p := promise
		r.Promise = &p
		c := eval.CheckPromise(eval.PolicyRates{Succeeded: r.Succeeded, FalsePauses: r.FalsePauses}, p.MaxFalsePause)
		r.Check = &c
	}
	r.Sentence = r.say(unread)
	return r
}

// say is the Sentence of r.
func (r Rates) say(unread error) string {
	if r.Jobs == 0 {
		return "no closed jobs to measure the gates on"
	}
	jobs := "job"
	if r.Jobs > 1 {
		jobs = fmt.Sprintf("%d jobs", r.Jobs)
	}
	s := fmt.Sprintf("on the newest closed %s, ", jobs)
	if r.Succeeded == 0 {
		s += "no succeeded job"
	} else {
		s += fmt.Sprintf("%d of %d succeeded jobs had a false pause (%.1f%%", r.FalsePauses, r.Succeeded, 100*r.FalsePauseRate())
		if r.NeededPauses > 0 {
			s += fmt.Sprintf("; %d more paused only where it was needed", r.NeededPauses)
		}
		if r.Unjudged > 0 {
			s += fmt.Sprintf("; %d of the false pauses by the old rule, exported before gates recorded whether the pause was needed", r.Unjudged)
		}
		s += ")"
	}
	if r.Failed == 0 {
		s += ", no failed job"
	} else {
		s += fmt.Sprintf(", %d of %d failed jobs caught (%.1f%%)", r.Caught, r.Failed, 100*r.CatchRate())
	}
	model := "the current model"
	if r.Model != "" {
		model = "model " + r.Model
	}
	switch {
	case unread != nil:
		return fmt.Sprintf("%s; the current model's promise could not be read: %v", s, unread)
	case r.Check == nil:
		return s + "; " + model + "'s policy makes no false-pause promise to hold them to"
	}
	c := *r.Check
	promise := fmt.Sprintf("the promise of %s (at most %.1f%% false pauses)", model, 100*c.MaxFalsePause)
	switch c.Verdict {
	case eval.PromiseBroken:
		return fmt.Sprintf("%s: these false pauses BREAK %s: even their 95%% lower bound, %.1f%%, is above it; the type's own jobs are what fixes it: the round's next step says when a recalibration or refit can run",
			s, promise, 100*c.LowerBound)
	case eval.PromiseAbove:
		return fmt.Sprintf("%s: above %s, though within sampling error (95%% lower bound %.1f%%)", s, promise, 100*c.LowerBound)
	case eval.PromiseHolds:
		return fmt.Sprintf("%s: %s holds on them (95%% upper bound %.1f%%)", s, promise,
			100*eval.UpperBound(c.FalsePauses, c.Succeeded, eval.PromiseConfidence))
	default:
		return fmt.Sprintf("%s: consistent with %s, but %d succeeded jobs are too few to confirm it (it takes %d)",
			s, promise, c.Succeeded, eval.RunsNeeded(c.MaxFalsePause, eval.PromiseConfidence))
	}
}
