// Package registry stores the overseer's learned models in Temporal itself:
// one registry workflow per namespace ([WorkflowName], workflow id
// [WorkflowID]) holds, per workflow type and for the default type
// [DefaultType], the ordered versions promoted (each a learned model, its
// policy and informational figures, who promoted it, when and why) and
// which one is current, and the latest candidates refused for each type
// with why and their figures.
//
// The [QueryName] query lists them; the validated updates [PromoteName]
// and [RollbackName] change them, and [RefusalName] records a refused
// candidate, each refusing bad input in one sentence. The
// workflow continues as new, carrying its state, every
// [DefaultMaxUpdates] updates or when the server suggests it, so its
// history stays bounded.
//
// Workers read it through [Source], an [overseer.ModelSource]: a new run
// pins the current version of its type, and keeps it across promotions.
// [Promote], [Rollback] and [Get] are the client side (`overseer model`),
// [RecordRefusal] the one overseer learn uses when it refuses a candidate;
// [NewWorker] hosts the workflow. The package needs nothing beyond the
// Temporal SDK.
package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/overseer"
)

// Names of the registry, fixed so that every worker and client of a
// namespace finds the same one.
const (
	// WorkflowName is the registry workflow's type.
	WorkflowName = "overseer.ModelRegistry"
	// WorkflowID is the registry workflow's id, one per namespace.
	WorkflowID = "overseer-model-registry"
	// TaskQueue is the task queue the registry workflow runs on.
	TaskQueue = "overseer-model-registry"
	// QueryName answers with the registry's [State], filtered by a [Query].
	QueryName = "overseer.models"
	// PromoteName is the update that promotes a model ([PromoteRequest]).
	PromoteName = "overseer.model.promote"
	// RollbackName is the update that makes a type's previous model
	// current again ([RollbackRequest]).
	RollbackName = "overseer.model.rollback"
	// RefusalName is the update that records a candidate refused for a
	// type ([RefusalRequest]): overseer learn sends it, the dashboard shows
	// the refusals.
	RefusalName = "overseer.model.refusal"
	// DefaultType is the entry of every workflow type without its own.
	DefaultType = "*"
)

// Bounds of the registry's state and history.
const (
	// DefaultMaxUpdates is how many updates a run of the registry takes
	// before it continues as new.
	DefaultMaxUpdates = 200
	// MaxVersions is how many versions a type keeps; older ones, never the
	// current one, are dropped.
	MaxVersions = 50
	// MaxEvents is how many promotions and rollbacks the log keeps.
	MaxEvents = 200
	// MaxNoteBytes bounds a note (and a refusal's reason).
	MaxNoteBytes = 4096
	// MaxRefusals is how many refusals a type keeps: the latest.
	MaxRefusals = 20
	// MaxFiguresBytes bounds a refusal's figures.
	MaxFiguresBytes = 16 << 10
)

// Version is one promoted model with its policy.
type Version struct {
	// Version is the model's own version (its file's "version").
	Version string `json:"version"`
	// Model is the learned-model file, Policy the policy file; omitted from
	// a query's answer unless it asks for content.
	Model  json.RawMessage `json:"model,omitempty"`
	Policy json.RawMessage `json:"policy,omitempty"`
	// Figures is what the promotion was based on (evaluation figures);
	// informational.
	Figures json.RawMessage `json:"figures,omitempty"`
	// PolicyName and Promise summarise the policy.
	PolicyName string            `json:"policy_name"`
	Promise    *overseer.Promise `json:"promise,omitempty"`
	PromotedAt time.Time         `json:"promoted_at"`
	By         string            `json:"by"`
	Note       string            `json:"note,omitempty"`
	// Previous is the version that was current when this one was
	// promoted, where a rollback returns; empty for a type's first.
	Previous string `json:"previous,omitempty"`
}

// TypeModels are the versions of one workflow type, oldest first.
type TypeModels struct {
	Type     string    `json:"type"`
	Current  string    `json:"current"`
	Versions []Version `json:"versions"`
}

// CurrentVersion is the current version, or nil.
func (t *TypeModels) CurrentVersion() *Version { return t.find(t.Current) }

