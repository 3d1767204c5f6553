package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/corohq/temporal-overseer/learn"
	"github.com/corohq/temporal-overseer/overseer/registry"
)

// ModelsBackend is a Backend that reads the namespace's model registry
// (package overseer/registry). TemporalBackend is one; the Models page
// says so when the backend is not.
type ModelsBackend interface {
	Backend
	// Models is the registry's state (no model or policy content), with
	// the refused candidates; an empty state when nothing was recorded.
	Models(ctx context.Context) (registry.State, error)
}

// LearnBackend is a ModelsBackend that also reads the learn rounds
// (package learn): the Models page then shows, per workflow type, the
// false-pause and catch rates the latest round measured on closed jobs,
// and how many more labelled runs a deployment needs. TemporalBackend is
// one.
type LearnBackend interface {
	ModelsBackend
	// LearnRounds are the latest completed round of each workflow type.
	LearnRounds(ctx context.Context) ([]learn.Result, error)
}

// Models implements ModelsBackend.
func (b TemporalBackend) Models(ctx context.Context) (registry.State, error) {
	st, err := registry.Get(ctx, b.Client, registry.Query{})
	if errors.Is(err, registry.ErrNoRegistry) {
		return registry.State{}, nil
	}
	return st, err
}

// LearnRounds implements LearnBackend (learn.LatestRounds).
func (b TemporalBackend) LearnRounds(ctx context.Context) ([]learn.Result, error) {
	return learn.LatestRounds(ctx, b.Client)
}

var _ LearnBackend = TemporalBackend{}

// modelsPage is the Models page: per workflow type, the current model, its
// promise and who promoted it with what figures, what the latest learn
// round measured, the candidates refused, and the recent promotions and
// rollbacks.
type modelsPage struct {
	page
	Types []modelsType
	// Events are the latest promotions and rollbacks, newest first.
	Events []registry.Event
	Error  string
	// LearnError says why the learn rounds could not be read.
	LearnError string
}

type modelsType struct {
	Type string
	// Current is the current version, if one was promoted.
	Current *registry.Version
	// Older are the other versions, newest first.
	Older []registry.Version
	// Round is the latest learn round of the type, if one ran.
	Round *learn.Result
	// Refusals are the refused candidates, newest first.
	Refusals []refusalRow
}

// refusalRow is a refused candidate with its figures, when they read as
// a learn round's.
type refusalRow struct {
	registry.Refusal
	Figures *learn.Figures
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
	var rounds []learn.Result
	if lb, ok := s.backend.(LearnBackend); ok {
		if rounds, err = lb.LearnRounds(ctx); err != nil {
			s.log.Warn("dashboard: read the learn rounds", zap.Error(err))
			p.LearnError = "Temporal did not list the learn rounds: " + err.Error()
		}
	}
	p.Types = modelsTypes(st, rounds)
	for _, e := range slices.Backward(st.Events) {
		p.Events = append(p.Events, e)
	}
	s.render(w, r, http.StatusOK, "models.html", p)
}

// modelsTypes joins, per workflow type (sorted), the registry's versions
// and refusals and the latest learn round: a type may have any of them.
func modelsTypes(st registry.State, rounds []learn.Result) []modelsType {
	byType := map[string]*modelsType{}
	of := func(t string) *modelsType {
		if byType[t] == nil {
			byType[t] = &modelsType{Type: t}
		}
		return byType[t]
	}
	for _, t := range st.Types {
		mt := of(t.Type)
		mt.Current = t.CurrentVersion()
		for _, v := range slices.Backward(t.Versions) {
			if v.Version != t.Current {
				mt.Older = append(mt.Older, v)
			}
		}
	}
	for _, f := range slices.Backward(st.Refusals) {
		row := refusalRow{Refusal: f}
		var fig learn.Figures
		if len(f.Figures) > 0 && json.Unmarshal(f.Figures, &fig) == nil {
			row.Figures = &fig
		}
		mt := of(f.Type)
		mt.Refusals = append(mt.Refusals, row)
	}
	for _, r := range rounds {
		of(r.Type).Round = &r
	}
	var out []modelsType
	for _, t := range byType {
		out = append(out, *t)
	}
	slices.SortFunc(out, func(a, b modelsType) int { return strings.Compare(a.Type, b.Type) })
	return out
}
