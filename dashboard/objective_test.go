package dashboard_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/overseer"
)

func TestJobPageShowsObjectiveAndWhoAborted(t *testing.T) {
	b := newBackend()
	resumed := t0.Add(time.Hour)
	b.statuses["job-off"] = overseer.Status{
		Mode: overseer.ModeManage, Objective: "Add CSV export " + evil, Phase: "code", Assessments: []overseer.Assessment{},
		Gates: []overseer.Gate{{ID: "code-1", Phase: "code", Reason: "off track", PausedAt: t0, ResumedAt: &resumed,
			By: "alice", Action: overseer.ActionAbort, Note: "wrong direction"}},
	}
	srv := newServer(t, b, dashboard.Options{})
	code, body := get(t, srv.Client(), srv.URL+"/job?id=job-off")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "<b>Objective:</b> Add CSV export &lt;script&gt;")
	assert.Contains(t, body, "<b>Aborted by alice</b>")
	assert.Contains(t, body, "wrong direction")
	assert.NotContains(t, body, "The next phase will receive")
}
