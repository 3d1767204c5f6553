package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/proto"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/testsuite"
)

// BenchmarkReplayBoundary replays one recorded 20-phase job per variant
// and reports the workflow code's CPU per phase boundary: what the plugin
// adds to every workflow task, apart from the server and the judge. The
// histories are recorded on a dev server at the start.
//
//	go test ./bench -run XXX -bench ReplayBoundary -benchtime 200x
func BenchmarkReplayBoundary(b *testing.B) {
	if _, err := testsuite.TemporalCLIPath(); err != nil {
		b.Skipf("no Temporal CLI: %v", err)
	}
	ctx := context.Background()
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{Output: io.Discard,
		Logger: log.NewStructuredLogger(slog.New(slog.DiscardHandler)), DynamicConfig: TunedDevServerConfig()})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = srv.Stop() }()
	const phases = 20
	names := []string{VariantBare, VariantHandwritten, VariantHandwrittenListening, VariantHandwrittenBackground, VariantObserve, VariantManage, VariantManageLocal, VariantObserveRemote}
	if v := os.Getenv("BENCH_VARIANTS"); v != "" {
		names = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
	}
	histories := map[string]*historypb.History{}
	byName := map[string]variant{}
	for _, v := range variants(Options{HangBudget: time.Second}) {
		byName[v.Name] = v
	}
	for _, name := range names {
		v, ok := byName[name]
		if !ok {
			b.Fatalf("BENCH_VARIANTS: unknown variant %q: use some of %v", name, Variants())
		}
		queue := fmt.Sprintf("replay-%d-%s", time.Now().UnixNano(), slug(name))
		w, err := newWorker(ctx, srv.Client(), queue, v)
		if err != nil {
			b.Fatal(err)
		}
		j := job{c: srv.Client(), queue: queue, workflow: v.workflow, policy: overseer.DefaultLearnedPolicy(), idPrefix: queue}
		_, id, err := j.run(ctx, "replay", JobInput{Phases: phases})
		w.Stop()
		if err != nil {
			b.Fatal(err)
		}
		histories[name] = fetchHistory(b, srv.Client(), id)
	}
	for _, name := range names {
		v := byName[name]
		b.Run(slug(name), func(b *testing.B) {
			r := replayerFor(b, v)
			for b.Loop() {
				if err := r.ReplayWorkflowHistory(nil, histories[name]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*phases)/1000, "µs/boundary")
			// What the server stores and every worker without the run
			// cached reads back: the history's events and encoded bytes.
			b.ReportMetric(float64(len(histories[name].Events))/phases, "events/boundary")
			b.ReportMetric(float64(proto.Size(histories[name]))/phases, "history-B/boundary")
		})
	}
}

func fetchHistory(b *testing.B, c client.Client, id string) *historypb.History {
	it := c.GetWorkflowHistory(context.Background(), id, "", false, 0)
	h := &historypb.History{}
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			b.Fatal(err)
		}
		h.Events = append(h.Events, e)
	}
	return h
}

func replayerFor(b *testing.B, v variant) sdkworker.WorkflowReplayer {
	var opts sdkworker.WorkflowReplayerOptions
	if v.plugin != nil {
		p, err := overseer.NewPlugin(*v.plugin)
		if err != nil {
			b.Fatal(err)
		}
		opts.Plugins = []sdkworker.Plugin{p}
	}
	r, err := sdkworker.NewWorkflowReplayerWithOptions(opts)
	if err != nil {
		b.Fatal(err)
	}
	registerWorkflow(r, v)
	return r
}
