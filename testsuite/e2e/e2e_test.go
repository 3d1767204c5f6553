package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdkworker "go.temporal.io/sdk/worker"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/activities"
	"github.com/corohq/temporal-overseer/cmd/overseer/cli"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/supervision"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

// The end-to-end tests run against the dev server (the default) or, with
// OVERSEER_E2E_TARGET=cluster, against a Temporal cluster at
// OVERSEER_E2E_ADDRESS with the overseer's search attributes registered:
// `make test-cluster` starts one on PostgreSQL (scripts/cluster.sh) and runs
// them there, with two workers on each test's task queue.
const (
	targetEnv    = "OVERSEER_E2E_TARGET"
	addressEnv   = "OVERSEER_E2E_ADDRESS"
	namespaceEnv = "OVERSEER_E2E_NAMESPACE"
	// clusterCtlEnv is scripts/cluster.sh when it runs the tests: the
	// restart test stops and starts the cluster with it.
	clusterCtlEnv = "OVERSEER_E2E_CLUSTER_CTL"

	targetDevServer = "devserver"
	targetCluster   = "cluster"
)

// target returns the Temporal server the end-to-end tests run against.
func target() string {
	if v := os.Getenv(targetEnv); v != "" {
		return v
	}
	return targetDevServer
}

func onCluster() bool { return target() == targetCluster }

// skipOnCluster skips a test about the dev server itself under the cluster
// target.
func skipOnCluster(t *testing.T) {
	t.Helper()
	if onCluster() {
		t.Skipf("about the dev server and its harness, not Temporal behaviour: runs under the default target, not %s=%s", targetEnv, targetCluster)
	}
}

// server is what the end-to-end tests use of the Temporal server: the dev
// server (*testsuite.DevServer) or a cluster.
type server interface {
	Client() client.Client
	FrontendHostPort() string
	Namespace() string
}

// cluster is a Temporal cluster this process did not start.
type cluster struct {
	client              client.Client
	hostPort, namespace string
}

func (c *cluster) Client() client.Client    { return c.client }
func (c *cluster) FrontendHostPort() string { return c.hostPort }
func (c *cluster) Namespace() string        { return c.namespace }

// connectCluster dials the cluster of OVERSEER_E2E_ADDRESS and checks that
// the overseer's search attributes are registered on its namespace.
func connectCluster(ctx context.Context) (*cluster, error) {
	addr := os.Getenv(addressEnv)
	if addr == "" {
		return nil, fmt.Errorf("%s=%s needs %s (host:port of the frontend); make test-cluster sets both", targetEnv, targetCluster, addressEnv)
	}
	ns := os.Getenv(namespaceEnv)
	if ns == "" {
		ns = "default"
	}
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Namespace: ns, Logger: worker.SDKLogger(zap.NewNop())})
	if err != nil {
		return nil, fmt.Errorf("cluster at %s: %w", addr, err)
	}
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("cluster at %s, namespace %s: list search attributes: %w", addr, ns, err)
	}
	for name, typ := range testsuite.OverseerSearchAttributes {
		if got := resp.GetCustomAttributes()[name]; got != typ {
			c.Close()
			return nil, fmt.Errorf("cluster at %s, namespace %s: search attribute %s is %v, want %v (deploy/register-search-attributes.sh registers them)", addr, ns, name, got, typ)
		}
	}
	return &cluster{client: c, hostPort: addr, namespace: ns}, nil
}

var (
	sharedOnce sync.Once
	shared     server
	sharedErr  error
)

// e2eServer returns the Temporal server shared by the end-to-end tests of
// this package: one dev server, started once and stopped by TestMain, or
// the cluster of OVERSEER_E2E_ADDRESS.
func e2eServer(t *testing.T) server {
	t.Helper()
	requireCLI(t) // the tests drive the official CLI on either target
	sharedOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		switch target() {
		case targetDevServer:
			var dev *testsuite.DevServer
			dev, sharedErr = testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
				Output: os.Stderr, Logger: worker.SDKLogger(zap.NewNop()),
			})
			if sharedErr == nil {
				shared = dev
			}
		case targetCluster:
			var c *cluster
			if c, sharedErr = connectCluster(ctx); sharedErr == nil {
				shared = c
			}
		default:
			sharedErr = fmt.Errorf("%s=%q: use %s (the default) or %s", targetEnv, target(), targetDevServer, targetCluster)
		}
	})
	require.NoError(t, sharedErr)
	return shared
}

