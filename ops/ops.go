package ops

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	sdkpb "go.temporal.io/api/sdk/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/corohq/temporal-overseer/codec"
	"github.com/corohq/temporal-overseer/internal/visibility"
	"github.com/corohq/temporal-overseer/overseer"
)

// Errors the operations wrap.
var (
	// ErrNoJob: no workflow with that id in the namespace.
	ErrNoJob = errors.New("no such job")
	// ErrFinished: the job has already finished, so it cannot be resumed.
	ErrFinished = errors.New("job has already finished")
	// ErrNotOverseen: the workflow has no overseer.status query.
	ErrNotOverseen = errors.New("job is not overseen")
	// ErrInvalidFilter: a list filter names no band.
	ErrInvalidFilter = errors.New("invalid filter")
	// ErrMayStillApply: a resume got no answer in time; the server may
	// still apply it.
	ErrMayStillApply = errors.New("resume may still be applied")
)

// TimedOut says whether err is a call that got no answer in time: the
// caller's own deadline (context.DeadlineExceeded) or the SDK's call
// timeout, which reaches the caller as a *serviceerror.DeadlineExceeded
// that errors.Is does not match to the context's.
func TimedOut(err error) bool { return visibility.TimedOut(err) }

// JobError turns a server error about one job into one clear sentence that
// names the job.
func JobError(id string, err error) error {
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return fmt.Errorf("%w: no job with id %q in this namespace", ErrNoJob, id)
	case TimedOut(err):
		// Wrapped, so that TimedOut still says it: a caller may ask again.
		return wordedError{Msg: fmt.Sprintf("job %q: the server did not answer in time (is a worker running on the task queue?)", id), Err: err}
	}
	return fmt.Errorf("job %q: %w", id, err)
}

// Status asks a job for its overseer status (the overseer.status query).
// A closed job answers too, as long as a worker can replay it.
func Status(ctx context.Context, c client.Client, id string) (overseer.Status, error) {
	return RunStatus(ctx, c, id, "")
}

// RunStatus queries one run of a job; runID "" is the latest run. A closed
// run answers too (from its history): after continue-as-new, the
// predecessor's run id gives the predecessor's status, not the successor's.
// A run an operator paused with Workflow Pause answers no query: the error
// is then an *OperatorPausedError (ErrOperatorPaused) with what describe
// says of the pause.
func RunStatus(ctx context.Context, c client.Client, id, runID string) (overseer.Status, error) {
	v, err := c.QueryWorkflow(ctx, id, runID, overseer.StatusQueryName)
	if err != nil {
		if queryRejectedPaused(err) {
			return overseer.Status{}, pausedError(ctx, c, id, runID, false, true, err)
		}
		var qf *serviceerror.QueryFailed
		if errors.As(err, &qf) && !hasQuery(ctx, c, id, runID, overseer.StatusQueryName) {
			return overseer.Status{}, fmt.Errorf("%w: job %q has no %s query", ErrNotOverseen, id, overseer.StatusQueryName)
		}
		return overseer.Status{}, JobError(id, err)
	}
	var s overseer.Status
	if err := v.Get(&s); err != nil {
		if encrypted(err) {
			return overseer.Status{}, wordedError{Msg: fmt.Sprintf("job %q: cannot read its status: %s", id, codec.Advice), Err: errors.Join(ErrEncrypted, err)}
		}
		return overseer.Status{}, fmt.Errorf("job %q: read status: %w", id, err)
	}
	return s, nil
}

// ErrEncrypted: a payload is encoded with a payload codec this client was
// not given (see package codec).
var ErrEncrypted = errors.New("payload encoded with a codec this client was not given")

// encrypted says err is the default converter's refusal of a payload a
// codec encoded.
func encrypted(err error) bool { return errors.Is(err, converter.ErrEncodingIsNotSupported) }

