// Command gotest is the repository's test command: `go test -json` with the
// given flags and packages, its output written as go test writes it, and
// the tests that failed only on the Temporal Go SDK's known test-environment
// data race (package gotest) run once more. It says so, naming the tests
// and the race; any other failure fails as it would have.
//
//	go run ./internal/gotest/cmd/gotest [go test flags] -- packages...
//
// GO names the go command (default "go").
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"

	"github.com/corohq/temporal-overseer/internal/gotest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	sep := slices.Index(args, "--")
	if sep < 0 {
		fmt.Fprintln(stderr, "gotest: put -- between go test's flags and the packages, e.g. gotest -race -- ./...")
		return 2
	}
	flags, pkgs := args[:sep], args[sep+1:]
	verbose := slices.Contains(flags, "-v") || slices.Contains(flags, "-v=true")
	first, code := goTest(ctx, append(slices.Clone(flags), pkgs...), stdout, stderr, verbose)
	if code == 0 || first == nil { // first is nil when go test could not be run
		return code
	}
	reruns, why := first.KnownRaceOnly()
	if len(reruns) == 0 {
		if why != "" {
			fmt.Fprintf(stdout, "gotest: not rerun: %s\n", why)
		}
		return code
	}
	fmt.Fprintf(stdout, "gotest: these tests failed only on the Temporal Go SDK test environment's known data race (%s against %s: stopping a plugin worker puts the registry back while an activity that is starting reads it unlocked); running them once more:\n",
		gotest.KnownRace[0], gotest.KnownRace[1])
	for _, r := range reruns {
		fmt.Fprintf(stdout, "gotest:   %s -run '%s'\n", r.Package, r.RunPattern())
	}
	for _, r := range reruns {
		args := append(slices.Clone(flags), "-run", r.RunPattern(), r.Package)
		if _, code := goTest(ctx, args, stdout, stderr, verbose); code != 0 {
			fmt.Fprintf(stdout, "gotest: %s failed again on its rerun\n", r.Package)
			return code
		}
	}
	fmt.Fprintln(stdout, "gotest: the rerun passed")
	return 0
}

// goTest runs `go test -json args` and returns what it said and its exit
// code (1 when it could not be run).
func goTest(ctx context.Context, args []string, stdout, stderr io.Writer, verbose bool) (*gotest.Run, int) {
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.CommandContext(ctx, goCmd, append([]string{"test", "-json"}, args...)...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "gotest: %v\n", err)
		return nil, 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "gotest: %v\n", err)
		return nil, 1
	}
	run, readErr := gotest.Read(out, stdout, verbose)
	err = cmd.Wait()
	if readErr != nil {
		fmt.Fprintf(stderr, "gotest: reading go test's output: %v\n", readErr)
		return run, 1
	}
	if err != nil {
		if exit, ok := err.(*exec.ExitError); ok && exit.ExitCode() > 0 {
			return run, exit.ExitCode()
		}
		fmt.Fprintf(stderr, "gotest: %v\n", err)
		return run, 1
	}
	return run, 0
}
