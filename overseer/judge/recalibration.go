package judge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
)

// The calibration stages of a workflow type: how far the learned judge has
// got with that type's own jobs. A verdict names its stage in its basis.
const (
	// StageUncalibrated: no closed jobs of the type were used yet; the
	// model answers as it learned from other runs (the shipped model's are
	// one agent's), so its P may be far off for this type.
	StageUncalibrated = 0
	// StageRecalibrated: each sub-model's probability map was refitted to
	// the type's closed jobs (its intercept from their success rate, its
	// slope too once there are enough of each outcome); the ranking is the
	// model's own.
	StageRecalibrated = 1
	// StageCertified: a pause policy's false-pause promise was certified
	// on the type's jobs.
	StageCertified = 2
	// StageRefit: the model itself was refitted on the type's jobs.
	StageRefit = 3
)

// Recalibration records how a model was recalibrated (stage 1) for one
// workflow type or agent.
type Recalibration struct {
	// For is the workflow type (or agent) whose runs it was fitted to.
	For string `json:"for"`
	// From is the version of the model that was recalibrated.
	From string `json:"from"`
	// Runs, Succeeded and Failed count the closed runs used.
	Runs      int `json:"runs"`
	Succeeded int `json:"succeeded"`
	Failed    int `json:"failed"`
	// SubModels says per sub-model what was refitted: "intercept" or
	// "intercept and slope", and on how many runs.
	SubModels []SubModelRecalibration `json:"sub_models"`
	// Restandardization is the cross-validated check of label-free feature
	// re-standardisation against these runs; nil in files written before
	// it.
	Restandardization *Restandardization `json:"restandardization,omitempty"`

	// legacyReference is the reference a file written before it moved to
	// [LearnedModel.Reference] kept here; parsing the model moves it.
	legacyReference *Reference
}

