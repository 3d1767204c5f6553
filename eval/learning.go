package eval

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// LearningWindow is one point of a prequential learning curve: a window of
// consecutive jobs of a stream, judged live by the model and policy in
// force when they started, before any of them was learned from.
type LearningWindow struct {
	Window int `json:"window"`
	// FirstJob and LastJob number the window's jobs in the stream, from 1.
	FirstJob  int `json:"first_job"`
	LastJob   int `json:"last_job"`
	Jobs      int `json:"jobs"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	// Stage is the calibration stage in force (overseer.StageUncalibrated …
	// overseer.StageRefit); Model the model version the jobs' assessments
	// name (the most common one).
	Stage int    `json:"stage"`
	Model string `json:"model"`
	// Bound is the share of succeeded jobs the policy in force promises
	// to pause at most, or the share of all jobs its pause budget allows;
	// zero when it has neither. Guarantee says which, in a sentence.
	Bound     float64 `json:"bound"`
	Guarantee string  `json:"guarantee"`
	// Online is the ranking after LeadSteps steps among the window's jobs
	// still running then, as a live judge sees them.
	Online Checkpoint `json:"online"`
	// MidRun holds the measures at 50 % of each job (Brier, BaseBrier,
	// AUROC), over the jobs assessed by then: a point that knows each
	// job's length, which no live judge does.
	MidRun Checkpoint `json:"mid_run"`
	// SucceededPaused counts the succeeded jobs paused at a gate (flagged,
	// in observe mode); FailedCaught the failed jobs that were.
	SucceededPaused int `json:"succeeded_paused"`
	FailedCaught    int `json:"failed_caught"`
	// Gates is the number of gates reviewers opened; ReviewerTime gates ×
	// the reviewer's delay.
	Gates        int           `json:"gates"`
	ReviewerTime time.Duration `json:"reviewer_time_ns"`
}

// MidRun is the checkpoint at 50 % of each run: the latest answer at or
// before half of its steps.
func MidRun(runs []ScoredRun) Checkpoint {
	c := checkpoint("50%", runs, atFraction(0.5))
	c.KnowsLength = true
	return c
}

// PausedShare is the share of the window's succeeded jobs paused.
func (w LearningWindow) PausedShare() float64 { return ratio(w.SucceededPaused, w.Succeeded) }

// CaughtShare is the share of the window's failed jobs caught.
func (w LearningWindow) CaughtShare() float64 { return ratio(w.FailedCaught, w.Failed) }

var learningColumns = []string{"window", "first_job", "last_job", "jobs", "succeeded", "failed", "stage", "model",
	"bound", "assessed_at_mid_run", "brier_50", "base_brier_50", "auroc_50", "succeeded_paused", "succeeded_paused_share",
	"failed_caught", "failed_caught_share", "gates", "reviewer_seconds", fmt.Sprintf("assessed_after_%d_steps", LeadSteps), fmt.Sprintf("auroc_%d_steps", LeadSteps)}

// WriteLearningCurveCSV writes the windows as CSV, one row each, with a
// header; a measure without a value is empty.
func WriteLearningCurveCSV(w io.Writer, windows []LearningWindow) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(learningColumns); err != nil {
		return err
	}
	num := func(v float64) string {
		if math.IsNaN(v) {
			return ""
		}
		return strconv.FormatFloat(v, 'f', 4, 64)
	}
	for _, x := range windows {
		row := []string{strconv.Itoa(x.Window), strconv.Itoa(x.FirstJob), strconv.Itoa(x.LastJob), strconv.Itoa(x.Jobs),
			strconv.Itoa(x.Succeeded), strconv.Itoa(x.Failed), strconv.Itoa(x.Stage), x.Model, num(x.Bound),
			strconv.Itoa(x.MidRun.Runs), num(float64(x.MidRun.Brier)), num(float64(x.MidRun.BaseBrier)), num(float64(x.MidRun.AUROC)),
			strconv.Itoa(x.SucceededPaused), num(x.PausedShare()), strconv.Itoa(x.FailedCaught), num(x.CaughtShare()),
			strconv.Itoa(x.Gates), num(x.ReviewerTime.Seconds()), strconv.Itoa(x.Online.Runs), num(float64(x.Online.AUROC))}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteLearningCurveSVG plots the windows against the jobs seen: Brier at
// mid-run against the base-rate Brier, AUROC after LeadSteps steps among
// the jobs still running and at mid-run (which knows each job's length),
// the share of
// succeeded jobs paused against the bound in force and the share of failed
// jobs caught.
func WriteLearningCurveSVG(w io.Writer, title string, windows []LearningWindow) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "jobs seen (end of window)"
	p.Y.Label.Text = "measure of the window's jobs, judged before learning from them"
	p.Y.Min, p.Y.Max = 0, 1
	series := []struct {
		name   string
		value  func(LearningWindow) float64
		dashed bool
	}{
		{"Brier at mid-run", func(x LearningWindow) float64 { return float64(x.MidRun.Brier) }, false},
		{"base-rate Brier", func(x LearningWindow) float64 { return float64(x.MidRun.BaseBrier) }, true},
		{fmt.Sprintf("AUROC after %d steps (jobs still running)", LeadSteps), func(x LearningWindow) float64 { return float64(x.Online.AUROC) }, false},
		{"AUROC at mid-run (knows the job's length)", func(x LearningWindow) float64 { return float64(x.MidRun.AUROC) }, true},
		{"succeeded jobs paused", LearningWindow.PausedShare, false},
		{"bound in force", func(x LearningWindow) float64 { return x.Bound }, true},
		{"failed jobs caught", LearningWindow.CaughtShare, false},
	}
	colors := []int{0, 0, 1, 1, 3, 3, 2}
	for i, s := range series {
		var pts plotter.XYs
		for _, x := range windows {
			if v := s.value(x); !math.IsNaN(v) {
				pts = append(pts, plotter.XY{X: float64(x.LastJob), Y: v})
			}
		}
		if len(pts) == 0 {
			continue
		}
		lp, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		lp.Color, sc.Color = palette(colors[i]), palette(colors[i])
		lp.Width = vg.Points(1.5)
		sc.Shape = draw.CircleGlyph{}
		if s.dashed {
			lp.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			sc.Shape = draw.BoxGlyph{}
		}
		p.Add(lp, sc)
		p.Legend.Add(s.name, lp, sc)
	}
	for _, x := range windows {
		if x.Window > 1 && x.Stage != windows[x.Window-2].Stage {
			l, err := plotter.NewLine(plotter.XYs{{X: float64(x.FirstJob), Y: 0}, {X: float64(x.FirstJob), Y: 1}})
			if err != nil {
				return err
			}
			l.Dashes = []vg.Length{vg.Points(1), vg.Points(3)}
			p.Add(l)
		}
	}
	p.Legend.Top = true
	wt, err := p.WriterTo(7*vg.Inch, 4.5*vg.Inch, "svg")
	if err != nil {
		return fmt.Errorf("plot the learning curve: %w", err)
	}
	_, err = wt.WriteTo(w)
	return err
}
