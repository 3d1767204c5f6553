package overseer

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.temporal.io/sdk/converter"

	"github.com/corohq/temporal-overseer/overseer/jev"
	"github.com/corohq/temporal-overseer/overseer/trajectory"
)

// Mode says what the overseer does for a workflow type.
type Mode string

// The overseer modes.
const (
	// ModeOff makes no judge call and changes nothing.
	ModeOff Mode = "off"
	// ModeObserve records answers and status but never changes the job's
	// behaviour: nothing waits on the verdict and nothing is injected.
	ModeObserve Mode = "observe"
	// ModeManage records the same answers and may pause the job at a
	// durable gate; the next phase receives a process note.
	ModeManage Mode = "manage"
)

// ParseMode parses a mode name, case-insensitively.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case ModeOff, ModeObserve, ModeManage:
		return m, nil
	}
	return "", fmt.Errorf("overseer: unknown mode %q: use off, observe or manage", s)
}

// Placement says where the judge answers at a phase boundary.
type Placement string

// The placements of the judge.
const (
	// PlacementAuto picks PlacementWorkflow for a [PureJudge]. Any other
	// judge answers in the background in observe mode
	// (PlacementBackground) and in a local activity in manage mode
	// (PlacementLocalActivity); with AssessTaskQueue set, in a regular
	// activity on that queue (PlacementActivity), in both modes.
	PlacementAuto Placement = ""
	// PlacementWorkflow runs a [PureJudge] in workflow code, inside a side
	// effect: no activity, one marker per boundary, the workflow task is
	// never held waiting.
	PlacementWorkflow Placement = "workflow"
	// PlacementLocalActivity runs the judge in a local activity: one marker
	// per boundary, but the workflow task waits for the judge (at most
	// AssessTotalTimeout), and with it the scheduling of the next phase.
	PlacementLocalActivity Placement = "local_activity"
	// PlacementActivity runs the judge in a regular activity, optionally on
	// its own task queue: six events per boundary (the activity's three and
	// the workflow task its completion starts), a dispatch through the task
	// queue's partitions, and the workflow task is never held waiting.
	PlacementActivity Placement = "activity"
)

// Names of what the plugin registers. They are exported so operators can
// use them from the temporal CLI.
const (
	// AssessActivityName is the Overseer activity run at every phase boundary.
	AssessActivityName = "overseer.assess"
	// ResumeName is both the update and the signal that resume a paused
	// job; the argument is a ResumeRequest. Prefer the update: it validates
	// the request and refuses it with a typed error; a signal cannot be
	// refused, so a bad one is counted and dropped.
	ResumeName = "overseer.resume"
	// StatusQueryName answers with the job's Status.
	StatusQueryName = "overseer.status"
	// pluginName is the plugin's name as reported to the SDK.
	pluginName = "temporal-overseer"
)

