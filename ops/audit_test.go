package ops_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	updatepb "go.temporal.io/api/update/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// sealed numbers the records of one job and writes them as an audit file.
func sealed(t *testing.T, id, runID string, recs []ops.AuditRecord) []byte {
	t.Helper()
	for i := range recs {
		recs[i].Job = ops.AuditJob{WorkflowID: id, RunID: runID, WorkflowType: "CoroJob"}
		recs[i].Seq, recs[i].Of = i+1, len(recs)
	}
	var b bytes.Buffer
	_, err := ops.WriteAudit(&b, recs)
	require.NoError(t, err)
	return b.Bytes()
}

// A job the plugin ran on a Temporal server, whose two gates a reviewer
// resumed with the overseer.resume update: each gate opened and was
// resumed, by whom and from which client, under the run's pinned policy
// and the model that flagged it.
func TestAuditOfARecordedJob(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "workflows", "testdata", "job_with_plugin.json"))
	require.NoError(t, err)
	defer f.Close()
	h, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)
	recs := ops.AuditOfHistory(h.GetEvents(), "run-1", converter.GetDefaultDataConverter())
	require.Len(t, recs, 4)
	var kinds []string
	for _, r := range recs {
		kinds = append(kinds, r.Gate+" "+r.Kind)
		assert.Equal(t, "manage", r.Mode)
		require.NotNil(t, r.Policy)
		assert.Equal(t, "default thresholds", r.Policy.Name)
		assert.Len(t, r.Policy.SHA256, 64)
		assert.Equal(t, "overseer-heuristic-v1", r.ModelVersion)
		assert.Contains(t, r.Reason, "obligation[2]")
		assert.Equal(t, []string{ops.SourceResumeUpdate}, r.Sources)
	}
	assert.Equal(t, []string{"code-1 opened", "code-1 resumed", "test-2 opened", "test-2 resumed"}, kinds)
	assert.Equal(t, "recorder", recs[1].By)
	assert.NotEmpty(t, recs[1].Identity, "the update's sender")
	assert.Empty(t, recs[0].By, "nobody opens a gate")

	out := sealed(t, "job-with-plugin", "run-1", recs)
	golden := filepath.Join("testdata", "audit_job_with_plugin.jsonl")
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(golden, out, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err, "run go test ./ops -run TestAuditOfARecordedJob -update")
	assert.Equal(t, string(want), string(out), "run go test ./ops -run TestAuditOfARecordedJob -update after a deliberate change")
	sum, err := ops.VerifyAudit(bytes.NewReader(want))
	require.NoError(t, err)
	assert.Equal(t, 4, sum.Records)
	assert.Equal(t, 1, sum.Jobs)
	assert.Equal(t, ops.AuditFormat, sum.Format)
}

