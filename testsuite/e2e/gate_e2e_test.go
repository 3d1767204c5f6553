package e2e_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// metadata is what `temporal workflow metadata` and the Web UI read: the
// handlers with their descriptions and the current details.
func metadata(t *testing.T, c client.Client, id string) *sdkpb.WorkflowMetadata {
	t.Helper()
	v, err := c.QueryWorkflow(context.Background(), id, "", "__temporal_workflow_metadata")
	require.NoError(t, err)
	var md sdkpb.WorkflowMetadata
	require.NoError(t, v.Get(&md))
	return &md
}

// temporalCLIFails runs the official CLI and expects it to fail.
func temporalCLIFails(t *testing.T, srv server, args ...string) string {
	t.Helper()
	exe, err := testsuite.TemporalCLIPath()
	require.NoError(t, err)
	args = append(args, "--address", srv.FrontendHostPort(), "--namespace", srv.Namespace())
	out, err := exec.Command(exe, args...).CombinedOutput()
	require.Error(t, err, "temporal %s: %s", strings.Join(args, " "), out)
	return string(out)
}

func pausedJob(t *testing.T, srv server, tq string) (client.WorkflowRun, overseer.Status) {
	t.Helper()
	c := srv.Client()
	run := startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	eventually(t, "the looping job to pause", 30*time.Second, func() bool { return status(t, c, run.GetID()).Paused })
	return run, status(t, c, run.GetID())
}

var resumeCommand = regexp.MustCompile(`Resume: temporal (workflow update execute .*)`)

func TestE2EPausedJobIsVisibleInPlainTemporalAndItsCommandResumesIt(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{})
	run, s := pausedJob(t, srv, tq)
	require.NotEmpty(t, s.GateID)

	md := metadata(t, c, run.GetID())
	details := md.GetCurrentDetails()
	assert.Contains(t, details, "Gate "+s.GateID+", after phase "+s.Gates[len(s.Gates)-1].Phase)
	assert.Contains(t, details, "Reason: "+s.PauseReason)
	assert.Contains(t, details, "The next phase will receive: "+s.PendingNote)
	// What happened comes first: the looping job re-ran the phase it
	// paused after.
	evidence := s.Gates[len(s.Gates)-1].Evidence
	require.NotEmpty(t, evidence, "the gate carries its evidence through the server")
	assert.Regexp(t, `^`+s.Gates[len(s.Gates)-1].Phase+` ran \d+ times since the last plan`, evidence[0])
	assert.Less(t, strings.Index(details, "- "+evidence[0]+"\n"), strings.Index(details, "Reason: "), "the evidence before the rule")
	assert.GreaterOrEqual(t, strings.Index(details, "- "+evidence[0]+"\n"), 0)
	descriptions := map[string]string{}
	for _, q := range md.GetDefinition().GetQueryDefinitions() {
		descriptions[q.GetName()] = q.GetDescription()
	}
	for _, u := range md.GetDefinition().GetUpdateDefinitions() {
		descriptions["update "+u.GetName()] = u.GetDescription()
	}
	assert.NotEmpty(t, descriptions[overseer.StatusQueryName])
	assert.NotEmpty(t, descriptions["update "+overseer.ResumeName])

	// The official CLI shows them.
	out := temporalCLI(t, srv, "workflow", "metadata", "--workflow-id", run.GetID())
	assert.Contains(t, out, "Current Details")
	assert.Contains(t, out, "Gate "+s.GateID)

	// The command in the details works as printed (a shell would strip the
	// quotes around the workflow id and the input).
	m := resumeCommand.FindStringSubmatch(details)
	require.NotNil(t, m, "no resume command in %q", details)
	args := shellWords(t, strings.ReplaceAll(m[1], "YOUR_NAME", "details-reader"))
	temporalCLI(t, srv, args...)
	eventually(t, "the gate to close", 20*time.Second, func() bool {
		st := status(t, c, run.GetID())
		return len(st.Gates) > 0 && st.Gates[0].By == "details-reader"
	})
	after := metadata(t, c, run.GetID()).GetCurrentDetails()
	assert.NotContains(t, after, "Gate "+s.GateID, "the details of a closed gate are cleared")
	_, err := finish(t, c, run, "e2e")
	require.NoError(t, err)
	assert.Empty(t, metadata(t, c, run.GetID()).GetCurrentDetails())
}

