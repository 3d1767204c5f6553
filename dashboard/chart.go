package dashboard

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/corohq/temporal-overseer/overseer"
)

// chart is the geometry of the P(on objective) chart, drawn as inline SVG
// by the job template. Coordinates are in SVG user units.
//
// The y axis spans where the scores and the policy's band edges live, not
// always 0–1: a calibrated judge's P sits in a narrow range (the default
// judge's between about 0.55 and 0.80), and on a 0–1 axis its bands would
// be slivers. Band labels sit inside their band when it is tall enough and
// in the right-hand gutter otherwise, spread so that no two overlap.
type chart struct {
	W, H         float64
	Left, Top    float64
	PlotW, PlotH float64
	// YMin and YMax are the P range the y axis spans.
	YMin, YMax float64
	Bands      []chartBand
	// Labels are the band labels and the pause line's label, placed so
	// that none overlaps another.
	Labels     []chartLabel
	PauseY     float64
	PauseLabel string
	YTicks     []chartTick
	XTicks     []chartTick
	Points     []chartPoint
	// Lines are the trend's segments: the line breaks where an assessment
	// has no P (the judge failed or did not assess it).
	Lines            []string
	Pauses           []chartMarker
	Empty            bool
	Shown, Total     int
	FirstSeq, LastSq int
	// Legend explains the bands, the pause line and the markers.
	Legend []legendItem
}

type chartBand struct {
	Y, H  float64
	Class string
	Label string
}

// chartLabel is a text in the chart at (X, Y), its baseline. Side is true
// for a label in the right-hand gutter, whose leader line runs from the
// plot's edge at LeaderY.
type chartLabel struct {
	X, Y    float64
	Class   string
	Text    string
	Side    bool
	LeaderY float64
}

type chartTick struct {
	X, Y  float64
	Label string
}

type chartPoint struct {
	X, Y    float64
	Class   string
	Title   string
	Flagged bool
	Failed  bool
	// Unknown is an assessment the judge did not assess (it abstained from
	// P): a marker on the axis, never a point at 0.
	Unknown bool
}

type chartMarker struct {
	X     float64
	Title string
}

type legendItem struct {
	Class, Text string
}

// Label metrics, in user units, for the chart's 11-unit font: the height
// two labels need between their baselines and a generous width per
// character.
const (
	labelFont   = 11.0
	labelGap    = 13.0
	charWidth   = 6.4
	gutterWidth = 96.0
	// minInBand is the visible height a band needs for its label inside.
	minInBand = 18.0
)

// yRange is the P range the chart's y axis spans: from a little below the
// lowest of the scores and the band edges to a little above the highest of
// the scores and OnTrackAt, at least 0.2 wide, on a 0.05 grid, within
// [0,1].
func yRange(p overseer.Policy, scores []float64) (lo, hi float64) {
	lo = min(p.PauseAtOrBelow, p.NeedsALookAt, p.OnTrackAt)
	hi = max(p.OnTrackAt, p.NeedsALookAt, p.PauseAtOrBelow)
	for _, s := range scores {
		lo, hi = min(lo, s), max(hi, s)
	}
	pad := max(0.03, 0.15*(hi-lo))
	lo, hi = lo-pad, hi+pad
	if w := hi - lo; w < 0.2 {
		lo, hi = lo-(0.2-w)/2, hi+(0.2-w)/2
	}
	lo, hi = math.Floor(lo*20+1e-9)/20, math.Ceil(hi*20-1e-9)/20
	if lo <= 0.1 {
		lo = 0
	}
	if hi >= 0.9 {
		hi = 1
	}
	// Snapping to 0 or 1 can only widen the range; against either end it
	// keeps its 0.2.
	if lo == 0 {
		hi = max(hi, 0.2)
	}
	if hi == 1 {
		lo = min(lo, 0.8)
	}
	return lo, hi
}

