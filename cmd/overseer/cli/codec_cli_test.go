package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/codec"
	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// syncBuffer is what a running command writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
}

// background runs a long-running command until the test ends and returns
// its output; exited reports whether it returned, and with what error.
func background(t *testing.T, cmd Command, args ...string) (out *syncBuffer, exited func() (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out = &syncBuffer{}
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = cmd.Run(ctx, args, out)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("the command did not stop within 30 s of Ctrl-C")
		}
	})
	return out, func() (bool, error) {
		select {
		case <-done:
			return true, err
		default:
			return false, nil
		}
	}
}

// newKey is a fresh AES-256 key and a codec server that uses it.
func newKey(t *testing.T) ([]byte, *httptest.Server) {
	t.Helper()
	key := make([]byte, 32)
	_, err := rand.Read(key)
	require.NoError(t, err)
	aes, err := codec.NewAESGCM(key)
	require.NoError(t, err)
	srv := httptest.NewServer(converter.NewPayloadCodecHTTPHandler(aes))
	t.Cleanup(srv.Close)
	return key, srv
}

// assertAllEncrypted reads the job's history with a client without the
// codec: every payload in it is the codec's.
func assertAllEncrypted(t *testing.T, plain client.Client, id, runID string) {
	t.Helper()
	events, err := testsuite.FetchHistory(context.Background(), plain, id, runID)
	require.NoError(t, err)
	payloads := testsuite.HistoryPayloads(events)
	require.NotEmpty(t, payloads, id)
	for _, p := range payloads {
		assert.True(t, codec.Encrypted(p.Payload), "%s: payload in clear: %s", id, p)
	}
}

// executions are the executions of a workflow type visibility lists.
func executions(t *testing.T, c client.Client, ns, typ string) []*workflowpb.WorkflowExecutionInfo {
	t.Helper()
	r, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Namespace: ns, Query: fmt.Sprintf("WorkflowType = '%s'", typ)})
	require.NoError(t, err)
	return r.GetExecutions()
}

