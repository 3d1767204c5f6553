package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestCallCounterCountsVisibilityCallsOnly checks the proxy's report: only
// List, Count and Scan calls are visibility calls, history reads are said
// apart, and the peak is the most calls that ended in one second.
func TestCallCounterCountsVisibilityCallsOnly(t *testing.T) {
	c := &callCounter{t0: time.Now(), perSecond: map[int64]int{}, byMethod: map[string]int{}}
	const svc = "/temporal.api.workflowservice.v1.WorkflowService/"
	for _, m := range []string{"ListWorkflowExecutions", "CountWorkflowExecutions", "CountWorkflowExecutions", "GetWorkflowExecutionHistory", "PollWorkflowTaskQueue"} {
		c.add(svc + m)
	}
	var b strings.Builder
	c.report(&b, "dashboard")
	assert.Contains(t, b.String(), "dashboard: 3 visibility calls (CountWorkflowExecutions 2, ListWorkflowExecutions 1) of 5 calls (1 history reads)")
	assert.Contains(t, b.String(), "3.0 a second from the first to the last, at most 3 in one second")
}
