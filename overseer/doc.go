// Package overseer oversees long agentic Temporal workflows at their phase
// boundaries.
//
// It is a worker plugin. Each time a phase activity of a workflow ends, it
// asks a judge four typed questions about the job so far, records the
// answers on the job and shows a status band: On track, Needs a look or
// Off track. In manage mode it may also pause the job at a durable gate
// until a person resumes it. The workflow's code does not change: the
// plugin sees every activity the workflow runs and hands each result to
// the workflow untouched.
//
// # Getting started
//
// Add the plugin to a worker. The zero [Options] observe every phase of
// every workflow the worker runs, with the learned judge that ships with
// the package:
//
//	plugin, err := overseer.NewPlugin(overseer.Options{
//		// Observe everything; manage (and possibly pause) BuildJob runs.
//		Modes: map[string]overseer.Mode{"BuildJob": overseer.ModeManage},
//	})
//	if err != nil {
//		return err
//	}
//	w := worker.New(c, "jobs", worker.Options{Plugins: []worker.Plugin{plugin}})
//
// The plugin may be given to client.Options.Plugins instead, and then
// applies to every worker made from that client. A worker that installs
// its interceptors itself uses [NewWorkerInterceptor] and registers the
// overseer's activity with [RegisterActivities].
//
// # Phases and what the judge sees
//
// A phase is an activity the workflow runs: by default every activity but
// the overseer's own, or those named in [Options.PhaseActivities]. A
// phase's name is its activity type after the last dot ("coro.code" is
// phase "code"). A phase boundary is the moment a phase activity
// completes or fails for good (after its own retries).
//
// The judge never sees a transcript or a diff. It sees a [Trajectory]: a
// compact summary of the job whose size does not grow with the job —
// totals, a window of the latest phase runs, work items, lane switches,
// failed tool calls by category. The plugin records what it observes
// itself (phase runs, durations, failures, repeated phases); the workflow
// adds what only it knows:
//
//	overseer.SetObjective(ctx, in.Objective)
//	overseer.SetLane(ctx, "feature")             // the kind of work; a change is a lane switch
//	overseer.SetWorkItem(ctx, "T-12", "in_progress") // done → in_progress counts as a loop
//
// These calls do nothing when the run is not overseen, so a workflow may
// make them unconditionally. A phase reports on itself in its result,
// under the JSON key "overseer_report" ([PhaseReport]; embed
// [ReportCarrier] to add it):
//
//	type CodeResult struct {
//		Patch string
//		overseer.ReportCarrier
//	}
//
//	return CodeResult{Patch: patch, ReportCarrier: overseer.ReportCarrier{
//		OverseerReport: &overseer.PhaseReport{Turns: 12, InputTokens: 48000, OutputTokens: 3100},
//	}}, nil
//
// One activity is not always a phase of work. An agent loop — a model
// call, then the tool calls it asked for, turn after turn — has a
// [Shape] of its own ([ShapeOf]: declared with [SetShape], or recognised
// by an activity named as a model call); the shipped judges judge it by
// rules that fit it (a tool failing again and again, the same call
// repeated), never by the turn count. A workflow that knows its phases of
// work declares them: [SetShape] with [ShapeDeclared], then [Boundary] at
// the end of each; the calls in between are one phase. docs/agent-loops.md
// has the rules and their figures.
//
// # Questions, answers and the verdict
//
// At each boundary the judge answers four questions ([NewRequest] builds
// them):
//
//   - breach: which of the phase's obligations, if any, appears unmet: a
//     choice between none and obligation[0], obligation[1], …. The
//     obligations are sentences set per workflow type
//     ([Options.Obligations]); the default four ask that the phase
//     produced its output, still serves the objective, made progress and
//     surfaced its failures.
//   - off_track: P(on objective), the probability that the work still
//     serves the job's objective.
//   - severity: how serious a problem is, on the scale Cosmetic, Worth a
//     look, Review, Stop (0…3).
//   - blocked: the probability that the agent is blocked.
//
// A [Policy] turns the answers into a [Verdict]: a [Band] from P(on
// objective), and whether the phase is flagged — P(on objective) at or
// below the policy's pause threshold, or a breach given with enough
// confidence and severity:
//
//	v := overseer.DefaultPolicy().Evaluate(overseer.Answers{OnObjective: 0.2})
//	fmt.Println(v.Band, v.Flagged) // Off track true
//
// A judge may abstain from P(on objective) when it has no basis for it
// ([jev.Response].Abstained): the verdict is then "Not assessed"
// ([BandUnknown]), no band is shown and P cannot pause the job; breach
// answers still can. Every answer carries the judge's basis
// ([Answers].Basis), shown beside the verdict in the status.
//
// A calibrated policy carries its false-pause [Promise]: the share of
// succeeded runs it pauses, with a one-sided 95 % upper confidence bound
// within the budget, and the evidence. Its bands come from operating
// points (Off track at and below the pause threshold, On track from where
// 20 % of the succeeded runs fall at mid-run); [DefaultPolicy]'s fixed
// 70/40 bands are for judges whose P is a direct judgment.
//
// # Modes
//
// [ModeOff] calls nothing and writes nothing to the run's history (no
// version marker, no pinned configuration, no search attribute); such a
// run only answers the status query, with mode off. [ModeObserve] records
// answers and status and never changes the job: the workflow holds the
// SDK's own future of each phase, settled when and as the SDK settles it
// (a Selector racing a phase against a timer or a signal picks what it
// would without the plugin), the outcome is read beside it without being
// decoded (any data converter works), and the judge is asked on the side;
// nothing is injected and nothing waits (the run only waits for the last
// assessment before it completes, so that the last boundary is recorded,
// and not even that when the judge is failing: see Failures). The SDK's own
// activities (a session's) are never phases, and GetInfo does not show
// the overseer's memo.
// [ModeManage] pauses a flagged phase at a gate until a person resumes it,
// and the next phase receives a [Note]. The gate holds the phase's result
// where a redo may replace it ([Options.RedoSafe]); for any other phase the
// result reaches the workflow as in observe mode and the gate holds the
// workflow's next phase and the run's end instead.
//
// The conformance suite (testsuite/conformance) holds every mode to this
// on workflows nobody writes for an overseer; [NeedsPluginQuery] finds the
// runs that still need the plugin when a team retires it (mode off first).
//
// Modes are set per workflow type ([Options.Mode], [Options.Modes]); a
// run started with the memo field "overseer.mode" ([ModeMemoKey]) set to
// a mode name gets that mode instead.
//
// # Judges and policies
//
// The zero [Options] use the [LearnedJudge] with the model that ships with
// the package and [DefaultLearnedPolicy], the policy certified for it to
// pause at most 5 % of the recorded runs that went on to succeed (at a
// 95 % upper bound). The learned judge answers offline in microseconds
// from the trajectory alone, with the richest of its sub-models whose
// inputs the trajectory carries: token telemetry when the phases report it
// in [PhaseReport], else the structure (repeats, rework, failed tools,
// phase switches), and "Not assessed" when neither applies. Its signal is
// agent-specific: fit a model on your own runs with `overseer
// train`, choose a policy with `overseer calibrate`, and load them with
// [LoadLearnedModel] and [LoadPolicy]. The policy's name is pinned with the
// run's configuration, so a run records which policy it used. Any other
// judge gets [DefaultPolicy], fixed thresholds, unless you give a policy.
//
// # Models stored in Temporal, pinned per run
//
// [Options].Models takes a [ModelSource] that says which learned model and
// policy a new run uses. Package overseer/registry stores them in Temporal
// itself: one registry workflow per namespace (type overseer.ModelRegistry,
// id overseer-model-registry) holds, per workflow type and for the default
// type "*", the promoted versions of a model with its policy, who promoted
// each, when and why, and which is current; its updates
// overseer.model.promote and overseer.model.rollback refuse bad input in
// one sentence (a model file of another format, a version already there, a
// policy that does not validate, no author, a rollback past the first
// model), and it continues as new with its state so its history stays
// bounded. registry.Source reads it on the worker with a short cache and
// uses the shipped model until a model is promoted. A run pins the current
// version and its policy in its pinned configuration when it starts; every
// assessment of the run uses that version's model, so a promotion or a
// rollback changes only the runs started after it, and a replay reads the
// recorded answers without asking the source.
//
// A judge is any [jev.Judge]: [HeuristicJudge] (fixed rules, for demos and
// tests), a Jev HTTP service (package jevhttp), an OpenAI-compatible model
// (package jevopenai) or your own. Jev is the small structured-decision
// protocol the judges speak: typed questions in, typed and validated
// answers out (package jev).
//
// # Gate
//
// A paused job waits on workflow state, not a timer: for days if need be,
// across worker restarts. Each gate has an id, the phase and the job's pause
// count ("code-2"), shown in the status ([Status].GateID) and in the
// workflow's current details.
//
// Resume it with the update or the signal named overseer.resume
// ([ResumeName]) carrying a [ResumeRequest]:
//
//	{"by": NAME, "note": TEXT, "action": "continue"|"redo"|"abort", "needed": true|false, "gate": GATE_ID}
//
// Send the gate id you read: a resume for a gate that is no longer open is
// refused, so a decision taken at one gate never closes the next one (a
// form left open, a command run twice). Without a gate id, the oldest open
// gate is closed. The request is decoded strictly: a field not listed is
// refused, as is a missing by, an unknown action or a note over
// [MaxResumeNoteBytes] (4 KiB).
//
// "needed" is the reviewer's judgement of the pause: true, it was needed;
// false, it was a false alarm. The closed gate records it (Gate.Needed)
// and where it came from (Gate.NeededBy): the reviewer, or, when the
// request does not say, a rule: a continue with a note was needed, a
// continue without one was not, a redo or an abort always was (a redo or
// an abort with "needed": false is refused). A gate its deadline closed
// counts as not needed when it continued and needed when it aborted.
// Labels, the false-pause rate and its alert read this judgement: a job
// that succeeded after a needed pause is not a false pause.
//
// The update validates before anything is written to history. Its
// refusals are application errors with stable types, for clients to test
// with [ErrorType] (never by their text): [NotPausedErrorType],
// [WrongGateErrorType] (its details list the open gates),
// [InvalidResumeErrorType], [RedoRefusedErrorType]. A signal cannot be refused: one
// that is undecodable, invalid, for a gate that is not open, or that
// arrives when nothing is paused is counted (Counters.IgnoredResumes),
// logged with the reason and the by it claims (a signal carries no
// identity the workflow can read), and dropped, never kept for a later
// gate. Prefer the update.
//
// Abort ends the workflow with an application error of type
// [AbortedErrorType]. The finished phase's result is kept, so
// resuming never re-runs it; only a redo does.
//
// Redo rejects the held phase's result and runs the phase again: the
// overseer schedules the same activity type with the same activity
// options and input, through the whole interceptor chain, with the
// reviewer's note as its process note ([ProcessNote], [NoteReceiver]).
// The workflow receives the rerun's result, never the rejected one, and
// the rerun is a boundary like any other: recorded, assessed, and
// possibly held at a new gate, whose Gate.Attempt says which run of the
// phase it holds (1 for the first run, 2 after one redo, …). A held phase
// may be redone at most [Options].MaxRedos times in a row (0 means
// [DefaultMaxRedos], 2; negative allows none; pinned when the run
// starts): past it the update is refused with [RedoRefusedErrorType] in
// one sentence and a signal is counted and dropped; [Status].MaxRedos and
// [Status.CanRedo] say beforehand. Runs of the first structure (version 1
// of the overseer's marker) cannot redo and refuse it the same way. A
// redo is counted in Counters.Redos (and Resumes), notified as
// [GateRedone], and recorded with the version marker
// temporal-overseer/redo at the run's first redo, so histories recorded
// before it (where a redo signal was dropped as an unknown action)
// replay unchanged.
//
// Redo is off unless a phase is declared safe to run again
// ([Options].RedoSafe names workflow types and phase activity types). A
// rerun is exactly what a Temporal retry of the activity would be:
// whatever the first run did outside the workflow stays done, and the
// rerun must tolerate it. It is sent the input's payloads as first
// scheduled. Runs pinned before MaxRedos existed get no redo.
//
// Phases flagged in parallel (two phase activities in flight in manage
// mode) queue their gates: each is recorded, holds only its own phase's
// result and is resumed on its own; the status shows the oldest open one.
// An abort at any of them closes them all. The next phase receives the
// process note of the latest flagged phase with the last reviewer's note.
//
// Every gate says what happened before the rule that fired: its Evidence,
// sentences in plain words computed from the trajectory the judge saw
// ([Evidence]: "test ran 4 times since the last plan, each time with
// failed tool calls in the category pytest"), set on the flagged
// assessment too; Reason keeps the rule.
//
// While paused, the workflow's current details (shown by `temporal
// workflow metadata` and the Web UI) carry each open gate's evidence and
// reason, the note the next phase will receive and the exact `temporal workflow update
// execute …` commands that resume or abort it; the workflow's own current
// details come back when the last gate closes.
//
// A run cancelled at a gate closes it (Gate.Cancelled) and clears the
// paused status and search attribute before it ends. Terminate and timeout
// run no workflow code, so such a run keeps OverseerPaused = true: list
// paused jobs with ExecutionStatus = "Running" as well.
//
// # Who may open a gate
//
// [Options].Approval (per workflow type in Approvals) lists who may
// resume — identities, or "group:NAME" for callers that claim the group in
// [ResumeRequest].Groups — and can add the four-eyes rule: the identity
// that started the job (the memo field "overseer.started_by") may not
// resume its own gates. The resume's validator enforces it; a refusal has
// type [NotAuthorizedErrorType]. Four-eyes on a job that does not say who
// started it refuses every resume (fail-closed). When a gate opens, the
// status records the starter (Status.StartedBy) or that there is none
// (Approval.NoStarter, whose String says nobody can open the gates and
// what to set); [Approval.Refusal] gives a refusal's sentence before any
// resume is sent. Inside the workflow an identity is what the caller
// claims: who may send the update at all is for the Temporal server's
// authorizer (or Temporal Cloud's namespace permissions) to decide.
//
// # Deadlines and escalation
//
// A gate may have a deadline ([GateDeadline]), set per workflow type
// ([Options.GateDeadline], [Options.GateDeadlines]) or for one run by the
// memo field "overseer.gate_deadline" ([GateDeadlineMemoKey]), in the text
// form [ParseGateDeadline] reads:
//
//	24h:abort                 abort the job if nobody resumed the gate in 24 h
//	4h:continue               let the job go on after 4 h
//	24h:escalate              tell the escalation audience at 24 h, keep waiting
//	24h:escalate,72h:abort    … and abort at 72 h (both counted from the opening)
//
// The deadline is a durable timer in workflow code: it fires on time across
// worker restarts and is cancelled when a person resumes the gate first.
// Both rules count from the gate's opening, whatever the outages: a
// deadline that passed while no worker ran the workflow acts as soon as one
// does (an escalation and a final deadline both past act in the same
// workflow task), and the gate records how late it acted (EscalatedLate,
// ExpiredLate, when a second or more). Runs whose escalation was recorded
// before this rule count their final deadline from the escalation as they
// did (workflow.GetVersion, recorded only at an escalation followed by a
// final deadline). A gate closed by its deadline records Expired, the rule
// that acted (ExpiredBy, "deadline 72h: abort") and its action; an
// escalated gate records EscalatedAt and EscalatedBy. An expiry with abort
// ends the job with [AbortedErrorType], like a person's abort. Expiry is
// not a person's resume: it does not count judge failures afresh and gives
// the next phase no reviewer's note. While a gate is open, Gate.Deadline (and
// Status.GateDeadline for the oldest open gate) says when its next rule
// acts, Gate.DeadlineBy which rule and Gate.DeadlineAction what it does; the gate's age is the time since PausedAt. Runs pin their type's
// deadline when they start, so changing a worker's deadlines never changes
// runs in flight; without a deadline nothing is added to history.
//
// # Notifications
//
// With [Options.Notifier] set, the overseer tells people when a gate opens,
// is escalated, resumed, redone, aborted or expires: a [GateEvent] (the job, the
// gate, its phase and reason, who resumed it and their note, the wait, the
// deadline, the rule, a link to the dashboard's job page with
// [Options.DashboardURL], and an idempotency key) sent by the regular
// activity overseer.notify ([NotifyActivityName]).
// Package github.com/corohq/temporal-overseer/notify has a JSON webhook
// signed with HMAC-SHA256 over its timestamp and body (receivers check it
// with notify.Verify) and a Slack incoming webhook; any [Notifier] works.
//
// Notifications never hold the gate or the job: the workflow starts the
// activity and goes on, so a notification, however slow or failing, never
// holds a gate open, keeps one closed, fails the job or delays its end.
// The run tries one attempt at a time (at most 30 s each): a failed
// attempt is recorded at once, counted in Counters.NotifyFailures (the
// notifications not delivered), described in Status.NotifyError and
// counted in overseer_notifications_failed, and the run retries it while
// it runs (1 s doubling up to a minute, for at most [Options.NotifyTimeout]
// from the event); a retry that delivers it takes it off NotifyFailures. A
// refusal ([ErrNotifyRejected]) is not retried. When the run ends, the
// notifications it has not delivered — the abort or expiry that ends it,
// and any still failing or in flight — go to the notifier workflow
// overseer.Notify ([NotifyWorkflowName]), which the run starts as an
// abandoned child (id overseer-notify/WORKFLOW_ID/RUN_ID, in
// Status.NotifyWorkflow) and waits for only until the server has started
// it; it retries them for what is left of their budget, and its result
// lists what it delivered. Delivery is at least once: the idempotency key
// (WORKFLOW_ID/RUN_ID/GATE_ID/KIND) is the same on every attempt, in the
// run or in its notifier workflow and on any worker, for receivers to drop
// duplicates (an attempt a worker had started when the run ended may
// arrive besides the notifier workflow's). Runs started before the
// notifier workflow existed keep the activity's own retries and wait for
// them at their end, at most a minute (workflow.GetVersion).
//
// The notifier and its secrets (a webhook secret, a Slack URL) live on the
// worker: the activity's input is the GateEvent alone, and the dashboard
// link is added by the worker when it sends, so nothing of the
// configuration enters history.
//
// # Process note
//
// After a flagged phase (manage mode), the next phase activity receives a
// short process-confidence note (with the reviewer's note, if any); after
// a redo, the phase run again receives one that says it is redone, with
// the reviewer's note, and the next phase none for the rejected result:
// read it with [ProcessNote] on the activity's context, or implement
// [NoteReceiver] on the activity's input (a pointer) to have it set there:
//
//	func (a *Agents) Code(ctx context.Context, in CodeInput) (CodeResult, error) {
//		if note, ok := overseer.ProcessNote(ctx); ok {
//			prompt += "\n" + note.String()
//		}
//		…
//	}
//
// # Failures: fail-open, then manual review
//
// A judge error, timeout or invalid answer is recorded as a failed
// [Assessment] and never becomes a verdict. Invalid answers (error type
// [InvalidAnswerErrorType]) and requests the judge rejected for good
// ([RejectedErrorType], e.g. an HTTP 4xx) are not retried; other judge
// errors are retried by the activity's retry policy (3 attempts, 1 s then
// 2 s apart), the only retry layer. [Options.AssessTimeout] bounds one
// attempt and [Options.AssessTotalTimeout] all of them (by default 3 ×
// AssessTimeout + 3 s), so a judge that fails slowly still gets its 3
// attempts. Manage mode fails open (the job continues) until
// Policy.MaxConsecutiveFailures failures in a row (default 3), then pauses
// for manual review; a human resume starts the count afresh, so a judge
// that stays down pauses the job again only after as many failures more.
//
// Observe mode never waits for a judge that is failing. When a run's code
// returns, the run waits for the assessments still in flight in an
// activity, so that its last boundaries are recorded, unless the judge is
// failing: the latest 3 assessments of this run to finish all failed
// (after all their attempts), before or during that wait. Then the run
// ends at once, and each boundary still in flight is recorded as a failed
// assessment without a verdict whose error says why ("not assessed: the
// run ended without waiting for the judge, whose last 3 assessments
// failed"), counted in Counters.Assessments and Counters.Failures and in
// overseer_assessments with outcome error. The rule reads only the run's
// own state, so it replays deterministically; runs recorded before it
// replay with the wait (workflow.GetVersion, recorded only when the rule
// applies). A judge asked in the background ([PlacementBackground]) is
// also not waited for when it hangs: each plugin keeps a circuit of what
// its worker has seen of the judge, opened by 3 attempts in a row that
// timed out or failed with an error that is retried (refusals that are not
// retried end their call at once and leave it as it is) and closed by the
// next answer. While it is open, the run's end does not wait for the
// judge's calls: each is recorded as a failed assessment with the reason
// ("not assessed: the run ended without waiting for the judge, whose last
// 3 attempts on this worker failed (last: …)"). The circuit is read at the
// run's end, in its side effect and, for a circuit that opens while the
// end waits, in its local activities (which then fail with error type
// [JudgeFailingErrorType]), so their markers keep what was decided. A judge that answers, however slowly, keeps the wait:
// the last boundary is recorded.
//
// # Where the judge runs, and what it costs in history
//
// [Options.Placement] says where the judge answers. By default
// ([PlacementAuto]) a [PureJudge] — the shipped [LearnedJudge] and
// [HeuristicJudge] — answers in workflow code, inside a side effect: one
// MarkerRecorded event per boundary, no activity, and no wait. Any other
// judge (an HTTP judge, a model API) answers, in manage mode, in a local
// activity, since the verdict must be waited for anyway (one event per
// boundary; the workflow task waits for the judge); in observe mode, in the
// background ([PlacementBackground]): the call runs on the worker that
// runs the workflow, outside any workflow task, and its answer is recorded
// in the one side-effect marker the next boundary writes, so a slow,
// hanging or failing judge delays no phase and adds no workflow task (one
// event per boundary; a boundary's answer reaches the status one boundary
// later). At the end of a run the overseer waits for the assessments still
// in flight, in local activities (one marker each) that adopt the calls
// this worker runs, at most [Options.AssessTotalTimeout], so that every
// boundary is recorded: this delays the run's completion, never a phase,
// and is skipped when the judge is failing (see Failures). Search
// attributes, when enabled, add one UpsertWorkflowSearchAttributes event
// when the status changed. [PlacementActivity], a regular activity (six
// events per boundary and a dispatch through the task queue's partitions:
// with fewer pollers than partitions a task can wait 2 s for the server to
// forward it), with [Options.AssessTaskQueue] puts judge calls on a task
// queue of their own, where a fleet can cap them per second.
//
// Why not a local activity in observe mode: the Go SDK completes a
// workflow task only once its local activities have finished, so the
// command that schedules the next phase waits for the judge even when
// nothing awaits the result. Why not eager activities: the server's
// system.enableActivityEagerExecution is off by default.
//
// What it costs in the workflow task: the SDK resumes every coroutine of a
// workflow at every step of every workflow task (two goroutine switches
// and a stack walk each), so the overseer keeps to one coroutine beside
// the workflow's own. The workflow's code runs on a coroutine (an abort at
// a gate must end the run wherever that code is blocked), and the run's
// coroutine oversees every phase in flight and receives the resume and
// in-phase signals, one step at a time; only an open gate gets a coroutine
// of its own. BenchmarkReplayBoundary in package bench measures this CPU
// per boundary against a bare and a hand-written workflow.
//
// # Determinism
//
// Each overseen run pins its configuration (mode, policy, obligations,
// phases, timeouts, placement, the model version of [Options].Models) in a
// side effect when it starts, so
// redeploying a worker with other options never changes runs in flight.
// A judge that answers in workflow code has its answer recorded, so a
// replay never asks a model that may have changed since; so has one in the
// background, whose answers come back from the side-effect markers (the
// placement is pinned: a run started with another one keeps it). Runs that started
// before the plugin was added, or in ModeOff, have no version marker and
// replay untouched; runs that recorded version 1 of the marker (a
// coroutine per phase in flight and a signal listener) replay with that
// structure. The overseer's state (trajectory, counters, recent
// assessments, pending note) is carried across continue-as-new in a
// header.
//
// # Status, search attributes and metrics
//
// Every overseen run answers the query overseer.status ([StatusQueryName])
// with its [Status]: band, P(on objective), phase, open gate, pending note,
// recent assessments and gates, and counters, and the latest advice of the
// in-phase supervisor of package supervision about long phases, which
// reports it on the signal [InPhaseSignalName]; workflow code reads the
// same with [GetStatus]. With [Options.SearchAttributes] set, the overseer also
// upserts OverseerStatus (Keyword), OverseerOnObjective (Double) and
// OverseerPaused (Bool), which must first be registered on the namespace,
// so that jobs can be listed by band:
//
//	OverseerPaused = true AND ExecutionStatus = "Running"
//
// Metrics are emitted from workflow code through the SDK's metrics
// handler, so they go wherever the client sends the SDK's own metrics,
// carry its tags (namespace, task_queue, workflow_type) and are not
// emitted again on replay. Counters (a _total suffix in Prometheus):
//
//	overseer_assessments   by mode, band (when the judge answered) and outcome (ok, flagged, error)
//	overseer_judge_tokens  by kind (input, output)
//	overseer_judge_errors  by kind (invalid_answer, rejected, invalid_request, timeout, error)
//	overseer_pauses        by cause (verdict, judge_failures)
//	overseer_resumes       by action (continue, redo, abort)
//	overseer_resumes_refused       by reason (the refusal's error type) and via (update, signal)
//	overseer_gate_escalations
//	overseer_gates_expired         by action (continue, abort)
//	overseer_notifications_failed  by kind (opened, escalated, resumed, redone, aborted, expired)
//
// Timers (histograms in seconds): overseer_judge_latency and
// overseer_gate_wait ([MetricGateWait], by action: continue, redo, abort, or
// expired for a gate its deadline closed). [MetricOpenGates] is a
// gauge the worker sets from visibility. The learn loop (package learn)
// emits [MetricLearnPromotions], [MetricLearnRefusals] and the gauges
// [MetricLearnLabelledRuns], [MetricLearnFalsePauseRate],
// [MetricLearnCatchRate] and [MetricLearnPromisedFalsePause] once per
// round from its workflow, tagged [MetricTagJobType]. [MetricHelp] gives
// each metric's description and [ZeroMetrics] emits every counter at zero
// up front.
//
// [Options.Telemetry] receives each assessment, each gate as it closes and
// each budget stop ([Telemetry]), also from workflow code and never on
// replay; package github.com/corohq/temporal-overseer/otel, a module of
// its own, exports them to OpenTelemetry as the GenAI conventions'
// gen_ai.evaluation.result events and gate spans, beside the SDK's traces.
//
// # Offline: replaying recorded runs
//
// [TrajectoryRecorder] builds a [Trajectory] outside a workflow with the
// same rules the plugin applies inside one, so recorded agent runs can be
// put to any judge offline, in tests or to evaluate a model:
//
//	var rec overseer.TrajectoryRecorder
//	rec.SetObjective("Fix the flaky export test")
//	rec.RecordPhase(overseer.PhaseRun{Phase: "code", Duration: 4 * time.Minute}, &overseer.PhaseReport{Turns: 9})
//	req, err := overseer.NewRequest("", obligations, rec.Trajectory())
//	resp, err := judge.Decide(ctx, req)
//	answers, err := overseer.ParseAnswers(req, resp, obligations)
//
// # Encrypted payloads (a payload codec)
//
// A deployment that encrypts its payloads sets a payload codec on every
// client and worker (converter.NewCodecDataConverter, e.g. the AES-GCM
// codec of package codec). The overseer goes through the worker's data
// converter, codec included, for everything it reads from or writes to
// Temporal: the memo fields [ModeMemoKey], [GateDeadlineMemoKey] and
// [StartedByMemoKey] are read with it (an encrypted mode or deadline, which
// decide commands, records the version marker temporal-overseer/memo-codec,
// so runs recorded before read them as they did; a run turned off by an
// encrypted mode memo records that one marker and nothing else; the
// starter records it when a resume signal is checked against it, and an
// update's validator, which writes no history, reads it without), and the
// process note's header and the state carried across continue-as-new are
// encoded with it, so none of them is in clear in history. Each payload is
// written and read in the serialization context the SDK uses for it
// (converter.WithDataConverterSerializationContext): the workflow's for
// the memo and the carried state, the phase activity's for the note's
// header; a phase's result reaches the workflow decoded in the activity's
// context, as without the overseer. So a codec that binds payloads to
// their workflow or activity (converter.PayloadCodecWithSerializationContext)
// works too. Markers, activity
// inputs and results, the status query and the resume update and signal go
// through the converter as the SDK sends them. Search attributes are never
// encoded by a codec (the server indexes them): OverseerStatus,
// OverseerOnObjective and OverseerPaused say a band, a probability and
// whether a job waits, nothing else.
//
// Workflow code needs no configuration for this. Activities read the
// process note's header ([ProcessNote]) with [Options].DataConverter, else
// the converter of the client the plugin was given to (client.Options.Plugins);
// a worker with neither warns once, and the note still reaches a phase
// whose input is a [NoteReceiver]. docs/encryption.md says how to set the
// codec on the overseer's CLI, dashboard and worker.
//
// # Secrets
//
// The judge and its credentials live on the worker ([Options.Judge]), as
// do the notifier and its secrets ([Options.Notifier]). No key enters
// workflow history, activity inputs or logs.
//
// # Stability
//
// No version of the module is released yet, so its API may still change;
// CHANGELOG.md at the module's root lists every breaking change. The
// plugin is built on the Go SDK's plugin API (temporal.SimplePlugin in
// worker.Options.Plugins or client.Options.Plugins) and its worker
// interceptors, which the SDK no longer marks experimental since v1.50.0.
//
// Experimental: the resume update's validator and the descriptions of the
// status query and of the resume signal and update are registered through
// SDK options that the SDK still marks experimental
// (workflow.UpdateHandlerOptions, workflow.QueryHandlerOptions,
// workflow.SignalChannelOptions and the functions that take them); a later
// SDK may change them.
package overseer
