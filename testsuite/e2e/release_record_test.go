package e2e_test

// This file records a release's histories of the reference job and is
// copied, as it is, into a git worktree of an earlier commit by
// scripts/record-release.sh: it uses only what every release since
// f5693d3 has (the e2e helpers, worker.Config, the codec package), so the
// histories are recorded by the release's own code. Keep it so.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	sdkworker "go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/learn"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/supervision"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

var recordRelease = flag.String("record-release", "", "record the reference job's release histories into this folder")

// releaseHistory is one recorded history of a release's corpus, as its
// manifest lists it.
type releaseHistory struct {
	File string `json:"file"`
	// Scenario says what the history holds, in a few words.
	Scenario string `json:"scenario"`
	// CodecKey is the base64 AES-GCM key of a history recorded with the
	// codec package's codec (a key made for the recording, nothing else).
	CodecKey string `json:"codec_key,omitempty"`
}

// releaseManifest is a release folder's manifest.json.
type releaseManifest struct {
	Commit    string           `json:"commit"`
	Recorded  string           `json:"recorded"`
	Histories []releaseHistory `json:"histories"`
}

// unawaitedJobName is a workflow that schedules a phase that fails and,
// without awaiting it, continues as new: the overseer's gate is still open
// when the run ends.
const (
	unawaitedJobName   = "e2e.UnawaitedJob"
	failingPhaseName   = "e2e.FailingPhase"
	unawaitedJobWaitOn = 3 * time.Second
)

func unawaitedJob(ctx workflow.Context, first bool) (string, error) {
	if !first {
		return "the successor ran", nil
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Minute,
		RetryPolicy: &temporal.RetryPolicy{MaximumAttempts: 1}})
	_ = workflow.ExecuteActivity(ctx, failingPhaseName)
	if err := workflow.Sleep(ctx, unawaitedJobWaitOn); err != nil {
		return "", err
	}
	return "", workflow.NewContinueAsNewError(ctx, unawaitedJobName, false)
}

func workflowRegisterOptions(name string) workflow.RegisterOptions {
	return workflow.RegisterOptions{Name: name}
}

func failingPhase(context.Context) error {
	return temporal.NewNonRetryableApplicationError("the phase failed", "e2e.PhaseFailed", nil)
}

func registerUnawaitedJob(r sdkworker.Registry) {
	r.RegisterWorkflowWithOptions(unawaitedJob, workflowRegisterOptions(unawaitedJobName))
	r.RegisterActivityWithOptions(failingPhase, activity.RegisterOptions{Name: failingPhaseName})
}

// offTrackJudge answers every assessment Off track with a breach, so the
// first phase pauses. It is not pure: its answers are recorded in history.
func offTrackJudge() jev.Judge {
	return jev.JudgeFunc(func(context.Context, jev.Request) (*jev.Response, error) {
		return &jev.Response{
			ModelVersion: "recorder-off-track",
			Answers: map[string]jev.Answer{
				overseer.QuestionBreach:   {Type: jev.Choice, Choice: overseer.BreachNone, Confidence: jev.Prob(0.9)},
				overseer.QuestionOffTrack: {Type: jev.Noul, Probability: jev.Prob(0.1)},
				overseer.QuestionSeverity: {Type: jev.Score, Score: jev.Prob(3), Confidence: jev.Prob(0.7)},
				overseer.QuestionBlocked:  {Type: jev.Noul, Probability: jev.Prob(0.1)},
			},
		}, nil
	})
}