// Every source a history has: the gate the resume update returned, the
// notifications (a retried one is one event), a resume signal, and the gate
// an aborted job failed with.
func TestAuditOfHistoryReadsEverySource(t *testing.T) {
	dc := converter.GetDefaultDataConverter()
	payloads := func(v any) *commonpb.Payloads {
		p, err := dc.ToPayloads(v)
		require.NoError(t, err)
		return p
	}
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	sec := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ptr := func(t time.Time) *time.Time { return &t }
	yes := true
	var events []*historypb.HistoryEvent
	ev := func(typ enumspb.EventType, s int, attrs func(e *historypb.HistoryEvent)) *historypb.HistoryEvent {
		e := &historypb.HistoryEvent{EventId: int64(len(events) + 1), EventType: typ, EventTime: timestamppb.New(sec(s))}
		attrs(e)
		events = append(events, e)
		return e
	}
	sideEffect := func(s int, v any) {
		ev(enumspb.EVENT_TYPE_MARKER_RECORDED, s, func(e *historypb.HistoryEvent) {
			e.Attributes = &historypb.HistoryEvent_MarkerRecordedEventAttributes{MarkerRecordedEventAttributes: &historypb.MarkerRecordedEventAttributes{
				MarkerName: "SideEffect", Details: map[string]*commonpb.Payloads{"data": payloads(v)}}}
		})
	}
	phase := func(name string, s int, basis string) {
		sched := ev(enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, s, func(e *historypb.HistoryEvent) {
			e.Attributes = &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
				ActivityType: &commonpb.ActivityType{Name: "coro." + name}}}
		})
		ev(enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, s+1, func(e *historypb.HistoryEvent) {
			e.Attributes = &historypb.HistoryEvent_ActivityTaskCompletedEventAttributes{ActivityTaskCompletedEventAttributes: &historypb.ActivityTaskCompletedEventAttributes{
				ScheduledEventId: sched.EventId}}
		})
		sideEffect(s+1, map[string]any{"kind": "overseer.answer/v1", "output": overseer.AssessOutput{
			Answers: overseer.Answers{OnObjective: 0.2, Breach: overseer.BreachNone, Basis: basis}, Model: "learned-v7"}})
	}
	notify := func(s int, e overseer.GateEvent) {
		ev(enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, s, func(h *historypb.HistoryEvent) {
			h.Attributes = &historypb.HistoryEvent_ActivityTaskScheduledEventAttributes{ActivityTaskScheduledEventAttributes: &historypb.ActivityTaskScheduledEventAttributes{
				ActivityType: &commonpb.ActivityType{Name: overseer.NotifyActivityName}, Input: payloads(e)}}
		})
	}
	key := func(gate, kind string) string { return "job/run-1/" + gate + "/" + kind }

	ev(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, 0, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_WorkflowExecutionStartedEventAttributes{WorkflowExecutionStartedEventAttributes: &historypb.WorkflowExecutionStartedEventAttributes{
			WorkflowType: &commonpb.WorkflowType{Name: "CoroJob"}}}
	})
	sideEffect(0, map[string]any{"mode": "manage", "policy": overseer.Policy{Name: "calibrated CoroJob", PauseAtOrBelow: 0.3, BreachConfidence: 0.5, BreachSeverity: 1.5}})
	phase("code", 1, "telemetry sub-model: 9 inputs; stage 1: recalibrated (intercept) on 34 CoroJob jobs")
	// code-1: opened, escalated by its deadline, resumed by ana through the update.
	notify(2, overseer.GateEvent{Kind: overseer.GateOpened, IdempotencyKey: key("code-1", "opened"), At: sec(2), Gate: "code-1", Phase: "code", Reason: "P low", OpenedAt: sec(2)})
	notify(62, overseer.GateEvent{Kind: overseer.GateEscalated, IdempotencyKey: key("code-1", "escalated"), At: sec(62), Gate: "code-1", Phase: "code", Rule: "deadline 1m: escalate"})
	accepted := ev(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED, 70, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_WorkflowExecutionUpdateAcceptedEventAttributes{WorkflowExecutionUpdateAcceptedEventAttributes: &historypb.WorkflowExecutionUpdateAcceptedEventAttributes{
			AcceptedRequest: &updatepb.Request{Meta: &updatepb.Meta{Identity: "dashboard@ops"}, Input: &updatepb.Input{Name: overseer.ResumeName}}}}
	})
	code1 := overseer.Gate{ID: "code-1", Phase: "code", Reason: "P low", Evidence: []string{"code failed 3 times in a row"}, PausedAt: sec(2),
		EscalatedAt: ptr(sec(62)), EscalatedBy: "deadline 1m: escalate", ResumedAt: ptr(sec(70)), By: "ana", Note: "use the fixture",
		Action: overseer.ActionContinue, Needed: &yes, NeededBy: overseer.NeededByReviewer}
	ev(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED, 70, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_WorkflowExecutionUpdateCompletedEventAttributes{WorkflowExecutionUpdateCompletedEventAttributes: &historypb.WorkflowExecutionUpdateCompletedEventAttributes{
			AcceptedEventId: accepted.EventId, Outcome: &updatepb.Outcome{Value: &updatepb.Outcome_Success{Success: payloads(code1)}}}}
	})
	resumed := overseer.GateEvent{Kind: overseer.GateResumed, IdempotencyKey: key("code-1", "resumed"), At: sec(70), Gate: "code-1", Phase: "code",
		Action: overseer.ActionContinue, By: "ana", Note: "use the fixture"}
	notify(70, resumed)
	notify(71, resumed) // a retry of the same notification
	// test-2: opened, a resume signal whose taking history does not show, then expired.
	phase("test", 72, "telemetry sub-model: 9 inputs; stage 2: certified; lower than 92% of the last 40 CoroJob jobs at this point")
	notify(74, overseer.GateEvent{Kind: overseer.GateOpened, IdempotencyKey: key("test-2", "opened"), At: sec(74), Gate: "test-2", Phase: "test", Reason: "breach", OpenedAt: sec(74)})
	ev(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED, 80, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_WorkflowExecutionSignaledEventAttributes{WorkflowExecutionSignaledEventAttributes: &historypb.WorkflowExecutionSignaledEventAttributes{
			SignalName: overseer.ResumeName, Identity: "cli@laptop", Input: payloads(overseer.ResumeRequest{By: "carl", Gate: "test-2", Action: overseer.ActionRedo, Note: "again"})}}
	})
	notify(3674, overseer.GateEvent{Kind: overseer.GateExpired, IdempotencyKey: key("test-2", "expired"), At: sec(3674), Gate: "test-2", Phase: "test",
		Action: overseer.ActionContinue, Rule: "deadline 1h: continue"})
	// review-3: opened and aborted by bo, read from the gate the job failed with.
	phase("review", 3675, "")
	review3 := overseer.Gate{ID: "review-3", Phase: "review", Reason: "off track", PausedAt: sec(3677), ResumedAt: ptr(sec(3700)), By: "bo",
		Action: overseer.ActionAbort, Needed: &yes, NeededBy: overseer.NeededByAction}
	ev(enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, 3700, func(e *historypb.HistoryEvent) {
		e.Attributes = &historypb.HistoryEvent_WorkflowExecutionFailedEventAttributes{WorkflowExecutionFailedEventAttributes: &historypb.WorkflowExecutionFailedEventAttributes{
			Failure: &failurepb.Failure{Message: "aborted", FailureInfo: &failurepb.Failure_ApplicationFailureInfo{ApplicationFailureInfo: &failurepb.ApplicationFailureInfo{
				Type: overseer.AbortedErrorType, Details: payloads(review3)}}}}}
	})

	recs := ops.AuditOfHistory(events, "run-1", dc)
	var got []string
	for _, r := range recs {
		got = append(got, r.Gate+" "+r.Kind+" "+strings.Join(r.Sources, "+"))
		assert.Equal(t, ops.AuditFormat, r.Format)
		assert.Equal(t, "run-1", r.Run)
		assert.Equal(t, "calibrated CoroJob", r.Policy.Name, r.Gate+" "+r.Kind)
		assert.Equal(t, "learned-v7", r.ModelVersion)
	}
	assert.Equal(t, []string{
		"code-1 opened notification+resume_update",
		"code-1 escalated notification+resume_update",
		"code-1 resumed notification+resume_update",
		"test-2 opened notification",
		"test-2 resume_signal signal",
		"test-2 expired notification",
		"review-3 opened abort_failure",
		"review-3 aborted abort_failure",
	}, got)
	byKind := map[string]ops.AuditRecord{}
	for _, r := range recs {
		byKind[r.Gate+" "+r.Kind] = r
	}
	open, res := byKind["code-1 opened"], byKind["code-1 resumed"]
	assert.Equal(t, []string{"code failed 3 times in a row"}, open.Evidence, "the gate's evidence fills the notification's")
	assert.Equal(t, "stage 1: recalibrated (intercept) on 34 CoroJob jobs", open.Stage)
	assert.Equal(t, "deadline 1m: escalate", byKind["code-1 escalated"].Rule)
	assert.Equal(t, "ana", res.By)
	assert.Equal(t, "dashboard@ops", res.Identity)
	assert.Equal(t, "use the fixture", res.Note)
	require.NotNil(t, res.Needed)
	assert.True(t, *res.Needed)
	assert.Equal(t, string(overseer.NeededByReviewer), res.NeededBy)
	sig := byKind["test-2 resume_signal"]
	assert.Equal(t, "carl", sig.By)
	assert.Equal(t, "cli@laptop", sig.Identity)
	assert.Equal(t, "redo", sig.Action)
	assert.Equal(t, "test", sig.Phase, "the phase of the gate it names")
	assert.Equal(t, "stage 2: certified", sig.Stage)
	assert.Equal(t, "deadline 1h: continue", byKind["test-2 expired"].Rule)
	ab := byKind["review-3 aborted"]
	assert.Equal(t, "bo", ab.By)
	assert.Equal(t, "abort", ab.Action)
	assert.Empty(t, ab.Stage, "the review phase's basis names no stage")

	sum, err := ops.VerifyAudit(bytes.NewReader(sealed(t, "job", "run-1", recs)))
	require.NoError(t, err)
	assert.Equal(t, 8, sum.Records)
}