// UnmarshalJSON reads a recalibration as strictly as the model around it,
// and the reference files written before it moved to the model kept in it
// ("recalibration.reference"), so versions pinned by running jobs still
// load.
func (r *Recalibration) UnmarshalJSON(data []byte) error {
	type plain Recalibration
	var v struct {
		plain
		Reference *Reference `json:"reference"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return err
	}
	*r = Recalibration(v.plain)
	r.legacyReference = v.Reference
	return nil
}

// Restandardization is stage 1's check of re-standardising each
// sub-model's features against the type's own runs (their means and
// spreads, no labels), which changes how the weights read a type whose
// agent works at another scale. It is used only when it cross-validates
// better: a lower Brier score without a lower AUROC.
type Restandardization struct {
	// Chosen says the features were re-standardised.
	Chosen bool `json:"chosen"`
	// BrierAsIs and BrierRestandardized are the Brier scores at 50 % of
	// the held-out runs, pooled over Folds folds, of stage 1 with the
	// model's own standardisation and with the runs'; AUROCAsIs and
	// AUROCRestandardized their AUROCs there (failed runs positive), the
	// mean over the folds.
	BrierAsIs           float64 `json:"brier_as_is,omitempty"`
	BrierRestandardized float64 `json:"brier_restandardized,omitempty"`
	AUROCAsIs           float64 `json:"auroc_as_is,omitempty"`
	AUROCRestandardized float64 `json:"auroc_restandardized,omitempty"`
	Folds               int     `json:"folds"`
}

// SubModelRecalibration is what recalibration did to one sub-model.
type SubModelRecalibration struct {
	Name string `json:"name"`
	// Fitted is "intercept", "intercept and slope", or "none" when no run
	// reached the sub-model.
	Fitted    string `json:"fitted"`
	Runs      int    `json:"runs"`
	Succeeded int    `json:"succeeded"`
	Failed    int    `json:"failed"`
}

// Reference holds, per point of a run (its number of phase runs so far,
// bucketed), quantiles of the P(on objective) that recent closed runs of a
// type had there: one value per run and point, their latest. A learn round
// or `overseer recalibrate` stores it with the model version, so a run
// pinned to the version ranks its verdicts against the same figures on
// every worker and in every replay.
type Reference struct {
	Points []ReferencePoint `json:"points"`
}

// ReferencePoint is the reference at one bucket of phase runs.
type ReferencePoint struct {
	// FromPhaseRuns and ToPhaseRuns bound the bucket (inclusive; To 0: and
	// beyond).
	FromPhaseRuns int `json:"from_phase_runs"`
	ToPhaseRuns   int `json:"to_phase_runs,omitempty"`
	// Runs is how many runs the quantiles summarise; Failed how many of
	// them failed, nil in references built before it was kept.
	Runs   int  `json:"runs"`
	Failed *int `json:"failed,omitempty"`
	// Quantiles are P at 0 %, 5 %, … 100 % of the runs, ascending.
	Quantiles []float64 `json:"quantiles"`
}

// ReferenceBuckets are the buckets of phase runs a Reference is kept for:
// early points one by one, later ones in widening groups.
var ReferenceBuckets = [][2]int{{1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 6}, {7, 9}, {10, 14}, {15, 0}}

// referenceQuantiles is the number of quantiles a point keeps (every 5 %).
const referenceQuantiles = 21

// MinReferenceRuns is the fewest runs at a point below which a Reference
// keeps no quantiles there: a standing among fewer says little.
const MinReferenceRuns = 10

// bucketOf is the index of the bucket holding phaseRuns, or -1.
func bucketOf(phaseRuns int) int {
	for i, b := range ReferenceBuckets {
		if phaseRuns >= b[0] && (b[1] == 0 || phaseRuns <= b[1]) {
			return i
		}
	}
	return -1
}

// NewReference summarises the P(on objective) of runs at each point: perRun
// holds, for each run, its answers as (phase runs so far, P) pairs in
// order. Points with fewer than MinReferenceRuns runs are left out; nil
// when none is left.
func NewReference(perRun [][]PointP) *Reference {
	values := make([][]float64, len(ReferenceBuckets))
	failed := make([]int, len(ReferenceBuckets))
	for _, run := range perRun {
		last := make([]float64, len(ReferenceBuckets))
		seen := make([]bool, len(ReferenceBuckets))
		runFailed := false
		for _, pt := range run {
			runFailed = runFailed || pt.Failed
			if b := bucketOf(pt.PhaseRuns); b >= 0 {
				last[b], seen[b] = pt.P, true
			}
		}
		for b := range seen {
			if seen[b] {
				values[b] = append(values[b], last[b])
				if runFailed {
					failed[b]++
				}
			}
		}
	}
	ref := &Reference{}
	for b, vs := range values {
		if len(vs) < MinReferenceRuns {
			continue
		}
		slices.Sort(vs)
		q := make([]float64, referenceQuantiles)
		for i := range q {
			pos := float64(i) / float64(referenceQuantiles-1) * float64(len(vs)-1)
			lo := int(math.Floor(pos))
			hi := min(lo+1, len(vs)-1)
			q[i] = round4(vs[lo] + (pos-float64(lo))*(vs[hi]-vs[lo]))
		}
		ref.Points = append(ref.Points, ReferencePoint{FromPhaseRuns: ReferenceBuckets[b][0], ToPhaseRuns: ReferenceBuckets[b][1], Runs: len(vs),
			Failed: &failed[b], Quantiles: q})
	}
	if len(ref.Points) == 0 {
		return nil
	}
	return ref
}

// PointP is one answer of a run for [NewReference]; Failed says the run
// it is from failed.
type PointP struct {
	PhaseRuns int
	P         float64
	Failed    bool
}

func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// Standing is where a P(on objective) stands among the reference runs at
// the same point: Below is the share of them with a lower P (0…1), Runs
// how many there were.
type Standing struct {
	Below float64 `json:"below"`
	Runs  int     `json:"runs"`
	// Failed is how many of the Runs failed; nil when the reference does
	// not say.
	Failed *int `json:"failed,omitempty"`
}

// Standing places p at phaseRuns among the reference's runs; false when
// the reference has no figures for that point.
func (r *Reference) Standing(phaseRuns int, p float64) (Standing, bool) {
	if r == nil {
		return Standing{}, false
	}
	b := bucketOf(phaseRuns)
	if b < 0 {
		return Standing{}, false
	}
	for _, pt := range r.Points {
		if pt.FromPhaseRuns != ReferenceBuckets[b][0] {
			continue
		}
		return Standing{Below: cdf(pt.Quantiles, p), Runs: pt.Runs, Failed: pt.Failed}, true
	}
	return Standing{}, false
}

// cdf is the share of the distribution summarised by its evenly spaced
// quantiles q that lies below p, interpolated between quantiles.
func cdf(q []float64, p float64) float64 {
	n := len(q)
	if n == 0 || p <= q[0] {
		return 0
	}
	if p > q[n-1] {
		return 1
	}
	for i := 1; i < n; i++ {
		if p <= q[i] {
			frac := 1.0
			if q[i] > q[i-1] {
				frac = (p - q[i-1]) / (q[i] - q[i-1])
			}
			return (float64(i-1) + frac) / float64(n-1)
		}
	}
	return 1
}

// Sentence says the standing in words, e.g. "lower than 92% of the last
// 200 CoroJob jobs at this point".
//
// It says what the reference holds: a job ranked only against jobs that
// all succeeded (the point only they reached) reads low without being a
// warning, so the sentence says so ("…, all 20 of which succeeded").
func (s Standing) Sentence(of string) string {
	if of == "" {
		of = "reference"
	}
	var out string
	if s.Below < 0.5 {
		out = fmt.Sprintf("lower than %.0f%% of the last %d %s jobs at this point", 100*(1-s.Below), s.Runs, of)
	} else {
		out = fmt.Sprintf("higher than %.0f%% of the last %d %s jobs at this point", 100*s.Below, s.Runs, of)
	}
	if s.Failed == nil {
		return out
	}
	switch f := *s.Failed; {
	case f == 0:
		out += fmt.Sprintf(", all %d of which succeeded", s.Runs)
	case f == s.Runs:
		out += fmt.Sprintf(", all %d of which failed", s.Runs)
	default:
		out += fmt.Sprintf(", %d of which succeeded", s.Runs-f)
	}
	return out
}

// Stage is the model's calibration stage for the runs it answers for:
// StageRecalibrated when it carries a recalibration, StageRefit when it
// was fitted on the type's own runs (a learn round's candidate: its
// training summary names the type), else StageUncalibrated.
func (m *LearnedModel) Stage() int {
	if m.Recalibration != nil {
		return StageRecalibrated
	}
	if m.trainedFor() != "" {
		return StageRefit
	}
	return StageUncalibrated
}

// trainedFor is the workflow type the model's training summary names, ""
// when it names none (a model trained on imported runs, the shipped one).
func (m *LearnedModel) trainedFor() string {
	var t struct {
		WorkflowType string `json:"workflow_type"`
	}
	if len(m.Training) == 0 || json.Unmarshal(m.Training, &t) != nil {
		return ""
	}
	return t.WorkflowType
}

// StageSentence says the model's stage in a few words, for a verdict's
// basis: "stage 1: recalibrated (intercept and slope) on 34 CoroJob jobs",
// "stage 0: not calibrated for CoroJob (learned from other runs)". The
// workflow type is the job's ("" when unknown: "this workflow type").
func (m *LearnedModel) StageSentence(subModel, workflowType string) string {
	if r := m.Recalibration; r != nil {
		fitted := "intercept"
		for _, s := range r.SubModels {
			if s.Name == subModel {
				fitted = s.Fitted
			}
		}
		if r.Restandardization != nil && r.Restandardization.Chosen {
			fitted += ", features re-standardised"
		}
		return fmt.Sprintf("stage 1: recalibrated (%s) on %d %s jobs", fitted, r.Runs, r.For)
	}
	if t := m.trainedFor(); t != "" {
		return "stage 3: refitted on " + t + " jobs"
	}
	if workflowType == "" {
		workflowType = "this workflow type"
	}
	return "stage 0: not calibrated for " + workflowType + " (learned from other runs)"
}

// StagedBasis is a verdict's basis with the stage the run's policy gives
// it: a recalibrated model (stage 1) whose pause policy carries a
// certified false-pause promise is at stage 2, as `overseer learn status`
// and the Models page say (learn.StageOf). The judge knows only its model;
// the run knows its pinned policy, so the run names the stage.
func StagedBasis(basis string, p Policy) string {
	const recalibrated = "stage 1: recalibrated"
	if !p.Promise.Certified() || !strings.Contains(basis, recalibrated) {
		return basis
	}
	head, rest, _ := strings.Cut(basis, recalibrated)
	part, tail, found := strings.Cut(rest, "; ")
	out := head + "stage 2: recalibrated" + part + ", with a certified pause policy"
	if found {
		out += "; " + tail
	}
	return out
}

// validate reports the first problem of the recalibration in one sentence.
func (r *Recalibration) validate(m *LearnedModel) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: recalibration: %s", ErrModel, fmt.Sprintf(format, args...))
	}
	if strings.TrimSpace(r.For) == "" || r.From == "" {
		return bad("for and from must be set")
	}
	if r.Runs <= 0 || r.Succeeded+r.Failed != r.Runs {
		return bad("runs must be the succeeded and failed runs")
	}
	return nil
}

// validate reports the first problem of the reference in one sentence.
func (r *Reference) validate() error {
	for _, p := range r.Points {
		if len(p.Quantiles) != referenceQuantiles || !slices.IsSorted(p.Quantiles) || p.Runs <= 0 {
			return fmt.Errorf("%w: reference point at %d phase runs needs %d ascending quantiles and its runs", ErrModel, p.FromPhaseRuns, referenceQuantiles)
		}
	}
	return nil
}

// referenceFor names the jobs the model's reference summarises when the
// judge is not told the job's type: the recalibration's or the refit's.
func (m *LearnedModel) referenceFor() string {
	if r := m.Recalibration; r != nil {
		return r.For
	}
	return m.trainedFor()
}

// ShortBasis is a learned verdict's basis in a few words, what answered
// and its stage ("telemetry sub-model, stage 1"), for a list or one line;
// any other basis up to its first colon.
func ShortBasis(basis string) string {
	name, _, _ := strings.Cut(basis, ":")
	if _, rest, ok := strings.Cut(basis, "; stage "); ok {
		n, _, _ := strings.Cut(rest, ":")
		name += ", stage " + n
	}
	return name
}

// StandingOf is the relative verdict a learned verdict's basis carries
// ("lower than 92% of the last 200 CoroJob jobs at this point"), "" when
// it carries none.
func StandingOf(basis string) string {
	for _, part := range strings.Split(basis, "; ") {
		if strings.HasPrefix(part, "lower than ") || strings.HasPrefix(part, "higher than ") {
			return part
		}
	}
	return ""
}
