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

// gateSearchAttribute says whether the namespace has OverseerGateSince
// registered, so that the worker may upsert it (a workflow task that
// upserts an attribute the server does not know fails, and the job stops).
// When it has not, or the check fails, it says in one sentence what to
// register, and jobs go without it: every view still works, only a query
// on the oldest gate's age does not.
func gateSearchAttribute(ctx context.Context, c client.Client, namespace string, log *zap.Logger) bool {
	if c == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	name := overseer.SearchAttributeGateSince.GetName()
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		log.Warn(fmt.Sprintf("overseer: cannot tell whether namespace %q registers the search attribute %s, so jobs go without it: "+
			"register it (temporal operator search-attribute create --name %s --type Datetime) and restart the worker", namespace, name, name), zap.Error(err))
		return false
	}
	if _, ok := resp.GetCustomAttributes()[name]; ok {
		return true
	}
	log.Warn(fmt.Sprintf("overseer: namespace %q has no search attribute %s, so jobs go without it (a query for overdue gates needs it): "+
		"register it with `temporal operator search-attribute create --namespace %s --name %s --type Datetime` and restart the worker",
		namespace, name, namespace, name))
	return false
}