// Options configure the overseer. The zero value works: every phase of every
// workflow is observed by the learned judge with the policy calibrated for it.
type Options struct {
	// Judge answers the phase-boundary questions. It lives on the worker:
	// its credentials never enter workflow history or activity inputs.
	// If not set, the LearnedJudge with its shipped model.
	Judge jev.Judge

	// Mode applies to workflow types not listed in Modes. If not set,
	// ModeObserve.
	Mode Mode
	// Modes sets the mode per workflow type name.
	Modes map[string]Mode

	// Policy holds the verdict thresholds ([LoadPolicy] reads a policy
	// file). If not set, the policy that goes with the judge ([PolicyFor]).
	Policy Policy

	// PhaseActivities names the activity types that are phases. If empty,
	// every activity a workflow runs is a phase, except the overseer's own.
	PhaseActivities []string

	// Obligations sets the phase obligations per workflow type name. If a
	// type is not listed, DefaultObligations().
	Obligations map[string][]string

	// AssessTimeout bounds one attempt of the Overseer activity (judge call
	// included). If not set, 10 seconds. At most 3 attempts run.
	AssessTimeout time.Duration
	// AssessTotalTimeout bounds all attempts of one assessment together,
	// retry backoff (1 s, then 2 s) and, for a regular activity, time on the
	// task queue included. If not set, 3 × AssessTimeout + 3 s, so that a
	// judge that fails slowly still gets its 3 attempts. It must not be
	// less than AssessTimeout.
	AssessTotalTimeout time.Duration

	// Placement says where the judge answers at a phase boundary. If not
	// set, PlacementAuto: in workflow code for a [PureJudge] (the shipped
	// judges), else in the background in observe mode, so that observe
	// mode never holds a phase nor adds a workflow task, and in a local
	// activity in manage mode, which waits for the verdict anyway. A run
	// pins its placement when it starts: runs pinned to another placement
	// (PlacementActivity, the automatic choice in observe mode before
	// PlacementBackground existed) keep it.
	Placement Placement
	// AssessTaskQueue is the task queue of the Overseer activity when it
	// runs as a regular activity. If not set, the workflow's own task queue.
	// A queue of its own lets a fleet cap judge calls per second with
	// worker.Options.TaskQueueActivitiesPerSecond.
	AssessTaskQueue string

	// SearchAttributes upserts OverseerStatus, OverseerOnObjective and
	// OverseerPaused. The server must have them registered. If not set, no
	// search attributes are written.
	SearchAttributes bool
	// GateSearchAttribute also upserts OverseerGateSince (Datetime): when
	// the job's oldest open gate opened, unset when none is. The server
	// must have it registered (a workflow task that upserts an unknown
	// attribute fails); the shipped worker turns it on only when the
	// namespace has it.
	GateSearchAttribute bool
	// BudgetSearchAttribute also upserts OverseerBudget (Keyword: near,
	// reached; SearchAttributeBudget) for jobs with a budget, so that a
	// list of the jobs over budget is one visibility query. The server
	// must have it registered; the shipped worker turns it on only when
	// the namespace has it.
	BudgetSearchAttribute bool
	// NoSummaryMemo writes no summary in the job's memo. Runs of this
	// overseer hide the summary from the workflow's own GetInfo, and a run
	// in the SDK's test environment whose UpsertMemo mock
	// (TestWorkflowEnvironment.OnUpsertMemo) does not expect the summary
	// writes none, so that a strict mock passes at the defaults; but a mock
	// that accepts any memo (mock.Anything) also receives the summary, and
	// a Run callback that checks every memo sees it: set NoSummaryMemo in
	// such a test. Without the summary, a view of many
	// jobs (overseer list, the dashboard's list and Waiting page, resume
	// --query's rows) has to ask each job for its status, a query per row
	// that needs a worker, as for runs started before the summary existed.
	NoSummaryMemo bool

	// RecentAssessments bounds the assessments kept in the status. If not
	// set, 20.
	RecentAssessments int

	// GateDeadline applies to the gates of workflow types not listed in
	// GateDeadlines: how long a gate waits for a person and what happens
	// then (escalate, continue or abort). If not set, gates wait for ever.
	// A run pins its type's deadline when it starts; the memo field
	// "overseer.gate_deadline" ([GateDeadlineMemoKey]) overrides it for one
	// run.
	GateDeadline GateDeadline
	// GateDeadlines sets the gate deadline per workflow type name; a zero
	// GateDeadline there means no deadline for that type.
	GateDeadlines map[string]GateDeadline

	// Approval says who may open the gates of workflow types not listed in
	// Approvals: an approvers list and the four-eyes rule, enforced by the
	// resume's validator (refusals of type NotAuthorizedErrorType). If not
	// set, anyone who can send the update. A run pins its type's approval
	// when it starts.
	Approval Approval
	// Approvals sets the approval per workflow type name.
	Approvals map[string]Approval

	// Notifier tells people when a gate opens, is escalated, resumed,
	// aborted or expires, through the notify activity
	// ([NotifyActivityName]) and, for what a run leaves undelivered at its
	// end, the notifier workflow ([NotifyWorkflowName]); it never holds the
	// gate or the job, nor delays the job's end. If not
	// set, no notifications. Runs pin whether they notify when they start,
	// so keep the notify activity's workers able to send (a worker without
	// a notifier fails such a run's notifications, visibly).
	Notifier Notifier
	// NotifyTimeout bounds all attempts of one notification, counted from
	// the event, retry backoff (1 s doubling up to 1 min) included, in the
	// run and in its notifier workflow. If not set, 10 minutes.
	NotifyTimeout time.Duration
	// Models, if set, gives each new run the current learned model of its
	// workflow type and that model's policy, e.g. from the model registry
	// stored in Temporal (package overseer/registry): the run pins the
	// version when it starts and every assessment of it uses that version,
	// so a promotion never changes a running job. It needs the learned
	// judge (Judge not set, or a *LearnedJudge, which answers runs that
	// could not pin a version). If not set, every run uses Judge and Policy.
	Models ModelSource

	// MaxRedos bounds the redos of one held phase: how many times, in a
	// row, reviewers may resume its gates with action redo (each redo runs
	// the phase again, and its result may pause the job at a new gate);
	// the next is refused. If not set (0), DefaultMaxRedos (2); a negative
	// value refuses every redo. It bounds the phases RedoSafe names; any
	// other phase is never redone. A run pins it when it starts.
	MaxRedos int

	// Budget bounds what every job may spend before a person looks
	// ([Budget]); Budgets bounds the jobs of one workflow type instead,
	// and the memo field BudgetMemoKey one run. Zero: no budget.
	Budget  Budget
	Budgets map[string]Budget

	// ContentWindows lets a model judge read what the agent did, per
	// workflow type: for the latest calls of a run, an excerpt of each
	// activity's input (encoded with the worker's data converter in the
	// activity's serialization context, the codec undone), its result and
	// its error text, cut to a byte budget per call and per request,
	// redacted, in the trajectory the judge is asked about
	// (trajectory.ContentWindow, Trajectory.Content). Off for every type
	// not listed (the default): the judge's request carries counters only.
	// The learned judge and the rules ignore it; jevopenai shows it to the
	// model. A run pins its window when it starts. With the default
	// placement (the judge on the worker: in the background in observe
	// mode, in a local activity in manage mode) it is in no history event;
	// in a judge activity's input (Placement activity) and in the state
	// carried across continue-as-new it is encoded by the worker's
	// converter: encrypted by its codec, in clear without one.
	ContentWindows map[string]trajectory.ContentWindow
	// ContentRedactor rewrites every excerpt before it enters a window.
	// If not set, trajectory.RedactSecrets (provider keys and tokens,
	// bearer and basic credentials, private keys, secret=value). It runs
	// in workflow code: it must be a pure function of its input.
	ContentRedactor trajectory.Redactor

	// RelativeBudgetGates lets the type's relative budget (Policy.Spend,
	// learned from its succeeded jobs) stop a job: in manage mode, a job
	// that reaches it waits at a budget gate (Gate.Kind budget), once per
	// run; a reviewer continues it (no raise needed: it then only advises)
	// or aborts. Off (the default), reaching it reads Needs a look and
	// never stops the job. A run pins it when it starts.
	RelativeBudgetGates bool

	// RedoSafe names the workflow types, and the phase activity types,
	// whose phases a redo may run again. A redo schedules the held phase's
	// activity a second time, with the input it was first scheduled with:
	// its side effects (a pull request opened, a message sent) happen
	// again. So redo is off for every phase not named here: a resume with
	// action redo is refused (RedoRefusedErrorType) and no surface offers
	// it. A run pins the list when it starts.
	RedoSafe []string

	// Telemetry, if set, receives each assessment, each gate as it closes
	// and each budget stop, from workflow code when it is not replaying
	// ([Telemetry]); package github.com/corohq/temporal-overseer/otel
	// exports them to OpenTelemetry. It is not pinned and writes nothing
	// to history: a run reports to the Telemetry of whichever worker runs
	// it. If not set, nothing is reported.
	Telemetry Telemetry

	// DashboardURL is the base URL of the overseer dashboard (e.g.
	// https://overseer.example.com): notifications link to the job's page,
	// DashboardURL/job?id=WORKFLOW_ID. It is read when a notification is
	// sent, not recorded in history.
	DashboardURL string

	// DataConverter is the data converter of the worker's client, payload
	// codec included (converter.NewCodecDataConverter). If not set, the
	// converter of the client the plugin was given to
	// (client.Options.Plugins). The overseer writes and reads its payloads
	// with it, each in the serialization context the SDK uses for it
	// (converter.WithDataConverterSerializationContext), so a codec that
	// binds payloads to their workflow or activity reads them: the memo
	// and the carried state in the workflow's, the process note's header
	// in the phase activity's. Knowing neither, workflow code uses the
	// worker's own converter in the workflow's context, and an activity
	// cannot read a header a codec encoded (ProcessNote reports none; a
	// warning says so, once).
	DataConverter converter.DataConverter
}

