package bench

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
)

// Ratios compares one variant with the bare job and the hand-written one.
type Ratios struct {
	// LatencyVsBare and LatencyVsHandwritten divide median job latencies
	// (phases of PhaseDuration). "Handwritten" is the variant's own
	// hand-written baseline (VariantResult.Baseline): the one that asks the
	// judge the same way.
	LatencyVsBare        float64 `json:"latency_vs_bare"`
	LatencyVsHandwritten float64 `json:"latency_vs_handwritten"`
	// AddedMSPerBoundary is the median latency over the bare job's, per
	// phase boundary, with trivial phases.
	AddedMSPerBoundary float64 `json:"added_ms_per_boundary"`
	// BoundaryOverBareMS is the median boundary's time (VariantResult.
	// BoundaryMS) over the bare job's.
	BoundaryOverBareMS float64 `json:"boundary_over_bare_ms"`
	// CPUVsBare and CPUVsHandwritten divide median CPU per boundary.
	CPUVsBare        float64 `json:"cpu_vs_bare"`
	CPUVsHandwritten float64 `json:"cpu_vs_handwritten"`
	// EventsOverBare is the extra history events per boundary.
	EventsOverBare float64 `json:"events_over_bare"`
}

// Ratios returns the named variant's ratios; zero where a baseline was not
// run.
func (r *Result) Ratios(name string) Ratios {
	v, _ := r.Variant(name)
	bare, hasBare := r.Variant(cmp.Or(v.Bare, VariantBare))
	base := v.Baseline
	if base == "" && v.Bare != VariantBareLoop {
		base = VariantHandwritten // the bare and hand-written jobs too, as before
	}
	hand, hasHand := r.Variant(base)
	var q Ratios
	if hasBare {
		q.LatencyVsBare = div(v.LatencyMS.Median, bare.LatencyMS.Median)
		q.AddedMSPerBoundary = (v.TrivialLatencyMS.Median - bare.TrivialLatencyMS.Median) / float64(r.Phases)
		q.BoundaryOverBareMS = v.BoundaryMS.Median - bare.BoundaryMS.Median
		q.CPUVsBare = div(v.CPUPerBoundaryUS.Median, bare.CPUPerBoundaryUS.Median)
		q.EventsOverBare = v.EventsPerBoundary - bare.EventsPerBoundary
	}
	if hasHand {
		q.LatencyVsHandwritten = div(v.LatencyMS.Median, hand.LatencyMS.Median)
		q.CPUVsHandwritten = div(v.CPUPerBoundaryUS.Median, hand.CPUPerBoundaryUS.Median)
	}
	return q
}

