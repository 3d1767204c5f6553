package dashboard

import (
	"testing"
	"time"
)

// SetReadTimeout shortens Serve's read timeout for one test.
func SetReadTimeout(t testing.TB, d time.Duration) {
	old := readTimeout
	readTimeout = d
	t.Cleanup(func() { readTimeout = old })
}

// SetWriteTimeout sets Serve's write timeout for one test.
func SetWriteTimeout(t testing.TB, d time.Duration) {
	old := writeTimeout
	writeTimeout = d
	t.Cleanup(func() { writeTimeout = old })
}