// shellWords splits a command line the way a POSIX shell does for the
// quoted words the overseer and the README print (no escapes).
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	quoted := false
	for _, r := range line {
		switch {
		case (r == '\'' || r == '"') && (!quoted || r == quote):
			quoted, quote, inWord = !quoted, r, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	require.False(t, quoted, "unbalanced quote in %q", line)
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

func TestE2EMalformedResumeSignalNeverTurnsTheNextIntoAnAbort(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{})
	run, _ := pausedJob(t, srv, tq)
	for _, bad := range []string{`{"action":"abort","by":{"x":1}}`, `{"by":"alice","actoin":"abort"}`, `{"by":"alice","gate":"nope-9"}`} {
		temporalCLI(t, srv, "workflow", "signal", "--workflow-id", run.GetID(), "--name", overseer.ResumeName, "--input", bad)
	}
	eventually(t, "the bad signals to be counted", 20*time.Second, func() bool {
		return status(t, c, run.GetID()).Counters.IgnoredResumes == 3
	})
	assert.True(t, status(t, c, run.GetID()).Paused, "no bad signal resumed the job")
	temporalCLI(t, srv, "workflow", "signal", "--workflow-id", run.GetID(), "--name", overseer.ResumeName,
		"--input", `{"by":"bob","note":"carry on"}`)
	eventually(t, "bob's resume", 20*time.Second, func() bool {
		st := status(t, c, run.GetID())
		return len(st.Gates) > 0 && st.Gates[0].By == "bob"
	})
	st := status(t, c, run.GetID())
	assert.Equal(t, overseer.ActionContinue, st.Gates[0].Action, "the dropped signal's action did not survive")
	assert.Equal(t, "carry on", st.Gates[0].Note)
	res, err := finish(t, c, run, "bob")
	require.NoError(t, err, "the job was not aborted")
	assert.Equal(t, "delivered", res.Outcome)
}

func TestE2EResumeRefusalsAreTypedAndBoundToTheGate(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{})
	run, s := pausedJob(t, srv, tq)
	update := func(req any) error {
		h, err := c.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: run.GetID(),
			UpdateName: overseer.ResumeName, Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err == nil {
			err = h.Get(context.Background(), nil)
		}
		return err
	}

	// Misspelled field: refused, not silently continued.
	out := temporalCLIFails(t, srv, "workflow", "update", "execute", "--workflow-id", run.GetID(), "--name", overseer.ResumeName,
		"--input", `{"by":"alice","actoin":"abort"}`)
	assert.Contains(t, out, `unknown field \"actoin\"`)
	assert.Contains(t, out, overseer.InvalidResumeErrorType)
	err := update(map[string]any{"by": "alice", "actoin": "abort"})
	assert.Equal(t, overseer.InvalidResumeErrorType, overseer.ErrorType(err), "%v", err)

	// A 1 MB note is refused at once with one sentence, not after a failed
	// workflow task: by the update's validator, so that the history records
	// neither an accepted update nor a failed task.
	before := eventCounts(t, c, run.GetID())
	err = update(overseer.ResumeRequest{By: "alice", Note: strings.Repeat("n", 1<<20)})
	assert.Equal(t, overseer.InvalidResumeErrorType, overseer.ErrorType(err), "%v", err)
	assert.ErrorContains(t, err, "keep it to 4096 bytes")
	after := eventCounts(t, c, run.GetID())
	for _, e := range []enumspb.EventType{enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED} {
		assert.Equal(t, before[e], after[e], "%s events", e)
	}

	err = update(overseer.ResumeRequest{By: "alice", Gate: "spec-99"})
	assert.Equal(t, overseer.WrongGateErrorType, overseer.ErrorType(err), "%v", err)

	// overseer status names the gate and how to resume it.
	code, stdout, stderr := overseerCLI(srv, "status", run.GetID())
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "overseer resume "+run.GetID()+" --gate "+s.GateID+" --by NAME")

	// Two operators resume the gate they saw; the second is refused even
	// though the job may already be paused again.
	code, stdout, stderr = overseerCLI(srv, "resume", run.GetID(), "--gate", s.GateID, "--by", "first")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "at gate "+s.GateID)
	code, _, stderr = overseerCLI(srv, "resume", run.GetID(), "--gate", s.GateID, "--by", "second", "--note", "never seen")
	assert.Equal(t, 1, code)
	assert.True(t, strings.Contains(stderr, "is not paused; nothing to resume") || strings.Contains(stderr, "gate \""+s.GateID+"\" is not open"), stderr)
	_, err = finish(t, c, run, "e2e")
	require.NoError(t, err)
	for _, g := range status(t, c, run.GetID()).Gates {
		assert.NotEqual(t, "second", g.By)
	}

	err = update(overseer.ResumeRequest{By: "late"})
	assert.NotEqual(t, overseer.NotPausedErrorType, overseer.ErrorType(err), "a finished job answers no validator: %v", err)
	_, err = ops.Resume(context.Background(), c, run.GetID(), overseer.ResumeRequest{By: "late"})
	assert.ErrorIs(t, err, ops.ErrFinished)
}

