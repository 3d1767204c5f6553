package ops

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/corohq/temporal-overseer/codec"
	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/overseer"
)

// DefaultExportQuery selects the workflows `overseer export` reads when no
// query is given: every workflow the overseer assessed (its OverseerStatus
// search attribute is set) and every reference job.
const DefaultExportQuery = "OverseerStatus IS NOT NULL OR WorkflowType = 'CoroJob'"

// TaskFamilyMemoKey is the memo field that names a job's task family (e.g.
// the repository it works on): start a job with memo
// {"overseer.task_family": "billing-service"} and its exported record's
// task.family is that, so that cross-validation never trains and tests on
// the same family. Without it the family is the job id without a trailing
// number (eval.FamilyOf).
const TaskFamilyMemoKey = "overseer.task_family"

// memoConverter is dc bound to the serialization context a worker writes
// the memo of workflowID in, and a client reads it in: the workflow's.
func memoConverter(dc converter.DataConverter, namespace, workflowID string) converter.DataConverter {
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	return converter.WithDataConverterSerializationContext(dc, converter.WorkflowSerializationContext{
		Namespace: cmp.Or(namespace, client.DefaultNamespace), WorkflowID: workflowID})
}

// familyOfMemo is the task family in the memo of workflowID, or "". dc is
// the deployment's converter, read in the workflow's serialization context
// (memoConverter).
func familyOfMemo(m *commonpb.Memo, dc converter.DataConverter, namespace, workflowID string) string {
	dc = memoConverter(dc, namespace, workflowID)
	p, ok := m.GetFields()[TaskFamilyMemoKey]
	if !ok {
		return ""
	}
	var f string
	if dc.FromPayload(p, &f) != nil {
		return ""
	}
	return strings.TrimSpace(f)
}

// ExportOptions select the runs Export writes.
type ExportOptions struct {
	// Query is a Temporal visibility query. If not set, DefaultExportQuery.
	Query string
	// Labels override the outcome taken from the close status, by workflow id.
	Labels map[string]eval.Outcome
	// Limit caps the number of workflows listed. If not set, no cap.
	Limit int
	// DataConverter reads the histories' payloads: the converter of the
	// deployment's clients, with the codec when it encrypts its payloads
	// (package codec). If not set, the SDK's default converter, and a
	// history it cannot read is refused in one sentence (ErrEncrypted).
	DataConverter converter.DataConverter
	// Namespace is the client's namespace: with the workflow id, the
	// serialization context a codec may bind the payloads to
	// (HistoryConverter). If not set, "default".
	Namespace string
	// Parallel is how many histories are read at once; if not set,
	// DefaultExportParallel. The records keep the listing's order.
	Parallel int
	// Each, if set, receives every closed job read, in the listing's
	// order, as soon as its page is read, instead of Records: an export
	// holds one page of records at a time, whatever the number of jobs.
	// A job that ran no phase comes too (ExportedJob.NoPhases), so that a
	// caller keeping what it read knows it need not read it again.
	Each func(ExportedJob) error
	// Skip, if set, names the listed runs not to read (a caller that has
	// their records already): they are counted in Skipped.
	Skip func(workflowID, runID string) bool
	// PageSize is how many workflows a listing page holds; if not set,
	// 100. PageToken, if set, resumes a listing at that page (one Page
	// was given); Page, if set, is called once every job of a page has
	// gone to Each, with the next page's token (nil after the last).
	PageSize  int
	PageToken []byte
	Page      func(next []byte) error
}

// DefaultExportParallel is how many histories Export reads at once by
// default: reading one at a time, a round over 1,000 jobs took 44 s on a
// quiet dev server, mostly waiting on the server.
const DefaultExportParallel = 16

// ExportedJob is one closed job Export read, for ExportOptions.Each.
type ExportedJob struct {
	// Record is its run record; without steps when NoPhases.
	Record eval.Record
	// RunID is the run listed (the last run of a job continued as new),
	// Closed when it closed.
	RunID  string
	Closed time.Time
	// NoPhases is true when it ran no phase: nothing to learn from, and
	// not in Records.
	NoPhases bool
}