// Default values used when an Options field is not set.
const (
	DefaultAssessTimeout     = 10 * time.Second
	defaultRecentAssessments = 20
	// DefaultMaxRedos is Options.MaxRedos when not set.
	DefaultMaxRedos = 2
	maxRecentGates  = 10
)

// withDefaults validates the options and returns them with defaults filled in.
func (o Options) withDefaults() (Options, error) {
	if o.Judge == nil {
		o.Judge = &LearnedJudge{}
	}
	if o.Policy == (Policy{}) {
		o.Policy = PolicyFor(o.Judge)
	}
	if o.Mode == "" {
		o.Mode = ModeObserve
	}
	if _, err := ParseMode(string(o.Mode)); err != nil {
		return o, err
	}
	for wt, m := range o.Modes {
		if _, err := ParseMode(string(m)); err != nil {
			return o, fmt.Errorf("overseer: Modes[%q]: %w", wt, err)
		}
	}
	if err := o.Policy.Validate(); err != nil {
		return o, err
	}
	if err := o.Approval.Validate(); err != nil {
		return o, err
	}
	for wt, a := range o.Approvals {
		if err := a.Validate(); err != nil {
			return o, fmt.Errorf("overseer: Approvals[%q]: %w", wt, err)
		}
	}
	for wt, obl := range o.Obligations {
		if len(obl) == 0 || slices.Contains(obl, "") {
			return o, fmt.Errorf("overseer: Obligations[%q] must list at least one non-empty obligation", wt)
		}
	}
	if o.AssessTimeout < 0 {
		return o, fmt.Errorf("overseer: AssessTimeout %v is negative", o.AssessTimeout)
	}
	if o.AssessTimeout == 0 {
		o.AssessTimeout = DefaultAssessTimeout
	}
	if o.AssessTotalTimeout != 0 && o.AssessTotalTimeout < o.AssessTimeout {
		return o, fmt.Errorf("overseer: AssessTotalTimeout %v is less than AssessTimeout %v; it bounds all attempts together", o.AssessTotalTimeout, o.AssessTimeout)
	}
	switch o.Placement {
	case PlacementAuto, PlacementActivity:
	case PlacementBackground:
		if o.AssessTaskQueue != "" {
			return o, fmt.Errorf("overseer: AssessTaskQueue is set but Placement is %q, which has no task queue; use %q", o.Placement, PlacementActivity)
		}
	case PlacementWorkflow:
		if _, ok := o.Judge.(PureJudge); !ok {
			return o, fmt.Errorf("overseer: Placement %q needs a judge that can run in workflow code (a PureJudge), not %T; use %q or %q",
				o.Placement, o.Judge, PlacementLocalActivity, PlacementActivity)
		}
		fallthrough
	case PlacementLocalActivity:
		if o.AssessTaskQueue != "" {
			return o, fmt.Errorf("overseer: AssessTaskQueue is set but Placement is %q, which has no task queue; use %q", o.Placement, PlacementActivity)
		}
	default:
		return o, fmt.Errorf("overseer: unknown Placement %q: use %q, %q, %q, %q or leave it empty", o.Placement, PlacementWorkflow, PlacementBackground, PlacementLocalActivity, PlacementActivity)
	}
	if err := o.Budget.Validate(); err != nil {
		return o, err
	}
	for t, b := range o.Budgets {
		if err := b.Validate(); err != nil {
			return o, fmt.Errorf("overseer: Budgets[%q]: %w", t, err)
		}
	}
	for t, w := range o.ContentWindows {
		if err := w.Validate(); err != nil {
			return o, fmt.Errorf("overseer: ContentWindows[%q]: %w", t, err)
		}
	}
	if o.RecentAssessments < 0 {
		return o, fmt.Errorf("overseer: RecentAssessments %d is negative", o.RecentAssessments)
	}
	if o.RecentAssessments == 0 {
		o.RecentAssessments = defaultRecentAssessments
	}
	if err := o.GateDeadline.Validate(); err != nil {
		return o, fmt.Errorf("overseer: GateDeadline: %w", err)
	}
	for wt, d := range o.GateDeadlines {
		if err := d.Validate(); err != nil {
			return o, fmt.Errorf("overseer: GateDeadlines[%q]: %w", wt, err)
		}
	}
	if o.Models != nil {
		if _, ok := o.Judge.(*LearnedJudge); !ok {
			return o, fmt.Errorf("overseer: Models gives runs learned models, but Judge is %T; leave Judge unset or use a *LearnedJudge", o.Judge)
		}
		if o.Placement == PlacementBackground {
			return o, fmt.Errorf("overseer: Models needs the learned judge in workflow code or an activity, not Placement %q", o.Placement)
		}
	}
	if o.NotifyTimeout < 0 {
		return o, fmt.Errorf("overseer: NotifyTimeout %v is negative", o.NotifyTimeout)
	}
	if o.MaxRedos == 0 {
		o.MaxRedos = DefaultMaxRedos
	}
	return o, nil
}

