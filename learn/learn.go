// Package learn is the loop a deployment runs to keep its learned judge
// fitted to its own jobs: a Temporal workflow, started by a Temporal
// Schedule in the user's own cluster, that each round exports the overseen
// jobs of one workflow type, takes their outcomes and the reviewers' gate
// decisions as labels, and — once enough labelled runs exist — refits,
// recalibrates and promotes a candidate through the model registry only
// when it keeps the false-pause promise and ranks no worse than the model
// jobs use now (see [Decide]).
//
// The workflow only sequences; activities do the work: [Activities.Export]
// reads the histories of the jobs closed since the last round into
// compact run records in a record store ([Store]: a folder, or a bucket),
// each job once, ever; counts the labelled runs and measures the gates on
// the newest closed jobs ([MeasureRates]: the false-pause rate, succeeded
// jobs that paused at a gate, and the catch rate, failed jobs that did,
// against the current model's promise); [Activities.Refit] reads the
// records from the store (no history), decides, promotes, and records a
// refused candidate with its figures in the model registry
// ([registry.RecordRefusal]). Both work on the newest Input.MaxRuns
// records (DefaultMaxRuns), so a round's memory stays flat as jobs
// accumulate. Each round's [Result] carries the running totals of the
// rounds before it (a Schedule's last completion result, or the Previous
// of the input), its series of records in the store, and the measured
// [Rates].
//
// A round leaves its result, without its decision's figures, in its memo
// ([MemoKey]): [LatestRounds] reads the latest round of every type from one
// visibility listing (the dashboard does). It emits the overseer_learn_*
// metrics (overseer.MetricLearnPromotions and the others) through the
// workflow's metrics handler, tagged with the type learned from.
package learn

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/corohq/temporal-overseer/eval"
	"github.com/corohq/temporal-overseer/ops"
	"github.com/corohq/temporal-overseer/overseer"
	"github.com/corohq/temporal-overseer/overseer/registry"
)

// Names of the workflow, its query, its memo and its activities.
const (
	WorkflowName = "overseer.Learn"
	QueryName    = "overseer.learn"
	// MemoKey is the memo field a round leaves its Result in (without its
	// Decision and Refusals), for whoever lists the rounds (LatestRounds).
	MemoKey             = "overseer.learn"
	ExportActivityName  = "overseer.learn.export"
	RefitActivityName   = "overseer.learn.refit"
	PromotedBy          = "overseer learn"
	DefaultScheduleName = "overseer-learn"
)

// Input is the workflow's argument.
type Input struct {
	// Type is the workflow type whose jobs are learned from.
	Type string `json:"type"`
	// Budget, HoldOut, MinFamilies, Promise and PauseBudget: see
	// DecideOptions.
	Budget      float64              `json:"budget,omitempty"`
	HoldOut     float64              `json:"hold_out,omitempty"`
	MinFamilies int                  `json:"min_families,omitempty"`
	Promise     overseer.PromiseKind `json:"promise,omitempty"`
	PauseBudget float64              `json:"pause_budget,omitempty"`
	// Where narrows the jobs with a visibility clause ANDed to the type's,
	// e.g. "TaskQueue = 'agents'".
	Where string `json:"where,omitempty"`
	// RateWindow is how many of the newest closed jobs the round measures
	// the false-pause and catch rates on; default DefaultRateWindow.
	RateWindow int `json:"rate_window,omitempty"`
	// Previous is the result of the round before, when the workflow does
	// not run from a Schedule (overseer learn run).
	Previous *Result `json:"previous,omitempty"`
	// TaskQueue is the queue the round's activities run on, so that
	// reading histories and training never take a job's worker slot;
	// default the round's own (the workflow's) queue.
	TaskQueue string `json:"task_queue,omitempty"`
	// MaxRuns caps the records a round measures, refits and recalibrates
	// on: the newest MaxRuns closed jobs in the record store, by close
	// time; default DefaultMaxRuns. Older records stay in the store.
	MaxRuns int `json:"max_runs,omitempty"`
	// Overlap is how far before the last round's end a round lists the
	// closed jobs again, for those visibility showed late; default
	// DefaultOverlap.
	Overlap time.Duration `json:"overlap,omitempty"`
}

