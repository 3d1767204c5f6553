package ops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/corohq/temporal-overseer/overseer"
)

// NeedingPlugin is what Retire finds: the open runs that started under the
// plugin in observe or manage mode, which replay only on workers that have
// it (in mode off at least), and the plugin's own notifier workflows still
// delivering a notice.
type NeedingPlugin struct {
	// Count is how many open runs need the plugin: the Candidates, less
	// those whose histories were read and hold no overseer marker
	// (Carried), plus the open Notifiers. A candidate not read (past
	// ListOptions.Limit, or whose history could not be read) counts as
	// needing it: retiring too early breaks replay, waiting does not.
	Count int64
	// Candidates is how many open runs carry the overseer's version in
	// visibility (NeedsPluginQuery). Continue-as-new copies the search
	// attributes into the successor, so a successor started after its
	// type was switched to mode off carries it without needing the plugin.
	Candidates int64
	// Checked is how many candidates' histories were read; Carried are
	// those of them that hold no overseer marker of their own.
	Checked int
	Carried []Job `json:"carried,omitempty"`
	// Unread says why some candidates' histories were not read, "" when
	// every one was.
	Unread string `json:"unread,omitempty"`
	// Notifiers is how many of the plugin's notifier workflows
	// (overseer.Notify) are open: a notice still in retry needs the
	// plugin's workflow registered on a worker.
	Notifiers int64
	// Jobs are the candidates that need the plugin, among those read.
	Jobs []Job
}

// NeedsPlugin finds the open runs (of workflowType, unless it is "") that
// still need the plugin on their workers. It counts the candidates and the
// open notifiers (two Count calls), lists at most ListOptions.Limit
// candidates and reads the start of each one's history (one call per
// candidate, each with its own timeout) for the overseer's version marker.
// A workflow type with a quote in it is refused.
func NeedsPlugin(ctx context.Context, c client.Client, workflowType string, opts ListOptions) (NeedingPlugin, error) {
	if strings.ContainsAny(workflowType, `'"`) {
		return NeedingPlugin{}, fmt.Errorf("%w: a workflow type with a quote in it cannot be put in a visibility query", ErrInvalidFilter)
	}
	timeout := cmp.Or(opts.CallTimeout, DefaultCallTimeout)
	query := overseer.NeedsPluginQuery(workflowType)
	resp, err := Count(ctx, c, timeout, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
	if err != nil {
		return NeedingPlugin{}, fmt.Errorf("count the runs that need the plugin: %w", err)
	}
	n := NeedingPlugin{Candidates: resp.GetCount()}
	notifiers, err := Count(ctx, c, timeout, &workflowservice.CountWorkflowExecutionsRequest{
		Query: "WorkflowType = '" + overseer.NotifyWorkflowName + "' AND " + overseer.OpenJobsQuery})
	if err != nil {
		return NeedingPlugin{}, fmt.Errorf("count the plugin's open notifier workflows: %w", err)
	}
	n.Notifiers = notifiers.GetCount()
	n.Count = n.Candidates + n.Notifiers
	if n.Candidates == 0 {
		return n, nil
	}
	opts.Query = query
	listed, err := List(ctx, c, opts)
	if err != nil {
		return n, fmt.Errorf("list the runs that need the plugin: %w", err)
	}
	unreadable := 0
	for _, j := range listed {
		marked, err := startedWithMarker(ctx, c, timeout, j, opts)
		if err != nil {
			unreadable++
			n.Jobs = append(n.Jobs, j)
			continue
		}
		n.Checked++
		if marked {
			n.Jobs = append(n.Jobs, j)
		} else {
			n.Carried = append(n.Carried, j)
		}
	}
	n.Count -= int64(len(n.Carried))
	switch notRead := n.Candidates - int64(n.Checked); {
	case unreadable > 0:
		n.Unread = fmt.Sprintf("%d of the runs listed could not be read (a history call failed, or its marker is encrypted with a codec this client lacks); they count as needing the plugin", unreadable)
	case notRead > 0:
		n.Unread = fmt.Sprintf("%d runs past the first %d were not read (raise --limit); they count as needing the plugin", notRead, n.Checked)
	}
	return n, nil
}

// errNoMarkerRead: the marker's change id could not be decoded.
var errNoMarkerRead = errors.New("the version marker cannot be read")

// startedWithMarker says the run j's history holds the overseer's version
// marker, recorded in its first workflow task: it reads the history only
// until that task's commands end.
func startedWithMarker(ctx context.Context, c client.Client, timeout time.Duration, j Job, opts ListOptions) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dc := memoConverter(opts.DataConverter, opts.Namespace, j.ID)
	it := c.GetWorkflowHistory(ctx, j.ID, j.RunID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	completed := false
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return false, fmt.Errorf("read the history of job %q: %w", j.ID, err)
		}
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			completed = true
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED, enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED:
			if completed {
				return false, nil // the first task's commands are over
			}
		case enumspb.EVENT_TYPE_MARKER_RECORDED:
			m := e.GetMarkerRecordedEventAttributes()
			if m.GetMarkerName() != "Version" {
				continue
			}
			ps := m.GetDetails()["change-id"].GetPayloads()
			var id string
			if len(ps) == 0 || dc.FromPayload(ps[0], &id) != nil {
				return false, errNoMarkerRead
			}
			if id == overseer.VersionChangeID {
				return true, nil
			}
		}
	}
	return false, nil
}
