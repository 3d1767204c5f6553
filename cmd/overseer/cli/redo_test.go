package cli

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
)

func TestResumeRedoAndAbortAreRefusedTogether(t *testing.T) {
	var out bytes.Buffer
	err := (&Resume{}).Run(context.Background(), []string{"job-1", "--by", "ana", "--redo", "--abort", "--address", "127.0.0.1:1"}, &out)
	assert.ErrorIs(t, err, ErrUsage)
	assert.ErrorContains(t, err, "give --redo or --abort, not both")
}

// The status of a job paused at a gate says how many redos are left and
// the command; a gate redone shows as such, and the one after it holds the
// phase's second run.
func TestStatusTextSaysRedos(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	resumed := t0.Add(time.Hour)
	s := overseer.Status{Mode: overseer.ModeManage, Paused: true, PausedSince: &resumed, PauseReason: "off track", GateID: "code-2",
		MaxRedos: 2, Assessments: []overseer.Assessment{}, Counters: overseer.Counters{Pauses: 2, Resumes: 1, Redos: 1},
		Gates: []overseer.Gate{
			{ID: "code-1", Phase: "code", Reason: "off track", PausedAt: t0, ResumedAt: &resumed, By: "alice", Note: "tests first",
				Action: overseer.ActionRedo, Attempt: 1},
			{ID: "code-2", Phase: "code", Reason: "off track", PausedAt: resumed, Attempt: 2},
		}}
	var out bytes.Buffer
	writeStatus(&out, "job-1", s, "")
	text := out.String()
	assert.Regexp(t, `Redo\s+1 of 2 left \(overseer resume job-1 --gate code-2 --redo --by NAME --note TEXT runs code again\)`, text)
	assert.Contains(t, text, "1 resumes (1 redos)")
	assert.Contains(t, text, "redo by alice at 2026-11-30T11:00:00Z: tests first")
	assert.Contains(t, text, "holds run 2 of code (after 1 redo(s))")

	s.Gates[1].Attempt = 3
	out.Reset()
	writeStatus(&out, "job-1", s, "")
	assert.Regexp(t, `Redo\s+none left: code was redone 2 time\(s\), the most this job allows`, out.String())

	s.MaxRedos = -1
	out.Reset()
	writeStatus(&out, "job-1", s, "")
	assert.NotRegexp(t, `(?m)^Redo`, out.String(), "a job that cannot redo offers none")
}

// --max-redos reaches the plugin's options; left unset, the plugin's
// default applies.
func TestWorkerMaxRedosFlag(t *testing.T) {
	var cfg worker.Config
	require.NoError(t, (&workerFlags{maxRedos: -1}).applyGates(&cfg, func(string) string { return "" }))
	assert.Equal(t, -1, cfg.PluginOptions().MaxRedos)
	cfg = worker.Config{}
	require.NoError(t, (&workerFlags{}).applyGates(&cfg, func(string) string { return "" }))
	assert.Zero(t, cfg.PluginOptions().MaxRedos, "0: overseer.DefaultMaxRedos")
}
