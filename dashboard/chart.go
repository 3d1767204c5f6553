package dashboard

import (
	"fmt"
	"strings"

	"github.com/corohq/temporal-overseer/overseer"
)

// chart is the geometry of the P(on objective) chart, drawn as inline SVG
// by the job template. Coordinates are in SVG user units.
type chart struct {
	W, H             float64
	Left, Top        float64
	PlotW, PlotH     float64
	Bands            []chartBand
	PauseY           float64
	PauseLabel       string
	YTicks           []chartTick
	XTicks           []chartTick
	Points           []chartPoint
	Line             string
	Pauses           []chartMarker
	Empty            bool
	Shown, Total     int
	FirstSeq, LastSq int
}

type chartBand struct {
	Y, H  float64
	Class string
	Label string
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
}

type chartMarker struct {
	X     float64
	Title string
}

// newChart lays out the assessments (oldest first) against the policy's
// bands. Failed assessments sit on the x axis as crosses; gates are
// vertical markers after the assessment that opened them.
func newChart(p overseer.Policy, as []overseer.Assessment, gates []overseer.Gate, total int) chart {
	c := chart{W: 760, H: 250, Left: 48, Top: 12, Shown: len(as), Total: total}
	c.PlotW, c.PlotH = c.W-c.Left-16, c.H-c.Top-56
	y := func(v float64) float64 { return c.Top + (1-clamp01(v))*c.PlotH }
	c.Bands = []chartBand{
		{Y: y(1), H: y(p.OnTrackAt) - y(1), Class: "on_track", Label: "On track"},
		{Y: y(p.OnTrackAt), H: y(p.NeedsALookAt) - y(p.OnTrackAt), Class: "needs_a_look", Label: "Needs a look"},
		{Y: y(p.NeedsALookAt), H: y(0) - y(p.NeedsALookAt), Class: "off_track", Label: "Off track"},
	}
	c.PauseY = y(p.PauseAtOrBelow)
	c.PauseLabel = fmt.Sprintf("manage mode pauses at ≤ %.2f", p.PauseAtOrBelow)
	for _, v := range []float64{0, p.PauseAtOrBelow, p.NeedsALookAt, p.OnTrackAt, 1} {
		c.YTicks = append(c.YTicks, chartTick{X: c.Left - 6, Y: y(v), Label: fmt.Sprintf("%.2f", v)})
	}
	if len(as) == 0 {
		c.Empty = true
		return c
	}
	c.FirstSeq, c.LastSq = as[0].Seq, as[len(as)-1].Seq
	step := c.PlotW / float64(len(as))
	x := func(i int) float64 { return c.Left + (float64(i)+0.5)*step }
	labelEvery := 1 + len(as)/24
	var line []string
	for i, a := range as {
		pt := chartPoint{X: x(i)}
		if a.Verdict == nil {
			pt.Y, pt.Failed, pt.Class = y(0), true, "failed"
			pt.Title = fmt.Sprintf("#%d %s: the judge failed: %s", a.Seq, a.Phase, a.Error)
		} else {
			pt.Y, pt.Class, pt.Flagged = y(a.Verdict.OnObjective), string(a.Verdict.Band), a.Verdict.Flagged
			pt.Title = fmt.Sprintf("#%d %s: P(on objective) %.2f, %s", a.Seq, a.Phase, a.Verdict.OnObjective, a.Verdict.Band)
			if pt.Flagged {
				pt.Title += " — flagged: " + a.Verdict.Reason
			}
			line = append(line, fmt.Sprintf("%.1f,%.1f", pt.X, pt.Y))
		}
		c.Points = append(c.Points, pt)
		if i%labelEvery == 0 {
			c.XTicks = append(c.XTicks, chartTick{X: pt.X, Y: c.Top + c.PlotH + 14, Label: a.Phase})
		}
	}
	c.Line = strings.Join(line, " ")
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
		if g.ResumedAt != nil {
			title += fmt.Sprintf(" — %s by %s", g.Action, g.By)
		}
		c.Pauses = append(c.Pauses, chartMarker{X: x(at) + step/2, Title: title})
	}
	return c
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