func (t *TypeModels) find(version string) *Version {
	for i := range t.Versions {
		if t.Versions[i].Version == version {
			return &t.Versions[i]
		}
	}
	return nil
}

// Event is one promotion or rollback.
type Event struct {
	At      time.Time `json:"at"`
	Action  string    `json:"action"` // "promote" or "rollback"
	Type    string    `json:"type"`
	Version string    `json:"version"`
	// From is the version that was current before.
	From string `json:"from,omitempty"`
	By   string `json:"by"`
	Note string `json:"note,omitempty"`
}

// Refusal is a candidate model that was not promoted for a type, and why.
type Refusal struct {
	At   time.Time `json:"at"`
	Type string    `json:"type"`
	// Version is the candidate's version; empty when none could be fitted.
	Version string `json:"version,omitempty"`
	// Current is the version the candidate was measured against.
	Current string `json:"current,omitempty"`
	// Reason says why, in one sentence with the figures.
	Reason string `json:"reason"`
	// Figures are what the refusal was based on (informational JSON).
	Figures json.RawMessage `json:"figures,omitempty"`
	By      string          `json:"by"`
}

// State is the registry's content, carried across continue-as-new.
type State struct {
	// Types are sorted by name.
	Types []TypeModels `json:"types"`
	// Events are the latest promotions and rollbacks, oldest first.
	Events []Event `json:"events,omitempty"`
	// Refusals are the latest refused candidates, oldest first, at most
	// MaxRefusals per type.
	Refusals []Refusal `json:"refusals,omitempty"`
	// Updates counts every update ever applied.
	Updates int `json:"updates"`
}

// Type is the entry of workflowType, or nil.
func (s *State) Type(workflowType string) *TypeModels {
	for i := range s.Types {
		if s.Types[i].Type == workflowType {
			return &s.Types[i]
		}
	}
	return nil
}

// Resolve is the entry a run of workflowType uses: its own, else the
// default type's, else nil.
func (s *State) Resolve(workflowType string) *TypeModels {
	if t := s.Type(workflowType); t != nil && t.Current != "" {
		return t
	}
	if t := s.Type(DefaultType); t != nil && t.Current != "" {
		return t
	}
	return nil
}

// Input is the registry workflow's argument.
type Input struct {
	State State `json:"state"`
	// MaxUpdates overrides DefaultMaxUpdates (tests).
	MaxUpdates int `json:"max_updates,omitempty"`
}

// Query selects what the QueryName query answers.
type Query struct {
	// Types, if set, keeps only these types (versions and refusals).
	Types []string `json:"types,omitempty"`
	// Version, if set, keeps only this version (and refusals of a
	// candidate of that version).
	Version string `json:"version,omitempty"`
	// CurrentOnly keeps only each type's current version, and no refusals.
	CurrentOnly bool `json:"current_only,omitempty"`
	// Content includes the model and policy files.
	Content bool `json:"content,omitempty"`
}

// PromoteRequest is the argument of the PromoteName update.
type PromoteRequest struct {
	// Type is the workflow type; if not set, DefaultType.
	Type string `json:"type,omitempty"`
	// Model is a learned-model file of this version of overseer; its
	// version names the promotion and must be new to the type.
	Model json.RawMessage `json:"model"`
	// Policy is a policy file (overseer calibrate).
	Policy json.RawMessage `json:"policy"`
	// Figures are informational JSON.
	Figures json.RawMessage `json:"figures,omitempty"`
	By      string          `json:"by"`
	Note    string          `json:"note,omitempty"`
}

// RollbackRequest is the argument of the RollbackName update.
type RollbackRequest struct {
	// Type is the workflow type; if not set, DefaultType.
	Type string `json:"type,omitempty"`
	By   string `json:"by"`
	Note string `json:"note,omitempty"`
}

// RefusalRequest is the argument of the RefusalName update.
type RefusalRequest struct {
	// Type is the workflow type; if not set, DefaultType.
	Type string `json:"type,omitempty"`
	// Version is the refused candidate's version, if one was fitted;
	// Current the version it was measured against.
	Version string `json:"version,omitempty"`
	Current string `json:"current,omitempty"`
	// Reason says why, in one sentence (at most MaxNoteBytes).
	Reason string `json:"reason"`
	// Figures are informational JSON (at most MaxFiguresBytes).
	Figures json.RawMessage `json:"figures,omitempty"`
	By      string          `json:"by"`
}

