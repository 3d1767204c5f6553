package worker_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/worker"
)

func TestModelRegistryNeedsTheLearnedJudge(t *testing.T) {
	_, err := worker.New(nil, worker.Config{ModelRegistry: true, JudgeConfig: worker.JudgeConfig{Kind: worker.JudgeHeuristic}, Logger: zap.NewNop()})
	require.EqualError(t, err, "the model registry gives jobs learned models: it needs the learned judge, not heuristic judge (rules, not a model)")
}
