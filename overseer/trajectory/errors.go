package trajectory

import (
	"errors"

	"go.temporal.io/sdk/temporal"
)

// DescribeError returns the most useful message of an activity error: the
// cause, without the SDK's wrapping.
func DescribeError(err error) string {
	var act *temporal.ActivityError
	if errors.As(err, &act) && errors.Unwrap(act) != nil {
		err = errors.Unwrap(act)
	}
	// An application error's own message, without the SDK's "(type: …,
	// retryable: …)".
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.Message() != "" {
		return app.Message()
	}
	return err.Error()
}
