package eval_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
)

// fuzzBytes reads small numbers from fuzz input, 0 once it runs out: a
// short input gives runs whose features are constant.
type fuzzBytes struct {
	b []byte
	i int
}

func (r *fuzzBytes) next(n int) int {
	if r.i >= len(r.b) || n <= 0 {
		return 0
	}
	r.i++
	return int(r.b[r.i-1]) % n
}

// fuzzRuns decodes runs from data: a unit, a run count (up to maxRuns),
// then per run its family (of 4), outcome and steps (up to 8), each with a
// phase ("" among them), failure and sizes. Runs may have no steps, as a
// job closed before its first phase exports.
func fuzzRuns(data []byte, maxRuns int) []eval.Record {
	r := &fuzzBytes{b: data}
	unit := eval.UnitStep
	if r.next(2) == 1 {
		unit = eval.UnitPhase
	}
	phases := []string{"read", "edit", "test", ""}
	n := 1 + r.next(maxRuns)
	out := make([]eval.Record, 0, n)
	for i := range n {
		rec := eval.Record{Format: eval.RecordFormat, ID: fmt.Sprintf("fam%d-%d", r.next(4), i), Unit: unit, Outcome: eval.OutcomeSucceeded}
		if r.next(2) == 1 {
			rec.Outcome = eval.OutcomeFailed
		}
		for range r.next(9) {
			s := eval.Step{Phase: phases[r.next(4)], Failed: r.next(3) == 0, OutputTokens: int64(50 * r.next(40)), InputTokens: int64(500 * r.next(40)),
				CostUSD: float64(r.next(10)) / 100, DurationMS: int64(1000 * r.next(30)), OutputMissing: r.next(8) == 0}
			if unit == eval.UnitPhase {
				if s.Phase == "" {
					s.Phase = "code"
				}
				s.Turns, s.Rework = r.next(6), r.next(3)
				if s.Failed {
					s.FailedTools = []string{"bash"}
				}
			}
			rec.Steps = append(rec.Steps, s)
		}
		out = append(out, rec)
	}
	return out
}

// The seeds every fit is fuzzed from: the degenerate inputs a learn round
// meets on another agent's runs.
var fuzzSeeds = [][]byte{
	// One outcome per family. Unit step, 9 runs; each run: family,
	// outcome (family 2 fails), 4 steps of phase, failed, output and
	// input tokens, cost, duration, output missing.
	func() []byte {
		b := []byte{0, 8}
		for i := range 9 {
			f := byte(i % 3)
			b = append(b, f, map[bool]byte{true: 1, false: 0}[f == 2], 4)
			for s := range 4 {
				b = append(b, byte(s%3), byte(1+s%2), byte(3+i+s), byte(5+i), byte(s), byte(2*i+s), 1)
			}
		}
		return b
	}(),
	// Constant features: every step alike, both outcomes in each family.
	func() []byte {
		b := []byte{0, 11}
		for i := range 12 {
			b = append(b, byte(i%4), byte(i/4%2), 5)
			for range 5 {
				b = append(b, 0, 1, 7, 7, 1, 3, 1)
			}
		}
		return b
	}(),
	// Empty phases: runs without steps, and steps without a phase.
	func() []byte {
		b := []byte{0, 11}
		for i := range 12 {
			b = append(b, byte(i%4), byte(i/4%2), byte(i%3))
			for s := range i % 3 {
				b = append(b, byte(3*(s%2)), byte(s), byte(i), byte(s), 0, 0, 1)
			}
		}
		return b
	}(),
	// A fold of one outcome: the largest family, the first outer fold,
	// is the only one that fails, so no sub-model trains without it.
	func() []byte {
		b := []byte{0, 12}
		for i := range 13 {
			f := byte([]int{2, 0, 1}[i%3])
			if i >= 12 {
				f = 2
			}
			b = append(b, f, map[bool]byte{true: 1, false: 0}[f == 2], 4)
			for s := range 4 {
				b = append(b, byte(s%3), byte(1+(i+s)%2), byte(3+i+s), byte(5+i), byte(s), byte(2*i+s), 1)
			}
		}
		return b
	}(),
	// A single run.
	{0, 0, 1, 0, 3, 0, 1, 4, 2, 1, 5, 1, 1, 0, 9, 3, 0, 2, 1},
	// Phase records (as exported from Temporal) of both outcomes.
	func() []byte {
		b := []byte{1, 11}
		for i := range 12 {
			b = append(b, byte(i%4), byte(i%3%2), byte(2+i%4))
			for s := range 2 + i%4 {
				b = append(b, byte(s%3), byte(i+s), byte(3*i+s), byte(i), byte(s), byte(i+2*s), byte(1+s), byte(i%6), byte(s%3))
			}
		}
		return b
	}(),
}

// refusal fails unless err is a refusal in one sentence wrapping one of
// sentinels.
func refusal(t *testing.T, err error, sentinels ...error) {
	t.Helper()
	msg := err.Error()
	wraps := false
	for _, s := range sentinels {
		wraps = wraps || errors.Is(err, s)
	}
	if !wraps {
		t.Fatalf("the refusal %q wraps none of %v", msg, sentinels)
	}
	if msg == "" || strings.Contains(msg, "\n") {
		t.Fatalf("the refusal %q is not one line", msg)
	}
	for _, raw := range []string{"map[", "NaN", "Inf", "%!", "json: "} {
		if strings.Contains(msg, raw) {
			t.Fatalf("the refusal %q says %q", msg, raw)
		}
	}
}