func (in Input) options() DecideOptions {
	return DecideOptions{Budget: in.Budget, HoldOut: in.HoldOut, MinFamilies: in.MinFamilies, Promise: in.Promise, PauseBudget: in.PauseBudget}
}

// Result is one round's outcome, with the totals of every round so far.
type Result struct {
	Type string    `json:"type"`
	At   time.Time `json:"at"`
	// Rounds, Promoted and Refused count every round so far.
	Rounds   int `json:"rounds"`
	Promoted int `json:"promoted"`
	Refused  int `json:"refused"`
	// NewRuns are the jobs closed since the previous round.
	NewRuns int `json:"new_runs"`
	// Read is how many job histories the round read into the record
	// store: the jobs closed since the last round, less those it held;
	// Stored how many records of the series the store holds after it.
	Read   int `json:"read"`
	Stored int `json:"stored,omitempty"`
	// StoreNote says what the export found wrong with its record store and
	// did about it (an earlier attempt's records it could not see, read
	// again), also at the end of Sentence; "" when nothing was.
	StoreNote string `json:"store_note,omitempty"`
	// Series names the round's records in the store: the rounds of a type
	// that learn from the same jobs (the same Where) share one, from the
	// first round on.
	Series    string    `json:"series,omitempty"`
	Readiness Readiness `json:"readiness"`
	// Labels are the reviewers' gate decisions among the exported runs,
	// counted whether or not the round refits.
	Labels *eval.GateLabels `json:"gate_labels,omitempty"`
	// Rates are the false-pause and catch rates measured on the newest
	// closed jobs, against the promise of the model current then.
	Rates *Rates `json:"rates,omitempty"`
	// Saved is what oversight did on the same jobs: the failed jobs'
	// spend, what they spent after their first pause, the jobs aborted at
	// a gate and the time jobs waited at gates (eval.SavedOf).
	Saved *eval.Saved `json:"saved,omitempty"`
	// RelativeBudget says the relative budget the type's jobs back (it
	// rides in the next promoted policy, Policy.Spend), or why none.
	RelativeBudget string `json:"relative_budget,omitempty"`
	// Rescue is rescue against disruption on the jobs the round read
	// (eval.EstimateRescue): whether pausing the type's jobs helps. It only
	// recommends; no round switches a mode.
	Rescue *eval.RescueEstimate `json:"rescue,omitempty"`
	// Catches are the failed jobs caught at eval.FixedFalsePauseRates of
	// succeeded jobs paused, on the assessments the jobs recorded live
	// (eval.RecordedCatches).
	Catches []eval.CatchAtRate `json:"catches,omitempty"`
	// Decision is this round's candidate, if one was fitted.
	Decision *Decision `json:"decision,omitempty"`
	// Current is the model version jobs of the type use after the round.
	Current string `json:"current,omitempty"`
	// Refusals are the latest refusals, oldest first (at most 10).
	Refusals []string `json:"refusals,omitempty"`
	// Sentence says the round in one sentence.
	Sentence string `json:"sentence"`
}

// ExportInput is the export activity's argument.
type ExportInput struct {
	Type       string        `json:"type"`
	Where      string        `json:"where,omitempty"`
	Since      time.Time     `json:"since"`
	Before     time.Time     `json:"before"`
	Options    DecideOptions `json:"options"`
	RateWindow int           `json:"rate_window,omitempty"`
	// Series, MaxRuns and Overlap: see Result.Series and Input. An input
	// without a series (a round begun before the record store) names
	// one from its workflow's run.
	Series  string        `json:"series,omitempty"`
	MaxRuns int           `json:"max_runs,omitempty"`
	Overlap time.Duration `json:"overlap,omitempty"`
}

