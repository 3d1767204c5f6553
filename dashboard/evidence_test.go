package dashboard_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/dashboard"
)

// evidenceBackend is newBackend whose open gate and flagged assessment
// carry evidence, one sentence with markup that must be escaped.
func evidenceBackend() *fakeBackend {
	b := newBackend()
	st := b.statuses["job-paused"]
	evidence := []string{"code ran 4 times since the last plan", "code failed; the last error: " + evil}
	st.Gates[0].Evidence = evidence
	st.Assessments[len(st.Assessments)-1].Evidence = evidence
	b.statuses["job-paused"] = st
	return b
}

const evidenceList = `<ul class="evidence" data-evidence><li>code ran 4 times since the last plan</li>` +
	`<li>code failed; the last error: &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;</li></ul>`

// The job page says what happened before the rule, in the gate's panel,
// at the flagged assessment and where the gate opened.
func TestJobPageShowsTheEvidenceFirst(t *testing.T) {
	srv := newServer(t, evidenceBackend(), dashboard.Options{})
	code, body := get(t, srv.Client(), srv.URL+"/job?id=job-paused")
	require.Equal(t, http.StatusOK, code, body)
	assert.NotContains(t, body, evil)
	assert.Equal(t, 3, strings.Count(body, evidenceList), "the gate panel, the flagged assessment and the gate's opening")

	panel := body[strings.Index(body, `<section class="panel gate"`):]
	assert.Less(t, strings.Index(panel, evidenceList), strings.Index(panel, `<p class="reason">obligation[2] appears unmet`),
		"the panel says what happened before the rule")
	opened := body[strings.Index(body, `data-gate-event="opened"`):]
	assert.Less(t, strings.Index(opened, evidenceList), strings.Index(opened, `<p class="reason">obligation[2] appears unmet</p>`))
}

// The waiting view shows each gate's evidence in place of the rule, which
// stays in the cell's title; a gate without evidence shows its reason.
func TestWaitingViewShowsTheEvidence(t *testing.T) {
	b := evidenceBackend()
	srv := newServer(t, b, dashboard.Options{Now: func() time.Time { return waitingNow }})
	code, body := get(t, srv.Client(), srv.URL+"/waiting")
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, `<th>What happened</th>`)
	assert.Contains(t, body, `<td class="reason" title="obligation[2] appears unmet">`+evidenceList+`</td>`)

	st := b.statuses["job-paused"]
	st.Gates[0].Evidence = nil
	b.statuses["job-paused"] = st
	_, body = get(t, srv.Client(), srv.URL+"/waiting")
	assert.Contains(t, body, `<td class="reason" title="obligation[2] appears unmet">obligation[2] appears unmet</td>`)
	assert.NotContains(t, body, `data-evidence`)
}
