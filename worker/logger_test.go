package worker_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/corohq/temporal-overseer/worker"
)

func loggingWorkflow(ctx workflow.Context) error {
	workflow.GetLogger(ctx).Info("from workflow code")
	return nil
}

// Entries logged through the SDK's loggers report the caller's file and
// line, not the adapter's nor the SDK's wrappers.
func TestSDKLoggerReportsTheCaller(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := worker.SDKLogger(zap.New(core, zap.AddCaller()))

	l.Info("direct")
	var s testsuite.WorkflowTestSuite
	s.SetLogger(l)
	env := s.NewTestWorkflowEnvironment()
	env.ExecuteWorkflow(loggingWorkflow)
	require.NoError(t, env.GetWorkflowError())

	for _, msg := range []string{"direct", "from workflow code"} {
		entries := logs.FilterMessage(msg).All()
		require.Len(t, entries, 1, msg)
		assert.Equal(t, "logger_test.go", filepath.Base(entries[0].Caller.File), "%s: logged from %s", msg, entries[0].Caller.String())
	}
}