func TestMain(m *testing.M) {
	code := m.Run()
	switch s := shared.(type) {
	case *testsuite.DevServer:
		_ = s.Stop()
	case *cluster:
		s.client.Close()
	}
	os.Exit(code)
}

// workersPerQueue is how many workers serve each test's task queue: two on
// a cluster, as a fleet would, one on the dev server.
func workersPerQueue() int {
	if onCluster() {
		return 2
	}
	return 1
}

// startWorker runs workers with the plugin on their own task queue (see
// workersPerQueue); they stop when the test ends.
func startWorker(t *testing.T, srv server, cfg worker.Config) string {
	t.Helper()
	tq, _ := startWorkers(t, srv, cfg)
	return tq
}

// startWorkers is startWorker with a stop function for tests that stop the
// workers themselves (it is also called when the test ends).
func startWorkers(t *testing.T, srv server, cfg worker.Config) (taskQueue string, stop func()) {
	t.Helper()
	return startWorkersWith(t, srv, cfg, nil)
}

// startWorkersWith is startWorkers with register called on each worker
// before it starts, for workflows of the test's own.
func startWorkersWith(t *testing.T, srv server, cfg worker.Config, register func(sdkworker.Registry)) (taskQueue string, stop func()) {
	t.Helper()
	if cfg.TaskQueue == "" {
		cfg.TaskQueue = "e2e-" + strings.ReplaceAll(t.Name(), "/", "-")
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Judge == nil && cfg.JudgeConfig.Kind == "" {
		// These tests exercise Temporal mechanics (gates, lists, queries)
		// and need verdicts that follow the scenarios rule by rule.
		cfg.JudgeConfig.Kind = worker.JudgeHeuristic
	}
	var stops []func()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			// Workers stop before the clients they use close.
			for _, s := range slices.Backward(stops) {
				s()
			}
		})
	}
	t.Cleanup(stop)
	n := workersPerQueue()
	for i := 1; i <= n; i++ {
		c := srv.Client()
		if n > 1 {
			// Each worker of the fleet has its own connection and identity,
			// as separate processes would.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			wc, err := client.DialContext(ctx, client.Options{HostPort: srv.FrontendHostPort(), Namespace: srv.Namespace(),
				Identity: fmt.Sprintf("e2e-worker-%d-%d@%s", i, time.Now().UnixNano(), cfg.TaskQueue), Logger: worker.SDKLogger(zap.NewNop())})
			cancel()
			require.NoError(t, err)
			stops = append(stops, wc.Close)
			c = wc
		}
		w, err := worker.New(c, cfg)
		require.NoError(t, err)
		if register != nil {
			register(w)
		}
		require.NoError(t, w.Start())
		stops = append(stops, w.Stop)
	}
	return cfg.TaskQueue, stop
}

func startJob(t *testing.T, c client.Client, taskQueue string, in workflows.JobInput) client.WorkflowRun {
	t.Helper()
	id := fmt.Sprintf("e2e-%s-%d", in.Scenario, time.Now().UnixNano())
	run, err := c.ExecuteWorkflow(context.Background(), client.StartWorkflowOptions{ID: id, TaskQueue: taskQueue}, workflows.JobWorkflowName, in)
	require.NoError(t, err)
	return run
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond) // polling interval, not a wait for the condition
	}
}

// finish resumes every later pause as reviewer until the job ends, and
// returns its result.
func finish(t *testing.T, c client.Client, run client.WorkflowRun, reviewer string) (workflows.JobResult, error) {
	t.Helper()
	resumeUntilClosed(t, c, run, reviewer)
	var res workflows.JobResult
	err := run.Get(context.Background(), &res)
	return res, err
}