// ExportOutput is what the export activity found.
type ExportOutput struct {
	NewRuns int `json:"new_runs"`
	// Read and Stored: see Result.
	Read      int             `json:"read"`
	Stored    int             `json:"stored"`
	Readiness Readiness       `json:"readiness"`
	Labels    eval.GateLabels `json:"gate_labels"`
	Rates     Rates           `json:"rates"`
	// Saved: see Result; nil from an export activity older than it.
	Saved *eval.Saved `json:"saved,omitempty"`
	// RelativeBudget: see Result.
	RelativeBudget string `json:"relative_budget,omitempty"`
	// Rescue: see Result.
	Rescue  *eval.RescueEstimate `json:"rescue,omitempty"`
	Catches []eval.CatchAtRate   `json:"catches,omitempty"`
	// StoreNote: see Result.
	StoreNote string `json:"store_note,omitempty"`
}

// RefitInput is the refit activity's argument.
type RefitInput struct {
	Type    string        `json:"type"`
	Where   string        `json:"where,omitempty"`
	Before  time.Time     `json:"before"`
	Options DecideOptions `json:"options"`
	Series  string        `json:"series,omitempty"`
	MaxRuns int           `json:"max_runs,omitempty"`
}

// RefitOutput is what the refit activity decided and did.
type RefitOutput struct {
	Decision Decision `json:"decision"`
	// Promoted is true when the registry took the candidate.
	Promoted bool   `json:"promoted"`
	Current  string `json:"current"`
	// RefusalNotRecorded says why a refusal could not be recorded in the
	// registry, if it could not.
	RefusalNotRecorded string `json:"refusal_not_recorded,omitempty"`
}

// Workflow is one round of learning (see the package doc).
func Workflow(ctx workflow.Context, in Input) (Result, error) {
	prev := in.Previous
	if workflow.HasLastCompletionResult(ctx) {
		var last Result
		if err := workflow.GetLastCompletionResult(ctx, &last); err == nil {
			prev = &last
		}
	}
	res := Result{Type: in.Type, At: workflow.Now(ctx)}
	var since time.Time
	if prev != nil {
		res.Rounds, res.Promoted, res.Refused, res.Refusals, res.Current = prev.Rounds, prev.Promoted, prev.Refused, prev.Refusals, prev.Current
		since = prev.At
	}
	// Changes no command: what the activities are given and return.
	res.Series = seriesFor(in.Where, workflow.GetInfo(ctx).WorkflowExecution.RunID, prev)
	res.Rounds++
	if err := workflow.SetQueryHandler(ctx, QueryName, func() (Result, error) { return res, nil }); err != nil {
		return Result{}, err
	}
	if in.Type == "" {
		return Result{}, temporal.NewNonRetryableApplicationError("learn: no workflow type: give the type whose jobs to learn from", "OverseerLearnInput", nil)
	}
	// The export reads the histories of the jobs closed since the last
	// round: an hour at most an attempt, alive as long as it heartbeats;
	// a retry resumes from its heartbeat and the record store. Replay
	// compares neither timeouts, retries nor task queues, only the
	// activity's type and id. Named, not inherited: every activity the
	// overseer schedules for itself goes to a queue it chose (the round's
	// own, or in.TaskQueue).
	tq := workflow.GetInfo(ctx).TaskQueueName
	if in.TaskQueue != "" {
		tq = in.TaskQueue
	}
	actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           tq,
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    2 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
	})
	var ex ExportOutput
	if err := workflow.ExecuteActivity(actx, ExportActivityName, ExportInput{Type: in.Type, Where: in.Where, Since: since, Before: res.At, Options: in.options(),
		RateWindow: in.RateWindow, Series: res.Series, MaxRuns: in.MaxRuns, Overlap: in.Overlap}).Get(ctx, &ex); err != nil {
		return Result{}, err
	}
	res.NewRuns, res.Readiness, res.Read, res.Stored, res.StoreNote = ex.NewRuns, ex.Readiness, ex.Read, ex.Stored, ex.StoreNote
	if ex.Labels.Any() {
		res.Labels = &ex.Labels
	}
	if ex.Rates.Sentence != "" { // an export activity older than the rates measures none
		res.Rates = &ex.Rates
	}
	res.Saved, res.RelativeBudget = ex.Saved, ex.RelativeBudget
	res.Rescue, res.Catches = ex.Rescue, ex.Catches
	// A round before the stages recorded no Recalibrate: it replays as it ran.
	if !ex.Readiness.Ready && !ex.Readiness.Recalibrate {
		res.Sentence = fmt.Sprintf("round %d for %s: no candidate: %s", res.Rounds, in.Type, ex.Readiness.Sentence)
		if ex.Readiness.Next != "" {
			res.Sentence = fmt.Sprintf("round %d for %s: no candidate: %s", res.Rounds, in.Type, ex.Readiness.Next)
		}
		res.Sentence += storeNote(res)
		return res, finish(ctx, res, nil)
	}
	rctx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		TaskQueue:           tq,
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    2 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 2},
	})
	var rf RefitOutput
	if err := workflow.ExecuteActivity(rctx, RefitActivityName, RefitInput{Type: in.Type, Where: in.Where, Before: res.At, Options: in.options(),
		Series: res.Series, MaxRuns: in.MaxRuns}).Get(ctx, &rf); err != nil {
		return Result{}, err
	}
	res.Decision, res.Current = &rf.Decision, rf.Current
	if rf.Promoted {
		res.Promoted++
	} else {
		res.Refused++
		res.Refusals = append(res.Refusals, rf.Decision.Reason)
		if n := len(res.Refusals); n > 10 {
			res.Refusals = res.Refusals[n-10:]
		}
	}
	res.Sentence = fmt.Sprintf("round %d for %s: %s", res.Rounds, in.Type, rf.Decision.Reason)
	if rf.RefusalNotRecorded != "" {
		res.Sentence += "; the refusal could not be recorded in the model registry: " + rf.RefusalNotRecorded
	}
	res.Sentence += storeNote(res)
	return res, finish(ctx, res, &rf)
}

