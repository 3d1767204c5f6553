package registry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/corohq/temporal-overseer/overseer"
)

// DefaultTTL is how long a Source reuses the current version it read.
const DefaultTTL = 5 * time.Second

// SourceOptions configure a Source.
type SourceOptions struct {
	// TTL is how long the current version of a type is reused before the
	// registry is asked again: a promotion reaches new runs within it. If
	// not set, DefaultTTL.
	TTL time.Duration
	// Fallback is what runs use while the registry does not exist or holds
	// no model for their type (nor the default type). If not set, the
	// shipped model with its policy.
	Fallback *overseer.ModelVersion
	// Logger says when the source falls back, once. If not set, nothing is
	// logged.
	Logger log.Logger
}

// Source is the worker's view of the registry, an [overseer.ModelSource]:
// it reads the registry workflow with its query, keeps the current version
// of each type for TTL and every version it read for good (a version never
// changes), and holds no secret. Give it to [overseer.Options].Models.
type Source struct {
	c        client.Client
	ttl      time.Duration
	fallback overseer.ModelVersion
	logger   log.Logger

	mu       sync.Mutex
	current  map[string]cachedCurrent
	versions map[string]overseer.ModelVersion
	// fellBack is set once the fallback was logged, until the registry
	// answers with a model.
	fellBack bool
}

type cachedCurrent struct {
	mv overseer.ModelVersion
	at time.Time
}

var _ overseer.ModelSource = (*Source)(nil)

// NewSource returns a Source reading the registry of c's namespace.
func NewSource(c client.Client, o SourceOptions) *Source {
	s := &Source{c: c, ttl: o.TTL, logger: o.Logger, current: map[string]cachedCurrent{}, versions: map[string]overseer.ModelVersion{}}
	if s.ttl <= 0 {
		s.ttl = DefaultTTL
	}
	if o.Fallback != nil {
		s.fallback = *o.Fallback
	} else {
		m := overseer.DefaultLearnedModel()
		s.fallback = overseer.ModelVersion{Version: m.Version, Model: m, Policy: overseer.DefaultLearnedPolicy()}
	}
	return s
}

// Current implements overseer.ModelSource: the type's current version, else
// the default type's, else the fallback. When the registry cannot be read
// it answers with what it last read for the type, or fails.
func (s *Source) Current(ctx context.Context, workflowType string) (overseer.ModelVersion, error) {
	s.mu.Lock()
	cached, ok := s.current[workflowType]
	s.mu.Unlock()
	if ok && time.Since(cached.at) < s.ttl {
		return cached.mv, nil
	}
	st, err := Get(ctx, s.c, Query{Types: []string{workflowType, DefaultType}, CurrentOnly: true, Content: true})
	var mv overseer.ModelVersion
	switch {
	case errors.Is(err, ErrNoRegistry):
		s.fallBack("the model registry does not exist yet (no model was promoted)")
		mv = s.fallback
	case err != nil:
		if ok {
			s.warn("overseer model registry: cannot read it; new runs keep the version read last", "workflow_type", workflowType,
				"version", cached.mv.Version, "error", err)
			s.remember(workflowType, cached.mv, time.Now().Add(-s.ttl/2)) // ask again soon
			return cached.mv, nil
		}
		return overseer.ModelVersion{}, err
	default:
		t := st.Resolve(workflowType)
		if t == nil {
			s.fallBack("the model registry holds no model for this type nor the default type")
			mv = s.fallback
			break
		}
		if mv, err = decodeVersion(*t.CurrentVersion()); err != nil {
			return overseer.ModelVersion{}, err
		}
		s.found(mv)
	}
	s.remember(workflowType, mv, time.Now())
	return mv, nil
}

// Version implements overseer.ModelSource.
func (s *Source) Version(ctx context.Context, _ string, version string) (overseer.ModelVersion, error) {
	s.mu.Lock()
	mv, ok := s.versions[version]
	s.mu.Unlock()
	if ok {
		return mv, nil
	}
	if version == s.fallback.Version {
		return s.fallback, nil
	}
	if m := overseer.DefaultLearnedModel(); version == m.Version {
		// Pinned while the registry was empty, by a worker with the
		// shipped model (this one may fall back to another).
		return overseer.ModelVersion{Version: m.Version, Model: m, Policy: overseer.DefaultLearnedPolicy()}, nil
	}
	st, err := Get(ctx, s.c, Query{Version: version, Content: true})
	if err != nil {
		return overseer.ModelVersion{}, err
	}
	for _, t := range st.Types {
		for _, v := range t.Versions {
			if v.Version == version {
				mv, err := decodeVersion(v)
				if err != nil {
					return overseer.ModelVersion{}, err
				}
				s.mu.Lock()
				s.versions[version] = mv
				s.mu.Unlock()
				return mv, nil
			}
		}
	}
	return overseer.ModelVersion{}, fmt.Errorf("version %s is not in the model registry", version)
}

func (s *Source) remember(workflowType string, mv overseer.ModelVersion, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.current[workflowType] = cachedCurrent{mv: mv, at: at}
	if mv.Version != s.fallback.Version {
		s.versions[mv.Version] = mv
	}
}

// fallBack logs, once until the registry answers, that runs use the
// fallback.
func (s *Source) fallBack(why string) {
	s.mu.Lock()
	first := !s.fellBack
	s.fellBack = true
	s.mu.Unlock()
	if first && s.logger != nil {
		s.logger.Info("overseer model registry: "+why+"; new runs use the worker's model until one is promoted", "version", s.fallback.Version)
	}
}

func (s *Source) found(mv overseer.ModelVersion) {
	s.mu.Lock()
	was := s.fellBack
	s.fellBack = false
	s.mu.Unlock()
	if was && s.logger != nil {
		s.logger.Info("overseer model registry: new runs use the promoted model", "version", mv.Version)
	}
}

func (s *Source) warn(msg string, kv ...any) {
	if s.logger != nil {
		s.logger.Warn(msg, kv...)
	}
}

// decodeVersion reads a version's model and policy.
func decodeVersion(v Version) (overseer.ModelVersion, error) {
	m, err := overseer.ParseLearnedModel(v.Model)
	if err != nil {
		return overseer.ModelVersion{}, fmt.Errorf("model registry version %s: %w", v.Version, err)
	}
	p, err := overseer.ParsePolicy(v.Policy)
	if err != nil {
		return overseer.ModelVersion{}, fmt.Errorf("model registry version %s: %w", v.Version, err)
	}
	return overseer.ModelVersion{Version: v.Version, Model: m, Policy: p}, nil
}
