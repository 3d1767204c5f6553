package conformance_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/testsuite"
	"github.com/corohq/temporal-overseer/testsuite/conformance"
)

func devServer(t *testing.T) *testsuite.DevServer {
	t.Helper()
	return testsuite.StartDevServerForTest(t, testsuite.DevServerOptions{})
}

// Every pattern does on a real server, in every mode, what it does without
// the plugin: the same result, the same handler outcomes and the same
// commands in the same order. The races are run with the workflow's
// worker stopped while the phase completes and the other event arrives,
// so that both land in one workflow task, as under load or after a
// restart; the test checks that they did.
func TestPatternsOnADevServer(t *testing.T) {
	srv := devServer(t)
	for _, p := range conformance.Patterns() {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			var want conformance.ServerRun
			for i, m := range conformance.Modes() {
				got, run := conformance.RunOnServer(t, srv.Client(), p, m)
				replays(t, srv.Client(), p, m, run)
				if i == 0 {
					want = got
					require.Empty(t, want.Err, "the pattern completes without the plugin")
					continue
				}
				assert.Equal(t, want, got, "%s in mode %s", p.Name, m.Name)
			}
		})
	}
}

// replays checks that the run's (first) history replays on this code with
// the worker it ran on, and, recorded with the plugin, with the plugin
// switched to off (how a team retires it: docs/upgrades.md). Without the
// plugin, most histories the overseer wrote to do not replay
// (workflows.TestReplayDetectsARemovedPlugin).
func replays(t *testing.T, c client.Client, p conformance.Pattern, m conformance.Mode, run workflow.Execution) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	replay := func(opts *overseer.Options) error {
		ro := worker.WorkflowReplayerOptions{}
		if p.DataConverter != nil {
			ro.DataConverter = p.DataConverter()
		}
		if opts != nil {
			plugin, err := overseer.NewPlugin(*opts)
			require.NoError(t, err)
			ro.Plugins = []worker.Plugin{plugin}
		}
		r, err := worker.NewWorkflowReplayerWithOptions(ro)
		require.NoError(t, err)
		p.Register(r)
		// From the server: the replay then has the run's namespace, id and
		// run id, which a context-bound codec binds its payloads to.
		return r.ReplayWorkflowExecution(ctx, c.WorkflowService(), log.NewStructuredLogger(slog.New(slog.DiscardHandler)), "default", run)
	}
	if !m.Plugin {
		require.NoError(t, replay(nil), "replays as recorded")
		return
	}
	opts := m.Options
	require.NoError(t, replay(&opts), "replays as recorded")
	require.NoError(t, replay(&overseer.Options{Mode: overseer.ModeOff}), "replays with the plugin switched off")
}

// overseer.NeedsPluginQuery finds the open runs that started under the
// plugin in observe or manage mode, and no other: not a run without it,
// nor one in mode off; and none once they have closed.
func TestNeedsPluginQueryFindsTheRunsThatStillNeedThePlugin(t *testing.T) {
	srv := devServer(t)
	c := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var p conformance.Pattern
	for _, q := range conformance.Patterns() {
		if q.Name == "RaceSignal" {
			p = q
		}
	}
	suffix := fmt.Sprint(time.Now().UnixNano())
	var want []string
	held := map[string]*conformance.Activities{}
	for _, m := range conformance.Modes() {
		tq := "retire-" + m.Name + "-" + suffix
		wo := worker.Options{}
		if m.Plugin {
			plugin, err := overseer.NewPlugin(m.Options)
			require.NoError(t, err)
			wo.Plugins = []worker.Plugin{plugin}
		}
		w := worker.New(c, tq, wo)
		p.Register(w)
		acts := conformance.NewActivities()
		acts.HoldAll = true // the run stays open until its signal
		acts.Register(w)
		held[m.Name] = acts
		require.NoError(t, w.Start())
		defer w.Stop()
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: tq, TaskQueue: tq}, p.Name, 0)
		require.NoError(t, err)
		if m.Options.Mode == overseer.ModeObserve || m.Options.Mode == overseer.ModeManage {
			want = append(want, tq)
		}
		require.Eventually(t, func() bool { return slices.Contains(acts.Calls(), conformance.ActivityHeld+" race") }, time.Minute, 20*time.Millisecond)
	}
	found := func() []string {
		var ids []string
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: overseer.NeedsPluginQuery(p.Name)})
		require.NoError(t, err)
		for _, e := range resp.GetExecutions() {
			if strings.HasSuffix(e.GetExecution().GetWorkflowId(), suffix) {
				ids = append(ids, e.GetExecution().GetWorkflowId())
			}
		}
		sort.Strings(ids)
		return ids
	}
	sort.Strings(want)
	require.Eventually(t, func() bool { return slices.Equal(want, found()) }, 30*time.Second, 100*time.Millisecond,
		"the open runs in observe and manage mode, %v", want)
	for _, m := range conformance.Modes() {
		id := "retire-" + m.Name + "-" + suffix
		require.NoError(t, c.SignalWorkflow(ctx, id, "", "poke", 1))
		held[m.Name].Release("race")
		require.NoError(t, c.GetWorkflow(ctx, id, "").Get(ctx, nil))
	}
	require.Eventually(t, func() bool { return len(found()) == 0 }, 30*time.Second, 100*time.Millisecond, "none once closed")
}

// A worker that runs activities only starts with the plugin (the plugin
// registered its notifier workflow on it, and the SDK panicked).
func TestThePluginOnAnActivityOnlyWorker(t *testing.T) {
	srv := devServer(t)
	plugin, err := overseer.NewPlugin(overseer.Options{})
	require.NoError(t, err)
	w := worker.New(srv.Client(), "activities-only", worker.Options{DisableWorkflowWorker: true, Plugins: []worker.Plugin{plugin}})
	conformance.NewActivities().Register(w)
	require.NotPanics(t, func() { require.NoError(t, w.Start()) })
	w.Stop()
}