// An audit file that was edited, had a record dropped or two swapped fails
// verification with the line and what is wrong; the file as written passes.
func TestVerifyAuditDetectsTampering(t *testing.T) {
	lines, _ := writeAudit(t, jobRecords("job-a"), jobRecords("job-b"))
	require.Len(t, lines, 6)
	join := func(ls ...string) string { return strings.Join(ls, "") }
	without := func(i int) string {
		return join(append(append([]string{}, lines[:i]...), lines[i+1:]...)...)
	}
	swapped := func(i, j int) string {
		ls := append([]string{}, lines...)
		ls[i], ls[j] = ls[j], ls[i]
		return join(ls...)
	}
	edited := func(i int, from, to string) string {
		ls := append([]string{}, lines...)
		require.Contains(t, ls[i], from)
		ls[i] = strings.Replace(ls[i], from, to, 1)
		require.Equal(t, len(lines[i]), len(ls[i]), "a one-byte edit")
		return join(ls...)
	}
	for _, tc := range []struct {
		name, file string
		want       string // "" means valid
	}{
		{"as written", join(lines...), ""},
		{"one byte of the first record's by", edited(0, `"by":"ana"`, `"by":"anb"`), "line 1 (record 1 of job \"job-a\") was edited: its digest does not match"},
		{"one byte of a middle record's time", edited(1, "10:01:00Z", "10:01:09Z"), "line 2 (record 2 of job \"job-a\") was edited"},
		{"one byte of a job's last record", edited(5, `"kind":"resumed"`, `"kind":"resumes"`), "line 6 (record 3 of job \"job-b\") was edited"},
		{"one byte that breaks the JSON", edited(3, `{"format"`, `["format"`), "line 4 is not an audit record"},
		{"one byte of whitespace", edited(2, `,"by"`, ` "by"`), "line 3 is not an audit record"},
		{"a job's first record dropped", without(0), "line 1 is record 2 of job \"job-a\" where its record 1 belongs: a record was dropped or moved"},
		{"a middle record dropped", without(4), "line 5 is record 3 of job \"job-b\" where its record 2 belongs"},
		{"a job's last record dropped", without(2), "line 2 is the last of job \"job-a\"'s records, record 2 of 3: the records after it were dropped"},
		{"the file's last record dropped", join(lines[:5]...), "line 5 is the last of job \"job-b\"'s records, record 2 of 3"},
		{"two records of a job swapped", swapped(1, 2), "line 2 is record 3 of job \"job-a\" where its record 2 belongs"},
		{"records of two jobs swapped", swapped(2, 3), "line 4 (record 3 of job \"job-a\") comes after records of job \"job-b\": records were reordered"},
		{"jobs swapped whole", join(append(append([]string{}, lines[3:]...), lines[:3]...)...), "line 4 (job \"job-a\") comes after job \"job-b\": records were reordered"},
		{"a record repeated", join(lines[0], lines[1], lines[1], lines[2]), "line 3 is record 2 of job \"job-a\", after its record 2: records were reordered or repeated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, err := ops.VerifyAudit(strings.NewReader(tc.file))
			if tc.want == "" {
				require.NoError(t, err)
				assert.Equal(t, ops.AuditSummary{Records: 6, Jobs: 2, Head: sum.Head, Format: ops.AuditFormat}, sum)
				assert.Len(t, sum.Head, 64)
				return
			}
			require.ErrorIs(t, err, ops.ErrAuditTampered)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// WriteAudit's head is the SHA-256 of the file it wrote, and VerifyAudit
// says the same head.
func TestAuditHeadIsTheFilesDigest(t *testing.T) {
	recs := []ops.AuditRecord{{Format: ops.AuditFormat, Job: ops.AuditJob{WorkflowID: "j", RunID: "r"}, Seq: 1, Of: 1, Run: "r", Kind: ops.AuditOpened, Sources: []string{ops.SourceNotification}}}
	var b bytes.Buffer
	head, err := ops.WriteAudit(&b, recs)
	require.NoError(t, err)
	sum, err := ops.VerifyAudit(bytes.NewReader(b.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, head, sum.Head)
	assert.True(t, strings.HasPrefix(b.String(), `{"format":"overseer-audit/v2","line":1,"lines":1,"job":{"workflow_id":"j","run_id":"r","workflow_type":""},"seq":1,"of":1,`), b.String())
}

// A gate its deadline escalated and then aborted, read from the gate the job
// failed with: opened, escalated and expired, each with its rule, nobody's
// decision.
func TestAuditOfAGateItsDeadlineAborted(t *testing.T) {
	dc := converter.GetDefaultDataConverter()
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	esc, closed := t0.Add(24*time.Hour), t0.Add(72*time.Hour)
	yes := true
	g := overseer.Gate{ID: "code-1", Phase: "code", Reason: "P low", PausedAt: t0, EscalatedAt: &esc, EscalatedBy: "deadline 24h: escalate",
		ResumedAt: &closed, Action: overseer.ActionAbort, Expired: true, ExpiredBy: "deadline 72h: abort", Needed: &yes, NeededBy: overseer.NeededByDeadline}
	details, err := dc.ToPayloads(g)
	require.NoError(t, err)
	events := []*historypb.HistoryEvent{{EventId: 1, EventType: enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED, EventTime: timestamppb.New(closed),
		Attributes: &historypb.HistoryEvent_WorkflowExecutionFailedEventAttributes{WorkflowExecutionFailedEventAttributes: &historypb.WorkflowExecutionFailedEventAttributes{
			Failure: &failurepb.Failure{Message: "aborted", FailureInfo: &failurepb.Failure_ApplicationFailureInfo{ApplicationFailureInfo: &failurepb.ApplicationFailureInfo{
				Type: overseer.AbortedErrorType, Details: details}}}}}}}
	recs := ops.AuditOfHistory(events, "r", dc)
	require.Len(t, recs, 3)
	assert.Equal(t, ops.AuditOpened, recs[0].Kind)
	assert.True(t, recs[0].At.Equal(t0))
	assert.Equal(t, ops.AuditEscalated, recs[1].Kind)
	assert.Equal(t, "deadline 24h: escalate", recs[1].Rule)
	assert.True(t, recs[1].At.Equal(esc))
	ex := recs[2]
	assert.Equal(t, ops.AuditExpired, ex.Kind)
	assert.Equal(t, "abort", ex.Action)
	assert.Equal(t, "deadline 72h: abort", ex.Rule)
	assert.Empty(t, ex.By, "no reviewer decided")
	require.NotNil(t, ex.Needed)
	assert.True(t, *ex.Needed)
	assert.Equal(t, string(overseer.NeededByDeadline), ex.NeededBy)
	assert.Equal(t, []string{ops.SourceAbortFailure}, ex.Sources)
	assert.Empty(t, ex.Mode, "no pinned configuration in this history")
	assert.Nil(t, ex.Policy)
}

// jobRecords are the three records of a job whose gate code-1 opened, was
// escalated and was resumed by ana, numbered as Audit numbers them.
func jobRecords(id string) []ops.AuditRecord {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	var recs []ops.AuditRecord
	for i, kind := range []string{ops.AuditOpened, ops.AuditEscalated, ops.AuditResumed} {
		recs = append(recs, ops.AuditRecord{Format: ops.AuditFormat, Job: ops.AuditJob{WorkflowID: id, RunID: "r1", WorkflowType: "CoroJob"},
			Seq: i + 1, Of: 3, Run: "r1", Gate: "code-1", Phase: "code", Kind: kind, At: t0.Add(time.Duration(i) * time.Minute), By: "ana",
			Sources: []string{ops.SourceNotification}})
	}
	return recs
}

// writeAudit writes the jobs' records as one audit file, as overseer audit
// does, and returns its lines (each with its newline) and its head.
func writeAudit(t *testing.T, jobs ...[]ops.AuditRecord) ([]string, string) {
	t.Helper()
	var recs []ops.AuditRecord
	for _, j := range jobs {
		recs = append(recs, j...)
	}
	var b bytes.Buffer
	head, err := ops.WriteAudit(&b, recs)
	require.NoError(t, err)
	lines := strings.SplitAfter(b.String(), "\n")
	return lines[:len(lines)-1], head
}

// A file with a job's records removed whole, cut between two jobs, or with
// an invented job's records (as overseer audit writes a job on its own)
// inserted in order fails with the line and the problem, though every
// job's own records are whole and in order; the file as written passes.
func TestVerifyAuditFindsAMissingJob(t *testing.T) {
	lines, head := writeAudit(t, jobRecords("job-a"), jobRecords("job-b"), jobRecords("job-c"))
	require.Len(t, lines, 9)
	invented, _ := writeAudit(t, jobRecords("job-ab"))
	appended, _ := writeAudit(t, jobRecords("job-d"))
	one := jobRecords("job-e")[:1]
	one[0].Of = 1
	extra, _ := writeAudit(t, one)
	join := func(parts ...[]string) string {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(strings.Join(p, ""))
		}
		return b.String()
	}
	for _, tc := range []struct {
		name, file string
		want       string // "" means valid
	}{
		{"as written", join(lines), ""},
		{"a middle job's records removed", join(lines[:3], lines[6:]), "line 4 is the file's record 7 where its record 4 belongs: 3 records before it were dropped"},
		{"the first job's records removed", join(lines[3:]), "line 1 is the file's record 4 where its record 1 belongs: 3 records before it were dropped"},
		{"cut after the second job", join(lines[:6]), "line 6 is the file's last, record 6 of 9: the 3 records after it were dropped"},
		{"cut after the first job", join(lines[:3]), "line 3 is the file's last, record 3 of 9: the 6 records after it were dropped"},
		{"an invented job inserted in order", join(lines[:3], invented, lines[3:]), "line 4 says its file has 3 records where line 1 says 9: records from another audit file were inserted"},
		{"an invented job appended", join(lines, appended), "line 10 says its file has 3 records where line 1 says 9: records from another audit file were inserted"},
		// By a hand that knows the format but not every hash in it.
		{"a middle job's records removed and the rest renumbered", join(lines[:3], renumbered(t, lines[6:], 4, 9)), "line 4 does not follow line 3 (its prev is not that line's SHA-256): records were dropped or inserted before it and the file renumbered"},
		{"an invented job numbered and chained in", join(lines[:3], chainedIn(t, lines[2], invented, 4, 9), lines[3:]), "line 7 is the file's record 4 where its record 7 belongs: records were inserted or repeated before it"},
		{"a line added after the last", join(lines, renumbered(t, extra, 10, 9)), "line 10 says it is record 10 of a file of 9: records were added after the file's last"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, err := ops.VerifyAudit(strings.NewReader(tc.file))
			if tc.want == "" {
				require.NoError(t, err)
				assert.Equal(t, ops.AuditSummary{Records: 9, Jobs: 3, Head: head, Format: ops.AuditFormat}, sum)
				return
			}
			require.ErrorIs(t, err, ops.ErrAuditTampered)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// resealed is an audit line with each of edits (old, new) made once and its
// digest computed again, as a tool that knows the format would.
func resealed(t *testing.T, line string, edits ...string) string {
	t.Helper()
	for i := 0; i+1 < len(edits); i += 2 {
		require.Contains(t, line, edits[i])
		line = strings.Replace(line, edits[i], edits[i+1], 1)
	}
	i := strings.Index(line, `"digest":"`) + len(`"digest":"`)
	j := i + strings.Index(line[i:], `"`)
	sum := sha256.Sum256([]byte(strings.TrimSuffix(line[:i]+line[j:], "\n")))
	return line[:i] + hex.EncodeToString(sum[:]) + line[j:]
}

// renumbered are lines given the file places from..from+len-1 of lines.
func renumbered(t *testing.T, ls []string, from, lines int) []string {
	t.Helper()
	var out []string
	for i, l := range ls {
		var r ops.AuditRecord
		require.NoError(t, json.Unmarshal([]byte(l), &r))
		out = append(out, resealed(t, l, fmt.Sprintf(`"line":%d,"lines":%d,`, r.Line, r.Lines), fmt.Sprintf(`"line":%d,"lines":%d,`, from+i, lines)))
	}
	return out
}

// chainedIn are lines renumbered from, of lines, and chained after the line
// before: whole, but for the lines that follow them.
func chainedIn(t *testing.T, before string, ls []string, from, lines int) []string {
	t.Helper()
	var out []string
	for _, l := range renumbered(t, ls, from, lines) {
		var r ops.AuditRecord
		require.NoError(t, json.Unmarshal([]byte(l), &r))
		prev := sha256.Sum256([]byte(strings.TrimSuffix(before, "\n")))
		l = resealed(t, l, `"prev":"`+r.Prev+`"`, `"prev":"`+hex.EncodeToString(prev[:])+`"`)
		out = append(out, l)
		before = l
	}
	return out
}

// A file changed and sealed again whole (WriteAudit run on the changed
// records) passes VerifyAudit, since the chain holds no secret; against
// the head kept from its writing it fails, naming its last line. The file
// as written passes against its head, given in either case or with
// "sha256:", and a head that is not one is refused.
func TestVerifyAuditHead(t *testing.T) {
	a, b, c := jobRecords("job-a"), jobRecords("job-b"), jobRecords("job-c")
	lines, head := writeAudit(t, a, b, c)
	file := strings.Join(lines, "")
	for _, tc := range []struct {
		name string
		jobs [][]ops.AuditRecord
		last int
	}{
		{"cut after the second job", [][]ops.AuditRecord{a, b}, 6},
		{"a middle job's records removed", [][]ops.AuditRecord{a, c}, 6},
		{"an invented job inserted in order", [][]ops.AuditRecord{a, jobRecords("job-ab"), b, c}, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ls, other := writeAudit(t, tc.jobs...)
			changed := strings.Join(ls, "")
			sum, err := ops.VerifyAudit(strings.NewReader(changed))
			require.NoError(t, err, "sealed again, the file is whole on its own")
			assert.Equal(t, other, sum.Head)
			_, err = ops.VerifyAuditHead(strings.NewReader(changed), head)
			require.ErrorIs(t, err, ops.ErrAuditTampered)
			assert.Contains(t, err.Error(), fmt.Sprintf("line %d is the file's last, and the file's head sha256 is %s, not the head you kept (%s): records were cut, added or changed and the file sealed again", tc.last, other, head))
		})
	}
	for _, h := range []string{head, strings.ToUpper(head), "sha256:" + head, " " + head + "\n"} {
		sum, err := ops.VerifyAuditHead(strings.NewReader(file), h)
		require.NoError(t, err, h)
		assert.Equal(t, ops.AuditSummary{Records: 9, Jobs: 3, Head: head, Format: ops.AuditFormat}, sum)
	}
	_, err := ops.VerifyAuditHead(strings.NewReader(""), head)
	require.ErrorIs(t, err, ops.ErrAuditTampered)
	assert.Contains(t, err.Error(), "the file holds no record, and the head you kept ("+head+") is not an empty file's")
	for _, h := range []string{"", "dc829abd", head + "0", strings.Replace(head, head[:1], "g", 1)} {
		_, err := ops.VerifyAuditHead(strings.NewReader(file), h)
		require.ErrorIs(t, err, ops.ErrBadAuditHead, h)
		assert.Contains(t, err.Error(), "is not 64 hex digits: give the head sha256 overseer audit printed")
	}
}

// A file overseer audit wrote before the format was v2 still verifies by
// its own rule, each job chained apart, and says it is v1; an edited or
// dropped record in it still fails, and so does a v2 line mixed in.
func TestVerifyAuditReadsV1(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "audit_v1_job_with_plugin.jsonl"))
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	lines = lines[:len(lines)-1]
	require.Len(t, lines, 4)
	v2, _ := writeAudit(t, jobRecords("job-z"))
	for _, tc := range []struct {
		name, file string
		want       string // "" means valid
	}{
		{"as written", string(data), ""},
		{"one byte edited", strings.Join(lines[:2], "") + strings.Replace(lines[2], `"kind":"opened"`, `"kind":"opener"`, 1) + lines[3], "line 3 (record 3 of job \"job-with-plugin\") was edited"},
		{"a record dropped", lines[0] + lines[2] + lines[3], "line 2 is record 3 of job \"job-with-plugin\" where its record 2 belongs"},
		{"a record's prev changed and sealed again", lines[0] + resealed(t, lines[1], `"prev":"8`, `"prev":"9`) + lines[2] + lines[3], "line 2 (record 2 of job \"job-with-plugin\") does not follow the job's previous record"},
		{"a v2 line mixed in", string(data) + v2[0], "line 5 has format \"overseer-audit/v2\" where line 1 has \"overseer-audit/v1\": records from another audit file were inserted"},
		{"a v1 line given a place in the file", resealed(t, lines[0], `"format":"overseer-audit/v1",`, `"format":"overseer-audit/v1","line":1,"lines":4,`) + strings.Join(lines[1:], ""), "line 1 has format overseer-audit/v1 but a line and lines, which that format has not"},
		{"another format", strings.Replace(lines[0], "overseer-audit/v1", "overseer-audit/v9", 1), "line 1 has format \"overseer-audit/v9\", not overseer-audit/v2 (or the older overseer-audit/v1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, err := ops.VerifyAudit(strings.NewReader(tc.file))
			if tc.want == "" {
				require.NoError(t, err)
				assert.Equal(t, ops.AuditSummary{Records: 4, Jobs: 1, Head: "dc829abd1ef1ae4934e7775cbe2ffc8e76f2bf9601b493f64d2fa425813752e5", Format: ops.AuditFormatV1}, sum)
				return
			}
			require.ErrorIs(t, err, ops.ErrAuditTampered)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