// TestRecordReleaseHistories records the reference job's scenarios on the
// dev server into the folder -record-release names:
// go test ./testsuite/e2e -run RecordReleaseHistories -record-release DIR
// (scripts/record-release.sh RELEASE COMMIT runs it in a worktree of
// COMMIT). TestReleaseHistoriesReplay replays them.
func TestRecordReleaseHistories(t *testing.T) {
	if *recordRelease == "" {
		t.Skip("records histories only with -record-release DIR")
	}
	dir := *recordRelease
	require.NoError(t, os.MkdirAll(dir, 0o755))
	srv := e2eServer(t)
	c := srv.Client()
	m := releaseManifest{Recorded: time.Now().UTC().Format(time.RFC3339)}
	if out, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil {
		m.Commit = strings.TrimSpace(string(out))
	}
	save := func(id, runID, file, scenario, key string) {
		writeHistory(t, c, id, runID, filepath.Join(dir, file))
		m.Histories = append(m.Histories, releaseHistory{File: file, Scenario: scenario, CodecKey: key})
	}
	paused := func(c client.Client, id string) {
		eventually(t, "the job to pause", 60*time.Second, func() bool { return status(t, c, id).Paused })
	}
	resume := func(c client.Client, id string, req overseer.ResumeRequest) {
		h, err := c.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: id, UpdateName: overseer.ResumeName,
			Args: []any{req}, WaitForStage: client.WorkflowUpdateStageCompleted})
		require.NoError(t, err)
		require.NoError(t, h.Get(context.Background(), nil))
	}

	tq := startWorker(t, srv, worker.Config{TaskQueue: "e2e-release-manage"})

	// A gate opened by the resume update, every later one too.
	run := startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	paused(c, run.GetID())
	_, err := finish(t, c, run, "recorder")
	require.NoError(t, err)
	save(run.GetID(), run.GetRunID(), "resumed_by_update.json", "manage mode, every gate resumed by the update", "")

	// The first gate opened by the plain signal.
	run = startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	paused(c, run.GetID())
	require.NoError(t, c.SignalWorkflow(context.Background(), run.GetID(), "", overseer.ResumeName,
		overseer.ResumeRequest{By: "recorder", Note: "Look for the root cause."}))
	eventually(t, "the signal to open the gate", 60*time.Second, func() bool {
		s := status(t, c, run.GetID())
		return len(s.Gates) > 0 && s.Gates[0].ResumedAt != nil
	})
	_, err = finish(t, c, run, "recorder")
	require.NoError(t, err)
	save(run.GetID(), run.GetRunID(), "resumed_by_signal.json", "manage mode, the first gate resumed by the signal with a note", "")

	// Aborted at its first gate.
	run = startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	paused(c, run.GetID())
	resume(c, run.GetID(), overseer.ResumeRequest{By: "recorder", Action: overseer.ActionAbort, Note: "Not worth it."})
	_ = run.Get(context.Background(), nil)
	save(run.GetID(), run.GetRunID(), "aborted.json", "manage mode, aborted at the first gate", "")

	// Redone at its first gate, then resumed.
	run = startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	paused(c, run.GetID())
	resume(c, run.GetID(), overseer.ResumeRequest{By: "recorder", Action: overseer.ActionRedo,
		Note: "Stop patching the same tests; find the root cause first."})
	_, err = finish(t, c, run, "recorder")
	require.NoError(t, err)
	save(run.GetID(), run.GetRunID(), "redone.json", "manage mode, the first gate redone, later gates resumed", "")

	// Observed: no gate.
	otq := startWorker(t, srv, worker.Config{TaskQueue: "e2e-release-observe", Mode: overseer.ModeObserve})
	run = startJob(t, c, otq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	require.NoError(t, run.Get(context.Background(), nil))
	save(run.GetID(), run.GetRunID(), "observed.json", "observe mode, a looping job", "")

	// Four-eyes under a payload codec, resumed with the plain signal by
	// someone other than the starter.
	fourEyes := func(cfg worker.Config, memo map[string]any, file, scenario string) {
		cfg.Approval = overseer.Approval{FourEyes: true}
		d := newEncryptedDeployment(t, srv, cfg)
		run := d.start(t, memo, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
		paused(d.client, run.GetID())
		require.NoError(t, d.client.SignalWorkflow(context.Background(), run.GetID(), "", overseer.ResumeName,
			overseer.ResumeRequest{By: "bob", Note: "Reviewed."}))
		eventually(t, "bob's signal to open the gate", 60*time.Second, func() bool {
			s := status(t, d.client, run.GetID())
			return len(s.Gates) > 0 && s.Gates[0].ResumedAt != nil
		})
		_, err := finish(t, d.client, run, "bob")
		require.NoError(t, err)
		save(run.GetID(), run.GetRunID(), file, scenario, base64.StdEncoding.EncodeToString(d.key))
	}
	// The memo (mode, starter) encrypted.
	fourEyes(worker.Config{TaskQueue: "e2e-release-four-eyes", Mode: overseer.ModeObserve},
		map[string]any{overseer.ModeMemoKey: "manage", overseer.StartedByMemoKey: "alice"}, "four_eyes_signal_codec.json",
		"four-eyes job, memo encrypted by a codec, the first gate resumed by the plain signal from another approver")
	// The worker in manage mode and only the starter in the memo: nothing
	// but the signal reads the encrypted memo.
	fourEyes(worker.Config{TaskQueue: "e2e-release-four-eyes-manage", Mode: overseer.ModeManage},
		map[string]any{overseer.StartedByMemoKey: "alice"}, "four_eyes_signal_codec_starter_only.json",
		"four-eyes job in manage mode, only its starter in the memo, encrypted by a codec; the first gate resumed by the plain signal from another approver")

	// Continued as new while a gate holds a phase the workflow never
	// awaited: both runs.
	utq, _ := startWorkersWith(t, srv, worker.Config{TaskQueue: "e2e-release-unawaited",
		Modes: map[string]overseer.Mode{unawaitedJobName: overseer.ModeManage}, Judge: offTrackJudge()}, registerUnawaitedJob)
	first, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "e2e-release-unawaited-" + time.Now().Format("150405.000"),
		TaskQueue: utq}, unawaitedJobName, true)
	require.NoError(t, err)
	// Releases up to v0.1.0 continue with the gate open; later ones hold
	// the run's end at the gate until it is resumed.
	resumeUntilClosed(t, c, first, "recorder")
	var out string
	require.NoError(t, c.GetWorkflow(context.Background(), first.GetID(), "").Get(context.Background(), &out))
	require.Equal(t, "the successor ran", out)
	require.True(t, pausedBeforeContinuing(t, c, first.GetID(), first.GetRunID()),
		"the gate opened before the run continued as new (%s of workflow time)", unawaitedJobWaitOn)
	save(first.GetID(), first.GetRunID(), "continued_at_gate.json",
		"a run continuing as new while a phase it never awaited is flagged (open at the end up to v0.1.0; held and resumed since v0.2.0)", "")
	d2, err := c.DescribeWorkflow(context.Background(), first.GetID(), "")
	require.NoError(t, err)
	save(first.GetID(), d2.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId(), "continued_at_gate.successor.json",
		"the successor of a run continued as new with a gate open", "")

	// Continued as new after every phase, gates resumed on the way: each
	// run of the chain.
	run = startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping, ContinueAsNewAfter: 1})
	firstRunID := run.GetRunID() // Get follows the chain, and the run's id with it
	_, err = finish(t, c, run, "recorder")
	require.NoError(t, err)
	for i, runID := range chainRunIDs(t, c, run.GetID(), firstRunID) {
		save(run.GetID(), runID, fmt.Sprintf("continued_mid_job.%d.json", i+1),
			fmt.Sprintf("manage mode, continued as new after every phase: run %d of the chain", i+1), "")
	}

	// Gate deadlines: every gate continued by its deadline; another job's
	// first gate escalated by its deadline, then resumed.
	dtq := startWorker(t, srv, worker.Config{TaskQueue: "e2e-release-expire",
		GateDeadline: overseer.GateDeadline{After: 2 * time.Second, Action: overseer.DeadlineContinue}})
	run = startJob(t, c, dtq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	require.NoError(t, run.Get(context.Background(), nil))
	save(run.GetID(), run.GetRunID(), "expired.json", "manage mode, every gate continued by its 2 s deadline", "")
	etq := startWorker(t, srv, worker.Config{TaskQueue: "e2e-release-escalate",
		GateDeadline: overseer.GateDeadline{After: 2 * time.Second, Action: overseer.DeadlineEscalate, FinalAfter: time.Hour, FinalAction: overseer.DeadlineAbort}})
	run = startJob(t, c, etq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	eventually(t, "the first gate to be escalated", 60*time.Second, func() bool {
		s := status(t, c, run.GetID())
		return len(s.Gates) > 0 && s.Gates[0].EscalatedAt != nil
	})
	_, err = finish(t, c, run, "recorder")
	require.NoError(t, err)
	save(run.GetID(), run.GetRunID(), "escalated.json", "manage mode, the first gate escalated by its 2 s deadline, then resumed", "")

	// Approvers: a resume signal from someone else is dropped, an
	// approver resumes.
	atq := startWorker(t, srv, worker.Config{TaskQueue: "e2e-release-approvers", Approval: overseer.Approval{Approvers: []string{"carol", "dave"}}})
	run = startJob(t, c, atq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	paused(c, run.GetID())
	require.NoError(t, c.SignalWorkflow(context.Background(), run.GetID(), "", overseer.ResumeName, overseer.ResumeRequest{By: "mallory"}))
	eventually(t, "mallory's signal to be dropped", 60*time.Second, func() bool { return status(t, c, run.GetID()).Counters.IgnoredResumes == 1 })
	_, err = finish(t, c, run, "carol")
	require.NoError(t, err)
	save(run.GetID(), run.GetRunID(), "approvers.json", "manage mode, approvers carol and dave: mallory's signal dropped, carol resumes every gate", "")

	// Notifications handed to a notifier.
	var notified atomic.Int32
	ntq := startWorker(t, srv, worker.Config{TaskQueue: "e2e-release-notify",
		Notifier: overseer.NotifierFunc(func(context.Context, overseer.GateEvent) error { notified.Add(1); return nil })})
	run = startJob(t, c, ntq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	paused(c, run.GetID())
	eventually(t, "the gate's notification", 60*time.Second, func() bool { return notified.Load() > 0 })
	_, err = finish(t, c, run, "recorder")
	require.NoError(t, err)
	save(run.GetID(), run.GetRunID(), "notified.json", "manage mode, each gate's events handed to a notifier", "")

	// In-phase supervision in shadow mode on the code phase.
	sup := supervision.Config{Mode: supervision.ModeShadow, Version: "recorder", Budget: 3 * time.Second,
		Thresholds: supervision.Thresholds{No: 0.2, Yes: 0.8}, Limits: supervision.DefaultLimits(),
		Schedule: supervision.Schedule{MinInterval: 50 * time.Millisecond, Period: 200 * time.Millisecond, MaxAssessments: 60, MaxConsecutiveFailures: 3}}
	stq := startWorker(t, srv, worker.Config{TaskQueue: "e2e-release-supervision", Mode: overseer.ModeObserve, AgentWork: 800 * time.Millisecond,
		Supervision: worker.SupervisionConfig{Config: &sup}})
	run = startJob(t, c, stq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.OnTrack})
	require.NoError(t, run.Get(context.Background(), nil))
	require.NotEmpty(t, status(t, c, run.GetID()).InPhase, "in-phase advice recorded")
	save(run.GetID(), run.GetRunID(), "in_phase_supervision.json", "observe mode, in-phase supervision (shadow) of the code phase", "")

	// A recorded agent run replayed as a job, in manage mode.
	rec, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: "e2e-release-recorded-" + time.Now().Format("150405.000"), TaskQueue: tq},
		workflows.RecordedJobWorkflowName, workflows.RecordedJobInput{
			Run: "django__django-11099", Agent: "mini-swe-agent/gemini-3-pro", Family: "django__django",
			Objective: "Fix the username validator", Outcome: "succeeded", Speed: 1000,
			Phases: []activities.RecordedPhase{
				{Phase: "read", Steps: 3, Duration: 90 * time.Second, Report: overseer.PhaseReport{Turns: 3, InputTokens: 9000, OutputTokens: 300, CostUSD: 0.03}},
				{Phase: "edit", Steps: 1, Report: overseer.PhaseReport{Turns: 1, InputTokens: 4000, OutputTokens: 500, CostUSD: 0.02, FailedToolCategories: []string{"edit"}}},
				{Phase: "test", Steps: 2, Duration: 20 * time.Second, Report: overseer.PhaseReport{Turns: 2, InputTokens: 8000, OutputTokens: 100, CostUSD: 0.02}},
			},
		})
	require.NoError(t, err)
	resumeUntilClosed(t, c, rec, "recorder")
	save(rec.GetID(), rec.GetRunID(), "recorded_job.json", "a recorded agent run replayed as a job (CoroRecordedJob), manage mode", "")

	b, err := json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "manifest.json"), append(b, '\n'), 0o644))
}

