package e2e_test

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/codec"
	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/judge"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// encryptedDeployment is a client and a worker with an AES-GCM codec and a
// key of the test's own, as a team that encrypts its payloads runs them.
type encryptedDeployment struct {
	key    []byte
	dc     converter.DataConverter
	client client.Client
	tq     string
}

func newEncryptedDeployment(t *testing.T, srv server, cfg worker.Config) *encryptedDeployment {
	t.Helper()
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	c, err := codec.NewAESGCM(key)
	require.NoError(t, err)
	d := &encryptedDeployment{key: key, dc: codec.DataConverter(c)}
	d.client, err = client.NewClientFromExisting(srv.Client(), client.Options{DataConverter: d.dc, Logger: worker.SDKLogger(zap.NewNop())})
	require.NoError(t, err)
	cfg.DataConverter = d.dc
	if cfg.TaskQueue == "" {
		cfg.TaskQueue = "e2e-" + strings.ReplaceAll(t.Name(), "/", "-")
	}
	if cfg.JudgeConfig.Kind == "" {
		cfg.JudgeConfig.Kind = worker.JudgeHeuristic
	}
	cfg.Logger = zap.NewNop()
	w, err := worker.New(d.client, cfg)
	require.NoError(t, err)
	require.NoError(t, w.Start())
	t.Cleanup(func() {
		w.Stop()
		d.client.Close()
	})
	d.tq = cfg.TaskQueue
	return d
}

func (d *encryptedDeployment) start(t *testing.T, memo map[string]any, in workflows.JobInput) client.WorkflowRun {
	t.Helper()
	id := fmt.Sprintf("e2e-codec-%s-%d", in.Scenario, time.Now().UnixNano())
	run, err := d.client.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: d.tq, Memo: memo}, workflows.JobWorkflowName, in)
	require.NoError(t, err)
	return run
}

