package worker

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/overseer"
)

// optionalSearchAttribute is a search attribute the worker upserts only
// when the namespace registers it, and what a view loses without it.
type optionalSearchAttribute struct {
	name, kind, without string
}

var (
	gateSinceAttribute = optionalSearchAttribute{overseer.SearchAttributeGateSince.GetName(), "Datetime", "a query for overdue gates needs it"}
	budgetAttribute    = optionalSearchAttribute{overseer.SearchAttributeBudget.GetName(), "Keyword", "overseer list --over-budget needs it"}
)

// registeredSearchAttributes says which of the optional search attributes
// the namespace registers, so that the worker may upsert them (a workflow
// task that upserts an attribute the server does not know fails, and the
// job stops). For one it has not, or when the check fails, it says in one
// sentence what to register, and jobs go without it: every view still
// works but the one that needs it.
func registeredSearchAttributes(ctx context.Context, c client.Client, namespace string, log *zap.Logger, attrs ...optionalSearchAttribute) []bool {
	has := make([]bool, len(attrs))
	if c == nil {
		return has
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	for i, a := range attrs {
		if err != nil {
			log.Warn(fmt.Sprintf("overseer: cannot tell whether namespace %q registers the search attribute %s, so jobs go without it: "+
				"register it (temporal operator search-attribute create --name %s --type %s) and restart the worker", namespace, a.name, a.name, a.kind), zap.Error(err))
			continue
		}
		if _, ok := resp.GetCustomAttributes()[a.name]; ok {
			has[i] = true
			continue
		}
		log.Warn(fmt.Sprintf("overseer: namespace %q has no search attribute %s, so jobs go without it (%s): "+
			"register it with `temporal operator search-attribute create --namespace %s --name %s --type %s` and restart the worker",
			namespace, a.name, a.without, namespace, a.name, a.kind))
	}
	return has
}