// Result is what a promotion, rollback or recorded refusal did.
type Result struct {
	Type    string    `json:"type"`
	Version string    `json:"version"`
	From    string    `json:"from,omitempty"`
	At      time.Time `json:"at"`
}

// ErrRefused is wrapped by every refusal of the registry's validators on
// the client side ([Promote], [Rollback], [RecordRefusal]).
var ErrRefused = errors.New("model registry refused")

// Workflow is the registry workflow. Start it with [Promote], [Rollback]
// or [RecordRefusal] (update-with-start), which need no other setup.
func Workflow(ctx workflow.Context, in Input) error {
	r := &registry{state: in.State}
	maxUpdates := in.MaxUpdates
	if maxUpdates <= 0 {
		maxUpdates = DefaultMaxUpdates
	}
	updates := 0
	if err := workflow.SetQueryHandlerWithOptions(ctx, QueryName, func(q Query) (State, error) { return r.view(q), nil },
		workflow.QueryHandlerOptions{Description: "The promoted models per workflow type ({types, version, current_only, content} filter)."}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, PromoteName,
		func(ctx workflow.Context, req PromoteRequest) (Result, error) {
			updates++
			return r.promote(workflow.Now(ctx), req)
		},
		workflow.UpdateHandlerOptions{
			Validator:   func(ctx workflow.Context, req PromoteRequest) error { _, err := r.checkPromote(req); return err },
			Description: "Promote a learned model and its policy for a workflow type (\"*\": the default).",
		}); err != nil {
		return err
	}
	if err := workflow.SetUpdateHandlerWithOptions(ctx, RollbackName,
		func(ctx workflow.Context, req RollbackRequest) (Result, error) {
			updates++
			return r.rollback(workflow.Now(ctx), req)
		},
		workflow.UpdateHandlerOptions{
			Validator:   func(ctx workflow.Context, req RollbackRequest) error { _, _, err := r.checkRollback(req); return err },
			Description: "Make the model that was current before a type's current one current again.",
		}); err != nil {
		return err
	}
	// A new handler adds no command: histories recorded before it replay.
	if err := workflow.SetUpdateHandlerWithOptions(ctx, RefusalName,
		func(ctx workflow.Context, req RefusalRequest) (Result, error) {
			updates++
			return r.refuse(workflow.Now(ctx), req)
		},
		workflow.UpdateHandlerOptions{
			Validator:   func(ctx workflow.Context, req RefusalRequest) error { _, err := r.checkRefusal(req); return err },
			Description: "Record a candidate model refused for a workflow type, with why and its figures.",
		}); err != nil {
		return err
	}
	if err := workflow.Await(ctx, func() bool {
		return updates >= maxUpdates || workflow.GetInfo(ctx).GetContinueAsNewSuggested()
	}); err != nil {
		return err
	}
	// Updates accepted in this task finish here, not in the next run.
	if err := workflow.Await(ctx, func() bool { return workflow.AllHandlersFinished(ctx) }); err != nil {
		return err
	}
	return workflow.NewContinueAsNewError(ctx, WorkflowName, Input{State: r.state, MaxUpdates: in.MaxUpdates})
}

type registry struct {
	state State
}

// typeName is the request's type, DefaultType when not set.
func typeName(t string) string {
	if t = strings.TrimSpace(t); t == "" {
		return DefaultType
	}
	return t
}

