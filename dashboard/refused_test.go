package dashboard_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/corohq/temporal-overseer/dashboard"
	"github.com/corohq/temporal-overseer/overseer"
)

// A resume the job refuses is logged with who tried (the signed-in user,
// not a name typed into the form), the gate and the refusal's type.
func TestRefusedResumeIsLoggedWithWhoTried(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	headers := map[string]string{"X-Forwarded-User": "rev@example.com"}
	srv := newServer(t, newBackend(), dashboard.Options{Logger: zap.New(core), TrustedProxy: dashboard.TrustedProxy{Addresses: []string{"127.0.0.0/8"}}})
	c := jarClient(t, false)
	token := pageToken(t, c, srv.URL+"/job?id=job-paused", headers)
	resp, body := post(t, c, srv.URL+"/job/resume", url.Values{"csrf": {token}, "id": {"job-paused"}, "by": {"mallory"},
		"gate": {"spec-0"}}, headers)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, body)
	entries := logs.FilterMessage("dashboard: resume refused").All()
	require.Len(t, entries, 1)
	fields := entries[0].ContextMap()
	assert.Equal(t, "rev@example.com", fields["by"])
	assert.Equal(t, "job-paused", fields["workflow_id"])
	assert.Equal(t, "spec-0", fields["gate"])
	assert.Equal(t, overseer.WrongGateErrorType, fields["reason"])
}
