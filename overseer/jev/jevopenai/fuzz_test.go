package jevopenai_test

import (
	"testing"

	"github.com/corohq/temporal-overseer/overseer/jev/jevopenai"
	"github.com/corohq/temporal-overseer/testsuite/judgetest"
)

// FuzzParseCompletion feeds arbitrary chat-completions bodies to the parser
// (seed corpus in testdata/fuzz/FuzzParseCompletion); judgetest.CheckParsed
// holds the parser to its contract on each.
func FuzzParseCompletion(f *testing.F) {
	req := judgetest.BoundaryRequest()
	f.Fuzz(func(t *testing.T, body []byte) {
		resp, err := jevopenai.ParseCompletion(req, body)
		judgetest.CheckParsed(t, req, resp, err)
	})
}
