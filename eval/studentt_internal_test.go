package eval

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The quantiles of Student's t are those of the printed tables.
func TestStudentTQuantile(t *testing.T) {
	tests := []struct {
		p    float64
		df   int
		want float64
	}{
		{0.95, 1, 6.314},
		{0.95, 4, 2.132},
		{0.95, 5, 2.015},
		{0.95, 13, 1.771},
		{0.95, 28, 1.701},
		{0.975, 4, 2.776},
		{0.99, 9, 2.821},
		{0.95, 1000, 1.646},
	}
	for _, tt := range tests {
		assert.InDelta(t, tt.want, studentTQuantile(tt.p, tt.df), 0.0015, "p %v, df %d", tt.p, tt.df)
	}
}
