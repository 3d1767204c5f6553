package e2e_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/cmd/overseer/cli"
	"github.com/corohq/temporal-overseer/codec"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// A job whose gates a reviewer resumed with overseer resume, after a
// refused attempt: overseer audit writes each gate's opening and resume
// from the job's history, with who, the note, the judgement, the pinned
// policy and the model; overseer audit verify passes the file and fails a
// one-byte edit of it.
func TestE2EAuditOfAResumedJob(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{})
	id := fmt.Sprintf("e2e-audit-%d", time.Now().UnixNano())
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: tq,
		Memo: map[string]any{overseer.StartedByMemoKey: "bob"}}, workflows.JobWorkflowName,
		workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	require.NoError(t, err)
	eventually(t, "the looping job to pause", 30*time.Second, func() bool { return status(t, c, id).Paused })
	gate := status(t, c, id).GateID

	// A refused attempt says who tried; no history records it.
	code, _, stderr := overseerCLI(srv, "resume", id, "--by", "mallory", "--gate", "nope-9")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "refused mallory's resume ("+overseer.WrongGateErrorType+")")

	code, _, stderr = overseerCLI(srv, "resume", id, "--by", "alice", "--gate", gate, "--note", "find the root cause")
	require.Equal(t, 0, code, stderr)
	_, err = finish(t, c, run, "e2e-reviewer")
	require.NoError(t, err)
	final := status(t, c, id)

	out := filepath.Join(t.TempDir(), "audit.jsonl")
	code, stdout, stderr := overseerCLI(srv, "audit", "--query", "WorkflowId = '"+id+"'", "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "of 1 job ")
	assert.Contains(t, stdout, "head sha256 ")
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	recs, err := readAudit(data)
	require.NoError(t, err)

	// Every gate the job closed (the status keeps the recent ones) opened
	// and was resumed, as the status says.
	require.NotEmpty(t, final.Gates)
	require.Len(t, recs, 2*final.Counters.Resumes, "an opening and a resume per gate")
	byGate := map[string][]ops.AuditRecord{}
	for _, r := range recs {
		assert.Equal(t, ops.AuditJob{WorkflowID: id, RunID: run.GetRunID(), WorkflowType: workflows.JobWorkflowName, StartedBy: "bob"}, r.Job)
		assert.Equal(t, "manage", r.Mode)
		require.NotNil(t, r.Policy)
		assert.NotEmpty(t, r.ModelVersion)
		assert.Equal(t, []string{ops.SourceResumeUpdate}, r.Sources)
		byGate[r.Gate] = append(byGate[r.Gate], r)
	}
	for _, g := range final.Gates {
		rs := byGate[g.ID]
		require.Len(t, rs, 2, g.ID)
		assert.Equal(t, ops.AuditOpened, rs[0].Kind)
		assert.True(t, rs[0].At.Equal(g.PausedAt), g.ID)
		assert.Equal(t, g.Reason, rs[0].Reason)
		assert.Equal(t, ops.AuditResumed, rs[1].Kind)
		assert.Equal(t, g.By, rs[1].By)
		assert.NotEmpty(t, rs[1].Identity, "the client that sent the update")
		require.NotNil(t, rs[1].Needed, g.ID)
		assert.Equal(t, *g.Needed, *rs[1].Needed)
	}
	first := byGate[gate]
	require.Len(t, first, 2)
	assert.Equal(t, "alice", first[1].By)
	assert.Equal(t, "find the root cause", first[1].Note)
	assert.True(t, *first[1].Needed, "a continue with a note was needed")
	assert.Equal(t, string(overseer.NeededByNote), first[1].NeededBy)

	// A second audit of the closed job is byte for byte the same.
	again := filepath.Join(t.TempDir(), "again.jsonl")
	code, _, stderr = overseerCLI(srv, "audit", "--query", "WorkflowId = '"+id+"'", "--out", again)
	require.Equal(t, 0, code, stderr)
	data2, err := os.ReadFile(again)
	require.NoError(t, err)
	assert.Equal(t, string(data), string(data2))

	code, stdout, stderr = verifyCLI(out)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, fmt.Sprintf("%d records of 1 job verified", len(recs)))
	edited := filepath.Join(t.TempDir(), "edited.jsonl")
	require.NoError(t, os.WriteFile(edited, bytes.Replace(data, []byte(`"by":"alice"`), []byte(`"by":"alicf"`), 1), 0o644))
	code, _, stderr = verifyCLI(edited)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "was edited: its digest does not match its content")
}

