package dashboard

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/overseer/registry"
)

// ModelsBackend is a Backend that reads the namespace's model registry
// (package overseer/registry). TemporalBackend is one; the Models page
// says so when the backend is not.
type ModelsBackend interface {
	Backend
	// Models is the registry's state (no model or policy content); an
	// empty state when no model was promoted.
	Models(ctx context.Context) (registry.State, error)
}

// Models implements ModelsBackend.
func (b TemporalBackend) Models(ctx context.Context) (registry.State, error) {
	st, err := registry.Get(ctx, b.Client, registry.Query{})
	if errors.Is(err, registry.ErrNoRegistry) {
		return registry.State{}, nil
	}
	return st, err
}

var _ ModelsBackend = TemporalBackend{}

// modelsPage is the Models page: per workflow type, the current model, its
// promise and who promoted it with what figures, and the recent
// promotions and rollbacks.
type modelsPage struct {
	page
	Types []modelsType
	// Events are the latest promotions and rollbacks, newest first.
	Events []registry.Event
	Error  string
}

type modelsType struct {
	registry.TypeModels
	Current *registry.Version
	// Older are the other versions, newest first.
	Older []registry.Version
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	p := modelsPage{page: s.page(r, "Models")}
	mb, ok := s.backend.(ModelsBackend)
	if !ok {
		p.Error = "This dashboard's backend does not read a model registry."
		s.render(w, r, http.StatusOK, "models.html", p)
		return
	}
	ctx, cancel := s.call(r)
	defer cancel()
	st, err := mb.Models(ctx)
	if err != nil {
		s.log.Warn("dashboard: read the model registry", zap.Error(err))
		p.Error = "Temporal did not answer the model registry's query: " + err.Error()
	}
	for _, t := range st.Types {
		mt := modelsType{TypeModels: t, Current: t.CurrentVersion()}
		for _, v := range slices.Backward(t.Versions) {
			if v.Version != t.Current {
				mt.Older = append(mt.Older, v)
			}
		}
		p.Types = append(p.Types, mt)
	}
	for _, e := range slices.Backward(st.Events) {
		p.Events = append(p.Events, e)
	}
	s.render(w, r, http.StatusOK, "models.html", p)
}
