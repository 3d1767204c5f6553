// Package gotest reads the events of `go test -json` and tells whether a
// failed run failed only on one known data race inside the Temporal Go
// SDK's test environment, so that the test command can rerun those tests
// once instead of failing CI on a race that is not this repository's.
//
// The race (go.temporal.io/sdk v1.51.0, the newest served): when a workflow
// ends in the test environment while an activity it scheduled is still
// starting, ExecuteWorkflow's deferred stopPluginWorker puts the registry
// back (snapshotRegistry's closure, under the registry's lock) while the
// activity's goroutine compares against registry.dynamicActivity without
// it (newTestActivityTaskHandler's getActivity). Any test that runs a
// worker plugin in the test environment and lets a workflow end with an
// activity pending can hit it.
//
// Anything else is a failure: a race with any other stack, a failed test
// without the race detector's line, a package that fails outside its
// tests (build error, panic, timeout).
package gotest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// Event is one line of `go test -json` (cmd/test2json).
type Event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// KnownRace names the SDK's race: both stacks a race report must show.
var KnownRace = []string{
	"(*testWorkflowEnvironmentImpl).snapshotRegistry.func1",
	"(*testWorkflowEnvironmentImpl).newTestActivityTaskHandler.func1",
}

const (
	raceStart   = "WARNING: DATA RACE"
	raceEnd     = "=================="
	raceInTest  = "race detected during execution of test"
	topLevelSep = "/"
)

// Run is what one `go test -json` run said, collected by [Read].
type Run struct {
	failedPackages []string
	// failedTests by package, in the order they failed.
	failedTests map[string][]string
	output      map[key][]string
	races       map[string][]string // by package: each race report's text
}

type key struct{ pkg, test string }

// Read copies each event's output to w (all of it when verbose, else the
// packages' own lines and the output of tests that failed) and collects
// what [Run.KnownRaceOnly] needs. A line that is not an event is copied
// as it is.
func Read(r io.Reader, w io.Writer, verbose bool) (*Run, error) {
	run := &Run{failedTests: map[string][]string{}, output: map[key][]string{}, races: map[string][]string{}}
	inRace := map[string]*strings.Builder{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<24)
	for sc.Scan() {
		line := sc.Bytes()
		var e Event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintln(w, string(line))
			continue
		}
		k := key{e.Package, e.Test}
		if e.Output != "" {
			run.output[k] = append(run.output[k], e.Output)
			// Without -v, go test says nothing of a package that passed
			// but its "ok" line.
			if verbose || (e.Test == "" && e.Output != "PASS\n") {
				io.WriteString(w, e.Output)
			}
			out := strings.TrimRight(e.Output, "\n")
			if b := inRace[e.Package]; b != nil {
				if strings.HasPrefix(out, raceEnd) {
					run.races[e.Package] = append(run.races[e.Package], b.String())
					delete(inRace, e.Package)
				} else {
					b.WriteString(out + "\n")
				}
			} else if strings.HasPrefix(out, raceStart) {
				inRace[e.Package] = &strings.Builder{}
			}
		}
		if e.Action != "fail" {
			continue
		}
		if e.Test == "" {
			if !slices.Contains(run.failedPackages, e.Package) {
				run.failedPackages = append(run.failedPackages, e.Package)
			}
			continue
		}
		run.failedTests[e.Package] = append(run.failedTests[e.Package], e.Test)
		if !verbose {
			for _, o := range run.output[k] {
				io.WriteString(w, o)
			}
		}
	}
	// A race report cut off (a crash mid-report) is kept: it matches
	// nothing unless it shows both stacks.
	for pkg, b := range inRace {
		run.races[pkg] = append(run.races[pkg], b.String())
	}
	return run, sc.Err()
}

// Rerun is a package's tests to run once more, as top-level names.
type Rerun struct {
	Package string
	Tests   []string
}

// RunPattern is the -run pattern of exactly those top-level tests.
func (r Rerun) RunPattern() string {
	quoted := make([]string, len(r.Tests))
	for i, t := range r.Tests {
		quoted[i] = regexp.QuoteMeta(t)
	}
	return "^(" + strings.Join(quoted, "|") + ")$"
}

// KnownRaceOnly returns the tests to rerun when every failure of the run
// is the SDK's known race ([KnownRace]), and otherwise why not, in one
// sentence. A run with no failed package returns neither.
func (run *Run) KnownRaceOnly() ([]Rerun, string) {
	var reruns []Rerun
	for _, pkg := range run.failedPackages {
		races := run.races[pkg]
		if len(races) == 0 {
			return nil, fmt.Sprintf("%s failed without a data race", pkg)
		}
		for _, r := range races {
			if !matchesAll(r, KnownRace) {
				return nil, fmt.Sprintf("%s has a data race that is not the SDK test environment's known one:\n%s", pkg, firstLines(r, 12))
			}
		}
		tests := run.failedTests[pkg]
		if len(tests) == 0 {
			return nil, fmt.Sprintf("%s failed outside its tests (a build error, a panic or a timeout)", pkg)
		}
		var top []string
		for _, t := range tests {
			if hasFailedSubtest(tests, t) {
				continue // its own verdict follows from its subtests'
			}
			if !slices.ContainsFunc(run.output[key{pkg, t}], func(o string) bool { return strings.Contains(o, raceInTest) }) {
				return nil, fmt.Sprintf("%s: %s failed for a reason other than the data race", pkg, t)
			}
			name, _, _ := strings.Cut(t, topLevelSep)
			if !slices.Contains(top, name) {
				top = append(top, name)
			}
		}
		reruns = append(reruns, Rerun{Package: pkg, Tests: top})
	}
	return reruns, ""
}

func hasFailedSubtest(tests []string, t string) bool {
	return slices.ContainsFunc(tests, func(o string) bool { return strings.HasPrefix(o, t+topLevelSep) })
}

func matchesAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}
