package worker_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/worker"
	"github.com/corohq/temporal-overseer/workflows"
)

func TestTheDefaultModeManagesTheReferenceAndTheRecordedJob(t *testing.T) {
	opts := worker.Config{}.PluginOptions()
	assert.Equal(t, overseer.ModeObserve, opts.Mode)
	assert.Equal(t, overseer.ModeManage, opts.Modes[workflows.JobWorkflowName])
	assert.Equal(t, overseer.ModeManage, opts.Modes[workflows.RecordedJobWorkflowName])
	// A mode given for a type, or for every type, wins.
	opts = worker.Config{Modes: map[string]overseer.Mode{workflows.RecordedJobWorkflowName: overseer.ModeObserve}}.PluginOptions()
	assert.Equal(t, overseer.ModeObserve, opts.Modes[workflows.RecordedJobWorkflowName])
	opts = worker.Config{Mode: overseer.ModeObserve}.PluginOptions()
	assert.NotContains(t, opts.Modes, workflows.RecordedJobWorkflowName)
}