// checkPromote validates a promotion and returns the version it adds.
func (r *registry) checkPromote(req PromoteRequest) (Version, error) {
	wt := typeName(req.Type)
	if strings.TrimSpace(req.By) == "" {
		return Version{}, errors.New("say who promotes the model (by)")
	}
	if len(req.Note) > MaxNoteBytes {
		return Version{}, fmt.Errorf("the note is %d bytes; keep it to %d", len(req.Note), MaxNoteBytes)
	}
	if len(req.Model) == 0 {
		return Version{}, errors.New("no model file: give a learned-model file (overseer train)")
	}
	m, err := overseer.ParseLearnedModel(req.Model)
	if err != nil {
		return Version{}, fmt.Errorf("the model is refused: %v", err)
	}
	if len(req.Policy) == 0 {
		return Version{}, fmt.Errorf("no policy file for model %s: give the policy calibrated for it (overseer calibrate)", m.Version)
	}
	p, err := overseer.ParsePolicy(req.Policy)
	if err != nil {
		return Version{}, fmt.Errorf("the policy is refused: %v", err)
	}
	if len(req.Figures) > 0 && !json.Valid(req.Figures) {
		return Version{}, errors.New("the figures are not JSON")
	}
	model, err := compact(req.Model)
	if err != nil {
		return Version{}, err
	}
	if t := r.state.Type(wt); t != nil && t.find(m.Version) != nil {
		return Version{}, fmt.Errorf("version %s is already in the registry for type %s: give the new model a version of its own", m.Version, wt)
	}
	for _, t := range r.state.Types {
		if v := t.find(m.Version); v != nil && !bytes.Equal(v.Model, model) {
			return Version{}, fmt.Errorf("version %s already names another model (type %s): give the new model a version of its own", m.Version, t.Type)
		}
	}
	v := Version{Version: m.Version, Model: model, PolicyName: p.Name, By: strings.TrimSpace(req.By), Note: req.Note}
	if v.Policy, err = compact(req.Policy); err != nil {
		return Version{}, err
	}
	if len(req.Figures) > 0 {
		if v.Figures, err = compact(req.Figures); err != nil {
			return Version{}, err
		}
	}
	if p.Promise.Certified() {
		promise := p.Promise
		v.Promise = &promise
	}
	return v, nil
}

func compact(raw json.RawMessage) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	return b.Bytes(), nil
}

func (r *registry) promote(now time.Time, req PromoteRequest) (Result, error) {
	v, err := r.checkPromote(req)
	if err != nil {
		return Result{}, err
	}
	wt := typeName(req.Type)
	t := r.state.Type(wt)
	if t == nil {
		r.state.Types = append(r.state.Types, TypeModels{Type: wt})
		slices.SortFunc(r.state.Types, func(a, b TypeModels) int { return strings.Compare(a.Type, b.Type) })
		t = r.state.Type(wt)
	}
	v.PromotedAt, v.Previous = now, t.Current
	t.Versions = append(t.Versions, v)
	from := t.Current
	t.Current = v.Version
	t.trim()
	r.log(Event{At: now, Action: "promote", Type: wt, Version: v.Version, From: from, By: v.By, Note: v.Note})
	return Result{Type: wt, Version: v.Version, From: from, At: now}, nil
}

// trim drops the oldest versions beyond MaxVersions, never the current.
func (t *TypeModels) trim() {
	for len(t.Versions) > MaxVersions {
		i := 0
		if t.Versions[0].Version == t.Current {
			i = 1
		}
		t.Versions = slices.Delete(t.Versions, i, i+1)
	}
}

func (r *registry) log(e Event) {
	r.state.Updates++
	r.state.Events = append(r.state.Events, e)
	if n := len(r.state.Events); n > MaxEvents {
		r.state.Events = slices.Clone(r.state.Events[n-MaxEvents:])
	}
}

// checkRollback validates a rollback and returns the type and the version
// it makes current.
func (r *registry) checkRollback(req RollbackRequest) (*TypeModels, *Version, error) {
	wt := typeName(req.Type)
	if strings.TrimSpace(req.By) == "" {
		return nil, nil, errors.New("say who rolls the model back (by)")
	}
	if len(req.Note) > MaxNoteBytes {
		return nil, nil, fmt.Errorf("the note is %d bytes; keep it to %d", len(req.Note), MaxNoteBytes)
	}
	t := r.state.Type(wt)
	if t == nil || t.Current == "" {
		return nil, nil, fmt.Errorf("no model was promoted for type %s: nothing to roll back", wt)
	}
	cur := t.CurrentVersion()
	if cur == nil || cur.Previous == "" {
		return nil, nil, fmt.Errorf("%s is the first model of type %s: there is none before it to roll back to", t.Current, wt)
	}
	prev := t.find(cur.Previous)
	if prev == nil {
		return nil, nil, fmt.Errorf("the model before %s of type %s, %s, is no longer kept (the registry keeps %d versions a type): promote it again",
			t.Current, wt, cur.Previous, MaxVersions)
	}
	return t, prev, nil
}