// TestE2EEncryptedDeploymentWorksAndLeaksNothing: with an AES-GCM codec on
// the client and the worker, the memo's mode, gate deadline and starter
// take effect; the four-eyes rule refuses the starter and lets another
// approver resume with a note; a job continued as new keeps its overseer
// state; and a client without the codec finds no payload of either job's
// histories in clear.
func TestE2EEncryptedDeploymentWorksAndLeaksNothing(t *testing.T) {
	srv := e2eServer(t)
	// Observe by default: only the memo's mode makes the job pause.
	d := newEncryptedDeployment(t, srv, worker.Config{Mode: overseer.ModeObserve, Approval: overseer.Approval{FourEyes: true}})
	c := d.client
	run := d.start(t, map[string]any{
		overseer.ModeMemoKey:         "manage",
		overseer.GateDeadlineMemoKey: "1h:escalate,2h:abort",
		overseer.StartedByMemoKey:    "alice",
	}, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	gatedRun := run.GetRunID()

	eventually(t, "the encrypted job to pause", 30*time.Second, func() bool { return status(t, c, run.GetID()).Paused })
	s := status(t, c, run.GetID())
	assert.Equal(t, overseer.ModeManage, s.Mode, "the memo's mode took effect")
	require.NotNil(t, s.GateDeadline, "the memo's gate deadline took effect")
	assert.WithinDuration(t, s.Gates[len(s.Gates)-1].PausedAt.Add(time.Hour), *s.GateDeadline, time.Second)

	// The starter's signal is ignored and the starter's update refused;
	// bob's update opens the gate with a note for the next phase.
	require.NoError(t, c.SignalWorkflow(context.Background(), run.GetID(), "", overseer.ResumeName, overseer.ResumeRequest{By: "alice"}))
	own, err := c.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: overseer.ResumeName,
		Args: []any{overseer.ResumeRequest{By: "alice"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err == nil {
		err = own.Get(context.Background(), nil)
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"alice" started this job and may not resume its own gate`)

	// The dashboard without the codec says what to configure; with the
	// client that has it, it shows the open gate.
	page := func(base string) string {
		resp, err := http.Get(base + "/job?id=" + run.GetID())
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	plainPage := page(startDashboard(t, srv))
	assert.Contains(t, plainPage, "cannot read its status: the job")
	assert.Contains(t, plainPage, "give the codec with --codec-endpoint URL (a codec server) or set OVERSEER_CODEC_KEY")
	dash, err := dashboard.New(dashboard.Options{Client: c, Namespace: srv.Namespace()})
	require.NoError(t, err)
	encDash := httptest.NewServer(dash)
	t.Cleanup(encDash.Close)
	encPage := page(encDash.URL)
	assert.NotContains(t, encPage, "give the codec")
	assert.Contains(t, encPage, s.GateID)

	// The CLI without the codec says what to configure; with the key in
	// the environment, or a codec server, it reads the status and resumes.
	code, _, stderr := overseerCLI(srv, "status", run.GetID())
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "cannot read its status: the job's payloads are encrypted with a payload codec: give the codec with --codec-endpoint URL (a codec server) or set OVERSEER_CODEC_KEY")
	t.Setenv(codec.KeyEnv, base64.StdEncoding.EncodeToString(d.key))
	code, stdout, stderr := overseerCLI(srv, "status", run.GetID())
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "Gate deadline")
	assert.Contains(t, stdout, "Mode             manage")
	eventually(t, "overseer list --paused to show the encrypted job", 20*time.Second, func() bool {
		code, stdout, _ := overseerCLI(srv, "list", "--paused")
		return code == 0 && strings.Contains(stdout, run.GetID())
	})
	t.Setenv(codec.KeyEnv, "")
	aes, err := codec.NewAESGCM(d.key)
	require.NoError(t, err)
	codecServer := httptest.NewServer(converter.NewPayloadCodecHTTPHandler(aes))
	t.Cleanup(codecServer.Close)
	code, stdout, stderr = overseerCLI(srv, "resume", run.GetID(), "--by", "bob", "--note", "fix the parser, not the test", "--codec-endpoint", codecServer.URL)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "resumed by bob")
	res, err := finish(t, c, run, "bob")
	require.NoError(t, err)
	assert.Equal(t, "delivered", res.Outcome)
	final := status(t, c, run.GetID())
	assert.Equal(t, "fix the parser, not the test", final.Gates[0].Note)

	// Continue-as-new carries the encrypted overseer state.
	long := d.start(t, nil, workflows.JobInput{Objective: "Long job", Scenario: activities.OnTrack, ContinueAsNewAfter: 3})
	firstRun := long.GetRunID() // Get follows the chain to its last run
	var lres workflows.JobResult
	require.NoError(t, long.Get(context.Background(), &lres))
	ls := status(t, c, long.GetID())
	assert.Equal(t, 8, ls.Counters.Phases, "phases of all runs are counted across an encrypted continue-as-new")

	// A redo's note reaches the rerun through the encrypted header too.
	redone := d.start(t, map[string]any{overseer.ModeMemoKey: "manage", overseer.StartedByMemoKey: "alice"},
		workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})
	eventually(t, "the job to be redone to pause", 30*time.Second, func() bool { return status(t, c, redone.GetID()).Paused })
	rh, err := c.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: redone.GetID(), UpdateName: overseer.ResumeName,
		Args: []any{overseer.ResumeRequest{By: "bob", Action: overseer.ActionRedo, Note: "redo it without the flaky fixture"}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	var redoGate overseer.Gate
	require.NoError(t, rh.Get(context.Background(), &redoGate))
	assert.Equal(t, overseer.ActionRedo, redoGate.Action)
	_, err = finish(t, c, redone, "bob")
	require.NoError(t, err)
	assert.Equal(t, 1, status(t, c, redone.GetID()).Counters.Redos, "the redo took effect under the codec")

	// The memo's budget takes effect under the codec: the job stops at its
	// budget's gate, and a raised budget sent through the codec resumes it.
	budgeted := d.start(t, map[string]any{overseer.ModeMemoKey: "manage", overseer.StartedByMemoKey: "alice", overseer.BudgetMemoKey: `{"phase_runs": 3}`},
		workflows.JobInput{Objective: "Add CSV export", Scenario: activities.OnTrack})
	eventually(t, "the budgeted job to stop at its budget", 30*time.Second, func() bool { return status(t, c, budgeted.GetID()).Paused })
	bs := status(t, c, budgeted.GetID())
	require.NotEmpty(t, bs.Gates)
	assert.Equal(t, overseer.GateKindBudget, bs.Gates[len(bs.Gates)-1].Kind, "the memo's budget took effect")
	bh, err := c.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: budgeted.GetID(), UpdateName: overseer.ResumeName,
		Args: []any{overseer.ResumeRequest{By: "bob", Budget: &overseer.Budget{PhaseRuns: 100}}}, WaitForStage: client.WorkflowUpdateStageCompleted})
	require.NoError(t, err)
	require.NoError(t, bh.Get(context.Background(), nil))
	_, err = finish(t, c, budgeted, "bob")
	require.NoError(t, err)
	require.NotNil(t, status(t, c, budgeted.GetID()).Budget)
	assert.Equal(t, 100, status(t, c, budgeted.GetID()).Budget.Limit.PhaseRuns, "the raised budget, read through the codec")

	// A client without the codec reads the histories as the server stores
	// them: every payload is the codec's.
	plain := srv.Client()
	ctx := context.Background()
	gated, err := testsuite.FetchChain(ctx, plain, run.GetID(), gatedRun)
	require.NoError(t, err)
	redoneChain, err := testsuite.FetchChain(ctx, plain, redone.GetID(), redone.GetRunID())
	require.NoError(t, err)
	gated = append(gated, redoneChain...)
	budgetChain, err := testsuite.FetchChain(ctx, plain, budgeted.GetID(), budgeted.GetRunID())
	require.NoError(t, err)
	gated = append(gated, budgetChain...)
	chain, err := testsuite.FetchChain(ctx, plain, long.GetID(), firstRun)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(chain), 2, "the long job continued as new")
	var all []testsuite.PayloadAt
	for _, events := range append(gated, chain...) {
		all = append(all, testsuite.HistoryPayloads(events)...)
	}
	seen := map[string]int{}
	for _, p := range all {
		assert.True(t, codec.Encrypted(p.Payload), "payload in clear: %s", p)
		seen[payloadKind(p)]++
	}
	for _, kind := range []string{"memo overseer.mode", "memo overseer.gate_deadline", "memo overseer.started_by", "memo overseer.budget", "memo overseer.summary",
		"header overseer-note", "header overseer-state", "marker", "activity input", "activity result",
		"update input", "update result", "signal input"} {
		assert.Positive(t, seen[kind], "the scan saw a %s (it covers every kind of overseer payload): %v", kind, seen)
	}
	assertNoClearText(t, append(gated, chain...), "fix the parser, not the test", "redo it without the flaky fixture", "alice", "Process note", `"trajectory"`, `"evidence"`,
		`"phase_runs"`, `"spent"`, "budget: the job spent")

	// overseer export reads the histories with the codec, and says what to
	// configure without it.
	query := fmt.Sprintf("WorkflowId = %q", run.GetID())
	code, _, stderr = overseerCLI(srv, "export", "--query", query)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "cannot read its history: the job's payloads are encrypted with a payload codec")
	t.Setenv(codec.KeyEnv, base64.StdEncoding.EncodeToString(d.key))
	code, stdout, stderr = overseerCLI(srv, "export", "--query", query)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, run.GetID())
	assert.Contains(t, stdout, "fix the parser, not the test", "the reviewer's decision is in the record")
}

// payloadKind sorts a payload by where it is, for the scan's coverage.
func payloadKind(p testsuite.PayloadAt) string {
	switch {
	case strings.Contains(p.Path, "memo.fields["):
		return "memo " + between(p.Path, "memo.fields[", "]")
	case strings.Contains(p.Path, "header.fields["):
		return "header " + between(p.Path, "header.fields[", "]")
	case strings.HasPrefix(p.Path, "marker_recorded_event_attributes"):
		return "marker"
	case strings.HasPrefix(p.Path, "activity_task_scheduled_event_attributes.input"):
		return "activity input"
	case strings.HasPrefix(p.Path, "activity_task_completed_event_attributes.result"):
		return "activity result"
	case strings.HasPrefix(p.Path, "workflow_execution_update_accepted_event_attributes") && strings.Contains(p.Path, "input.args"):
		return "update input"
	case strings.HasPrefix(p.Path, "workflow_execution_update_completed_event_attributes"):
		return "update result"
	case strings.HasPrefix(p.Path, "workflow_execution_signaled_event_attributes.input"):
		return "signal input"
	}
	return "other"
}

func between(s, from, to string) string {
	_, after, _ := strings.Cut(s, from)
	v, _, _ := strings.Cut(after, to)
	return v
}

// assertNoClearText: none of the texts appears anywhere in the raw
// events (payload or not).
func assertNoClearText(t *testing.T, runs [][]*historypb.HistoryEvent, texts ...string) {
	t.Helper()
	for _, events := range runs {
		for _, e := range events {
			raw := e.String()
			for _, s := range texts {
				assert.False(t, strings.Contains(raw, s), "event %d (%s) has %q in clear", e.GetEventId(), e.GetEventType(), s)
			}
		}
	}
}

// A relative budget pinned from the worker's policy takes effect under a
// payload codec: the job waits at its budget gate, whose reason says the
// promise's assumption, and neither the budget nor the reason is readable
// in history without the key.
func TestE2EARelativeBudgetGateUnderTheCodec(t *testing.T) {
	srv := e2eServer(t)
	policy := overseer.DefaultPolicy()
	policy.Spend = &overseer.SpendBudget{Curve: []int64{1000}, Factor: 2, MaxReached: 0.05, Jobs: 6, Assumes: judge.SpendAssumesLogNormal}
	d := newEncryptedDeployment(t, srv, worker.Config{Mode: overseer.ModeManage, Policy: policy, RelativeBudgetGates: true})
	c := d.client
	run := d.start(t, map[string]any{overseer.StartedByMemoKey: "alice"}, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.OnTrack})
	eventually(t, "the job to stop at its relative budget", 30*time.Second, func() bool { return status(t, c, run.GetID()).Paused })
	s := status(t, c, run.GetID())
	require.NotEmpty(t, s.Gates)
	assert.Equal(t, overseer.GateKindBudget, s.Gates[len(s.Gates)-1].Kind, "the pinned relative budget took effect")
	assert.Contains(t, s.PauseReason, "typically spent in all (1000 tokens)")
	assert.Contains(t, s.PauseReason, "if their spend is log-normal")
	_, err := finish(t, c, run, "bob")
	require.NoError(t, err)

	chain, err := testsuite.FetchChain(context.Background(), srv.Client(), run.GetID(), run.GetRunID())
	require.NoError(t, err)
	scanned := 0
	for _, events := range chain {
		for _, p := range testsuite.HistoryPayloads(events) {
			assert.True(t, codec.Encrypted(p.Payload), "payload in clear: %s", p)
			scanned++
		}
	}
	assert.Positive(t, scanned, "the history has payloads to scan")
	assertNoClearText(t, chain, "log-normal", "typically spent in all", `"assumes"`, "relative budget")
}
