package overseer_test

import (
	"io"
	"log/slog"

	"github.com/stretchr/testify/mock"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
)

type workflowHeader = commonpb.Header

var mockAny = mock.Anything

func describeSA(sa any) map[string]any {
	out := map[string]any{}
	typed, ok := sa.(temporal.SearchAttributes)
	if !ok {
		return out
	}
	for k, v := range typed.GetUntypedValues() {
		out[k.GetName()] = v
	}
	return out
}

func quietLogger() log.Logger {
	return log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}
