package cli

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// defaultWorkerMemoryLimit is the worker's soft memory limit when neither
// --memory-limit nor $GOMEMLIMIT gives one. Why a limit at all: the Go
// runtime returns freed memory to the system lazily, so without one a
// worker's resident memory stays near its busiest moment's heap doubled
// (its live heap at 2,000 jobs in flight was 50–110 MB, its anonymous
// memory about 190 MB). Why 200 MiB: twice the live heap seen there, so
// the collector does not run much more often; with the binary's own
// pages (about 60 MB resident) the process stays under 300 MB.
const defaultWorkerMemoryLimit = 200 << 20

// parseMemoryLimit reads a size: bytes, or a number with KiB, MiB or GiB;
// "0" is no limit.
func parseMemoryLimit(flag string) (int64, error) {
	s := strings.TrimSpace(flag)
	mult := int64(1)
	for suffix, m := range map[string]int64{"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30} {
		if strings.HasSuffix(s, suffix) {
			s, mult = strings.TrimSuffix(s, suffix), m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: --memory-limit %q: give a size such as 200MiB or 1GiB, or 0 for none", ErrUsage, flag)
	}
	return n * mult, nil
}

// setMemoryLimit sets the process's soft memory limit for a worker
// command (flag, else $GOMEMLIMIT untouched when set, else the default)
// and returns what restores the previous one (commands also run inside
// tests).
func setMemoryLimit(flag string) (func(), error) {
	limit := int64(defaultWorkerMemoryLimit)
	switch {
	case flag != "":
		n, err := parseMemoryLimit(flag)
		if err != nil {
			return nil, err
		}
		limit = n
	case os.Getenv("GOMEMLIMIT") != "":
		return func() {}, nil // the runtime read it at start
	}
	if limit == 0 {
		return func() {}, nil
	}
	prev := debug.SetMemoryLimit(limit)
	return func() { debug.SetMemoryLimit(prev) }, nil
}
