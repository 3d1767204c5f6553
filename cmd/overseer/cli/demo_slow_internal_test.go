package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
)

// slowServer is a busy server: the job's status query times out the first
// queryTimeouts times, its describe the first describeTimeouts times, then
// each answers (the job runs, not paused). Each call moves the clock on by
// a call timeout, as one that waited it out would.
type slowServer struct {
	client.Client    // nil: a call the test does not expect panics
	queryTimeouts    int
	describeTimeouts int
	queries          int
	describes        int
	now              time.Time
}

func (s *slowServer) QueryWorkflow(_ context.Context, _, _, query string, _ ...any) (converter.EncodedValue, error) {
	s.now = s.now.Add(demoCallTimeout)
	if query != overseer.StatusQueryName {
		return nil, errors.New("unexpected query " + query)
	}
	s.queries++
	if s.queries <= s.queryTimeouts {
		return nil, serviceerror.NewDeadlineExceeded("context deadline exceeded")
	}
	return statusValue{overseer.Status{Mode: overseer.ModeManage, Phase: "code"}}, nil
}

func (s *slowServer) DescribeWorkflow(context.Context, string, string) (*client.WorkflowExecutionDescription, error) {
	s.now = s.now.Add(demoCallTimeout)
	s.describes++
	if s.describes <= s.describeTimeouts {
		return nil, context.DeadlineExceeded
	}
	return &client.WorkflowExecutionDescription{RawResponse: &workflowservice.DescribeWorkflowExecutionResponse{
		WorkflowExecutionInfo: &workflowpb.WorkflowExecutionInfo{Status: enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING}}}, nil
}

type statusValue struct{ s overseer.Status }

func (v statusValue) HasValue() bool { return true }
func (v statusValue) Get(ptr any) error {
	b, err := json.Marshal(v.s)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, ptr)
}

// The demo waits out a slow server: a status query or a describe that
// times out is made again, and the demo says once per job that the server
// is slow, instead of failing with "the server did not answer in time"; a
// server that never answers fails the poll after the wait, saying how long.
func TestDemoPollWaitsOutASlowServer(t *testing.T) {
	tests := []struct {
		name                            string
		queryTimeouts, describeTimeouts int
		queries, describes              int
		err                             string
	}{
		{name: "status times out twice", queryTimeouts: 2, queries: 3, describes: 1},
		{name: "status and describe time out twice each", queryTimeouts: 2, describeTimeouts: 2, queries: 3, describes: 3},
		{name: "status never answers", queryTimeouts: 1000, queries: 12,
			err: `job "demo-blocked-1": the server did not answer in 2m0s (asked 12 times, each time waiting up to 10s; is a worker running on the task queue?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := &slowServer{queryTimeouts: tt.queryTimeouts, describeTimeouts: tt.describeTimeouts, now: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)}
			var out bytes.Buffer
			p := demoPatience(&out)
			p.Backoff, p.Now = time.Millisecond, func() time.Time { return srv.now }
			j := &demoJob{label: "blocked", id: "demo-blocked-1", patience: p}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := j.poll(ctx, srv, &out, 0)
			assert.Equal(t, tt.queries, srv.queries, "status queries")
			assert.Equal(t, tt.describes, srv.describes, "describes")
			assert.Equal(t, 1, strings.Count(out.String(), "the server is slow"), "said once: %q", out.String())
			assert.Contains(t, out.String(), "the server is slow to answer job demo-blocked-1; still trying (10 s so far)\n")
			if tt.err != "" {
				require.Error(t, err)
				assert.Equal(t, tt.err, err.Error())
				assert.True(t, ops.TimedOut(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "code", j.status.Phase)
			assert.False(t, j.done, "the job runs on")
		})
	}
}
