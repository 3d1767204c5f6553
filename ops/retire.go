package ops

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/corohq/temporal-overseer/overseer"
)

// NeedingPlugin is what Retire finds: the open runs that started under the
// plugin in observe or manage mode, which replay only on workers that have
// it (in mode off at least).
type NeedingPlugin struct {
	// Count is how many there are; Jobs the first of them (ListOptions.Limit).
	Count int64
	Jobs  []Job
}

// NeedsPlugin counts and lists the open runs (of workflowType, unless it is
// "") that still need the plugin on their workers: one Count call and one
// List page. A workflow type with a quote in it is refused.
func NeedsPlugin(ctx context.Context, c client.Client, workflowType string, opts ListOptions) (NeedingPlugin, error) {
	if strings.ContainsAny(workflowType, `'"`) {
		return NeedingPlugin{}, fmt.Errorf("%w: a workflow type with a quote in it cannot be put in a visibility query", ErrInvalidFilter)
	}
	query := overseer.NeedsPluginQuery(workflowType)
	resp, err := Count(ctx, c, cmp.Or(opts.CallTimeout, DefaultCallTimeout), &workflowservice.CountWorkflowExecutionsRequest{Query: query})
	if err != nil {
		return NeedingPlugin{}, fmt.Errorf("count the runs that need the plugin: %w", err)
	}
	n := NeedingPlugin{Count: resp.GetCount()}
	if n.Count == 0 {
		return n, nil
	}
	opts.Query = query
	n.Jobs, err = List(ctx, c, opts)
	if err != nil {
		return n, fmt.Errorf("list the runs that need the plugin: %w", err)
	}
	return n, nil
}