// ExportResult is what Export found.
type ExportResult struct {
	// Records are the closed jobs, one per workflow id (a job continued as
	// new is one record, its runs in order), most recently started first.
	Records []eval.Record
	// Running counts jobs skipped because they have not closed: they have
	// no outcome yet.
	Running int
	// NoPhases lists the closed jobs skipped because they ran no phase
	// (nothing to learn from).
	NoPhases []string
	// Labelled counts the records whose outcome came from Labels.
	Labelled int
	// Encrypted lists the closed jobs skipped because a payload codec
	// encrypted their histories and no DataConverter with it was given.
	// When every job was such, Export refuses instead (ErrEncrypted).
	Encrypted []string
	// Read counts the closed jobs whose histories were read; Skipped those
	// ExportOptions.Skip named, not read; Exported the records made (in
	// Records, or given to Each).
	Read, Skipped, Exported int
}

// Export writes one run record (unit call) per closed job that matches the
// query, read from its history (see [RecordOfHistory]). Its outcome is
// the close status — completed is succeeded; failed (which includes a job
// a human aborted at a gate), terminated, timed out and canceled are
// failed — unless Labels names the job. Running jobs are counted and
// skipped; runs that continued as new are read as part of the job's last
// run. It reads up to Parallel histories at once, a page of the listing at
// a time, and keeps the listing's order.
func Export(ctx context.Context, c client.Client, opts ExportOptions) (ExportResult, error) {
	query := strings.TrimSpace(opts.Query)
	if query == "" {
		query = DefaultExportQuery
	}
	dc := opts.DataConverter
	if dc == nil {
		dc = converter.GetDefaultDataConverter()
	}
	parallel := opts.Parallel
	if parallel <= 0 {
		parallel = DefaultExportParallel
	}
	var res ExportResult
	// A namespace may hold jobs of a deployment that encrypts beside jobs
	// of one that does not: the readable ones are exported, the others
	// counted; only an export that can read none of them refuses.
	var encrypted error
	type read struct {
		e   *workflowpb.WorkflowExecutionInfo
		rec eval.Record
		err error
	}
	page := func(execs []*workflowpb.WorkflowExecutionInfo, next []byte) error {
		var todo []*read
		for _, e := range execs {
			switch _, ok := outcomeOfStatus(e.GetStatus()); {
			case e.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
				res.Running++
			case !ok:
			case opts.Skip != nil && opts.Skip(e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId()):
				res.Skipped++
			default:
				todo = append(todo, &read{e: e})
			}
		}
		readAll(parallel, todo, func(r *read) error {
			r.rec, r.err = recordOfJob(ctx, c, opts.Namespace, r.e.GetExecution().GetWorkflowId(), r.e.GetExecution().GetRunId(), dc, opts.DataConverter == nil)
			if errors.Is(r.err, ErrEncrypted) {
				return nil
			}
			return r.err
		})
		for _, r := range todo {
			id := r.e.GetExecution().GetWorkflowId()
			if errors.Is(r.err, ErrEncrypted) {
				res.Read++
				res.Encrypted = append(res.Encrypted, id)
				if encrypted == nil {
					encrypted = r.err
				}
				continue
			}
			if r.err != nil {
				return r.err
			}
			res.Read++
			job := ExportedJob{Record: r.rec, RunID: r.e.GetExecution().GetRunId(), Closed: r.e.GetCloseTime().AsTime(), NoPhases: len(r.rec.Steps) == 0}
			if job.NoPhases {
				res.NoPhases = append(res.NoPhases, id)
			} else {
				job.Record.Outcome, _ = outcomeOfStatus(r.e.GetStatus())
				if f := familyOfMemo(r.e.GetMemo(), dc, opts.Namespace, id); f != "" {
					job.Record.Task.Family = f
				}
				if l, ok := opts.Labels[id]; ok {
					job.Record.Outcome = l
					res.Labelled++
				}
				res.Exported++
			}
			switch {
			case opts.Each != nil:
				if err := opts.Each(job); err != nil {
					return err
				}
			case !job.NoPhases:
				res.Records = append(res.Records, job.Record)
			}
		}
		if opts.Page != nil {
			return opts.Page(next)
		}
		return nil
	}
	if err := listPages(ctx, c, query, opts.Limit, opts.PageSize, opts.PageToken, page); err != nil {
		return ExportResult{}, err
	}
	if res.Exported == 0 && encrypted != nil {
		return ExportResult{}, encrypted
	}
	return res, nil
}

