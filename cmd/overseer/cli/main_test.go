package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func runMain(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := Main(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestMainVersion(t *testing.T) {
	for _, arg := range []string{"--version", "version"} {
		code, out, _ := runMain(arg)
		assert.Equal(t, 0, code)
		assert.Regexp(t, `^overseer \S+.*go1\.\d+`, out) // a test binary records no dependencies
	}
}

func TestMainErrorsHaveOnePrefix(t *testing.T) {
	code, _, errOut := runMain("start", "--objective", "x", "--scenario", "on_track", "--mode", "bogus")
	assert.Equal(t, 2, code)
	assert.Equal(t, "overseer start: job spec: unknown mode \"bogus\": use off, observe or manage\n", errOut)

	code, _, errOut = runMain("worker", "--mode", "bogus")
	assert.Equal(t, 2, code)
	assert.Equal(t, 1, strings.Count(errOut, "overseer"), errOut)
	assert.NotContains(t, errOut, "usage:")
}