func TestE2EClosedAtAGateIsNotListedAsPaused(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{})
	cancelled, _ := pausedJob(t, srv, tq)
	terminated, _ := pausedJob(t, srv, tq)
	eventually(t, "both jobs listed as paused", 20*time.Second, func() bool {
		jobs, err := ops.List(context.Background(), c, ops.ListOptions{Query: mustPausedQuery(t)})
		require.NoError(t, err)
		return listed(jobs, cancelled.GetID()) && listed(jobs, terminated.GetID())
	})

	require.NoError(t, c.CancelWorkflow(context.Background(), cancelled.GetID(), ""))
	require.Error(t, cancelled.Get(context.Background(), nil))
	require.NoError(t, c.TerminateWorkflow(context.Background(), terminated.GetID(), "", "e2e"))

	// The cancelled run cleared its gate and search attributes itself.
	st := status(t, c, cancelled.GetID())
	assert.False(t, st.Paused)
	require.NotEmpty(t, st.Gates)
	assert.True(t, st.Gates[len(st.Gates)-1].Cancelled)
	eventually(t, "OverseerPaused = false on the cancelled job", 20*time.Second, func() bool {
		d, err := c.DescribeWorkflow(context.Background(), cancelled.GetID(), "")
		require.NoError(t, err)
		p := d.RawResponse.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[overseer.SearchAttributePaused.GetName()]
		return p != nil && string(p.GetData()) == "false"
	})
	// Neither is listed any more (the terminated one by its state).
	eventually(t, "overseer list --paused to drop both", 20*time.Second, func() bool {
		code, stdout, _ := overseerCLI(srv, "list", "--paused")
		return code == 0 && !strings.Contains(stdout, cancelled.GetID()) && !strings.Contains(stdout, terminated.GetID())
	})
	// The terminated job's own status still holds its pause (no code ran to
	// clear it); overseer status says the job closed and offers no resume.
	code, stdout, stderr := overseerCLI(srv, "status", terminated.GetID())
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `Status\s+terminated while paused at gate \S+: nothing to resume`, stdout)
	assert.NotContains(t, stdout, "overseer resume")
}

func mustPausedQuery(t *testing.T) string {
	q, err := ops.ListQuery("", true)
	require.NoError(t, err)
	return q
}