// runConfig is the part of Options that a workflow run pins when it starts,
// so that a redeployed worker with other settings cannot change the
// behaviour of runs already in flight.
type runConfig struct {
	Mode            Mode          `json:"mode"`
	Policy          Policy        `json:"policy"`
	Obligations     []string      `json:"obligations"`
	PhaseActivities []string      `json:"phase_activities,omitempty"`
	AssessTimeout   time.Duration `json:"assess_timeout"`
	// AssessTotalTimeout is 0 in runs pinned before it existed: see
	// totalAssessTimeout.
	AssessTotalTimeout time.Duration `json:"assess_total_timeout,omitempty"`
	// AssessAsActivity is set in runs pinned before Placement existed.
	AssessAsActivity bool      `json:"assess_as_activity,omitempty"`
	Placement        Placement `json:"placement,omitempty"`
	AssessTaskQueue  string    `json:"assess_task_queue,omitempty"`
	SearchAttributes bool      `json:"search_attributes,omitempty"`
	// GateSearchAttribute is Options.GateSearchAttribute (with
	// SearchAttributes); Summary is set in every run pinned since the
	// overseer kept a summary in the memo (publish).
	GateSearchAttribute bool `json:"gate_search_attribute,omitempty"`
	// RunBand: a finished agent loop reads its RunBand, not its last
	// verdict (runs pinned since it existed).
	RunBand bool `json:"run_band,omitempty"`
	// BudgetSearchAttribute is Options.BudgetSearchAttribute (with
	// SearchAttributes).
	BudgetSearchAttribute bool `json:"budget_search_attribute,omitempty"`
	Summary               bool `json:"summary,omitempty"`
	RecentAssessments     int  `json:"recent_assessments"`
	// GateDeadline, Notify and NotifyTimeout are unset in runs pinned
	// before they existed: their gates wait for ever and tell no one.
	GateDeadline  GateDeadline  `json:"gate_deadline,omitzero"`
	Notify        bool          `json:"notify,omitempty"`
	NotifyTimeout time.Duration `json:"notify_timeout,omitempty"`
	// Approval is unset in runs pinned before it existed: anyone resumes.
	Approval Approval `json:"approval,omitzero"`
	// ModelVersion is the learned model's version this run uses, from
	// Options.Models; unset in runs that use the worker's judge.
	ModelVersion string `json:"model_version,omitempty"`
	// MaxRedos is Options.MaxRedos (negative: no redo), -1 when
	// Options.RedoSafe names nothing; 0 in runs pinned before it existed,
	// which started on an overseer that could not redo: they get none
	// (maxRedos).
	MaxRedos int `json:"max_redos,omitempty"`
	// RedoSafe is Options.RedoSafe. Runs pinned before it existed have
	// none and redo any phase, as they were started to (redoSafe); a run
	// pinned since without it pins MaxRedos -1.
	RedoSafe []string `json:"redo_safe,omitempty"`
	// Budget is the run's budget (Options.Budget, Budgets, or the memo's);
	// nil when it has none, and in runs pinned before budgets existed.
	Budget *Budget `json:"budget,omitempty"`
	// BackgroundCalls names this run's background calls in the worker's
	// memory (PlacementBackground only).
	BackgroundCalls string `json:"background_calls,omitempty"`
	// ContentWindow is Options.ContentWindows' window for the run's type;
	// off in runs pinned before it existed.
	ContentWindow trajectory.ContentWindow `json:"content_window,omitzero"`
	// RelativeGates is Options.RelativeBudgetGates; off in runs pinned
	// before it existed.
	RelativeGates bool `json:"relative_gates,omitempty"`
}