// hasQuery asks the workflow which queries it answers (the SDK's built-in
// metadata query), rather than reading a failed query's error text. If
// even that fails, it assumes the query exists.
func hasQuery(ctx context.Context, c client.Client, id, runID, name string) bool {
	v, err := c.QueryWorkflow(ctx, id, runID, metadataQueryName)
	var md sdkpb.WorkflowMetadata
	if err != nil || v.Get(&md) != nil {
		return true
	}
	for _, q := range md.GetDefinition().GetQueryDefinitions() {
		if q.GetName() == name {
			return true
		}
	}
	return false
}

// metadataQueryName is the query every workflow of a recent SDK answers
// with its handlers and current details.
const metadataQueryName = "__temporal_workflow_metadata"

// Resume sends the overseer.resume update and waits for its result: the
// closed gate. The request is validated first, here and again by the
// workflow's update validator. A refusal is one sentence that names the
// job and keeps the workflow's typed error: test it with
// overseer.InvalidResumeErrorType, NotPausedErrorType or WrongGateErrorType (see overseer.ErrorType); a finished job
// wraps ErrFinished; a job an operator paused with Temporal's Workflow Pause
// is an *OperatorPausedError (ErrOperatorPaused) that says how to unpause it.
func Resume(ctx context.Context, c client.Client, id string, req overseer.ResumeRequest) (overseer.Gate, error) {
	if err := req.Validate(); err != nil {
		return overseer.Gate{}, wordedError{Msg: fmt.Sprintf("resume job %q: %s", id, message(err)), Err: err}
	}
	h, err := updateWhenReady(ctx, c, client.UpdateWorkflowOptions{
		WorkflowID:   id,
		UpdateName:   overseer.ResumeName,
		Args:         []any{req},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	var g overseer.Gate
	if err == nil {
		err = h.Get(ctx, &g)
	}
	if err == nil {
		return g, nil
	}
	if encrypted(err) {
		// The update completed (a refusal would have come back as one):
		// only its answer, the gate, is unreadable here.
		return g, wordedError{Msg: fmt.Sprintf("job %q took the resume, but its answer cannot be read: %s", id, codec.Advice), Err: errors.Join(ErrEncrypted, err)}
	}
	if updateRefusedPaused(err) {
		// Workflow Pause refuses every update: say who paused it and how
		// to unpause it.
		if perr := pausedError(ctx, c, id, "", true, false, err); perr != nil {
			return g, perr
		}
	}
	var notFound *serviceerror.NotFound
	var timedOut *client.WorkflowUpdateServiceTimeoutOrCanceledError
	var notReady *serviceerror.WorkflowNotReady
	switch {
	case errors.As(err, &notReady):
		// updateWhenReady sent it again until the caller's time ran out.
		return g, wordedError{Msg: fmt.Sprintf("job %q was not resumed: its workflow task kept failing or timing out, and Temporal takes no update until one completes; nothing was applied: retry, and if it persists, look for the failing task in the job's history", id), Err: err}
	case errors.As(err, &timedOut) || TimedOut(err):
		// The update was sent; the workflow may accept it after the caller
		// gave up. Say so, and how to look, before anyone retries.
		gate := "the oldest open gate"
		if req.Gate != "" {
			gate = "gate " + req.Gate
		}
		return g, wordedError{Msg: fmt.Sprintf("resume job %q: no answer in time; the resume of %s may still be applied: check with `overseer status %s` before you retry, and retry with --gate so it cannot close a later gate", id, gate, id),
			Err: errors.Join(ErrMayStillApply, err)}
	case overseer.ErrorType(err) == overseer.NotPausedErrorType:
		return g, wordedError{Msg: fmt.Sprintf("job %q is not paused; nothing to resume", id), Err: err}
	case overseer.ErrorType(err) == overseer.WrongGateErrorType, overseer.ErrorType(err) == overseer.InvalidResumeErrorType,
		overseer.ErrorType(err) == overseer.NotAuthorizedErrorType:
		return g, wordedError{Msg: fmt.Sprintf("resume job %q: %s", id, message(err)), Err: err}
	case errors.As(err, &notFound):
		// An update to a closed workflow is "not found" too: ask whether
		// the job exists.
		if d, derr := c.DescribeWorkflow(ctx, id, ""); derr == nil && d.RawResponse.GetWorkflowExecutionInfo().GetCloseTime() != nil {
			return g, wordedError{Msg: fmt.Sprintf("job %q has already finished", id), Err: errors.Join(ErrFinished, err)}
		}
	}
	return g, JobError(id, err)
}

// updateWhenReady sends an update, and sends it again while the server
// answers that the workflow is not ready: after a workflow task failed or
// timed out (a worker restarting, a task lost under load) Temporal refuses
// updates until the next one completes, usually within seconds. The
// refusal means nothing was admitted, so sending again cannot apply it
// twice. It gives up when ctx ends, with the last refusal.
func updateWhenReady(ctx context.Context, c client.Client, o client.UpdateWorkflowOptions) (client.WorkflowUpdateHandle, error) {
	wait := notReadyFirstWait
	for {
		h, err := c.UpdateWorkflow(ctx, o)
		var notReady *serviceerror.WorkflowNotReady
		if !errors.As(err, &notReady) {
			return h, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		wait = min(2*wait, notReadyMaxWait)
	}
}

// Waits between updates a workflow was not ready for.
const (
	notReadyFirstWait = 250 * time.Millisecond
	notReadyMaxWait   = 2 * time.Second
)

// message is an error's own sentence, without the SDK's "(type: …)" suffix.
func message(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return strings.TrimPrefix(app.Message(), "overseer: ")
	}
	return err.Error()
}

// Job is one workflow as the list and the dashboard show it: what Temporal
// knows (type, state, times) and the overseer's search attributes.
type Job struct {
	ID    string `json:"id"`
	RunID string `json:"run_id"`
	Type  string `json:"type"`
	// State is the Temporal execution status in lower case: running,
	// paused (Workflow Pause), completed, failed, canceled, terminated,
	// continued_as_new, timed_out.
	State string `json:"state"`
	// Band, OnObjective and Paused come from the search attributes; Band
	// is empty when the job has none, "not_assessed" when it paused before
	// its first assessment.
	Band        string     `json:"band,omitempty"`
	OnObjective float64    `json:"on_objective,omitempty"`
	Paused      bool       `json:"paused"`
	Started     time.Time  `json:"started"`
	Closed      *time.Time `json:"closed,omitempty"`
	TaskQueue   string     `json:"task_queue,omitempty"`
	// Summary is the overseer's summary of the job from its memo
	// (overseer.SummaryMemoKey), read in the List call itself; nil for a
	// job started before the summary existed, or whose memo this client
	// cannot read (SummaryError says why).
	Summary      *overseer.Summary `json:"summary,omitempty"`
	SummaryError string            `json:"summary_error,omitempty"`
}

// Running reports whether the job is still running: its workflow is open,
// "running" or "paused" (an operator's Workflow Pause holds it; see
// OperatorPaused).
func (j Job) Running() bool { return j.State == "running" || j.State == "paused" }

// ListQuery builds the visibility query for the list filters: a band
// (on_track, needs_a_look, off_track; empty for any) and paused only.
func ListQuery(band string, paused bool) (string, error) {
	var parts []string
	if band != "" {
		switch overseer.Band(band) {
		case overseer.BandOnTrack, overseer.BandNeedsALook, overseer.BandOffTrack:
		default:
			return "", fmt.Errorf("%w: status %q: use on_track, needs_a_look or off_track", ErrInvalidFilter, band)
		}
		parts = append(parts, fmt.Sprintf("%s = '%s'", overseer.SearchAttributeStatus.GetName(), band))
	}
	if paused {
		// A job terminated or timed out at a gate cannot clear its search
		// attributes (no workflow code runs), so only open jobs count: a
		// job an operator holds with Workflow Pause still waits at its gate.
		parts = append(parts, overseer.SearchAttributePaused.GetName()+" = true", overseer.OpenJobsQuery)
	}
	return strings.Join(parts, " AND "), nil
}

// OverBudgetQuery selects the jobs at or past overseer.BudgetWarnShare
// of a bound of their budget (the OverseerBudget search attribute): join
// it to a ListQuery with AND.
var OverBudgetQuery = fmt.Sprintf("%s IN ('%s', '%s')", overseer.SearchAttributeBudget.GetName(), overseer.BudgetNear, overseer.BudgetReached)

// ErrUnregisteredAttribute is wrapped by the error of a list whose query
// names an overseer search attribute the namespace does not register.
var ErrUnregisteredAttribute = errors.New("unregistered search attribute")

// overseerAttributes are the search attributes the overseer upserts, which
// a list's query may name.
var overseerAttributes = []temporal.SearchAttributeKey{overseer.SearchAttributeStatus, overseer.SearchAttributeOnObjective,
	overseer.SearchAttributePaused, overseer.SearchAttributeGateSince, overseer.SearchAttributeBudget}

// unregistered is the error of a list the server refused because query
// names an overseer search attribute it does not know, saying what to
// register; nil for any other error.
func unregistered(err error, query string) error {
	var invalid *serviceerror.InvalidArgument
	if !errors.As(err, &invalid) {
		return nil
	}
	for _, k := range overseerAttributes {
		name := k.GetName()
		if strings.Contains(query, name) && strings.Contains(invalid.Error(), name) {
			return wordedError{Msg: fmt.Sprintf("the namespace has no %s search attribute, so this list cannot be read: register it "+
				"(temporal operator search-attribute create --name %s --type %s) and restart the workers; jobs set it from then on", name, name, k.GetValueType()),
				Err: ErrUnregisteredAttribute}
		}
	}
	return nil
}

// Spend says what the job spent against its budget, from its summary:
// "2400 tokens, $1.20, 3h0m0s of 2000 tokens (reached)"; elapsed time
// counts, as a time budget does, from the job's first run's start (the
// summary's Started after a continue-as-new, else this run's), and runs to
// now while the job is open. Empty without a summary or spend.
func (j Job) Spend(now time.Time) string {
	s := j.Summary
	if s == nil {
		return ""
	}
	end := now
	if j.Closed != nil {
		end = *j.Closed
	}
	start := j.Started
	if !s.Started.IsZero() {
		start = s.Started
	}
	spent := s.Spent
	spent.PhaseRuns = 0 // the phases column says them
	var parts []string
	if spent.Tokens > 0 || spent.CostUSD > 0 || spent.Turns > 0 {
		parts = append(parts, spent.String())
	}
	if !start.IsZero() && end.After(start) {
		parts = append(parts, end.Sub(start).Round(time.Second).String())
	}
	text := strings.Join(parts, ", ")
	if s.Budget != nil {
		text += " of " + s.Budget.String()
		if s.BudgetState != "" {
			text += " (" + s.BudgetState + ")"
		}
	}
	return text
}

// ListOptions select the jobs List returns. The zero value lists the 50
// most recent workflows of the namespace.
type ListOptions struct {
	// Query is a Temporal visibility query (see ListQuery). If not set,
	// every workflow.
	Query string
	// Limit caps the number of jobs. If not set, 50; negative: every job
	// the query selects, page after page.
	Limit int
	// DataConverter reads the summaries in the jobs' memos: the client's,
	// payload codec included. If not set, the default converter, which
	// cannot read a memo a codec encrypted (SummaryError says so).
	DataConverter converter.DataConverter
	// Namespace is the client's namespace, the serialization context of
	// the memos. If not set, "default".
	Namespace string
	// CallTimeout bounds each List call (one page). If not set,
	// DefaultCallTimeout.
	CallTimeout time.Duration
	// PageSize is the jobs one List call asks for. If not set, 1000 (the
	// server's default maximum).
	PageSize int
}

// DefaultCallTimeout bounds each remote call of a view: one List page, or
// one job's status query.
const DefaultCallTimeout = 5 * time.Second

// listPageSize is the page of a List call: the server's default maximum.
const listPageSize = 1000

// List lists jobs, most recent first, with their overseer search attributes.
func List(ctx context.Context, c client.Client, opts ListOptions) ([]Job, error) {
	limit := opts.Limit
	switch {
	case limit == 0:
		limit = 50
	case limit < 0:
		limit = math.MaxInt
	}
	timeout := cmp.Or(opts.CallTimeout, DefaultCallTimeout)
	var jobs []Job
	var token []byte
	for len(jobs) < limit {
		resp, err := ListPage(ctx, c, timeout, &workflowservice.ListWorkflowExecutionsRequest{
			Query: opts.Query, PageSize: int32(min(limit, cmp.Or(opts.PageSize, listPageSize))), NextPageToken: token,
		})
		if err != nil {
			if u := unregistered(err, opts.Query); u != nil {
				return jobs, fmt.Errorf("list jobs: %w", u)
			}
			if ctx.Err() == nil && (TimedOut(err) || errors.Is(err, ErrRateLimited)) {
				return jobs, fmt.Errorf("list jobs: %w (%d jobs listed before it)", err, len(jobs))
			}
			return jobs, fmt.Errorf("list jobs: %w", err)
		}
		for _, e := range resp.Executions {
			j := jobOf(e)
			j.readSummary(e.GetMemo(), opts)
			jobs = append(jobs, j)
			if len(jobs) == limit {
				break
			}
		}
		token = resp.NextPageToken
		if len(token) == 0 {
			break
		}
	}
	return jobs, nil
}

// readSummary decodes the overseer's summary from the job's memo, in the
// workflow's serialization context, as the worker wrote it.
func (j *Job) readSummary(memo *commonpb.Memo, opts ListOptions) {
	p, ok := memo.GetFields()[overseer.SummaryMemoKey]
	if !ok {
		return
	}
	dc := memoConverter(opts.DataConverter, opts.Namespace, j.ID)
	var s overseer.Summary
	if err := dc.FromPayload(p, &s); err != nil {
		if encrypted(err) {
			j.SummaryError = "its summary is encrypted: " + codec.Advice
		} else {
			j.SummaryError = "its summary cannot be read: " + err.Error()
		}
		return
	}
	if !s.Of(j.RunID) {
		return // a predecessor's, copied by continue-as-new: this run wrote none
	}
	j.Summary = &s
}

// Describe returns what Temporal knows about one job (its latest run).
func Describe(ctx context.Context, c client.Client, id string) (Job, error) {
	d, err := c.DescribeWorkflow(ctx, id, "")
	if err != nil {
		return Job{}, JobError(id, err)
	}
	return jobOf(d.RawResponse.GetWorkflowExecutionInfo()), nil
}

func jobOf(e *workflowpb.WorkflowExecutionInfo) Job {
	j := Job{
		ID:        e.GetExecution().GetWorkflowId(),
		RunID:     e.GetExecution().GetRunId(),
		Type:      e.GetType().GetName(),
		State:     StateName(e.GetStatus()),
		Started:   e.GetStartTime().AsTime(),
		TaskQueue: e.GetTaskQueue(),
	}
	if e.GetCloseTime() != nil {
		t := e.GetCloseTime().AsTime()
		j.Closed = &t
	}
	decodeSearchAttributes(e.GetSearchAttributes(), &j)
	// A closed job is not paused, whatever its last search attributes say
	// (terminate and timeout run no workflow code to clear them).
	j.Paused = j.Paused && j.Running()
	return j
}

func decodeSearchAttributes(sa *commonpb.SearchAttributes, j *Job) {
	fields := sa.GetIndexedFields()
	decode := func(name string, v any) {
		if p, ok := fields[name]; ok {
			_ = json.Unmarshal(p.GetData(), v)
		}
	}
	decode(overseer.SearchAttributeStatus.GetName(), &j.Band)
	decode(overseer.SearchAttributeOnObjective.GetName(), &j.OnObjective)
	decode(overseer.SearchAttributePaused.GetName(), &j.Paused)
}

// StateName is a workflow execution status in lower case: "running",
// "completed", …
func StateName(s enumspb.WorkflowExecutionStatus) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "WORKFLOW_EXECUTION_STATUS_"))
}

// wordedError says err in other words and still wraps it.
type wordedError = visibility.Worded