// readAll calls read on each of todo, at most parallel at once, until one
// fails (no read starts after that), and returns when every call started
// has: a page that fails is read again whole, so reading on past the
// failure would be reading twice.
func readAll[T any](parallel int, todo []T, read func(T) error) {
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	var failed atomic.Bool
	for _, t := range todo {
		sem <- struct{}{}
		if failed.Load() {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if read(t) != nil {
				failed.Store(true)
			}
		}()
	}
	wg.Wait()
}

// listPages calls page with every page of the jobs the query lists, in
// the order listed, from token (the first page when nil), up to limit
// workflows (0: no limit), and the next page's token (nil after the last).
// A run that continued as new is left out: it is read with the run it
// continued as.
func listPages(ctx context.Context, c client.Client, query string, limit, pageSize int, token []byte, page func([]*workflowpb.WorkflowExecutionInfo, []byte) error) error {
	if pageSize <= 0 {
		pageSize = 100
	}
	listed := 0
	for {
		resp, err := ListPage(ctx, c, ExportCallTimeout, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: int32(pageSize), NextPageToken: token})
		if err != nil {
			return fmt.Errorf("list workflows matching %q: %w", query, err)
		}
		var execs []*workflowpb.WorkflowExecutionInfo
		for _, e := range resp.Executions {
			if limit > 0 && listed == limit {
				break
			}
			listed++
			if e.GetStatus() != enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW {
				execs = append(execs, e)
			}
		}
		token = resp.NextPageToken
		if limit > 0 && listed == limit {
			token = nil
		}
		if err := page(execs, token); err != nil {
			return err
		}
		if len(token) == 0 {
			return nil
		}
	}
}

// listJobs calls each with every job the query lists, in the order listed,
// up to limit (0: no limit). A run that continued as new is skipped: it is
// read with the run it continued as.
func listJobs(ctx context.Context, c client.Client, query string, limit int, each func(*workflowpb.WorkflowExecutionInfo) error) error {
	var token []byte
	listed := 0
	for {
		resp, err := ListPage(ctx, c, ExportCallTimeout, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: 100, NextPageToken: token})
		if err != nil {
			return fmt.Errorf("list workflows matching %q: %w", query, err)
		}
		for _, e := range resp.Executions {
			if limit > 0 && listed == limit {
				return nil
			}
			listed++
			if e.GetStatus() == enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW {
				continue
			}
			if err := each(e); err != nil {
				return err
			}
		}
		token = resp.NextPageToken
		if len(token) == 0 || (limit > 0 && listed == limit) {
			return nil
		}
	}
}

func outcomeOfStatus(s enumspb.WorkflowExecutionStatus) (eval.Outcome, bool) {
	switch s {
	case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		return eval.OutcomeSucceeded, true
	case enumspb.WORKFLOW_EXECUTION_STATUS_FAILED, enumspb.WORKFLOW_EXECUTION_STATUS_TERMINATED,
		enumspb.WORKFLOW_EXECUTION_STATUS_TIMED_OUT, enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
		return eval.OutcomeFailed, true
	}
	return "", false
}

// RecordOfJob reads the history of one closed run of a job (runID "" is
// its latest run), and of the runs it continued from, into a record of
// its calls (eval.UnitCall) without an outcome.
func RecordOfJob(ctx context.Context, c client.Client, id, runID string) (eval.Record, error) {
	return recordOfJob(ctx, c, "", id, runID, converter.GetDefaultDataConverter(), true)
}

// RecordOfJobWith is RecordOfJob reading the payloads with dc (the
// deployment's converter, codec included) in namespace ("" for
// "default").
func RecordOfJobWith(ctx context.Context, c client.Client, namespace, id, runID string, dc converter.DataConverter) (eval.Record, error) {
	return recordOfJob(ctx, c, namespace, id, runID, dc, false)
}