// storeNote is the end of a round's sentence that says what its export
// found wrong with the record store.
func storeNote(res Result) string {
	if res.StoreNote == "" {
		return ""
	}
	return "; record store: " + res.StoreNote
}

// memoVersion is the GetVersion change of the round's memo: rounds
// recorded before it left none, and replay without.
const memoVersion = "overseer.learn.memo"

// finish ends a round: its metrics, and its memo for LatestRounds.
func finish(ctx workflow.Context, res Result, rf *RefitOutput) error {
	emitMetrics(ctx, res, rf)
	if workflow.GetVersion(ctx, memoVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return nil
	}
	return workflow.UpsertMemo(ctx, map[string]any{MemoKey: memoOf(res)})
}

// memoOf is res without what makes it large or what the dashboard does not
// read (the labels are in the result): the memo stays a few
// hundred bytes (the registry keeps the figures and refusals).
func memoOf(res Result) Result {
	res.Decision, res.Refusals, res.Labels = nil, nil, nil
	return res
}

// Activities are the learn workflow's activities.
type Activities struct {
	Client client.Client
	// DataConverter reads the closed jobs' histories: the converter of the
	// deployment's clients, codec included (ops.ExportOptions). If not
	// set, the SDK's default.
	DataConverter converter.DataConverter
	// Judge is the current model when the registry has none for the type;
	// default overseer.DefaultLearnedModel and its policy.
	Judge *Current
	// Records, if set, replaces reading the closed jobs from Temporal and
	// the record store (tests); it returns the labelled runs, newest first.
	Records func(ctx context.Context, workflowType, where string, before time.Time) ([]eval.Record, error)
	// Store keeps the records the rounds read. If not set, the folder of
	// $OVERSEER_LEARN_RECORDS or DefaultStoreDir, opened on first use.
	Store *Store
	// Parallel is how many histories a round reads at once; if not set,
	// ops.DefaultExportParallel.
	Parallel int
	// PageSize is how many jobs a listing page, and so a shard, holds; if
	// not set, DefaultShardJobs.
	PageSize int

	mu     sync.Mutex
	opened *Store
}