// resumeUntilClosed resumes every pause of the job as reviewer until it
// closes, within a minute.
func resumeUntilClosed(t *testing.T, c client.Client, run client.WorkflowRun, reviewer string) {
	t.Helper()
	resumeUntilClosedWithin(t, c, run, reviewer, time.Minute)
}

// resumeUntilClosedWithin is resumeUntilClosed with its own deadline.
func resumeUntilClosedWithin(t *testing.T, c client.Client, run client.WorkflowRun, reviewer string, within time.Duration) {
	t.Helper()
	eventually(t, run.GetID()+" to finish", within, func() bool {
		if s := status(t, c, run.GetID()); s.Paused {
			_, err := c.UpdateWorkflow(context.Background(), client.UpdateWorkflowOptions{WorkflowID: run.GetID(), UpdateName: overseer.ResumeName,
				Args: []any{overseer.ResumeRequest{By: reviewer}}, WaitForStage: client.WorkflowUpdateStageCompleted})
			require.NoError(t, err)
		}
		d, err := c.DescribeWorkflow(context.Background(), run.GetID(), "")
		require.NoError(t, err)
		return d.RawResponse.GetWorkflowExecutionInfo().GetCloseTime() != nil
	})
}

// status queries the job's status. A query the server could not hand to a
// worker within the SDK's 10 s call timeout (a closed job's query replays
// its whole history on a worker of the job's queue, which the suite's
// parallel packages can keep busy) is asked again, three tries in all, each
// retry logged; any other error fails the test at once.
func status(t *testing.T, c client.Client, id string) overseer.Status {
	t.Helper()
	var v converter.EncodedValue
	var err error
	for attempt := 1; ; attempt++ {
		v, err = c.QueryWorkflow(context.Background(), id, "", overseer.StatusQueryName)
		if err == nil || attempt == 3 || !ops.TimedOut(err) {
			break
		}
		t.Logf("status query %d of %s: %v; asking again", attempt, id, err)
	}
	require.NoError(t, err)
	var s overseer.Status
	require.NoError(t, v.Get(&s))
	return s
}

// overseerCLI runs the overseer command in-process, against srv.
func overseerCLI(srv server, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	if len(args) > 0 && args[0] != "demo" && args[0] != "dev" {
		args = append(args, "--address", srv.FrontendHostPort(), "--timeout", "5s")
	}
	code = cli.Main(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// temporalCLI runs the official Temporal CLI against srv.
func temporalCLI(t *testing.T, srv server, args ...string) string {
	t.Helper()
	exe, err := testsuite.TemporalCLIPath()
	require.NoError(t, err)
	args = append(args, "--address", srv.FrontendHostPort(), "--namespace", srv.Namespace())
	out, err := exec.Command(exe, args...).CombinedOutput()
	require.NoError(t, err, "temporal %s: %s", strings.Join(args, " "), out)
	return string(out)
}

func TestE2EPausedJobResumedByOverseerCLI(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{})
	run := startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.Looping})

	eventually(t, "the looping job to pause", 30*time.Second, func() bool { return status(t, c, run.GetID()).Paused })
	s := status(t, c, run.GetID())
	assert.Equal(t, overseer.ModeManage, s.Mode)
	assert.Contains(t, s.PauseReason, "obligation[2]")

	// The official CLI answers the status query.
	out := temporalCLI(t, srv, "workflow", "query", "--workflow-id", run.GetID(), "--type", overseer.StatusQueryName, "--output", "json")
	assert.Contains(t, out, `"paused": true`)
	assert.Contains(t, out, `"mode": "manage"`)

	// overseer list finds it through the search attributes.
	eventually(t, "overseer list --paused to show the job", 20*time.Second, func() bool {
		code, stdout, _ := overseerCLI(srv, "list", "--paused")
		return code == 0 && strings.Contains(stdout, run.GetID())
	})

	code, stdout, stderr := overseerCLI(srv, "resume", run.GetID(), "--by", "e2e-reviewer", "--note", "change approach")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "resumed by e2e-reviewer")

	res, err := finish(t, c, run, "e2e-reviewer")
	require.NoError(t, err)
	assert.Equal(t, "delivered", res.Outcome)
	final := status(t, c, run.GetID())
	assert.GreaterOrEqual(t, final.Counters.Resumes, 1)
	assert.Equal(t, "e2e-reviewer", final.Gates[0].By)
	assert.Equal(t, "change approach", final.Gates[0].Note)

	code, _, stderr = overseerCLI(srv, "resume", run.GetID(), "--by", "late")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "finished")
}

