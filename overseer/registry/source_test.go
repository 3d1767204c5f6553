package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"

	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/registry"
)

// queryClient answers the registry's query from state, or with err.
type queryClient struct {
	client.Client
	mu      sync.Mutex
	state   *registry.State
	err     error
	queries []registry.Query
}

type jsonValue struct{ v any }

func (j jsonValue) HasValue() bool { return true }
func (j jsonValue) Get(ptr any) error {
	data, err := json.Marshal(j.v)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, ptr)
}

func (q *queryClient) QueryWorkflow(_ context.Context, id, _ string, name string, args ...any) (converter.EncodedValue, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if id != registry.WorkflowID || name != registry.QueryName {
		return nil, errors.New("unexpected query")
	}
	req := args[0].(registry.Query)
	q.queries = append(q.queries, req)
	switch {
	case q.err != nil:
		return nil, q.err
	case q.state == nil:
		return nil, serviceerror.NewNotFound("workflow not found")
	}
	// Filter as the workflow does.
	out := registry.State{}
	for _, t := range q.state.Types {
		if len(req.Types) > 0 && !contains(req.Types, t.Type) {
			continue
		}
		vt := registry.TypeModels{Type: t.Type, Current: t.Current}
		for _, v := range t.Versions {
			if (req.Version == "" || v.Version == req.Version) && (!req.CurrentOnly || v.Version == t.Current) {
				vt.Versions = append(vt.Versions, v)
			}
		}
		if req.Version == "" || len(vt.Versions) > 0 {
			out.Types = append(out.Types, vt)
		}
	}
	return jsonValue{out}, nil
}

func (q *queryClient) count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.queries)
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

type countingLogger struct {
	log.Logger
	mu    sync.Mutex
	infos []string
}

func (l *countingLogger) Info(msg string, _ ...any) {
	l.mu.Lock()
	l.infos = append(l.infos, msg)
	l.mu.Unlock()
}
func (l *countingLogger) Warn(string, ...any) {}

func version(t *testing.T, v string) registry.Version {
	return registry.Version{Version: v, Model: modelJSON(t, v), Policy: policyJSON(t)}
}

func TestSourceFallsBackToTheShippedModelUntilAPromotionAndSaysSoOnce(t *testing.T) {
	c := &queryClient{}
	logger := &countingLogger{}
	src := registry.NewSource(c, registry.SourceOptions{TTL: time.Nanosecond, Logger: logger})
	shipped := overseer.DefaultLearnedModel().Version
	for range 3 {
		mv, err := src.Current(context.Background(), "CoroJob")
		require.NoError(t, err)
		assert.Equal(t, shipped, mv.Version)
		assert.Equal(t, overseer.DefaultLearnedPolicy(), mv.Policy)
	}
	require.Len(t, logger.infos, 1, "said once")
	assert.Contains(t, logger.infos[0], "the model registry does not exist yet")
	mv, err := src.Version(context.Background(), "CoroJob", shipped)
	require.NoError(t, err)
	assert.Equal(t, shipped, mv.Model.Version)

	c.mu.Lock()
	c.state = &registry.State{Types: []registry.TypeModels{{Type: registry.DefaultType, Current: "model-a", Versions: []registry.Version{version(t, "model-a")}}}}
	c.mu.Unlock()
	mv, err = src.Current(context.Background(), "CoroJob")
	require.NoError(t, err)
	assert.Equal(t, "model-a", mv.Version, "the default type's model")
	assert.Equal(t, "model-a", mv.Model.Version)
	assert.Len(t, logger.infos, 2)
}

func TestSourceCachesTheCurrentVersionForItsTTLAndEveryVersionForGood(t *testing.T) {
	c := &queryClient{state: &registry.State{Types: []registry.TypeModels{
		{Type: registry.DefaultType, Current: "model-a", Versions: []registry.Version{version(t, "model-a")}},
		{Type: "CoroJob", Current: "model-j", Versions: []registry.Version{version(t, "model-j")}},
	}}}
	own := overseer.DefaultLearnedModel()
	own.Version = "worker-model"
	src := registry.NewSource(c, registry.SourceOptions{TTL: time.Hour, Fallback: &overseer.ModelVersion{Version: own.Version, Model: own, Policy: overseer.DefaultPolicy()}})
	for range 2 {
		mv, err := src.Current(context.Background(), "CoroJob")
		require.NoError(t, err)
		assert.Equal(t, "model-j", mv.Version)
	}
	assert.Equal(t, 1, c.count(), "the second run of the type read the cache")
	mv, err := src.Version(context.Background(), "CoroJob", "model-j")
	require.NoError(t, err)
	assert.Equal(t, "model-j", mv.Model.Version)
	assert.Equal(t, 1, c.count(), "a version read once is never read again")

	mv, err = src.Version(context.Background(), "Other", "model-a")
	require.NoError(t, err)
	assert.Equal(t, "model-a", mv.Version)
	mv, err = src.Version(context.Background(), "Other", overseer.DefaultLearnedModel().Version)
	require.NoError(t, err, "the shipped model, which runs pin while the registry is empty")
	assert.Equal(t, overseer.DefaultLearnedPolicy(), mv.Policy)
	_, err = src.Version(context.Background(), "Other", "model-z")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "version model-z is not in the model registry")
}

func TestSourceKeepsTheVersionReadLastWhenTheRegistryCannotBeRead(t *testing.T) {
	c := &queryClient{state: &registry.State{Types: []registry.TypeModels{
		{Type: registry.DefaultType, Current: "model-a", Versions: []registry.Version{version(t, "model-a")}}}}}
	src := registry.NewSource(c, registry.SourceOptions{TTL: time.Nanosecond})
	_, err := src.Current(context.Background(), "CoroJob")
	require.NoError(t, err)
	c.mu.Lock()
	c.err = errors.New("deadline exceeded")
	c.mu.Unlock()
	mv, err := src.Current(context.Background(), "CoroJob")
	require.NoError(t, err)
	assert.Equal(t, "model-a", mv.Version)
	_, err = src.Current(context.Background(), "NeverSeen")
	require.Error(t, err, "nothing read before for this type: the run uses the worker's judge")
}
