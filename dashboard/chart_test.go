package dashboard_test

import (
	"fmt"
	"html"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
)

const (
	telemetryBasis = "telemetry sub-model: log_input_tokens_per_step, log_recent_output_tokens_per_step"
	abstainBasis   = "not assessed: the trajectory lacks the inputs of every sub-model (telemetry needs log_input_tokens_per_step)"
)

// judged is an assessment the policy makes of P (or of no P: p < 0 is
// an abstention).
func judged(pol overseer.Policy, seq int, p float64) overseer.Assessment {
	a := overseer.Answers{Breach: overseer.BreachNone, BreachConfidence: 0.9, OnObjective: p, Severity: 0.5, SeverityConfidence: 0.6,
		Blocked: 0.1, Basis: telemetryBasis}
	if p < 0 {
		a.OnObjective, a.OnObjectiveUnknown, a.Basis = 0, true, abstainBasis
	}
	v := pol.Evaluate(a)
	return overseer.Assessment{Seq: seq, Phase: fmt.Sprintf("phase-%d", seq), At: t0.Add(time.Duration(seq) * time.Minute),
		Answers: &a, Verdict: &v, Model: "learned-mini-swe-v2/telemetry", Latency: 40 * time.Microsecond}
}

// jobWith serves one running job whose assessments score ps under pol and
// returns its page.
func jobWith(t *testing.T, pol overseer.Policy, ps []float64, edit func(*overseer.Status)) string {
	t.Helper()
	st := overseer.Status{Mode: overseer.ModeManage, Phase: "code", Assessments: []overseer.Assessment{}}
	for i, p := range ps {
		a := judged(pol, i+1, p)
		st.Assessments = append(st.Assessments, a)
		st.Assessed, st.Band, st.OnObjective, st.Basis = true, a.Verdict.Band, a.Verdict.OnObjective, a.Answers.Basis
	}
	st.Counters.Assessments = len(ps)
	if edit != nil {
		edit(&st)
	}
	b := &fakeBackend{
		jobs:     []ops.Job{{ID: "job", RunID: "r1", Type: "CoroJob", State: "running", Started: t0}},
		statuses: map[string]overseer.Status{"job": st},
	}
	srv := newServer(t, b, dashboard.Options{Policy: pol})
	code, body := get(t, srv.Client(), srv.URL+"/job?id=job")
	require.Equal(t, http.StatusOK, code, body)
	return body
}

// box is a text's extent in the chart, estimated from its baseline and
// length for the chart's 11-unit font (generously: 6.4 units a character,
// 9 above the baseline and 3 below).
type box struct {
	text           string
	x0, y0, x1, y1 float64
}

func (a box) overlaps(b box) bool {
	return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1
}

var (
	labelText = regexp.MustCompile(`<text class="(zone-label|pause-label)( side)?" x="([0-9.]+)" y="([0-9.]+)">([^<]*)</text>`)
	yTickText = regexp.MustCompile(`<text class="tick y" x="([0-9.]+)" y="([0-9.]+)" text-anchor="end">([^<]*)</text>`)
	yRangeAt  = regexp.MustCompile(`data-y-min="([0-9.]+)" data-y-max="([0-9.]+)"`)
	viewBox   = regexp.MustCompile(`<svg class="chart" viewBox="0 0 ([0-9.]+) ([0-9.]+)"`)
)

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	require.NoError(t, err)
	return v
}

// chartText returns the boxes of the band and pause labels and of the y
// axis's tick labels, the axis's range and the chart's size.
func chartText(t *testing.T, body string) (labels, ticks []box, lo, hi, w, h float64) {
	t.Helper()
	for _, m := range labelText.FindAllStringSubmatch(body, -1) {
		x, y, s := num(t, m[3]), num(t, m[4]), html.UnescapeString(m[5])
		labels = append(labels, box{s, x, y - 9, x + 6.4*float64(utf8.RuneCountInString(s)), y + 3})
	}
	for _, m := range yTickText.FindAllStringSubmatch(body, -1) {
		x, y, s := num(t, m[1]), num(t, m[2]), m[3]
		ticks = append(ticks, box{s, x - 6.4*float64(len(s)), y - 9, x, y + 3})
	}
	r := yRangeAt.FindStringSubmatch(body)
	require.NotNil(t, r, "the chart states its axis range")
	v := viewBox.FindStringSubmatch(body)
	require.NotNil(t, v)
	return labels, ticks, num(t, r[1]), num(t, r[2]), num(t, v[1]), num(t, v[2])
}