// Query is the visibility query of the jobs of workflowType closed by
// before (any time when zero), narrowed by where when set.
func Query(workflowType, where string, before time.Time) string {
	q := fmt.Sprintf("WorkflowType = '%s' AND ExecutionStatus != 'Running'", workflowType)
	if strings.TrimSpace(where) != "" {
		q += " AND (" + where + ")"
	}
	if !before.IsZero() {
		q += fmt.Sprintf(" AND CloseTime <= '%s'", before.UTC().Format(time.RFC3339Nano))
	}
	return q
}

// Export reads into the record store the jobs of the type closed by
// in.Before that it does not hold (see [Store]), then counts the labelled
// runs among the newest in.MaxRuns records and those closed since the
// previous round, and measures the rates.
func (a *Activities) Export(ctx context.Context, in ExportInput) (ExportOutput, error) {
	var recs []eval.Record
	var out ExportOutput
	if a.Records != nil {
		var err error
		if recs, err = a.Records(ctx, in.Type, in.Where, in.Before); err != nil {
			return ExportOutput{}, err
		}
		out.NewRuns, out.Stored = len(recs), len(recs)
	} else {
		st, err := a.store(ctx)
		if err != nil {
			return ExportOutput{}, err
		}
		name := seriesOf(ctx, in.Series, in.Where)
		sr, read, note, err := a.syncRecords(ctx, st, in.Type, in.Where, name, in.Before, in.Overlap)
		if err != nil {
			return ExportOutput{}, err
		}
		max := in.MaxRuns
		if max == 0 {
			max = DefaultMaxRuns
		}
		defer heartbeatEvery(ctx, heartbeatInterval, func() any { return "measuring the records" })()
		if recs, err = st.newest(ctx, sr, max); err != nil {
			return ExportOutput{}, err
		}
		out.Read, out.Stored, out.StoreNote = read, sr.records(), note
		out.NewRuns = out.Stored
	}
	if !in.Since.IsZero() && a.Records == nil {
		q := Query(in.Type, in.Where, in.Before) + fmt.Sprintf(" AND CloseTime > '%s'", in.Since.UTC().Format(time.RFC3339Nano))
		n, err := ops.Count(ctx, a.Client, ops.ExportCallTimeout, &workflowservice.CountWorkflowExecutionsRequest{Query: q})
		if err != nil {
			return ExportOutput{}, fmt.Errorf("count the jobs closed since the last round: %w", err)
		}
		out.NewRuns = int(n.GetCount())
	}
	out.Labels = eval.UseGateLabels(recs)
	out.Readiness = Ready(recs, in.Options)
	out.Rates = a.measure(ctx, recs, in)
	saved := eval.SavedOf(newestWindow(recs, in.RateWindow)) // the jobs the rates measure
	out.Saved = &saved
	out.RelativeBudget = relativeBudgetSentence(recs)
	// Every record the round reads, not only the rate window: the estimate
	// needs eval.MinRescueJobs jobs of each kind, and a deployment flags
	// few of its jobs.
	rescue := eval.EstimateRescue(in.Type, recs)
	out.Rescue = &rescue
	out.Catches = eval.RecordedCatches(recs, eval.FixedFalsePauseRates)
	cctx, cancel := context.WithTimeout(ctx, promiseReadTimeout)
	defer cancel()
	if cur, err := a.current(cctx, in.Type); err == nil {
		out.Readiness.stages(recs, cur, in.Type)
	}
	return out, nil
}

// stages fills the readiness's stage, whether stage 1 can run and the
// next step.
func (r *Readiness) stages(recs []eval.Record, cur Current, workflowType string) {
	r.Stage = StageOf(cur)
	if r.Ready {
		r.Next = "this round refits on the type's jobs (stage 3)"
		return
	}
	ok, why := recalibrationReady(recs, cur)
	r.Recalibrate = ok
	succeeded, _ := eval.Outcomes(recs)
	r.StageNeeds = eval.StageNeeds(succeeded, len(recs))
	switch {
	case ok:
		r.Next = fmt.Sprintf("this round recalibrates on the %d closed %s jobs (stage 1); a refit (stage 3) needs %s", len(recs), workflowType, r.missing())
	default:
		r.Next = fmt.Sprintf("%s is at %s: %s; a refit (stage 3) needs %s", workflowType, stageNames[r.Stage], why, r.missing())
	}
}