// chainRunIDs are the run ids of a job from runID on, following
// continue-as-new.
func chainRunIDs(t *testing.T, c client.Client, id, runID string) []string {
	t.Helper()
	var ids []string
	for runID != "" {
		ids = append(ids, runID)
		next := ""
		it := c.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			if a := ev.GetWorkflowExecutionContinuedAsNewEventAttributes(); a != nil {
				next = a.GetNewExecutionRunId()
			}
		}
		runID = next
	}
	return ids
}

// pausedBeforeContinuing says the run's history set OverseerPaused true.
func pausedBeforeContinuing(t *testing.T, c client.Client, id, runID string) bool {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if a := ev.GetUpsertWorkflowSearchAttributesEventAttributes(); a != nil {
			if p := a.GetSearchAttributes().GetIndexedFields()["OverseerPaused"]; p != nil && string(p.GetData()) == "true" {
				return true
			}
		}
	}
	return false
}

// writeHistory writes the run's whole history as JSON, as
// client.HistoryFromJSON reads it.
func writeHistory(t *testing.T, c client.Client, id, runID, path string) {
	t.Helper()
	var h historypb.History
	it := c.GetWorkflowHistory(context.Background(), id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		h.Events = append(h.Events, ev)
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&h)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
}

// TestRecordReleaseWorkflowPause records, on a Temporal server with
// Workflow Pause (scripts/record-release-cluster.sh runs it on a 1.32.0
// cluster, in a worktree of the release's commit), a job an operator paused
// with Temporal's Workflow Pause while it waited at a gate, then unpaused,
// and a reviewer resumed; it adds the history to the release's folder
// (-record-release DIR) and its manifest.
func TestRecordReleaseWorkflowPause(t *testing.T) {
	if *recordRelease == "" {
		t.Skip("records histories only with -record-release DIR")
	}
	requireWorkflowPause(t)
	dir := *recordRelease
	srv := e2eServer(t)
	c := srv.Client()

	tq := startWorker(t, srv, worker.Config{TaskQueue: "e2e-release-workflow-pause"})
	run := startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	eventually(t, "the job to pause at its gate", 60*time.Second, func() bool { return status(t, c, run.GetID()).Paused })
	pauseWorkflow(t, srv, run.GetID(), "held by an operator while it waits at its gate")
	unpauseWorkflow(t, srv, run.GetID())
	_, err := finish(t, c, run, "recorder")
	require.NoError(t, err)

	appendReleaseHistory(t, c, dir, run.GetID(), run.GetRunID(), "workflow_pause_at_gate.json",
		"manage mode, paused by an operator with Temporal's Workflow Pause while at its first gate, unpaused, then every gate resumed (Temporal 1.32.0 cluster)")
}