// continueGates continues every gate of the job that opens, until ctx ends.
func continueGates(ctx context.Context, c client.Client, id string) {
	for ctx.Err() == nil {
		if st, err := ops.Status(ctx, c, id); err == nil && st.Paused {
			_, _ = ops.Resume(ctx, c, id, overseer.ResumeRequest{By: "test", Action: overseer.ActionContinue, Gate: st.GateID})
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
}

var sweagentDir = filepath.Join("..", "..", "..", "eval", "testdata", "sweagent")

// overseer replay takes --codec-endpoint as every command that talks to
// Temporal does: its jobs, its reviewer's resumes and its learn round go
// through the codec, and the server holds only ciphertext.
func TestReplayTakesTheCodecEndpoint(t *testing.T) {
	srv := devServer(t)
	_, codecServer := newKey(t)
	typ := "ReplayTestCodec" + strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	var out bytes.Buffer
	err := (&ReplayCmd{}).Run(context.Background(), []string{"--address", srv.FrontendHostPort(), "--namespace", srv.Namespace(),
		"--traces", sweagentDir, "--jobs", "4", "--learn-every", "2", "--concurrency", "2", "--type", typ, "--speed", "1e6",
		"--reviewer-delay", "1ms", "--codec-endpoint", codecServer.URL, "--deadline", "3m"}, &out)
	require.NoError(t, err, out.String())
	assert.Contains(t, out.String(), "Outcomes: 4 of 4 jobs ended as recorded")
	assert.Contains(t, out.String(), "learn round 1 after 2 jobs")
	assert.Contains(t, out.String(), "4 histories replay clean")

	waitFor(t, "visibility to list the replay's 4 jobs", 30*time.Second, func() bool {
		return len(executions(t, srv.Client(), srv.Namespace(), typ)) == 4
	})
	for _, e := range executions(t, srv.Client(), srv.Namespace(), typ) {
		assertAllEncrypted(t, srv.Client(), e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId())
	}
}

// A bad codec is one sentence before anything starts.
func TestReplayAndDevRefuseABadCodecKey(t *testing.T) {
	t.Setenv(codec.KeyEnv, "not-a-key")
	for _, cmd := range []string{"replay", "dev"} {
		args := []string{cmd, "--traces", sweagentDir}
		if cmd == "dev" {
			args = append(args, "--port", "0", "--ui-port", "0", "--metrics", "", "--listen", "127.0.0.1:0")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var stdout, stderr bytes.Buffer
		code := Main(ctx, args, &stdout, &stderr)
		cancel()
		assert.Equal(t, 1, code, "%s: %s", cmd, stderr.String())
		assert.Equal(t, "overseer "+cmd+": codec: OVERSEER_CODEC_KEY must be a 16, 24 or 32-byte key in base64 or hex\n", stderr.String(), cmd)
		assert.NotContains(t, stdout.String(), "Starting", "%s: nothing started", cmd)
	}
}

var (
	devFrontend = regexp.MustCompile(`Temporal dev server  (\S+) \(namespace (\S+)\)`)
	devDash     = regexp.MustCompile(`Overseer dashboard   (\S+)`)
	devRecorded = regexp.MustCompile(`Recorded jobs +\d+ started from \S+ as .*\(e\.g\. (\S+)\)`)
)

// overseer dev with $OVERSEER_CODEC_KEY is an encrypting deployment end to
// end: the jobs it starts are encrypted from their first payload, its
// worker reads them, and its dashboard shows them decoded.
func TestDevEncryptsWithTheCodecKey(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Temporal dev server")
	}
	key, _ := newKey(t)
	t.Setenv(codec.KeyEnv, base64.StdEncoding.EncodeToString(key))
	out, exited := background(t, &Dev{}, "--port", "0", "--ui-port", "0", "--metrics", "", "--listen", "127.0.0.1:0",
		"--traces", sweagentDir, "--speed", "1e6", "--mode", "observe")
	waitFor(t, "overseer dev to start its recorded jobs", time.Minute, func() bool {
		if ok, err := exited(); ok {
			t.Fatalf("overseer dev returned: %v\n%s", err, out)
		}
		return devRecorded.MatchString(out.String())
	})
	text := out.String()
	assert.Contains(t, text, "Payload codec        AES-GCM, key from $OVERSEER_CODEC_KEY\n")
	fe, dash, job := devFrontend.FindStringSubmatch(text), devDash.FindStringSubmatch(text), devRecorded.FindStringSubmatch(text)
	require.NotNil(t, fe, text)
	require.NotNil(t, dash, text)
	plain, err := client.Dial(client.Options{HostPort: fe[1], Namespace: fe[2], Logger: worker.SDKLogger(zap.NewNop())})
	require.NoError(t, err)
	defer plain.Close()

	id := job[1]
	var runID string
	waitFor(t, "the recorded job "+id+" to close", time.Minute, func() bool {
		d, err := plain.DescribeWorkflow(context.Background(), id, "")
		if err != nil {
			return false
		}
		info := d.RawResponse.GetWorkflowExecutionInfo()
		runID = info.GetExecution().GetRunId()
		return info.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING
	})
	d, err := plain.DescribeWorkflow(context.Background(), id, runID)
	require.NoError(t, err)
	assert.Equal(t, workflows.RecordedLoopWorkflowName, d.RawResponse.GetWorkflowExecutionInfo().GetType().GetName(),
		"an agent's run starts as the loop a team writes")
	assertAllEncrypted(t, plain, id, runID)

	resp, err := http.Get(strings.TrimSuffix(dash[1], "/") + "/job?id=" + id)
	require.NoError(t, err)
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.NotContains(t, string(page), "give the codec", "the dashboard reads the job with the codec")
	assert.Contains(t, string(page), id)
}

// overseer worker --type NAME serves recorded jobs of type NAME, in manage
// mode as CoroRecordedJob: the jobs overseer replay --type NAME starts on
// a cluster.
func TestWorkerServesRecordedJobsUnderACustomType(t *testing.T) {
	srv := devServer(t)
	suffix := strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	typ, tq := "WorkerTestRecorded"+suffix, "worker-test-"+suffix
	out, exited := background(t, &Worker{}, "--address", srv.FrontendHostPort(), "--namespace", srv.Namespace(), "--task-queue", tq, "--type", typ)
	waitFor(t, "the worker to poll", 30*time.Second, func() bool {
		if ok, err := exited(); ok {
			t.Fatalf("overseer worker returned: %v\n%s", err, out)
		}
		return strings.Contains(out.String(), "Worker polling task queue "+tq)
	})
	assert.Contains(t, out.String(), "Recorded jobs served as "+typ)

	var rec eval.Record
	for _, r := range sweagentRuns(t) {
		if !r.Outcome.Failed() {
			rec = r
		}
	}
	in := eval.RecordedJob(rec)
	in.Speed = 1e6
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := srv.Client().ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "worker-test-" + suffix, TaskQueue: tq}, typ, in)
	require.NoError(t, err)
	var st overseer.Status
	waitFor(t, "the job's status", 30*time.Second, func() bool {
		var err error
		st, err = ops.RunStatus(ctx, srv.Client(), run.GetID(), run.GetRunID())
		return err == nil
	})
	assert.Equal(t, overseer.ModeManage, st.Mode, "a custom type of the recorded job is managed, as CoroRecordedJob is")
	// Gates that open (the shipped policy may pause) are continued.
	go continueGates(ctx, srv.Client(), run.GetID())
	require.NoError(t, run.Get(ctx, nil), "the worker ran the job of type %s to its end", typ)
}

// The recorded job takes no name another workflow of the worker has.
func TestWorkerRefusesATypeItServesAlready(t *testing.T) {
	for _, typ := range []string{workflows.JobWorkflowName, "overseer.Learn", "overseer.ModelRegistry", " "} {
		code, _, errOut := runMain("worker", "--type", typ)
		assert.Equal(t, 2, code, typ)
		assert.Equal(t, 1, strings.Count(errOut, "\n"), "one line: %s", errOut)
		assert.Contains(t, errOut, "overseer worker: --type", typ)
	}
}
