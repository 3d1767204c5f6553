package gotest_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/internal/gotest"
)

// The fixtures are `go test -json -race` of a small package whose TestRacy/sub
// races; in sdk_race.jsonl its race report is replaced by the one CI printed
// for the SDK's test environment (conformance tests, SDK v1.51.0).
func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return string(b)
}

func events(t *testing.T, evs ...gotest.Event) string {
	t.Helper()
	var b strings.Builder
	for _, e := range evs {
		line, err := json.Marshal(e)
		require.NoError(t, err)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

func TestKnownRaceOnly(t *testing.T) {
	otherFailure := events(t,
		gotest.Event{Action: "output", Package: "racemod", Test: "TestOther", Output: "    x_test.go:3: boom\n"},
		gotest.Event{Action: "fail", Package: "racemod", Test: "TestOther"},
	)
	buildFailure := events(t,
		gotest.Event{Action: "output", Package: "racemod", Output: "FAIL\tracemod [build failed]\n"},
		gotest.Event{Action: "fail", Package: "racemod"},
	)
	passed := events(t,
		gotest.Event{Action: "pass", Package: "racemod", Test: "TestOK"},
		gotest.Event{Action: "pass", Package: "racemod"},
	)
	sdkRace := fixture(t, "sdk_race.jsonl")
	// The SDK's race reported after the package's tests ended.
	raceOutsideTests := strings.ReplaceAll(strings.ReplaceAll(sdkRace, `"Test":"TestRacy/sub",`, ""), `"Test":"TestRacy",`, "")
	tests := []struct {
		name   string
		input  string
		reruns []gotest.Rerun
		why    string
	}{
		{name: "the SDK's race only", input: sdkRace, reruns: []gotest.Rerun{{Package: "racemod", Tests: []string{"TestRacy"}}}},
		{name: "another race", input: fixture(t, "other_race.jsonl"), why: "racemod has a data race that is not the SDK test environment's known one"},
		{name: "the SDK's race and a failed assertion", input: strings.Replace(sdkRace, `{"Time"`, strings.TrimSuffix(otherFailure, "\n")+"\n"+`{"Time"`, 1), why: "racemod: TestOther failed for a reason other than the data race"},
		{name: "a build failure", input: buildFailure, why: "racemod failed without a data race"},
		{name: "the SDK's race outside a test", input: raceOutsideTests, why: "racemod failed outside its tests"},
		{name: "a passing run", input: passed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run, err := gotest.Read(strings.NewReader(tt.input), &bytes.Buffer{}, false)
			require.NoError(t, err)
			reruns, why := run.KnownRaceOnly()
			assert.Equal(t, tt.reruns, reruns)
			if tt.why == "" {
				assert.Empty(t, why)
			} else {
				assert.Contains(t, why, tt.why)
			}
		})
	}
}

func TestReadWritesWhatGoTestWould(t *testing.T) {
	input := fixture(t, "sdk_race.jsonl")
	var quiet, verbose bytes.Buffer
	_, err := gotest.Read(strings.NewReader(input+"not an event\n"), &quiet, false)
	require.NoError(t, err)
	_, err = gotest.Read(strings.NewReader(input), &verbose, true)
	require.NoError(t, err)

	assert.Contains(t, verbose.String(), "=== RUN   TestOK\n")
	assert.NotContains(t, quiet.String(), "TestOK", "a passing test's output is written only when verbose")
	for _, out := range []string{quiet.String(), verbose.String()} {
		assert.Contains(t, out, "WARNING: DATA RACE\n")
		assert.Contains(t, out, "race detected during execution of test\n")
		assert.Contains(t, out, "--- FAIL: TestRacy/sub")
		assert.Contains(t, out, "FAIL\tracemod")
	}
	assert.Contains(t, quiet.String(), "not an event\n", "a line that is not an event is copied")
}

func TestRunPatternMatchesExactlyTheTopLevelTests(t *testing.T) {
	assert.Equal(t, `^(TestA|TestB\.x)$`, gotest.Rerun{Tests: []string{"TestA", "TestB.x"}}.RunPattern())
}