// threshold formats a band edge or threshold with the digits it has
// (0.70, 0.655).
func threshold(v float64) string {
	if math.Abs(v*100-math.Round(v*100)) < 1e-6 {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// hasP reports whether the assessment has a P(on objective) to draw.
func hasP(a overseer.Assessment) bool {
	return a.Verdict != nil && a.Verdict.Band != overseer.BandUnknown && (a.Answers == nil || !a.Answers.OnObjectiveUnknown)
}

// newChart lays out the assessments (oldest first) against the policy's
// bands. Failed and unassessed assessments sit on the x axis (a cross, a
// hollow marker) and break the trend line; gates are vertical markers
// after the assessment that opened them.
func newChart(p overseer.Policy, as []overseer.Assessment, gates []overseer.Gate, total int) chart {
	c := chart{W: 760, H: 250, Left: 48, Top: 12, Shown: len(as), Total: total}
	c.PlotW, c.PlotH = c.W-c.Left-gutterWidth, c.H-c.Top-56
	var scores []float64
	for _, a := range as {
		if hasP(a) {
			scores = append(scores, a.Verdict.OnObjective)
		}
	}
	c.YMin, c.YMax = yRange(p, scores)
	y := func(v float64) float64 {
		v = min(max(v, c.YMin), c.YMax)
		return c.Top + (c.YMax-v)/(c.YMax-c.YMin)*c.PlotH
	}
	bottom := c.Top + c.PlotH

	c.Bands = []chartBand{
		{Y: y(c.YMax), H: y(p.OnTrackAt) - y(c.YMax), Class: "on_track", Label: "On track"},
		{Y: y(p.OnTrackAt), H: y(p.NeedsALookAt) - y(p.OnTrackAt), Class: "needs_a_look", Label: "Needs a look"},
		{Y: y(p.NeedsALookAt), H: bottom - y(p.NeedsALookAt), Class: "off_track", Label: "Off track"},
	}
	c.Bands = slices.DeleteFunc(c.Bands, func(b chartBand) bool { return b.H < 0.5 })
	c.PauseY = y(p.PauseAtOrBelow)
	c.PauseLabel = "manage mode pauses at ≤ " + threshold(p.PauseAtOrBelow)
	c.placeLabels(p)
	c.yTicks(p, y)
	c.Legend = []legendItem{
		{"on_track", "On track ≥ " + threshold(p.OnTrackAt)},
		{"needs_a_look", "Needs a look ≥ " + threshold(p.NeedsALookAt)},
		{"off_track", "Off track < " + threshold(p.NeedsALookAt)},
		{"pause", c.PauseLabel},
		{"unknown", "not assessed (no P)"},
		{"failed", "judge failed"},
	}

	if len(as) == 0 {
		c.Empty = true
		return c
	}
	c.FirstSeq, c.LastSq = as[0].Seq, as[len(as)-1].Seq
	step := c.PlotW / float64(len(as))
	x := func(i int) float64 { return c.Left + (float64(i)+0.5)*step }
	labelEvery := 1 + len(as)/24
	var seg []string
	flush := func() {
		if len(seg) > 1 {
			c.Lines = append(c.Lines, strings.Join(seg, " "))
		}
		seg = nil
	}
	for i, a := range as {
		pt := chartPoint{X: x(i)}
		switch {
		case a.Verdict == nil:
			pt.Y, pt.Failed, pt.Class = bottom, true, "failed"
			pt.Title = fmt.Sprintf("#%d %s: the judge failed: %s", a.Seq, a.Phase, a.Error)
			flush()
		case !hasP(a):
			pt.Y, pt.Unknown, pt.Class, pt.Flagged = bottom, true, "unknown", a.Verdict.Flagged
			pt.Title = fmt.Sprintf("#%d %s: not assessed (no P(on objective))", a.Seq, a.Phase)
			if a.Answers != nil && a.Answers.Basis != "" {
				pt.Title += " — " + a.Answers.Basis
			}
			if pt.Flagged {
				pt.Title += " — flagged: " + a.Verdict.Reason
			}
			flush()
		default:
			pt.Y, pt.Class, pt.Flagged = y(a.Verdict.OnObjective), string(a.Verdict.Band), a.Verdict.Flagged
			pt.Title = fmt.Sprintf("#%d %s: P(on objective) %.2f, %s", a.Seq, a.Phase, a.Verdict.OnObjective, a.Verdict.Band)
			if a.Answers != nil && a.Answers.Basis != "" {
				pt.Title += " — based on " + a.Answers.Basis
			}
			if pt.Flagged {
				pt.Title += " — flagged: " + a.Verdict.Reason
			}
			seg = append(seg, fmt.Sprintf("%.1f,%.1f", pt.X, pt.Y))
		}
		c.Points = append(c.Points, pt)
		if i%labelEvery == 0 {
			c.XTicks = append(c.XTicks, chartTick{X: pt.X, Y: bottom + 14, Label: a.Phase})
		}
	}
	flush()
	for _, g := range gates {
		// The gate follows the last assessment of its phase made at or
		// before it opened.
		at := -1
		for i, a := range as {
			if a.Phase == g.Phase && !a.At.After(g.PausedAt) {
				at = i
			}
		}
		if at < 0 {
			continue
		}
		title := fmt.Sprintf("paused after %s: %s", g.Phase, g.Reason)
		title += gateEnd(g)
		c.Pauses = append(c.Pauses, chartMarker{X: x(at) + step/2, Title: title})
	}
	return c
}

// placeLabels puts each band's label inside the band, vertically centred,
// when the band is tall enough, and the others with the pause line's label
// in the right-hand gutter beside what they name, spread apart so that no
// two overlap.
func (c *chart) placeLabels(p overseer.Policy) {
	var side []chartLabel
	for _, b := range c.Bands {
		mid := b.Y + b.H/2
		if b.H >= minInBand {
			c.Labels = append(c.Labels, chartLabel{X: c.Left + 6, Y: mid + labelFont*0.35, Class: "zone-label", Text: b.Label})
			continue
		}
		side = append(side, chartLabel{Class: "zone-label", Text: b.Label, Side: true, LeaderY: mid})
	}
	side = append(side, chartLabel{Class: "pause-label", Text: "pause ≤ " + threshold(p.PauseAtOrBelow), Side: true, LeaderY: c.PauseY})
	slices.SortStableFunc(side, func(a, b chartLabel) int {
		switch {
		case a.LeaderY < b.LeaderY:
			return -1
		case a.LeaderY > b.LeaderY:
			return 1
		}
		return 0
	})
	// The labels' centres: each as near its target as the others allow,
	// within the chart's height.
	top, bottom := c.Top+labelGap/2, c.H-labelGap/2
	ys := make([]float64, len(side))
	for i, l := range side {
		ys[i] = min(max(l.LeaderY, top), bottom)
		if i > 0 {
			ys[i] = max(ys[i], ys[i-1]+labelGap)
		}
	}
	for i := len(ys) - 1; i >= 0; i-- {
		if i == len(ys)-1 {
			ys[i] = min(ys[i], bottom)
		} else {
			ys[i] = min(ys[i], ys[i+1]-labelGap)
		}
	}
	for i := range side {
		side[i].X = c.Left + c.PlotW + 10
		side[i].Y = ys[i] + labelFont*0.35
	}
	c.Labels = append(c.Labels, side...)
}

// yTicks labels the axis's ends and the band edges, leaving out any that
// would touch one already labelled (the pause threshold first).
func (c *chart) yTicks(p overseer.Policy, y func(float64) float64) {
	var kept []float64
	for _, v := range []float64{p.PauseAtOrBelow, p.OnTrackAt, p.NeedsALookAt, c.YMin, c.YMax} {
		if v < c.YMin-1e-9 || v > c.YMax+1e-9 {
			continue
		}
		yv := y(v)
		if slices.ContainsFunc(kept, func(k float64) bool { return math.Abs(k-yv) < labelGap }) {
			continue
		}
		kept = append(kept, yv)
		c.YTicks = append(c.YTicks, chartTick{X: c.Left - 6, Y: yv, Label: threshold(v)})
	}
	slices.SortFunc(c.YTicks, func(a, b chartTick) int {
		switch {
		case a.Y < b.Y:
			return -1
		case a.Y > b.Y:
			return 1
		}
		return 0
	})
}

func clamp01(v float64) float64 {
	switch {
	case v < 0:
		return 0
	case v > 1:
		return 1
	}
	return v
}

// gateEnd says how a gate ended, for a marker's title: by whom a person
// resumed it, or by which rule its deadline closed it (nobody resumed it).
func gateEnd(g overseer.Gate) string {
	switch {
	case g.Cancelled:
		return " — cancelled with the run"
	case g.Expired:
		return fmt.Sprintf(" — expired (%s): %s", g.ExpiredBy, g.Action)
	case g.ExpiredBy != "":
		return fmt.Sprintf(" — %s", g.ExpiredBy)
	case g.ResumedAt == nil:
		if g.EscalatedAt != nil {
			return fmt.Sprintf(" — escalated (%s), open", g.EscalatedBy)
		}
		return " — open"
	}
	return fmt.Sprintf(" — %s by %s", g.Action, g.By)
}