func noOverlap(t *testing.T, what string, bs []box) {
	t.Helper()
	for i := range bs {
		for j := i + 1; j < len(bs); j++ {
			assert.False(t, bs[i].overlaps(bs[j]), "%s %q %v overlaps %q %v", what, bs[i].text, bs[i], bs[j].text, bs[j])
		}
	}
}

func TestChartScalesAndLabelsNeverOverlap(t *testing.T) {
	narrow := overseer.Policy{Name: "narrow", OnTrackAt: 0.697, NeedsALookAt: 0.677, PauseAtOrBelow: 0.676, BreachConfidence: 0.5,
		BreachSeverity: 1.5, MaxConsecutiveFailures: 3}
	together := narrow
	together.OnTrackAt, together.NeedsALookAt, together.PauseAtOrBelow = 0.5, 0.5, 0.5
	high := narrow
	high.OnTrackAt, high.NeedsALookAt, high.PauseAtOrBelow = 0.95, 0.93, 0.92
	pauseAbove := narrow
	pauseAbove.OnTrackAt, pauseAbove.NeedsALookAt, pauseAbove.PauseAtOrBelow = 0.7, 0.4, 0.8
	tests := []struct {
		name   string
		pol    overseer.Policy
		scores []float64
		// lo and hi bound the axis: it must start at or below lo and end
		// at or above hi; full says whether it may be 0–1.
		lo, hi float64
		full   bool
		// side are the band labels that do not fit in their band.
		side []string
	}{
		{"default learned, scores 0.64–0.70", overseer.DefaultLearnedPolicy(), []float64{0.64, 0.66, 0.70, 0.68, 0.65}, 0.655, 0.733, false, nil},
		{"default learned, scores 0.55–0.80", overseer.DefaultLearnedPolicy(), []float64{0.78, 0.74, 0.69, 0.61, 0.55, 0.80}, 0.55, 0.80, false, nil},
		{"default learned, no assessment", overseer.DefaultLearnedPolicy(), nil, 0.655, 0.733, false, nil},
		{"a 2-point band", narrow, []float64{0.72, 0.70, 0.69, 0.68}, 0.676, 0.72, false, []string{"Needs a look"}},
		{"direct 70/40", overseer.DefaultPolicy(), []float64{0.9, 0.8, 0.55, 0.3, 0.1}, 0.1, 0.9, true, nil},
		{"direct 70/40, high scores", overseer.DefaultPolicy(), []float64{0.9, 0.85}, 0.25, 0.9, true, nil},
		{"edges at one point", together, []float64{0.5, 0.5}, 0.5, 0.5, false, nil},
		{"edges near 1", high, []float64{0.96, 0.99, 0.97}, 0.92, 0.99, true, nil},
		{"pause above Needs a look", pauseAbove, []float64{0.75, 0.6}, 0.4, 0.8, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := jobWith(t, tt.pol, tt.scores, nil)
			labels, ticks, lo, hi, w, h := chartText(t, body)

			assert.LessOrEqual(t, lo, tt.lo+1e-9, "the axis starts at or below the lowest score and band edge")
			assert.GreaterOrEqual(t, hi, tt.hi-1e-9, "the axis reaches the highest score and OnTrackAt")
			assert.GreaterOrEqual(t, hi-lo, 0.2-1e-9, "at least 0.2 of P")
			if !tt.full {
				assert.False(t, lo == 0 && hi == 1, "the axis scales to where the scores live, not 0–1: %v–%v", lo, hi)
			}

			noOverlap(t, "label", labels)
			noOverlap(t, "tick", ticks)
			for _, b := range append(labels, ticks...) {
				assert.True(t, b.x0 >= 0 && b.x1 <= w && b.y0 >= 0 && b.y1 <= h, "%q %v lies within the chart (%v×%v)", b.text, b, w, h)
			}
			var pause int
			for _, l := range labels {
				if strings.HasPrefix(l.text, "pause ≤") {
					pause++
				}
			}
			assert.Equal(t, 1, pause, "the pause line is labelled")
			for _, s := range tt.side {
				assert.Regexp(t, `<text class="zone-label side" [^>]*>`+s+`</text>`, body, "%s goes beside the chart", s)
			}
			if len(tt.side) == 0 && tt.name != "edges at one point" {
				assert.NotContains(t, body, `class="zone-label side"`, "every band is tall enough for its label")
			}
		})
	}
}