// missing is what a refit still needs, from the readiness sentence.
func (r Readiness) missing() string {
	if _, needs, ok := strings.Cut(r.Sentence, "; needs "); ok {
		return needs
	}
	return "more labelled jobs"
}

// promiseReadTimeout bounds reading the current model for the rates: a
// registry nobody hosts must not hold up a round that needs none.
const promiseReadTimeout = 10 * time.Second

// measure measures the rates on recs against the current model's promise,
// or, when the registry does not answer, without one.
func (a *Activities) measure(ctx context.Context, recs []eval.Record, in ExportInput) Rates {
	cctx, cancel := context.WithTimeout(ctx, promiseReadTimeout)
	defer cancel()
	cur, err := a.current(cctx, in.Type)
	if err != nil {
		return measureRates(recs, in.RateWindow, "", overseer.Promise{}, err)
	}
	return MeasureRates(recs, in.RateWindow, cur.Model.Version, cur.Policy.Promise)
}

// current is the model jobs of the type use now.
func (a *Activities) current(ctx context.Context, workflowType string) (Current, error) {
	if a.Client == nil { // tests with Records
		return a.fallback(), nil
	}
	st, err := registry.Get(ctx, a.Client, registry.Query{Types: []string{workflowType, registry.DefaultType}, CurrentOnly: true, Content: true})
	if err == nil {
		if t := st.Resolve(workflowType); t != nil {
			if v := t.CurrentVersion(); v != nil && len(v.Model) > 0 {
				m, err := overseer.ParseLearnedModel(v.Model)
				if err != nil {
					return Current{}, fmt.Errorf("the registry's current model of %s: %w", workflowType, err)
				}
				p, err := overseer.ParsePolicy(v.Policy)
				if err != nil {
					return Current{}, fmt.Errorf("the registry's current policy of %s: %w", workflowType, err)
				}
				return Current{Model: m, Policy: p}, nil
			}
		}
	} else if err != registry.ErrNoRegistry {
		return Current{}, err
	}
	return a.fallback(), nil
}

// fallback is the current model when the registry has none for the type.
func (a *Activities) fallback() Current {
	if a.Judge != nil {
		return *a.Judge
	}
	return Current{Model: overseer.DefaultLearnedModel(), Policy: overseer.DefaultLearnedPolicy()}
}

// heartbeatInterval is how often Export and Refit heartbeat while they
// read the jobs' histories or train: reading 1,000 histories took over 2
// minutes, their heartbeat timeout, on a loaded cluster.
const heartbeatInterval = 20 * time.Second

// Refit reads the labelled runs from the record store (the newest
// in.MaxRuns, as the export counted them; no history), decides (see
// [Decide]) and promotes a candidate that passes through the registry. It
// heartbeats every heartbeatInterval until it returns (its start-to-close
// timeout still bounds it).
func (a *Activities) Refit(ctx context.Context, in RefitInput) (RefitOutput, error) {
	defer heartbeatEvery(ctx, heartbeatInterval, func() any { return "reading the records and refitting" })()
	recs, _, err := a.load(ctx, in.Type, in.Where, seriesOf(ctx, in.Series, in.Where), in.Before, in.MaxRuns)
	if err != nil {
		return RefitOutput{}, err
	}
	cur, err := a.current(ctx, in.Type)
	if err != nil {
		return RefitOutput{}, err
	}
	cur = cur.ForRecords(recs)
	activity.RecordHeartbeat(ctx, "training")
	var d Decision
	labelled := append([]eval.Record(nil), recs...)
	eval.UseGateLabels(labelled)
	if Ready(labelled, in.Options).Ready {
		opts := in.Options
		opts.For = in.Type
		d, err = Decide(ctx, recs, cur, opts)
	} else {
		d, err = DecideRecalibration(ctx, recs, cur, in.Type, in.Options)
	}
	if err != nil {
		return RefitOutput{}, temporal.NewNonRetryableApplicationError(err.Error(), "OverseerLearnRefit", nil)
	}
	out := RefitOutput{Decision: d, Current: cur.Model.Version}
	if !d.Promote {
		out.RefusalNotRecorded = a.recordRefusal(ctx, in.Type, out)
		return out, nil
	}
	figures, err := json.Marshal(d.Figures)
	if err != nil {
		return RefitOutput{}, err
	}
	// The promoted policy carries the type's relative budget, learned from
	// the same jobs, when enough of them back it.
	if sb, err := eval.SpendBudgetOf(recs, eval.SpendBudgetMaxReached, eval.SpendMeasuresAuto); err == nil {
		if d.Policy, err = withSpendBudget(d.Policy, sb); err != nil {
			return RefitOutput{}, err
		}
	}
	r, err := registry.Promote(ctx, a.Client, registry.PromoteRequest{Type: in.Type, Model: d.Model, Policy: d.Policy, Figures: figures, By: PromotedBy, Note: d.Reason})
	if err != nil {
		out.Decision.Promote = false
		out.Decision.Reason = fmt.Sprintf("refused %s: the registry refused it: %v", d.Version, err)
		out.RefusalNotRecorded = a.recordRefusal(ctx, in.Type, out)
		return out, nil
	}
	out.Promoted, out.Current = true, r.Version
	return out, nil
}