// readAudit decodes an audit file's records.
func readAudit(data []byte) ([]ops.AuditRecord, error) {
	var recs []ops.AuditRecord
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var r ops.AuditRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, err
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// verifyCLI runs overseer audit verify, which talks to no server.
func verifyCLI(path string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = cli.Main(context.Background(), []string{"audit", "verify", path}, &out, &errOut)
	return code, out.String(), errOut.String()
}

// The audit of a deployment that encrypts its payloads reads the gates
// with the codec (OVERSEER_CODEC_KEY), and without it says what to give.
func TestE2EAuditReadsEncryptedHistoriesWithTheCodec(t *testing.T) {
	srv := e2eServer(t)
	d := newEncryptedDeployment(t, srv, worker.Config{})
	run := d.start(t, nil, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	eventually(t, "the looping job to pause", 30*time.Second, func() bool { return status(t, d.client, run.GetID()).Paused })
	_, err := d.client.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: overseer.ResumeName,
		Args: []any{overseer.ResumeRequest{By: "alice", Note: "secret plan"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	_, err = finish(t, d.client, run, "e2e-reviewer")
	require.NoError(t, err)

	query := "WorkflowId = '" + run.GetID() + "'"
	out := filepath.Join(t.TempDir(), "audit.jsonl")
	code, _, stderr := overseerCLI(srv, "audit", "--query", query, "--out", out)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "cannot read its history: the job's payloads are encrypted with a payload codec")
	_, err = os.Stat(out)
	assert.True(t, os.IsNotExist(err), "no file is written when nothing can be read")

	t.Setenv(codec.KeyEnv, base64.StdEncoding.EncodeToString(d.key))
	code, _, stderr = overseerCLI(srv, "audit", "--query", query, "--out", out)
	require.Equal(t, 0, code, stderr)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	recs, err := readAudit(data)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(recs), 2)
	assert.Equal(t, ops.AuditOpened, recs[0].Kind)
	assert.NotEmpty(t, recs[0].Reason, "the gate's reason, decoded")
	assert.Equal(t, ops.AuditResumed, recs[1].Kind)
	assert.Equal(t, "alice", recs[1].By)
	assert.Equal(t, "secret plan", recs[1].Note)
	assert.NotNil(t, recs[0].Policy, "the pinned configuration, decoded")
	code, _, stderr = verifyCLI(out)
	assert.Equal(t, 0, code, stderr)
}

// A phase redone with overseer resume --redo is a redone record, by the
// reviewer, with the note, judged needed (a redo always is).
func TestE2EAuditShowsARedo(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{})
	run, gate := redoneJob(t, srv, tq)
	_, err := finish(t, c, run, "e2e-reviewer")
	require.NoError(t, err)

	out := filepath.Join(t.TempDir(), "audit.jsonl")
	code, _, stderr := overseerCLI(srv, "audit", "--query", "WorkflowId = '"+run.GetID()+"'", "--out", out)
	require.Equal(t, 0, code, stderr)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	recs, err := readAudit(data)
	require.NoError(t, err)
	var kinds []string
	var redone *ops.AuditRecord
	for i, r := range recs {
		if r.Gate == gate.ID {
			kinds = append(kinds, r.Kind)
			if r.Kind == ops.AuditRedone {
				redone = &recs[i]
			}
		}
	}
	assert.Equal(t, []string{ops.AuditOpened, ops.AuditRedone}, kinds)
	require.NotNil(t, redone)
	assert.Equal(t, "e2e-reviewer", redone.By)
	assert.Equal(t, string(overseer.ActionRedo), redone.Action)
	assert.Equal(t, "Stop patching the same tests; find the root cause first.", redone.Note)
	require.NotNil(t, redone.Needed)
	assert.True(t, *redone.Needed)
	assert.Equal(t, string(overseer.NeededByAction), redone.NeededBy)
	code, _, stderr = verifyCLI(out)
	assert.Equal(t, 0, code, stderr)
}

// A job that continued as new is one job in the audit: the gates of all its
// runs, the earliest run's first, chained under the run the query listed.
func TestE2EAuditOfAJobThatContinuedAsNew(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{})
	run := startJob(t, c, tq, workflows.JobInput{Objective: "Long job", Scenario: activities.Looping, ContinueAsNewAfter: 3})
	firstRun := run.GetRunID() // Get follows the chain, and GetRunID with it
	_, err := finish(t, c, run, "e2e-reviewer")
	require.NoError(t, err)
	final := status(t, c, run.GetID())
	d, err := c.DescribeWorkflow(context.Background(), run.GetID(), "")
	require.NoError(t, err)
	last := d.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	require.NotEqual(t, firstRun, last, "the job continued as new")

	out := filepath.Join(t.TempDir(), "audit.jsonl")
	code, stdout, stderr := overseerCLI(srv, "audit", "--query", "WorkflowId = '"+run.GetID()+"'", "--out", out)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "of 1 job ", "the runs are one job")
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	recs, err := readAudit(data)
	require.NoError(t, err)
	require.Len(t, recs, 2*final.Counters.Resumes, "an opening and a resume per gate, of every run")
	runsSeen := []string{}
	for i, r := range recs {
		assert.Equal(t, last, r.Job.RunID, "chained under the run the query listed")
		assert.Equal(t, i+1, r.Seq)
		if len(runsSeen) == 0 || runsSeen[len(runsSeen)-1] != r.Run {
			runsSeen = append(runsSeen, r.Run)
		}
	}
	require.NotEmpty(t, runsSeen)
	assert.GreaterOrEqual(t, len(runsSeen), 2, "gates of more than one run")
	for i := 1; i < len(recs); i++ {
		assert.False(t, recs[i].At.Before(recs[i-1].At), "record %d comes before record %d: the earlier runs' first", i+1, i)
	}
	for i, r := range runsSeen {
		assert.NotContains(t, runsSeen[i+1:], r, "each run's records are together")
	}
	code, _, stderr = verifyCLI(out)
	assert.Equal(t, 0, code, stderr)
}

