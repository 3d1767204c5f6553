package overseer_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/jev/jevhttp"
)

// TestBadJudgeAnswersAreRecordedErrorsNeverVerdicts runs the plugin with
// the Jev HTTP judge against a service that answers badly, and checks that
// every boundary records an error, never a verdict, and that only
// transport-level failures are retried.
func TestBadJudgeAnswersAreRecordedErrorsNeverVerdicts(t *testing.T) {
	const good = `{"answers":{"breach":{"choice":"none","confidence":0.9},"off_track":{"probability":0.9},` +
		`"severity":{"score":0.2,"confidence":0.7},"blocked":{"probability":0.1}},"model_version":"jev-test"}`
	for _, tc := range []struct {
		name     string
		status   int
		body     string
		hang     bool
		attempts int // judge calls per boundary
		want     string
	}{
		{name: "NaN", status: 200, body: strings.Replace(good, `"probability":0.9`, `"probability":NaN`, 1), attempts: 1, want: "not a response"},
		{name: "-1", status: 200, body: strings.Replace(good, `"probability":0.9`, `"probability":-1`, 1), attempts: 1, want: "-1 outside [0,1]"},
		{name: "1.1", status: 200, body: strings.Replace(good, `"probability":0.1`, `"probability":1.1`, 1), attempts: 1, want: "1.1 outside [0,1]"},
		{name: "unknown option", status: 200, body: strings.Replace(good, `"choice":"none"`, `"choice":"obligation[7]"`, 1), attempts: 1, want: `unknown choice option "obligation[7]"`},
		{name: "missing question", status: 200, body: strings.Replace(good, `,"blocked":{"probability":0.1}`, "", 1), attempts: 1, want: `"blocked": missing answer`},
		{name: "empty body", status: 200, body: "", attempts: 1, want: "empty body"},
		{name: "500", status: 500, body: `{"error":{"code":"judge_failed","message":"model crashed"}}`, attempts: 3, want: "500 Internal Server Error (judge_failed): model crashed"},
		{name: "401", status: 401, body: `{"error":{"code":"unauthorized","message":"missing or wrong API key"}}`, attempts: 1, want: "401 Unauthorized"},
		{name: "slow server", hang: true, attempts: 3, want: "no answer within the budget of 100ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				_, _ = io.Copy(io.Discard, r.Body) // a server notices a hang-up only once it has read the body
				if tc.hang {
					<-r.Context().Done()
					return
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			judge, err := jevhttp.New(jevhttp.Options{URL: srv.URL, Budget: 100 * time.Millisecond})
			require.NoError(t, err)
			h := newHarness(t, overseer.Options{Mode: overseer.ModeObserve, Judge: judge})
			h.env.ExecuteWorkflow(phasesWorkflow, testPhases)
			require.NoError(t, h.env.GetWorkflowError(), "a failing judge never fails the job")

			s := h.status(t)
			assert.False(t, s.Assessed, "no verdict was ever applied")
			assert.Equal(t, len(testPhases), s.Counters.Failures)
			assert.Zero(t, s.Counters.Flags)
			require.Len(t, s.Assessments, len(testPhases))
			for _, a := range s.Assessments {
				assert.Nil(t, a.Verdict, "an error is never a verdict")
				assert.Nil(t, a.Answers)
				assert.Contains(t, a.Error, tc.want)
			}
			assert.Equal(t, int32(tc.attempts*len(testPhases)), calls.Load(),
				"invalid answers and rejections are not retried; 5xx and timeouts are, by the activity's retry policy only")
		})
	}
}