func TestE2EListByStatusAndResumeWithOfficialCLI(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{})
	run := startJob(t, c, tq, workflows.JobInput{Objective: "Ship", Scenario: activities.Blocked, RetryDelay: 100 * time.Millisecond})

	eventually(t, "overseer list --status off_track to show the blocked job", 30*time.Second, func() bool {
		code, stdout, _ := overseerCLI(srv, "list", "--status", "off_track")
		return code == 0 && strings.Contains(stdout, run.GetID())
	})
	eventually(t, "the blocked job to pause", 30*time.Second, func() bool { return status(t, c, run.GetID()).Paused })

	// Validation errors of the update reach the official CLI's user.
	exe, err := testsuite.TemporalCLIPath()
	require.NoError(t, err)
	bad, err := exec.Command(exe, "workflow", "update", "execute", "--address", srv.FrontendHostPort(),
		"--workflow-id", run.GetID(), "--name", overseer.ResumeName, "--input", `{"by":"ops","action":"skip"}`).CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(bad), "resume action must be")
	assert.Contains(t, string(bad), "skip")

	temporalCLI(t, srv, "workflow", "update", "execute", "--workflow-id", run.GetID(), "--name", overseer.ResumeName,
		"--input", `{"by":"ops","note":"credentials added"}`)
	res, err := finish(t, c, run, "ops")
	require.NoError(t, err)
	assert.Equal(t, "delivered", res.Outcome)
}

func TestE2EResumeBySignalFromOfficialCLI(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{})
	run := startJob(t, c, tq, workflows.JobInput{Objective: "Ship", Scenario: activities.Looping})
	eventually(t, "the job to pause", 30*time.Second, func() bool { return status(t, c, run.GetID()).Paused })
	temporalCLI(t, srv, "workflow", "signal", "--workflow-id", run.GetID(), "--name", overseer.ResumeName, "--input", `{"by":"signal-user"}`)
	eventually(t, "the job to leave the gate", 30*time.Second, func() bool {
		s := status(t, c, run.GetID())
		return s.Counters.Resumes >= 1 && s.Gates[0].By == "signal-user"
	})
	_, err := finish(t, c, run, "signal-user")
	require.NoError(t, err)
}

func TestE2EContinueAsNewKeepsOverseerState(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	tq := startWorker(t, srv, worker.Config{Mode: overseer.ModeObserve})
	run := startJob(t, c, tq, workflows.JobInput{Objective: "Long job", Scenario: activities.OnTrack, ContinueAsNewAfter: 3})
	var res workflows.JobResult
	require.NoError(t, run.Get(context.Background(), &res))
	assert.Equal(t, "delivered", res.Outcome)
	s := status(t, c, run.GetID())
	assert.Equal(t, 8, s.Counters.Phases, "phases of all runs are counted")
	assert.Equal(t, 8, s.Counters.Assessments)
	assert.Contains(t, s.Digest, "8 phase runs")
}

