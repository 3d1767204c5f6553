package overseer

import (
	"context"
	"errors"
	"math"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/corohq/temporal-overseer/overseer/jev"
)

func TestUnencodableRequestIsAnInvalidRequestNotAnInvalidAnswer(t *testing.T) {
	judge := jev.NewScripted()
	_, err := decide(context.Background(), judge, AssessInput{Phase: "code", Trajectory: Trajectory{CostUSD: math.NaN()}})
	var app *temporal.ApplicationError
	if !errors.As(err, &app) {
		t.Fatalf("want an ApplicationError, got %v", err)
	}
	if app.Type() != InvalidRequestErrorType || !app.NonRetryable() {
		t.Errorf("got type %q, non-retryable %v; want %q, non-retryable", app.Type(), app.NonRetryable(), InvalidRequestErrorType)
	}
	if n := len(judge.Requests()); n != 0 {
		t.Errorf("the judge was asked %d times; want never", n)
	}
}
