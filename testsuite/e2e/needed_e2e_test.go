package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/learn"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// overseer resume --not-needed carries the reviewer's judgement through
// the update: the resume and the status say it, and the export's gate
// decision is a false pause on the job that then delivered.
func TestE2EResumeNotNeededIsAFalsePauseInTheExport(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{})
	run := startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	eventually(t, "the looping job to pause", 30*time.Second, func() bool { return status(t, c, run.GetID()).Paused })

	code, _, stderr := overseerCLI(srv, "resume", run.GetID(), "--by", "ana", "--needed", "--not-needed")
	require.Equal(t, 2, code, "a usage error")
	assert.Contains(t, stderr, "give --needed or --not-needed, not both")

	code, stdout, stderr := overseerCLI(srv, "resume", run.GetID(), "--by", "ana", "--note", "looks fine", "--not-needed")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "resumed by ana")
	assert.Contains(t, stdout, "  pause not needed (a false alarm), the reviewer said\n")
	_, err := finish(t, c, run, "ana")
	require.NoError(t, err)

	code, stdout, stderr = overseerCLI(srv, "status", run.GetID())
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "continue by ana at ")
	assert.Contains(t, stdout, "  pause not needed (a false alarm), the reviewer said\n")

	where := fmt.Sprintf("WorkflowId = '%s'", run.GetID())
	var recs []eval.Record
	eventually(t, "the job to be visible as closed", 30*time.Second, func() bool {
		code, out, _ := overseerCLI(srv, "export", "--query", learn.Query(workflows.JobWorkflowName, where, time.Time{}))
		if code != 0 {
			return false
		}
		recs, err = eval.ReadRecords(strings.NewReader(out))
		require.NoError(t, err)
		return len(recs) == 1
	})
	require.NotEmpty(t, recs[0].Gates)
	first := recs[0].Gates[0]
	require.NotNil(t, first.Needed)
	assert.False(t, *first.Needed)
	assert.Equal(t, string(overseer.NeededByReviewer), first.NeededBy)
	l := eval.UseGateLabels(recs)
	assert.Equal(t, 1, l.RunsWithFalsePause, "%s", l)
}
