package eval

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Resamples with nothing rescued or disrupted have no margin; they are not
// dropped, which would narrow the interval towards the resamples that had
// events: they sit at both ends, and an end among them is unknown.
func TestPercentileIntervalKeepsUndefinedResamples(t *testing.T) {
	vs := func() []float64 {
		out := make([]float64, 100)
		for i := range out {
			out[i] = float64(i+1) / 100
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		undefined int
		lo, hi    float64
	}{
		{"none undefined", 0, 0.03, 0.98},
		{"one undefined", 1, 0.03, 0.99},
		{"a tenth undefined", 11, math.NaN(), math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lo, hi := percentileInterval(vs(), tc.undefined)
			for _, x := range []struct {
				want float64
				got  Num
			}{{tc.lo, lo}, {tc.hi, hi}} {
				if math.IsNaN(x.want) {
					assert.True(t, math.IsNaN(float64(x.got)), "want unknown, got %v", x.got)
					continue
				}
				assert.InDelta(t, x.want, float64(x.got), 1e-9)
			}
		})
	}
}