func TestChartDefaultPolicyAxis(t *testing.T) {
	body := jobWith(t, overseer.DefaultLearnedPolicy(), []float64{0.64, 0.66, 0.70}, nil)
	_, ticks, lo, hi, _, _ := chartText(t, body)
	assert.Equal(t, []float64{0.55, 0.80}, []float64{lo, hi})
	var got []string
	for _, tk := range ticks {
		got = append(got, tk.text)
	}
	assert.Equal(t, []string{"0.80", "0.733", "0.655", "0.55"}, got, "the axis ends and the edges, the edge 0.001 above the pause threshold left out")
	for _, l := range []string{"On track", "Needs a look", "Off track"} {
		assert.Contains(t, body, `<text class="zone-label" `, l)
		assert.Contains(t, body, ">"+l+"</text>")
	}
}

var circle = regexp.MustCompile(`<circle class="point [^"]*" cx="[0-9.]+" cy="([0-9.]+)"`)

func TestNotAssessedIsNoPointAtZero(t *testing.T) {
	pol := overseer.DefaultLearnedPolicy()
	body := jobWith(t, pol, []float64{0.74, 0.72, -1, 0.70, 0.68}, nil)
	_, _, lo, _, _, _ := chartText(t, body)
	assert.NotZero(t, lo, "an abstention does not pull the axis down to 0")

	cs := circle.FindAllStringSubmatch(body, -1)
	assert.Len(t, cs, 4, "a point for each P, none for the abstention")
	assert.Equal(t, 1, strings.Count(body, `<g class="point unknown"`), "the abstention is a marker on the axis")
	assert.Contains(t, body, "#3 phase-3: not assessed (no P(on objective))")
	assert.Equal(t, 2, strings.Count(body, `<polyline class="trend"`), "the line breaks at the abstention")
	assert.Contains(t, body, "not assessed (no P)", "the legend names the marker")

	// The timeline: the abstention reads Not assessed, with no P and no
	// band colour.
	i := strings.Index(body, `<span class="seq">#3</span>`)
	require.Positive(t, i)
	entry := body[i : i+strings.Index(body[i:], "</li>")]
	assert.Contains(t, entry, `<span class="badge none">Not assessed</span>`)
	assert.NotContains(t, entry, "<b>0.00</b>")
	assert.NotRegexp(t, `badge (on_track|needs_a_look|off_track)`, entry)
	assert.Contains(t, entry, "not assessed: the judge abstained")
	assert.Contains(t, entry, "based on: not assessed: the trajectory lacks")
}

func TestLatestNotAssessed(t *testing.T) {
	body := jobWith(t, overseer.DefaultLearnedPolicy(), []float64{0.74, -1}, nil)
	i := strings.Index(body, `<section class="cards">`)
	require.Positive(t, i)
	cards := body[i : i+strings.Index(body[i:], "</section>")]
	assert.Contains(t, cards, `<span class="badge none">Not assessed</span>`)
	assert.NotContains(t, cards, "0%", "no P for a verdict without one")
	assert.Contains(t, cards, "not assessed")

	b := &fakeBackend{
		jobs: []ops.Job{{ID: "job", RunID: "r1", Type: "CoroJob", State: "running", Started: t0}},
		statuses: map[string]overseer.Status{"job": {Mode: overseer.ModeObserve, Assessed: true, Band: overseer.BandUnknown,
			Basis: abstainBasis, Phase: "code", Assessments: []overseer.Assessment{}}},
	}
	srv := newServer(t, b, dashboard.Options{})
	_, list := get(t, srv.Client(), srv.URL+"/")
	assert.Contains(t, list, `<span class="badge none">Not assessed</span>`)
	assert.Contains(t, list, `<span class="muted">not assessed</span>`)
	assert.NotContains(t, list, "svg class=\"bar\"", "no bar without a P")
}

