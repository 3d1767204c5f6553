package learn

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/corohq/temporal-overseer/ops"
)

// MaxRoundsListed bounds how many of the newest completed rounds
// LatestRounds lists.
const MaxRoundsListed = 500

// RoundsQuery is the visibility query of the completed learn rounds.
const RoundsQuery = "WorkflowType = '" + WorkflowName + "' AND ExecutionStatus = 'Completed'"

// LatestRounds is the latest completed round of each workflow type, sorted
// by type, as the rounds left it in their memo (MemoKey): one visibility
// listing of the newest MaxRoundsListed completed rounds, no history read.
// Rounds recorded before the learn workflow left a memo are skipped.
func LatestRounds(ctx context.Context, c client.Client) ([]Result, error) {
	latest := map[string]Result{}
	var token []byte
	for listed := 0; listed < MaxRoundsListed; {
		resp, err := ops.ListPage(ctx, c, ops.DefaultCallTimeout, &workflowservice.ListWorkflowExecutionsRequest{Query: RoundsQuery, PageSize: 100, NextPageToken: token})
		if err != nil {
			return nil, fmt.Errorf("list the learn rounds: %w", err)
		}
		for _, e := range resp.Executions {
			listed++
			p, ok := e.GetMemo().GetFields()[MemoKey]
			if !ok {
				continue
			}
			var res Result
			if err := converter.GetDefaultDataConverter().FromPayload(p, &res); err != nil || res.Type == "" {
				continue // not a round's memo: nothing to show
			}
			if prev, ok := latest[res.Type]; !ok || res.At.After(prev.At) {
				latest[res.Type] = res
			}
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
	}
	out := slices.Collect(maps.Values(latest))
	slices.SortFunc(out, func(a, b Result) int { return strings.Compare(a.Type, b.Type) })
	return out, nil
}
