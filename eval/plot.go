package eval

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// rocCurve is the ROC of answers P(on objective), failed runs positive:
// flagging "P ≤ t" for every t, from the lowest P up.
func rocCurve(p []float64, failed []bool) plotter.XYs {
	idx := make([]int, len(p))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return p[idx[a]] < p[idx[b]] })
	var pos, neg float64
	for _, f := range failed {
		if f {
			pos++
		} else {
			neg++
		}
	}
	pts := plotter.XYs{{X: 0, Y: 0}}
	var tp, fp float64
	for i := 0; i < len(idx); {
		j := i
		for j < len(idx) && p[idx[j]] == p[idx[i]] {
			if failed[idx[j]] {
				tp++
			} else {
				fp++
			}
			j++
		}
		pts = append(pts, plotter.XY{X: fp / math.Max(1, neg), Y: tp / math.Max(1, pos)})
		i = j
	}
	return pts
}

// WritePlots writes roc.svg (the ROC after 10, 20 and 30 steps among the
// runs still running, and at 50 % of each run, dashed: it knows the run's
// length) and calibration.svg (the reliability diagram at 50 %) into dir.
func WritePlots(dir string, runs []ScoredRun, rep Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	roc := plot.New()
	roc.Title.Text = fmt.Sprintf("ROC, failed runs positive (%s)", rep.Model)
	roc.X.Label.Text = "share of succeeded runs flagged (false pauses)"
	roc.Y.Label.Text = "share of failed runs flagged (catches)"
	roc.X.Min, roc.X.Max, roc.Y.Min, roc.Y.Max = 0, 1, 0, 1
	roc.Add(dashedDiagonal())
	auroc := func(at string) Num {
		for _, c := range rep.Checkpoints {
			if c.At == at {
				return c.AUROC
			}
		}
		return Num(math.NaN())
	}
	// The runs still running after a number of steps, as a live judge
	// sees them; then half of each run, dashed: it knows the run's length.
	type curve struct {
		label  string
		answer func(ScoredRun) (float64, bool)
		dashed bool
	}
	var curves []curve
	for _, n := range CheckpointSteps[:3] {
		curves = append(curves, curve{fmt.Sprintf("after %d steps (runs still running): AUROC %s", n, auroc(fmt.Sprintf("%d steps", n))), afterSteps(n), false})
	}
	curves = append(curves, curve{fmt.Sprintf("50%% of the run (knows its length): AUROC %s", auroc("50%")), atFraction(0.5), true})
	for i, c := range curves {
		p, failed := answersOf(runs, c.answer)
		line, err := plotter.NewLine(rocCurve(p, failed))
		if err != nil {
			return err
		}
		line.Color = palette(i)
		line.Width = vg.Points(1.5)
		if c.dashed {
			line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		roc.Add(line)
		roc.Legend.Add(c.label, line)
	}
	roc.Legend.Top, roc.Legend.Left = false, false
	roc.Legend.XOffs, roc.Legend.YOffs = -vg.Points(5), vg.Points(5)
	if err := roc.Save(5*vg.Inch, 5*vg.Inch, filepath.Join(dir, "roc.svg")); err != nil {
		return err
	}

	cal := plot.New()
	cal.Title.Text = "Calibration at 50% of the run"
	cal.X.Label.Text = "P(on objective) answered"
	cal.Y.Label.Text = "share of those runs that succeeded"
	cal.X.Min, cal.X.Max, cal.Y.Min, cal.Y.Max = 0, 1, 0, 1
	cal.Add(dashedDiagonal())
	var pts plotter.XYs
	for _, c := range rep.Checkpoints {
		if c.At != "50%" {
			continue
		}
		for _, b := range c.Reliability {
			if b.Runs > 0 {
				pts = append(pts, plotter.XY{X: float64(b.Predicted), Y: float64(b.Observed)})
			}
		}
	}
	if len(pts) > 0 {
		lp, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		sc.Shape = draw.CircleGlyph{}
		cal.Add(lp, sc)
		cal.Legend.Add("judge", lp, sc)
	}
	cal.Legend.Top, cal.Legend.Left = true, true
	return cal.Save(5*vg.Inch, 5*vg.Inch, filepath.Join(dir, "calibration.svg"))
}

// dashedDiagonal is the chance line of a ROC and the ideal of a
// reliability diagram.
func dashedDiagonal() *plotter.Line {
	line, _ := plotter.NewLine(plotter.XYs{{X: 0, Y: 0}, {X: 1, Y: 1}}) // two finite points: no error
	line.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
	return line
}

func palette(i int) color.RGBA {
	colors := []color.RGBA{{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff}, {0xd6, 0x27, 0x28, 0xff}}
	return colors[i%len(colors)]
}