func (r *registry) rollback(now time.Time, req RollbackRequest) (Result, error) {
	t, prev, err := r.checkRollback(req)
	if err != nil {
		return Result{}, err
	}
	from := t.Current
	t.Current = prev.Version
	r.log(Event{At: now, Action: "rollback", Type: t.Type, Version: prev.Version, From: from, By: strings.TrimSpace(req.By), Note: req.Note})
	return Result{Type: t.Type, Version: prev.Version, From: from, At: now}, nil
}

// checkRefusal validates a refusal and returns the entry it adds.
func (r *registry) checkRefusal(req RefusalRequest) (Refusal, error) {
	if strings.TrimSpace(req.By) == "" {
		return Refusal{}, errors.New("say who refused the candidate (by)")
	}
	reason := strings.TrimSpace(req.Reason)
	if reason == "" {
		return Refusal{}, errors.New("say why the candidate was refused (reason)")
	}
	if len(reason) > MaxNoteBytes {
		return Refusal{}, fmt.Errorf("the reason is %d bytes; keep it to %d", len(reason), MaxNoteBytes)
	}
	f := Refusal{Type: typeName(req.Type), Version: strings.TrimSpace(req.Version), Current: strings.TrimSpace(req.Current), Reason: reason, By: strings.TrimSpace(req.By)}
	if len(req.Figures) > 0 {
		var err error
		if f.Figures, err = compact(req.Figures); err != nil {
			return Refusal{}, errors.New("the figures are not JSON")
		}
		if len(f.Figures) > MaxFiguresBytes {
			return Refusal{}, fmt.Errorf("the figures are %d bytes; keep them to %d", len(f.Figures), MaxFiguresBytes)
		}
	}
	return f, nil
}

// refuse records a refusal, keeping the type's latest MaxRefusals.
func (r *registry) refuse(now time.Time, req RefusalRequest) (Result, error) {
	f, err := r.checkRefusal(req)
	if err != nil {
		return Result{}, err
	}
	f.At = now
	r.state.Updates++
	r.state.Refusals = append(r.state.Refusals, f)
	n := 0
	for _, x := range r.state.Refusals {
		if x.Type == f.Type {
			n++
		}
	}
	if n > MaxRefusals {
		i := slices.IndexFunc(r.state.Refusals, func(x Refusal) bool { return x.Type == f.Type })
		r.state.Refusals = slices.Delete(r.state.Refusals, i, i+1)
	}
	return Result{Type: f.Type, Version: f.Version, From: f.Current, At: now}, nil
}

// view is the state filtered by q; it shares nothing with the state.
func (r *registry) view(q Query) State {
	out := State{Types: []TypeModels{}, Events: slices.Clone(r.state.Events), Updates: r.state.Updates}
	for _, t := range r.state.Types {
		if len(q.Types) > 0 && !slices.Contains(q.Types, t.Type) {
			continue
		}
		vt := TypeModels{Type: t.Type, Current: t.Current, Versions: []Version{}}
		for _, v := range t.Versions {
			if (q.Version != "" && v.Version != q.Version) || (q.CurrentOnly && v.Version != t.Current) {
				continue
			}
			if !q.Content {
				v.Model, v.Policy = nil, nil
			}
			vt.Versions = append(vt.Versions, v)
		}
		if q.Version != "" && len(vt.Versions) == 0 {
			continue
		}
		out.Types = append(out.Types, vt)
	}
	for _, f := range r.state.Refusals {
		if q.CurrentOnly || (len(q.Types) > 0 && !slices.Contains(q.Types, f.Type)) || (q.Version != "" && f.Version != q.Version) {
			continue
		}
		out.Refusals = append(out.Refusals, f)
	}
	return out
}