// On a worker with a notifier the audit has what the gates' own payloads
// cannot say: a gate still open, and a resume sent as a signal.
func TestE2EAuditWithANotifierHasOpenGatesAndSignalResumes(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	hook := newHookReceiver(t)
	tq := startWorker(t, srv, worker.Config{Notifier: hook.notifier(t)})
	run := startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	id := run.GetID()
	eventually(t, "the gate to be announced", 30*time.Second, func() bool { return len(hook.of(id)[overseer.GateOpened]) == 1 })
	gate := status(t, c, id).GateID
	query := "WorkflowId = '" + id + "'"

	audit := func(name string) []ops.AuditRecord {
		t.Helper()
		out := filepath.Join(t.TempDir(), name)
		code, stdout, stderr := overseerCLI(srv, "audit", "--query", query, "--out", out)
		require.Equal(t, 0, code, stderr)
		data, err := os.ReadFile(out)
		require.NoError(t, err)
		recs, err := readAudit(data)
		require.NoError(t, err)
		code, _, stderr = verifyCLI(out)
		require.Equal(t, 0, code, stderr)
		t.Log(strings.TrimSpace(stdout))
		return recs
	}
	open := audit("open.jsonl")
	require.Len(t, open, 1, "the open gate's opening, from its notification")
	assert.Equal(t, gate, open[0].Gate)
	assert.Equal(t, ops.AuditOpened, open[0].Kind)
	assert.Equal(t, []string{ops.SourceNotification}, open[0].Sources)
	assert.NotEmpty(t, open[0].Reason)

	require.NoError(t, c.SignalWorkflow(context.Background(), id, "", overseer.ResumeName, overseer.ResumeRequest{By: "sam", Gate: gate, Note: "by signal"}))
	eventually(t, "the signal's resume to be announced", 30*time.Second, func() bool { return len(hook.of(id)[overseer.GateResumed]) >= 1 })
	_, err := finish(t, c, run, "e2e-reviewer")
	require.NoError(t, err)

	var kinds []string
	var resumed ops.AuditRecord
	for _, r := range audit("closed.jsonl") {
		if r.Gate == gate {
			kinds = append(kinds, r.Kind+" "+strings.Join(r.Sources, "+"))
			if r.Kind == ops.AuditResumed {
				resumed = r
			}
		}
	}
	assert.Equal(t, []string{"opened notification", "resume_signal signal", "resumed notification"}, kinds)
	assert.Equal(t, "sam", resumed.By)
	assert.Equal(t, "by signal", resumed.Note)
}

// A live worker's /metrics counts the resume attempts its jobs refused, by
// reason and way in: an update the validator refused and a signal the job
// dropped, once each, and not again when a query replays the job.
func TestE2ERefusedResumesOnAWorkersMetrics(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq, metricsURL := meteredWorker(t, srv, worker.Config{})
	run := startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	id := run.GetID()
	eventually(t, "the looping job to pause", 30*time.Second, func() bool { return status(t, c, id).Paused })

	code, _, stderr := overseerCLI(srv, "resume", id, "--by", "mallory", "--gate", "nope-9")
	require.Equal(t, 1, code, stderr)
	require.NoError(t, c.SignalWorkflow(context.Background(), id, "", overseer.ResumeName, map[string]any{"note": "who am I"}))
	eventually(t, "the job to drop the signal", 30*time.Second, func() bool { return status(t, c, id).Counters.IgnoredResumes == 1 })
	_, err := finish(t, c, run, "e2e-reviewer")
	require.NoError(t, err)

	wrongGate := []string{`reason="` + overseer.WrongGateErrorType + `"`, `via="update"`, `task_queue="` + tq + `"`}
	noBy := []string{`reason="` + overseer.InvalidResumeErrorType + `"`, `via="signal"`, `task_queue="` + tq + `"`}
	var got map[string][]labeled
	eventually(t, "the refusals to be counted", 10*time.Second, func() bool {
		got = scrape(t, metricsURL)
		return sum(got["overseer_resumes_refused_total"], wrongGate...) == 1 && sum(got["overseer_resumes_refused_total"], noBy...) == 1
	})
	assert.Equal(t, 2.0, sum(got["overseer_resumes_refused_total"], `task_queue="`+tq+`"`), "nothing else was refused: %v", got["overseer_resumes_refused_total"])

	replays := sum(got["temporal_workflow_task_replay_latency_seconds_count"])
	status(t, c, id) // the closed job is replayed to answer
	got = scrape(t, metricsURL)
	require.Greater(t, sum(got["temporal_workflow_task_replay_latency_seconds_count"]), replays, "the query replayed the job")
	assert.Equal(t, 2.0, sum(got["overseer_resumes_refused_total"], `task_queue="`+tq+`"`), "not counted again on replay")
}