func div(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// WriteTable writes the result as tables people read.
func WriteTable(w io.Writer, r *Result) error {
	fmt.Fprintf(w, "overseer bench: %d phases per job (%v each for latency, trivial for throughput), %d rounds interleaved, %d jobs at once; took %v\n\n",
		r.Phases, r.PhaseDuration, r.Rounds, r.Concurrency, r.Took.Round(1e9))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "variant\tlatency ms\t÷ bare\t÷ hand\tphases done ms\t+ms/boundary\tboundary ms\t+ms\tjobs/s\tCPU µs/boundary\t÷ bare\t÷ hand\tevents/boundary\tbytes/boundary\tlargest event B\tmax boundary ms\t")
	for _, v := range r.Variants {
		q := r.Ratios(v.Name)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.2f\t%s\t%.2f\t%s\t%s\t%s\t%s\t%.2f\t%.0f\t%d\t%.1f\t\n", v.Name,
			span(v.LatencyMS, "%.0f"), ratio(q.LatencyVsBare), ratio(q.LatencyVsHandwritten), span(v.PhasesDoneMS, "%.0f"), q.AddedMSPerBoundary,
			span(v.BoundaryMS, "%.2f"), q.BoundaryOverBareMS,
			span(v.ThroughputJobsPerS, "%.1f"), span(v.CPUPerBoundaryUS, "%.0f"), ratio(q.CPUVsBare), ratio(q.CPUVsHandwritten),
			v.EventsPerBoundary, v.BytesPerBoundary, v.LargestEventBytes, v.MaxBoundaryMS)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.Settings != "" {
		fmt.Fprintf(w, "\nserver: %s\n", r.Settings)
	}
	fmt.Fprintln(w, "\nlatency ms, jobs/s and CPU: median [min–max] over the rounds; ÷: ratio of medians; ÷ hand: over the hand-written job that asks the judge the same way")
	fmt.Fprintln(w, "(hand-written/background for the judges in the background, hand-written otherwise); +ms/boundary: trivial-phase job latency over the bare job's, per boundary.")
	fmt.Fprintln(w, "phases done: from the job's start to its last phase's completion, by the server's clock. CPU: this process (the variant's worker and the client), not the server.")
	fmt.Fprintln(w, "boundary ms: in the trivial-phase job, the median time from a phase's completion to the next phase's scheduling, by the server's clock (no task-queue dispatch in it); +ms: over the bare job's.")
	fmt.Fprintln(w, "max boundary: the longest time from a phase's completion to the next phase's scheduling, in the latency job of the first round.")
	if hang, ok := r.Variant(VariantObserveHang); ok {
		if healthy, ok := r.Variant(VariantObserveRemote); ok {
			fmt.Fprintf(w, "\nhanging judge vs the same remote judge healthy, observe mode: phases done ÷ %.3f, job latency ÷ %.3f, trivial job ÷ %.3f (its %v budget is not waited for once the judge's circuit is open); phases held back by the judge: %d of %d\n",
				div(hang.PhasesDoneMS.Median, healthy.PhasesDoneMS.Median), div(hang.LatencyMS.Median, healthy.LatencyMS.Median),
				div(hang.TrivialLatencyMS.Median, healthy.TrivialLatencyMS.Median), r.HangBudget, hang.HeldPhases, r.Phases)
		}
	}
	if len(r.RequestSizes) > 0 {
		fmt.Fprintln(w, "\njudge request size in the long job:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		for _, s := range r.RequestSizes {
			fmt.Fprintf(tw, "phase %d\t%d B\t%s\t\n", s.Phase, s.Bytes, s.Note)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "overseer state carried across continue-as-new: %d B\n", r.CarriedStateBytes)
	}
	if len(r.WindowRequestSizes) > 0 {
		fmt.Fprintf(w, "\nthe same with a content window (8 calls, default bytes; each phase prints %d B):\n", r.WindowPrinted)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		for i, s := range r.WindowRequestSizes {
			off := 0
			if i < len(r.RequestSizes) {
				off = r.RequestSizes[i].Bytes
			}
			fmt.Fprintf(tw, "phase %d\t%d B\t+%d B\t%s\t\n", s.Phase, s.Bytes, s.Bytes-off, s.Note)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "overseer state carried across continue-as-new: %d B\n", r.WindowCarriedStateBytes)
	}
	fmt.Fprintln(w, "\nvariants:")
	for _, v := range r.Variants {
		fmt.Fprintf(w, "  %-26s %s\n", v.Name, v.Description)
	}
	return nil
}

// WriteJSON writes the result, with every variant's ratios, as indented
// JSON.
func WriteJSON(w io.Writer, r *Result) error {
	type withRatios struct {
		VariantResult
		Ratios Ratios `json:"ratios"`
	}
	out := struct {
		*Result
		Variants []withRatios `json:"variants"`
	}{Result: r}
	for _, v := range r.Variants {
		out.Variants = append(out.Variants, withRatios{VariantResult: v, Ratios: r.Ratios(v.Name)})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func span(s Stat, format string) string {
	return fmt.Sprintf(format+" ["+format+"–"+format+"]", s.Median, s.Min, s.Max)
}

func ratio(x float64) string {
	if x == 0 {
		return "–"
	}
	return fmt.Sprintf("%.3f", x)
}