func listed(jobs []ops.Job, id string) bool {
	for _, j := range jobs {
		if j.ID == id {
			return true
		}
	}
	return false
}

// eventCounts counts the events of each type in the history of job id.
func eventCounts(t *testing.T, c client.Client, id string) map[enumspb.EventType]int {
	t.Helper()
	n := map[enumspb.EventType]int{}
	it := c.GetWorkflowHistory(context.Background(), id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		n[ev.GetEventType()]++
	}
	return n
}

func TestE2EModeOffWritesNothingToHistory(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{Mode: overseer.ModeOff})
	run := startJob(t, c, tq, workflows.JobInput{Objective: "x", Scenario: activities.OnTrack})
	require.NoError(t, run.Get(context.Background(), nil))

	it := c.GetWorkflowHistory(context.Background(), run.GetID(), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var activitiesRun int
	var history historypb.History
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		history.Events = append(history.Events, ev)
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_MARKER_RECORDED, enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES:
			t.Errorf("ModeOff wrote %s: %v", ev.GetEventType(), ev)
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			activitiesRun++
			assert.NotEqual(t, overseer.AssessActivityName, ev.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName())
		}
	}
	assert.Positive(t, activitiesRun)

	// Replayed by a worker whose options now manage every job, the run
	// still takes the untouched path: no non-determinism.
	plugin, err := overseer.NewPlugin(overseer.Options{Mode: overseer.ModeManage, SearchAttributes: true})
	require.NoError(t, err)
	replayer, err := sdkworker.NewWorkflowReplayerWithOptions(sdkworker.WorkflowReplayerOptions{Plugins: []sdkworker.Plugin{plugin}})
	require.NoError(t, err)
	workflows.Register(replayer)
	require.NoError(t, replayer.ReplayWorkflowHistory(nil, &history))
	// It still answers the status query (queries write nothing), even
	// replayed from its history by another worker.
	assert.Equal(t, overseer.ModeOff, status(t, c, run.GetID()).Mode)
}

// TestE2EReadmeTemporalWalkthrough runs the manage-mode guide's
// plain-Temporal block verbatim, with JOB_ID and GATE_ID filled in.
func TestE2EReadmeTemporalWalkthrough(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{})
	root, err := testsuite.RepoRoot()
	require.NoError(t, err)
	readme := string(mustRead(t, filepath.Join(root, "docs", "manage-mode.md")))
	start := strings.Index(readme, "With the plain Temporal CLI:\n\n```sh\n")
	require.NotEqual(t, -1, start)
	block := readme[start+len("With the plain Temporal CLI:\n\n```sh\n"):]
	block = block[:strings.Index(block, "```")]
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
		if i := strings.Index(l, "   # "); i >= 0 {
			l = l[:i]
		}
		lines = append(lines, strings.TrimSpace(l))
	}
	require.Len(t, lines, 5, "metadata, query, update, signal, list")

	run, s := pausedJob(t, srv, tq)
	var outs []string
	for _, l := range lines {
		l = strings.ReplaceAll(l, "JOB_ID", run.GetID())
		l = strings.ReplaceAll(l, "GATE_ID", status(t, c, run.GetID()).GateID)
		args := shellWords(t, l)
		require.Equal(t, "temporal", args[0])
		outs = append(outs, temporalCLI(t, srv, args[1:]...))
	}
	assert.Contains(t, outs[0], "Current Details")
	assert.Contains(t, outs[0], "Gate "+s.GateID)
	assert.Contains(t, outs[0], "temporal workflow update execute --workflow-id "+run.GetID())
	assert.Contains(t, outs[1], `"gate_id":"`+s.GateID+`"`)
	st := status(t, c, run.GetID())
	require.NotEmpty(t, st.Gates)
	assert.Equal(t, "alice", st.Gates[0].By, "the update resumed the gate")
	assert.Equal(t, "go on", st.Gates[0].Note)
}