// withSpendBudget is the policy file policy with sb as its relative
// budget, everything else as it was (the calibration kept with it
// included).
func withSpendBudget(policy json.RawMessage, sb overseer.SpendBudget) (json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(policy, &fields); err != nil {
		return nil, fmt.Errorf("add the relative budget to the candidate's policy: %w", err)
	}
	raw, err := json.Marshal(sb)
	if err != nil {
		return nil, err
	}
	fields["spend_budget"] = raw
	return json.MarshalIndent(fields, "", "  ")
}

// relativeBudgetSentence says what relative budget the jobs back, or why
// none.
func relativeBudgetSentence(recs []eval.Record) string {
	sb, err := eval.SpendBudgetOf(recs, eval.SpendBudgetMaxReached, eval.SpendMeasuresAuto)
	if err != nil {
		return "no relative budget: " + err.Error()
	}
	return "relative budget the next promotion carries: " + sb.String()
}

// heartbeatEvery heartbeats the activity of ctx with details() every d
// until the returned func is called or ctx is done.
func heartbeatEvery(ctx context.Context, d time.Duration, details func() any) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx, details())
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// refusalRecordTimeout bounds recording a refusal: the round's result
// carries it in any case.
const refusalRecordTimeout = time.Minute

// recordRefusal records the refused candidate of out in the registry, for
// the dashboard; it returns why it could not, or "".
func (a *Activities) recordRefusal(ctx context.Context, workflowType string, out RefitOutput) string {
	if a.Client == nil { // tests with Records, as in current
		return ""
	}
	// The reason has the figures that matter: figures that do not encode
	// (an AUROC that could not be measured) or are too large stay out.
	figures, err := json.Marshal(out.Decision.Figures)
	if err != nil || len(figures) > registry.MaxFiguresBytes {
		figures = nil
	}
	cctx, cancel := context.WithTimeout(ctx, refusalRecordTimeout)
	defer cancel()
	_, err = registry.RecordRefusal(cctx, a.Client, registry.RefusalRequest{Type: workflowType, Version: out.Decision.Version, Current: out.Current,
		Reason: out.Decision.Reason, Figures: figures, By: PromotedBy})
	if err != nil {
		activity.GetLogger(ctx).Warn("learn: the refusal could not be recorded in the model registry", "type", workflowType, "error", err)
		return err.Error()
	}
	return ""
}

// Register registers the learn workflow and its activities on w (the
// `overseer worker` does, on its task queue).
func Register(w worker.Registry, c client.Client) { RegisterActivities(w, &Activities{Client: c}) }

// RegisterActivities is Register with the activities given.
func RegisterActivities(w worker.Registry, a *Activities) {
	w.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	w.RegisterActivityWithOptions(a.Export, activity.RegisterOptions{Name: ExportActivityName})
	w.RegisterActivityWithOptions(a.Refit, activity.RegisterOptions{Name: RefitActivityName})
}
