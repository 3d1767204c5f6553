package worker

import (
	"testing"
	"time"
)

// SetMetricsReadTimeout shortens the metrics server's read timeout for one
// test.
func SetMetricsReadTimeout(t testing.TB, d time.Duration) {
	old := metricsReadTimeout
	metricsReadTimeout = d
	t.Cleanup(func() { metricsReadTimeout = old })
}