func TestE2EBadInputsGiveOneClearSentence(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()

	code, _, stderr := overseerCLI(srv, "status", "no-such-job")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `no job with id "no-such-job"`)

	code, _, stderr = overseerCLI(srv, "resume", "no-such-job", "--by", "x")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, `no job with id "no-such-job"`)

	code, _, stderr = overseerCLI(srv, "resume", "no-such-job")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--by")

	// A running job that is not paused: its agents work slowly.
	slow := startWorker(t, srv, worker.Config{TaskQueue: "e2e-slow-agents", AgentWork: 20 * time.Second})
	run := startJob(t, c, slow, workflows.JobInput{Objective: "x", Scenario: activities.OnTrack})
	eventually(t, "the job to start", 30*time.Second, func() bool {
		d, err := c.DescribeWorkflow(context.Background(), run.GetID(), "")
		return err == nil && d.RawResponse.GetPendingActivities() != nil
	})
	code, _, stderr = overseerCLI(srv, "resume", run.GetID(), "--by", "x")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "is not paused; nothing to resume")
	require.NoError(t, c.TerminateWorkflow(context.Background(), run.GetID(), "", "test done"))

	spec := filepath.Join(t.TempDir(), "bad.yaml")
	require.NoError(t, os.WriteFile(spec, []byte("objective: x\nscenario: on_track\ncolour: blue\n"), 0o600))
	code, _, stderr = overseerCLI(srv, "start", "--spec", spec)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "not a valid job spec")
	assert.Contains(t, stderr, "colour")

	var out, errOut bytes.Buffer
	code = cli.Main(context.Background(), []string{"status", "x", "--address", "127.0.0.1:1", "--timeout", "2s"}, &out, &errOut)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut.String(), "cannot reach the Temporal server at 127.0.0.1:1")
	assert.Equal(t, 1, strings.Count(strings.TrimSpace(errOut.String()), "\n")+1, "one line: %q", errOut.String())
}

func TestE2EStartFromSpecAndStatusJSON(t *testing.T) {
	srv := e2eServer(t)
	tq := startWorker(t, srv, worker.Config{})
	spec := filepath.Join(t.TempDir(), "job.json")
	id := fmt.Sprintf("e2e-spec-%d", time.Now().UnixNano())
	require.NoError(t, os.WriteFile(spec, []byte(`{"id":"`+id+`","objective":"Add CSV export","scenario":"on_track","mode":"observe"}`), 0o600))
	code, stdout, stderr := overseerCLI(srv, "start", "--spec", spec, "--task-queue", tq)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "Started job "+id)
	err := srv.Client().GetWorkflow(context.Background(), id, "").Get(context.Background(), nil)
	require.NoError(t, err)
	code, stdout, stderr = overseerCLI(srv, "status", id, "--json")
	require.Equal(t, 0, code, stderr)
	var s overseer.Status
	require.NoError(t, json.Unmarshal([]byte(stdout), &s))
	assert.Equal(t, overseer.ModeObserve, s.Mode, "the spec's mode overrides the worker's")
	assert.True(t, s.Assessed)
	code, stdout, _ = overseerCLI(srv, "status", id)
	require.Equal(t, 0, code)
	assert.Contains(t, stdout, "Recent assessments:")
}

func TestE2EInPhaseSupervisionAdviceShowsInStatus(t *testing.T) {
	srv := e2eServer(t)
	c := srv.Client()
	cfg := supervision.Config{Mode: supervision.ModeShadow, Version: "e2e", Budget: 3 * time.Second,
		Thresholds: supervision.Thresholds{No: 0.2, Yes: 0.8}, Limits: supervision.DefaultLimits(),
		Schedule: supervision.Schedule{MinInterval: 50 * time.Millisecond, Period: 200 * time.Millisecond, MaxAssessments: 60, MaxConsecutiveFailures: 3}}
	tq := startWorker(t, srv, worker.Config{Mode: overseer.ModeObserve, AgentWork: 800 * time.Millisecond,
		Supervision: worker.SupervisionConfig{Config: &cfg}})
	run := startJob(t, c, tq, workflows.JobInput{Objective: "Add CSV export", Scenario: activities.OnTrack})
	res, err := finish(t, c, run, "e2e")
	require.NoError(t, err)
	assert.Equal(t, "delivered", res.Outcome)

	s := status(t, c, run.GetID())
	require.NotEmpty(t, s.InPhase, "in-phase advice reaches overseer.status")
	var finals int
	for _, a := range s.InPhase {
		assert.Equal(t, "coro.code", a.ActivityType)
		if a.Final {
			finals++
			assert.Equal(t, string(supervision.AdviceReviewCompletion), a.Advice, "verified, current receipt from the workspace")
			assert.True(t, a.VerifiedRevision)
		}
	}
	assert.Equal(t, 2, finals, "one final advice per code run (the tests loop back once)")
}