// allFinite fails when any float64 reachable from v is NaN or infinite.
func allFinite(t *testing.T, what string, v any) {
	t.Helper()
	var walk func(path string, x reflect.Value)
	walk = func(path string, x reflect.Value) {
		switch x.Kind() {
		case reflect.Float32, reflect.Float64:
			if f := x.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
				t.Fatalf("%s%s is %v", what, path, f)
			}
		case reflect.Pointer, reflect.Interface:
			if !x.IsNil() {
				walk(path, x.Elem())
			}
		case reflect.Struct:
			for i := range x.NumField() {
				if x.Type().Field(i).IsExported() {
					walk(path+"."+x.Type().Field(i).Name, x.Field(i))
				}
			}
		case reflect.Slice, reflect.Array:
			for i := range x.Len() {
				walk(fmt.Sprintf("%s[%d]", path, i), x.Index(i))
			}
		case reflect.Map:
			for _, k := range x.MapKeys() {
				walk(fmt.Sprintf("%s[%v]", path, k), x.MapIndex(k))
			}
		}
	}
	walk("", reflect.ValueOf(v))
}

// encodes fails unless model encodes, reads back and holds only finite
// numbers.
func encodes(t *testing.T, m *overseer.LearnedModel) {
	t.Helper()
	allFinite(t, "the model", m)
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatalf("the fitted model does not encode: %v", err)
	}
	if _, err := overseer.ParseLearnedModel(data); err != nil {
		t.Fatalf("the fitted model does not read back: %v", err)
	}
}

// Train on any runs either refuses in one sentence (wrapping ErrTrain) or
// returns a model whose file encodes with finite numbers, and figures and
// a policy calibrated on its out-of-fold runs that encode too.
func FuzzTrain(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		recs := fuzzRuns(data, 16)
		res, err := eval.Train(context.Background(), recs, eval.TrainOptions{})
		if err != nil {
			refusal(t, err, eval.ErrTrain)
			return
		}
		encodes(t, res.Model)
		for what, v := range map[string]any{"sub-models": res.SubModels, "fold models": res.FoldModels, "mean AUROC": res.MeanAUROC,
			"policy figures": res.CVByKind, "summary": res.Summary} {
			if _, err := json.Marshal(v); err != nil {
				t.Fatalf("the %s do not encode: %v", what, err)
			}
		}
		cal, err := eval.Calibrate(res.CalibrationRuns, 0.05, overseer.PromiseExpected)
		if err != nil {
			refusal(t, err, eval.ErrNoRuns, eval.ErrUncertifiable)
			return
		}
		if _, err := overseer.MarshalPolicy(cal.Policy, cal); err != nil {
			t.Fatalf("the calibrated policy does not encode: %v", err)
		}
	})
}

// Recalibrate (stage 1) on any runs, with the run counts lowered so that
// few runs reach the intercept, the slope and re-standardisation, either
// refuses in one sentence (wrapping ErrRecalibrate) or returns a model
// that encodes with finite numbers.
func FuzzRecalibrate(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		recs := fuzzRuns(data, 24)
		m, err := eval.Recalibrate(recs, overseer.DefaultLearnedModel(), eval.RecalibrateOptions{For: "CoroJob", MinRuns: 2, MinSlopeRuns: 2})
		if err != nil {
			refusal(t, err, eval.ErrRecalibrate)
			return
		}
		encodes(t, m)
	})
}

// The model's encoder, given a fitted model with any one number replaced
// by any float64 (NaN and the infinities among them), either encodes a
// file that reads back or refuses in one sentence wrapping
// overseer.ErrModel, never with the encoder's "unsupported value".
func FuzzModelEncoding(f *testing.F) {
	f.Add(uint8(0), math.Float64bits(math.NaN()))
	f.Add(uint8(1), math.Float64bits(math.Inf(1)))
	f.Add(uint8(2), math.Float64bits(math.Inf(-1)))
	f.Add(uint8(3), math.Float64bits(0))
	f.Add(uint8(4), math.Float64bits(-1))
	f.Add(uint8(5), math.Float64bits(math.NaN()))
	f.Add(uint8(6), math.Float64bits(0.5))
	fitted, err := eval.Recalibrate(familyRuns(5, 8, func(f int) bool { return f%2 == 0 }), overseer.DefaultLearnedModel(), eval.RecalibrateOptions{For: "CoroJob"})
	if err != nil {
		f.Fatal(err)
	}
	file, err := json.Marshal(fitted)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, field uint8, bits uint64) {
		v := math.Float64frombits(bits)
		m, err := overseer.ParseLearnedModel(file) // a copy to spoil
		if err != nil {
			t.Fatal(err)
		}
		sm := &m.SubModels[int(field/8)%len(m.SubModels)]
		switch field % 8 {
		case 0:
			sm.Features[0].Weight = v
		case 1:
			sm.Features[0].Mean = v
		case 2:
			sm.Features[0].Std = v
		case 3:
			sm.Intercept = v
		case 4:
			sm.Calibration.A = v
		case 5:
			sm.Calibration.B = v
		case 6:
			m.Recalibration.Restandardization.AUROCAsIs = v
		case 7:
			if m.Reference != nil {
				m.Reference.Points[0].Quantiles[0] = v
			}
		}
		data, err := json.Marshal(m)
		if err != nil {
			if !errors.Is(err, overseer.ErrModel) || strings.Contains(err.Error(), "unsupported value") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("the encoder refused with %q", err)
			}
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				t.Fatalf("the encoder refused the finite %v: %v", v, err)
			}
			return
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("the encoder wrote %v", v)
		}
		if _, err := overseer.ParseLearnedModel(data); err != nil {
			refusal(t, err, overseer.ErrModel)
		}
	})
}