// recordOfJob reads the runs' payloads with dc; withoutCodec refuses, in
// one sentence, a history whose payloads a codec encoded.
func recordOfJob(ctx context.Context, c client.Client, namespace, id, runID string, dc converter.DataConverter, withoutCodec bool) (eval.Record, error) {
	rec := eval.Record{Format: eval.RecordFormat, ID: id, Unit: eval.UnitCall, Task: eval.Task{Family: eval.FamilyOf(id)}}
	if runID == "" {
		// The latest run: read nothing silently is no answer.
		d, err := c.DescribeWorkflow(ctx, id, "")
		if err != nil {
			return eval.Record{}, JobError(id, err)
		}
		runID = d.RawResponse.GetWorkflowExecutionInfo().GetExecution().GetRunId()
	}
	seen := map[string]bool{}
	for runID != "" && !seen[runID] {
		seen[runID] = true
		events, err := runHistory(ctx, c, id, runID, withoutCodec)
		if err != nil {
			return eval.Record{}, err
		}
		h := RecordOfHistoryWith(events, HistoryConverter(dc, namespace, id, events))
		// This run came before those read so far: their gates move back.
		for i := range rec.Gates {
			rec.Gates[i].After += len(h.Steps)
		}
		rec.Gates = append(h.Gates, rec.Gates...)
		rec.Steps = append(h.Steps, rec.Steps...)
		if h.Agent != "" {
			rec.Agent = h.Agent
		}
		if rec.Shape == "" {
			rec.Shape = h.Shape
		}
		runID = h.continuedFrom
	}
	return rec, nil
}

// runHistory reads the events of one run of job id; withoutCodec refuses,
// in one sentence (ErrEncrypted), a history whose payloads a codec encoded.
func runHistory(ctx context.Context, c client.Client, id, runID string, withoutCodec bool) ([]*historypb.HistoryEvent, error) {
	var events []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(ctx, id, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return nil, fmt.Errorf("read the history of job %q run %s: %w", id, runID, err)
		}
		events = append(events, e)
	}
	if withoutCodec && len(events) > 0 {
		for _, p := range events[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads() {
			if codec.Unreadable(p) {
				return nil, wordedError{Msg: fmt.Sprintf("job %q: cannot read its history: %s", id, codec.Advice), Err: ErrEncrypted}
			}
		}
	}
	return events, nil
}

// HistoryRecord is what one run's history says about its phases.
type HistoryRecord struct {
	// Agent is the workflow type.
	Agent string
	// Steps are the phase boundaries, in the order the phases ended.
	Steps []eval.Step
	// Gates are the reviewers' decisions at the run's gates, in order.
	Gates []eval.GateDecision
	// Shape is the shape the plugin judged the run as, from its latest
	// recorded answer that says (empty in histories from before answers
	// said it).
	Shape         overseer.Shape
	continuedFrom string
	// assessedAt holds, for each step with an assessment, the id of the
	// event that recorded it.
	assessedAt []int64
}

// RecordOfHistory reads one run's history as the overseer saw it:
//
//   - each phase activity (any activity whose type does not start with
//     "overseer.", or one of the run's pinned phase activities when it
//     names them) is one step, in the order the phases ended: its phase is
//     the activity type after its last dot (as the plugin names phases),
//     failed when the activity failed, timed out or was canceled, its
//     duration from scheduled to closed, and the PhaseReport of the result's
//     "overseer_report" key (turns, cost, tokens, rework, failed tool
//     categories, missing output);
//   - the n-th assessment the run recorded (the judge's side-effect
//     markers when it answered in workflow code, the overseer.assess local
//     activity markers, or activities when assessments ran as activities)
//     is the n-th step's Assessment: P(on objective), the model version, and
//     the band and flag of the run's pinned policy; a failed assessment
//     carries its error;
//   - each gate a person closed is a gate decision: who, continue or
//     abort, the note and how long the gate was open, read from the closed
//     gate the overseer.resume update returned, or, for an abort sent as a
//     signal, from the gate the job failed with (OverseerAborted). A gate
//     closed by its deadline is no reviewer's decision and is left out, and
//     so is a continue sent as a signal (the signal cannot say whether it
//     was taken).
func RecordOfHistory(events []*historypb.HistoryEvent) HistoryRecord {
	return RecordOfHistoryWith(events, converter.GetDefaultDataConverter())
}