// runConfigFor is the configuration a new run of workflowType pins; mode
// is the run's own mode (see modeFor).
func (o Options) runConfigFor(workflowType string, mode Mode) runConfig {
	obligations := trajectory.DefaultObligations()
	if obl, ok := o.Obligations[workflowType]; ok {
		obligations = obl
	}
	c := runConfig{
		Mode:                  mode,
		Policy:                o.Policy,
		Obligations:           slices.Clone(obligations),
		PhaseActivities:       slices.Clone(o.PhaseActivities),
		AssessTimeout:         o.AssessTimeout,
		AssessTotalTimeout:    o.AssessTotalTimeout,
		Placement:             o.placementFor(mode),
		AssessTaskQueue:       o.AssessTaskQueue,
		SearchAttributes:      o.SearchAttributes,
		GateSearchAttribute:   o.SearchAttributes && o.GateSearchAttribute,
		BudgetSearchAttribute: o.SearchAttributes && o.BudgetSearchAttribute,
		Summary:               !o.NoSummaryMemo,
		RunBand:               true,
		RecentAssessments:     o.RecentAssessments,
		GateDeadline:          o.gateDeadlineFor(workflowType),
		Notify:                o.Notifier != nil,
		NotifyTimeout:         o.NotifyTimeout,
		Approval:              o.approvalFor(workflowType),
		MaxRedos:              o.MaxRedos,
		RedoSafe:              slices.Clone(o.RedoSafe),
		ContentWindow:         o.ContentWindows[workflowType],
		RelativeGates:         o.RelativeBudgetGates,
	}
	if len(o.RedoSafe) == 0 {
		c.MaxRedos = -1 // no phase is safe to run again
	}
	if b, ok := o.Budgets[workflowType]; ok && !b.IsZero() {
		c.Budget = &b
	} else if !o.Budget.IsZero() {
		b := o.Budget
		c.Budget = &b
	}
	if c.Placement == PlacementBackground {
		c.BackgroundCalls = newCallsID() // inside the pinning side effect
	}
	if o.Models != nil && !modelSourceExempt(workflowType) {
		c.pinModel(o.Models, workflowType) // inside the pinning side effect
	}
	return c
}

