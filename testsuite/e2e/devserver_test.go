package e2e_test

import (
	"context"
	"os"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"

	"github.com/corohq/temporal-overseer/testsuite"
)

// requireCLI skips the test when the Temporal CLI is not installed, except in
// CI (CI=true), where a missing CLI is a failure.
func requireCLI(t *testing.T) {
	t.Helper()
	if _, err := testsuite.TemporalCLIPath(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and the Temporal CLI is missing: %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
}

func TestDevServer(t *testing.T) {
	skipOnCluster(t)
	requireCLI(t)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	start := time.Now()
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		SearchAttributes: map[string]enumspb.IndexedValueType{
			"OverseerTestExtra": enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST,
		},
	})
	if err != nil {
		t.Fatalf("StartDevServer: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	t.Logf("dev server up at %s (namespace %s) in %v", srv.FrontendHostPort(), srv.Namespace(), time.Since(start).Round(time.Millisecond))

	resp, err := srv.Client().OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{
		Namespace: srv.Namespace(),
	})
	if err != nil {
		t.Fatalf("ListSearchAttributes: %v", err)
	}
	want := map[string]enumspb.IndexedValueType{"OverseerTestExtra": enumspb.INDEXED_VALUE_TYPE_KEYWORD_LIST}
	for name, typ := range testsuite.OverseerSearchAttributes {
		want[name] = typ
	}
	for name, typ := range want {
		got, ok := resp.GetCustomAttributes()[name]
		if !ok {
			t.Errorf("search attribute %s not registered; custom attributes: %v", name, resp.GetCustomAttributes())
			continue
		}
		if got != typ {
			t.Errorf("search attribute %s: type %v, want %v", name, got, typ)
		}
	}

	stopStart := time.Now()
	if err := srv.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("dev server stopped in %v", time.Since(stopStart).Round(time.Millisecond))
	if err := srv.Stop(); err != nil { // idempotent
		t.Fatalf("second Stop: %v", err)
	}
}

func TestDevServerRejectsConflictingSearchAttribute(t *testing.T) {
	skipOnCluster(t)
	// Fails before anything is started, so no CLI is needed.
	_, err := testsuite.StartDevServer(context.Background(), testsuite.DevServerOptions{
		ExistingPath: os.Args[0], // any executable; never run
		SearchAttributes: map[string]enumspb.IndexedValueType{
			"OverseerStatus": enumspb.INDEXED_VALUE_TYPE_TEXT,
		},
	})
	if err == nil {
		t.Fatal("expected an error for a conflicting OverseerStatus type")
	}
}

func TestTemporalCLIPathEnvOverride(t *testing.T) {
	skipOnCluster(t)
	t.Setenv("OVERSEER_TEMPORAL_CLI", os.Args[0])
	got, err := testsuite.TemporalCLIPath()
	if err != nil || got != os.Args[0] {
		t.Fatalf("TemporalCLIPath() = %q, %v; want %q", got, err, os.Args[0])
	}
	t.Setenv("OVERSEER_TEMPORAL_CLI", "/nonexistent/temporal")
	if _, err := testsuite.TemporalCLIPath(); err == nil {
		t.Fatal("expected an error for a missing OVERSEER_TEMPORAL_CLI binary")
	}
}