func TestBasisIsShown(t *testing.T) {
	body := jobWith(t, overseer.DefaultLearnedPolicy(), []float64{0.74, 0.70}, nil)
	assert.Contains(t, body, `<p class="basis" data-basis><b>Latest verdict based on:</b> `+telemetryBasis+`</p>`)
	assert.Equal(t, 2, strings.Count(body, `<div class="basis sub">based on: `+telemetryBasis+`</div>`), "each assessment's basis")
	assert.Contains(t, body, `<tr><th>basis</th><td>`+telemetryBasis+`</td></tr>`)
	assert.Contains(t, body, "based on "+telemetryBasis, "in the chart point's title")

	b := newBackend()
	st := b.statuses["job-off"]
	st.Basis = telemetryBasis
	b.statuses["job-off"] = st
	srv := newServer(t, b, dashboard.Options{})
	_, list := get(t, srv.Client(), srv.URL+"/")
	assert.Contains(t, list, `title="based on: `+telemetryBasis+`"`, "the row's tooltip")
	assert.Contains(t, list, `<div class="sub basis">telemetry sub-model</div>`, "the row's small line")
}

// TestAPausedJobLeadsWithWhyAndNeverReadsOnTrack: a job a breach rule
// paused while its P was high shows why it is paused first, then the band
// overseer.PausedBand gives (Needs a look, not On track) with its last P,
// on its page and in the list.
func TestAPausedJobLeadsWithWhyAndNeverReadsOnTrack(t *testing.T) {
	pol := overseer.DefaultLearnedPolicy()
	since := t0.Add(time.Hour)
	body := jobWith(t, pol, []float64{0.78, 0.76}, func(st *overseer.Status) {
		st.Paused, st.GateID, st.PausedSince, st.PauseReason = true, "code-1", &since, "obligation[2] appears unmet"
		st.Gates = []overseer.Gate{{ID: "code-1", Phase: "phase-2", Reason: "obligation[2] appears unmet", PausedAt: since,
			Evidence: []string{"test ran 4 times in the last 8 phase runs, each time with failed tool calls"}}}
	})
	i := strings.Index(body, `<section class="cards">`)
	require.Positive(t, i)
	cards := body[i : i+strings.Index(body[i:], "</section>")]
	assert.Contains(t, cards, `<span class="badge paused">Paused</span></div><div class="sub why" data-why>test ran 4 times in the last 8 phase runs, each time with failed tool calls</div>`,
		"why it is paused, first")
	assert.NotContains(t, cards, `badge on_track`, "no band badge beside Paused")
	assert.NotContains(t, cards, "On track", "a paused job never reads as all is well")
	assert.Contains(t, cards, "Needs a look; the last assessment said 76%")

	srv := newServer(t, newBackend(), dashboard.Options{})
	_, list := get(t, srv.Client(), srv.URL+"/")
	assert.Contains(t, list, `<span class="badge paused">Paused</span><div class="sub why" data-why>obligation[2] appears unmet</div><div class="sub last">Needs a look; the last assessment said 56%</div>`)
}

func TestPolicyPromiseIsShown(t *testing.T) {
	body := jobWith(t, overseer.DefaultLearnedPolicy(), []float64{0.7}, nil)
	assert.Contains(t, body, `<span data-promise>`+html.EscapeString(overseer.DefaultLearnedPolicy().Promise.String())+`</span>`)
	assert.Contains(t, body, "pauses at most 5.0% of succeeded runs")

	body = jobWith(t, overseer.DefaultPolicy(), []float64{0.7}, nil)
	assert.Contains(t, body, "<b>Policy:</b> default thresholds")
	assert.Contains(t, body, "no false-pause promise")
}

func TestStageAndStandingAreShown(t *testing.T) {
	const basis = telemetryBasis + "; stage 1: recalibrated (intercept) on 34 CoroJob jobs; lower than 92% of the last 34 CoroJob jobs at this point"
	b := newBackend()
	st := b.statuses["job-off"]
	st.Basis = basis
	b.statuses["job-off"] = st
	srv := newServer(t, b, dashboard.Options{})
	_, list := get(t, srv.Client(), srv.URL+"/")
	assert.Contains(t, list, `<div class="sub basis">telemetry sub-model, stage 1</div>`, "the row names the stage")
	assert.Contains(t, list, `<div class="sub standing" data-standing>lower than 92% of the last 34 CoroJob jobs at this point</div>`)
	_, page := get(t, srv.Client(), srv.URL+"/job?id=job-off")
	assert.Contains(t, page, `<p class="standing" data-standing><b>Among its type:</b> lower than 92% of the last 34 CoroJob jobs at this point</p>`)
}