// RecordOfHistoryWith is RecordOfHistory reading the payloads with dc (the
// deployment's converter, codec included).
func RecordOfHistoryWith(events []*historypb.HistoryEvent, dc converter.DataConverter) HistoryRecord {
	var out HistoryRecord
	policy := overseer.DefaultPolicy()
	var phaseActivities []string
	type scheduled struct {
		activityType string
		at           time.Time
		input        *commonpb.Payloads
		taskAt       time.Time
	}
	sched := map[int64]scheduled{}
	var assessments []*eval.RecordedAssessment
	var assessedAt []int64
	var current int64    // the id of the event being read
	var taskAt time.Time // when the workflow task being read started: workflow.Now
	// Where each assessment's boundary is (the event that asked the judge)
	// and the phase it named, and where each phase activity and gate
	// closed: a job that declares its phases is regrouped by them.
	var bounds []declaredBoundary
	var stepAt, gateAt []int64
	addAssessment := func(a *eval.RecordedAssessment, b declaredBoundary) {
		assessments = append(assessments, a)
		assessedAt = append(assessedAt, current)
		bounds = append(bounds, b)
	}
	isPhase := func(t string) bool {
		if strings.HasPrefix(t, "overseer.") {
			return false
		}
		if len(phaseActivities) == 0 {
			return true
		}
		for _, p := range phaseActivities {
			if p == t {
				return true
			}
		}
		return false
	}
	closePhase := func(schedID int64, at time.Time, failure *failurepb.Failure, failed bool, result *commonpb.Payloads) {
		s, ok := sched[schedID]
		if !ok {
			return
		}
		if s.activityType == overseer.AssessActivityName {
			a := &eval.RecordedAssessment{}
			// The boundary is where the judge was asked, not where it answered.
			b := declaredBoundary{at: schedID, when: s.taskAt}
			var in overseer.AssessInput
			if dc.FromPayloads(s.input, &in) == nil {
				b.phase = in.Phase
			}
			if failed {
				a.Error = "the assessment failed"
			} else {
				var ao overseer.AssessOutput
				if err := dc.FromPayloads(result, &ao); err != nil {
					a.Error = "unreadable assessment: " + err.Error()
				} else {
					fillAssessment(a, ao, policy)
					out.Shape = cmp.Or(ao.Shape, out.Shape)
				}
			}
			addAssessment(a, b)
			return
		}
		if !isPhase(s.activityType) {
			return
		}
		step := eval.Step{Phase: phaseName(s.activityType), Failed: failed, Text: s.activityType, Call: payloadsDigest(dc, s.input)}
		if d := at.Sub(s.at); d > 0 {
			step.DurationMS = d.Milliseconds()
		}
		if failed {
			step.Error = failure.GetMessage()
		}
		if !failed && result != nil {
			step.Output = payloadsDigest(dc, result)
			var rc overseer.ReportCarrier
			if err := dc.FromPayloads(result, &rc); err == nil && rc.OverseerReport != nil {
				r := rc.OverseerReport
				step.Turns, step.CostUSD, step.InputTokens, step.OutputTokens = r.Turns, r.CostUSD, r.InputTokens, r.OutputTokens
				step.Rework, step.FailedTools, step.OutputMissing = r.Rework, r.FailedToolCategories, r.OutputMissing
			}
		}
		out.Steps = append(out.Steps, step)
		stepAt = append(stepAt, current)
	}
	resumeUpdates := map[int64]bool{}
	gateSeen := map[string]bool{}
	addGate := func(g overseer.Gate, after int) {
		if g.Expired || g.By == "" || g.ResumedAt == nil || (g.ID != "" && gateSeen[g.ID]) {
			return
		}
		gateSeen[g.ID] = true
		action := string(g.Action)
		if action == "" {
			action = eval.GateContinue
		}
		d := eval.GateDecision{Gate: g.ID, Phase: g.Phase, After: after, By: g.By, Action: action, Note: g.Note, Attempt: g.Attempt,
			Reason: g.Reason, Evidence: g.Evidence, Needed: g.Needed, NeededBy: string(g.NeededBy), Kind: g.Kind}
		if w := g.ResumedAt.Sub(g.PausedAt); w > 0 {
			d.WaitMS = w.Milliseconds()
		}
		out.Gates = append(out.Gates, d)
		gateAt = append(gateAt, current)
	}
	pinned := false
	for _, e := range events {
		current = e.GetEventId()
		at := e.GetEventTime().AsTime()
		if e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED {
			taskAt = at
		}
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
			a := e.GetWorkflowExecutionStartedEventAttributes()
			out.Agent = a.GetWorkflowType().GetName()
			out.continuedFrom = a.GetContinuedExecutionRunId()
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			a := e.GetMarkerRecordedEventAttributes()
			switch a.GetMarkerName() {
			case "SideEffect":
				if pinned {
					// The judge's answer when it ran in workflow code.
					var ans struct {
						Kind   string                 `json:"kind"`
						Output *overseer.AssessOutput `json:"output"`
						Error  string                 `json:"error"`
					}
					if dc.FromPayloads(a.GetDetails()["data"], &ans) != nil || ans.Kind != "overseer.answer/v1" {
						continue
					}
					ra := &eval.RecordedAssessment{Error: ans.Error}
					b := declaredBoundary{at: current, when: taskAt}
					if ans.Output != nil {
						fillAssessment(ra, *ans.Output, policy)
						out.Shape = cmp.Or(ans.Output.Shape, out.Shape)
						b.phase = ans.Output.Phase
					} else if ra.Error == "" {
						ra.Error = "unreadable assessment: no output"
					}
					addAssessment(ra, b)
					continue
				}
				var cfg struct {
					Mode            string           `json:"mode"`
					Policy          *overseer.Policy `json:"policy"`
					PhaseActivities []string         `json:"phase_activities"`
				}
				if dc.FromPayloads(a.GetDetails()["data"], &cfg) == nil && cfg.Mode != "" && cfg.Policy != nil {
					pinned = true
					if *cfg.Policy != (overseer.Policy{}) {
						policy = *cfg.Policy
					}
					phaseActivities = cfg.PhaseActivities
				}
			case "LocalActivity":
				var md struct{ ActivityType string }
				if dc.FromPayloads(a.GetDetails()["data"], &md) != nil || md.ActivityType != overseer.AssessActivityName {
					continue
				}
				ra := &eval.RecordedAssessment{}
				b := declaredBoundary{at: current, when: taskAt}
				if f := a.GetFailure(); f != nil {
					ra.Error = f.GetMessage()
				} else {
					var ao overseer.AssessOutput
					if err := dc.FromPayloads(a.GetDetails()["result"], &ao); err != nil {
						ra.Error = "unreadable assessment: " + err.Error()
					} else {
						fillAssessment(ra, ao, policy)
						out.Shape = cmp.Or(ao.Shape, out.Shape)
						b.phase = ao.Phase
					}
				}
				addAssessment(ra, b)
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
			if e.GetWorkflowExecutionUpdateAcceptedEventAttributes().GetAcceptedRequest().GetInput().GetName() == overseer.ResumeName {
				resumeUpdates[e.GetEventId()] = true
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED:
			a := e.GetWorkflowExecutionUpdateCompletedEventAttributes()
			var g overseer.Gate
			if resumeUpdates[a.GetAcceptedEventId()] && a.GetOutcome().GetSuccess() != nil && dc.FromPayloads(a.GetOutcome().GetSuccess(), &g) == nil {
				addGate(g, len(out.Steps))
			}
		case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
			f := e.GetWorkflowExecutionFailedEventAttributes().GetFailure()
			for ; f != nil; f = f.GetCause() {
				if info := f.GetApplicationFailureInfo(); info != nil && info.GetType() == overseer.AbortedErrorType {
					var g overseer.Gate
					if info.GetDetails() != nil && dc.FromPayloads(info.GetDetails(), &g) == nil {
						addGate(g, len(out.Steps))
					}
					break
				}
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
			a := e.GetActivityTaskScheduledEventAttributes()
			sched[e.GetEventId()] = scheduled{activityType: a.GetActivityType().GetName(), at: at, input: a.GetInput(), taskAt: taskAt}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
			a := e.GetActivityTaskCompletedEventAttributes()
			closePhase(a.GetScheduledEventId(), at, nil, false, a.GetResult())
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED:
			a := e.GetActivityTaskFailedEventAttributes()
			closePhase(a.GetScheduledEventId(), at, a.GetFailure(), true, nil)
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			a := e.GetActivityTaskTimedOutEventAttributes()
			closePhase(a.GetScheduledEventId(), at, a.GetFailure(), true, nil)
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_CANCELED:
			closePhase(e.GetActivityTaskCanceledEventAttributes().GetScheduledEventId(), at, &failurepb.Failure{Message: "canceled"}, true, nil)
		}
	}
	if out.Shape == overseer.ShapeDeclared {
		started := time.Time{}
		if len(events) > 0 {
			started = events[0].GetEventTime().AsTime()
		}
		out.Steps = declaredPhases(out.Steps, stepAt, bounds, started)
		for i := range out.Gates {
			out.Gates[i].After = boundariesBefore(bounds, gateAt[i])
		}
	}
	for i := range out.Steps {
		if i < len(assessments) {
			out.Steps[i].Assessment = assessments[i]
			out.assessedAt = append(out.assessedAt, assessedAt[i])
		}
	}
	return out
}

// declaredBoundary is where a job that declares its phases
// (overseer.Boundary) asked the judge: the event that asked, its time and
// the phase it named ("" when the history does not say).
type declaredBoundary struct {
	at    int64
	when  time.Time
	phase string
}

// declaredPhases regroups the activities of a job that declares its phases
// into the phases the plugin recorded at each Boundary: the activities that
// closed since the boundary before, as one phase run that failed when
// every one of them failed, each failed one a failed tool call of its
// name, lasting from the boundary before (or the job's start). Activities
// after the last boundary were never a phase.
func declaredPhases(calls []eval.Step, closedAt []int64, bounds []declaredBoundary, started time.Time) []eval.Step {
	out := make([]eval.Step, 0, len(bounds))
	next, since := 0, started
	for _, b := range bounds {
		step := eval.Step{Phase: cmp.Or(b.phase, "phase"), Text: "declared phase"}
		ran, failed := 0, 0
		for ; next < len(calls) && closedAt[next] < b.at; next++ {
			ran++
			if calls[next].Failed {
				failed++
				step.FailedTools = append(step.FailedTools, calls[next].Phase)
			}
		}
		step.Failed = ran > 0 && failed == ran
		if d := b.when.Sub(since); d > 0 {
			step.DurationMS = d.Milliseconds()
		}
		since = b.when
		out = append(out, step)
	}
	return out
}

// boundariesBefore counts the boundaries before event at.
func boundariesBefore(bounds []declaredBoundary, at int64) int {
	n := 0
	for _, b := range bounds {
		if b.at < at {
			n++
		}
	}
	return n
}

func fillAssessment(a *eval.RecordedAssessment, ao overseer.AssessOutput, p overseer.Policy) {
	v := p.ForShape(ao.Shape).Evaluate(ao.Answers)
	a.OnObjective, a.Band, a.Flagged, a.ModelVersion = ao.Answers.OnObjective, string(v.Band), v.Flagged, ao.Model
	a.NotAssessed, a.Basis = ao.Answers.OnObjectiveUnknown, ao.Answers.Basis
}

// payloadsDigest stands for an activity's input or result as the plugin
// compares them (overseer.ActivityCall): each payload as the workflow read
// it, after the deployment's codec decoded it; "" when there is none.
func payloadsDigest(dc converter.DataConverter, ps *commonpb.Payloads) string {
	if len(ps.GetPayloads()) == 0 {
		return ""
	}
	var b []byte
	for _, p := range ps.GetPayloads() {
		var raw converter.RawValue
		if dc.FromPayload(p, &raw) == nil && raw.Payload() != nil {
			p = raw.Payload()
		}
		b = append(append(b, p.GetData()...), 0)
	}
	return eval.Digest(string(b))
}

// phaseName is the plugin's name of a phase activity: its type after the
// last dot.
func phaseName(activityType string) string {
	if i := strings.LastIndexByte(activityType, '.'); i >= 0 && i < len(activityType)-1 {
		return activityType[i+1:]
	}
	return activityType
}

// ReadLabels reads a label file: a JSON object mapping a workflow id to
// its outcome, succeeded, failed or blocked (true and false read as
// succeeded and failed).
func ReadLabels(path string) (map[string]eval.Outcome, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("labels: %w", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("labels %s is not a JSON object of id → outcome: %v", path, err)
	}
	out := make(map[string]eval.Outcome, len(raw))
	ids := make([]string, 0, len(raw))
	for id := range raw {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		switch v := raw[id].(type) {
		case bool:
			out[id] = eval.OutcomeFailed
			if v {
				out[id] = eval.OutcomeSucceeded
			}
		case string:
			switch o := eval.Outcome(v); o {
			case eval.OutcomeSucceeded, eval.OutcomeFailed, eval.OutcomeBlocked:
				out[id] = o
			default:
				return nil, fmt.Errorf("labels %s: job %q has outcome %q: use succeeded, failed or blocked", path, id, v)
			}
		default:
			return nil, fmt.Errorf("labels %s: job %q has outcome %v: use succeeded, failed or blocked", path, id, raw[id])
		}
	}
	if len(out) == 0 {
		return nil, errors.New("labels " + path + " labels no job: give a JSON object of id → succeeded, failed or blocked")
	}
	return out, nil
}
