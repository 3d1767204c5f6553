package jevhttp_test

import (
	"testing"

	"github.com/corohq/temporal-overseer/overseer/jev/jevhttp"
	"github.com/corohq/temporal-overseer/testsuite/judgetest"
)

// FuzzParseResponse feeds arbitrary bodies to the response parser (seed
// corpus in testdata/fuzz/FuzzParseResponse); judgetest.CheckParsed holds
// the parser to its contract on each.
func FuzzParseResponse(f *testing.F) {
	req := judgetest.BoundaryRequest()
	f.Fuzz(func(t *testing.T, body []byte) {
		resp, err := jevhttp.ParseResponse(req, body)
		judgetest.CheckParsed(t, req, resp, err)
	})
}