// gateDeadlineFor is the gate deadline of workflowType.
func (o Options) gateDeadlineFor(workflowType string) GateDeadline {
	if d, ok := o.GateDeadlines[workflowType]; ok {
		return d
	}
	return o.GateDeadline
}

// placementFor resolves PlacementAuto for a run in mode.
func (o Options) placementFor(mode Mode) Placement {
	switch p := o.Placement; {
	case p == PlacementBackground && mode != ModeObserve:
		return PlacementLocalActivity
	case p != PlacementAuto:
		return p
	}
	if o.AssessTaskQueue != "" {
		return PlacementActivity
	}
	if _, ok := o.Judge.(PureJudge); ok {
		return PlacementWorkflow
	}
	if mode == ModeObserve {
		return PlacementBackground
	}
	return PlacementLocalActivity
}

// placement is where this run's judge answers. Runs pinned before
// Placement existed have none: they used a local activity unless
// AssessAsActivity was set.
func (c runConfig) placement() Placement {
	switch {
	case c.Placement != PlacementAuto:
		return c.Placement
	case c.AssessAsActivity:
		return PlacementActivity
	}
	return PlacementLocalActivity
}

func (c runConfig) isPhase(activityType string) bool {
	if strings.HasPrefix(activityType, "overseer.") {
		return false
	}
	return len(c.PhaseActivities) == 0 || slices.Contains(c.PhaseActivities, activityType)
}
