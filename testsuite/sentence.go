package testsuite

import (
	"strings"
	"testing"
)

// OneSentence fails t unless msg reads as one sentence a person can act
// on: not empty, one line, no Go value printed raw (a map, a format
// error), no undefined number, no encoder's own message.
func OneSentence(t testing.TB, msg string) {
	t.Helper()
	if msg == "" {
		t.Errorf("an empty message where one sentence was due")
		return
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("more than one line: %q", msg)
	}
	for _, raw := range []string{"map[", "NaN", "Inf", "%!", "json: "} {
		if strings.Contains(msg, raw) {
			t.Errorf("%q shows %q to the reader", msg, raw)
		}
	}
}
