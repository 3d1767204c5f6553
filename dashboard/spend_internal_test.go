package dashboard

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestShortCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 950: "950", 2400: "2.4k", 9_500: "9.5k", 701_644: "702k", 1_926_716: "1.93M"} {
		assert.Equal(t, want, shortCount(n), "%d", n)
	}
}