// TestRecordReleaseLearnRound records a learn round (the overseer.Learn
// workflow, on a worker of its own queue as `overseer worker` hosts it)
// over four closed jobs of the reference job, one aborted at its gate,
// into the release's folder (-record-release DIR) and its manifest.
func TestRecordReleaseLearnRound(t *testing.T) {
	if *recordRelease == "" {
		t.Skip("records histories only with -record-release DIR")
	}
	dir := *recordRelease
	srv := e2eServer(t)
	c := srv.Client()
	ctx := context.Background()

	// Queues of this recording's own: one cluster records several releases.
	suffix := time.Now().Format("150405.000")
	tq := startWorker(t, srv, worker.Config{TaskQueue: "e2e-release-learn-jobs-" + suffix})
	for range 3 {
		require.NoError(t, startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.OnTrack}).Get(ctx, nil))
	}
	aborted := startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	eventually(t, "the looping job to pause", 60*time.Second, func() bool { return status(t, c, aborted.GetID()).Paused })
	_, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: aborted.GetID(), UpdateName: overseer.ResumeName,
		Args: []any{overseer.ResumeRequest{By: "recorder", Action: overseer.ActionAbort, Note: "going nowhere"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.Error(t, aborted.Get(ctx, nil))

	where := "TaskQueue = '" + tq + "'"
	eventually(t, "the four jobs to be visible as closed", 60*time.Second, func() bool {
		resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: where + " AND ExecutionStatus != 'Running'"})
		return err == nil && resp.GetCount() == 4
	})
	ltq := "e2e-release-learn-" + suffix
	lw := sdkworker.New(c, ltq, sdkworker.Options{})
	learn.Register(lw, c)
	require.NoError(t, lw.Start())
	t.Cleanup(lw.Stop)
	code, _, errOut := overseerCLI(srv, "learn", "run", "--type", workflows.JobWorkflowName, "--where", where, "--task-queue", ltq)
	require.Equal(t, 0, code, errOut)

	var id, runID string
	eventually(t, "the learn round to be visible", 60*time.Second, func() bool {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: "WorkflowType = '" + learn.WorkflowName + "' AND TaskQueue = '" + ltq + "' AND ExecutionStatus = 'Completed'"})
		if err != nil || len(resp.GetExecutions()) == 0 {
			return false
		}
		e := resp.GetExecutions()[0].GetExecution()
		id, runID = e.GetWorkflowId(), e.GetRunId()
		return true
	})
	appendReleaseHistory(t, c, dir, id, runID, "learn_round.json",
		"a learn round (overseer.Learn) over four closed CoroJobs, one aborted at its gate, on a worker of its own queue")
}

// appendReleaseHistory writes the run's history into the release folder
// dir as file and lists it in dir's manifest (replacing an entry of the
// same file).
func appendReleaseHistory(t *testing.T, c client.Client, dir, id, runID, file, scenario string) {
	t.Helper()
	path := filepath.Join(dir, "manifest.json")
	b, err := os.ReadFile(path)
	require.NoError(t, err, "record the release's folder first (scripts/record-release.sh)")
	var m releaseManifest
	require.NoError(t, json.Unmarshal(b, &m))
	writeHistory(t, c, id, runID, filepath.Join(dir, file))
	kept := m.Histories[:0]
	for _, h := range m.Histories {
		if h.File != file {
			kept = append(kept, h)
		}
	}
	m.Histories = append(kept, releaseHistory{File: file, Scenario: scenario})
	b, err = json.MarshalIndent(m, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(b, '\n'), 0o644))
}
