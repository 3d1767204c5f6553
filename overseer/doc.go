// Package overseer oversees long agentic Temporal workflows at their phase
// boundaries.
//
// Add [NewPlugin] to worker.Options.Plugins. After every phase activity of
// an overseen workflow ends (completed or failed), the Overseer activity
// overseer.assess sends a compact [Trajectory] and four typed questions
// to a structured-decision judge ([jev.Judge]), records the
// answers on the job ([Assessment]) and derives a [Verdict]: a status
// [Band] (On track / Needs a look / Off track) and, in manage mode, whether
// to pause.
//
// # Where each concept lives
//
//   - Protocol types, validation and the Judge interface: package
//     [github.com/corohq/temporal-overseer/overseer/jev].
//   - The four questions, default obligations, request state: questions.go
//     ([DefaultObligations], [NewRequest], [ParseAnswers]).
//   - Thresholds and the pause rule: policy.go ([Policy], [DefaultPolicy]).
//   - The bounded trajectory and its digest: trajectory.go ([Trajectory],
//     [PhaseReport], [ReportCarrier]); workflow-side calls in api.go
//     ([SetObjective], [SetLane], [SetWorkItem], [SetPullRequests]); the
//     same rules outside a workflow, to replay recorded runs offline:
//     recorder.go ([TrajectoryRecorder]).
//   - The Overseer activity: assess.go ([RegisterActivities]).
//   - The default judge, a small fitted model: learned.go and features.go
//     ([LearnedJudge], [LearnedModel], [DefaultLearnedModel]); policy files:
//     policy.go ([LoadPolicy], [DefaultLearnedPolicy]).
//   - The deterministic rules-based judge: heuristic.go ([HeuristicJudge]).
//   - Plugin, interceptor, note, query, search attributes: plugin.go,
//     interceptor.go, run.go, note.go, status.go; the gate, its resume
//     request and refusals: gate.go.
//
// # Modes
//
// [ModeOff] calls nothing and writes nothing to the run's history (no
// version marker, no pinned configuration, no search attribute); such a
// run only answers the status query, with mode off. [ModeObserve] records answers and status and
// never changes the job: the phase's result reaches the workflow at once
// and the assessment runs on its own workflow coroutine; nothing is
// injected and nothing waits (the run only waits for the last assessment
// before it completes, so the last boundary is recorded). [ModeManage]
// holds the phase's result until the verdict; when the pause rule holds
// (P(on objective) at or below the policy's threshold, or a breach with
// confidence ≥ 0.5 and severity ≥ 1.5) the workflow waits at a durable gate until a human resumes it, and
// the next phase receives a [Note]. Modes are set per workflow type
// ([Options.Modes]).
//
// # Judges and policies
//
// The zero [Options] use the [LearnedJudge] with the model that ships with
// the package and [DefaultLearnedPolicy], the policy calibrated for it to
// pause at most 5 % of the recorded runs that went on to succeed. The
// learned judge answers offline in microseconds from the trajectory alone
// (token usage per step matters most: report it in [PhaseReport]). Its
// signal is agent-specific: fit a model on your own runs with `overseer
// train`, choose a policy with `overseer calibrate`, and load them with
// [LoadLearnedModel] and [LoadPolicy]. The policy's name is pinned with the
// run's configuration, so a run records which policy it used. Any other
// judge (Jev HTTP, OpenAI-compatible, your own [jev.Judge]) gets
// [DefaultPolicy], the seed's thresholds, unless you give a policy.
//
// # Gate
//
// A paused job waits on workflow state, not a timer: for days if need be,
// across worker restarts. Each gate has an id, the phase and the job's pause
// count ("code-2"), shown in the status ([Status].GateID) and in the
// workflow's current details.
//
// Resume it with the update or the signal named overseer.resume
// ([ResumeUpdateName], [ResumeSignalName]) carrying a [ResumeRequest]:
// {"by": NAME, "note": TEXT, "action": "continue"|"abort", "gate": GATE_ID}.
// Send the gate id you read: a resume for a gate that is no longer open is
// refused, so a decision taken at one gate never closes the next one (a
// form left open, a command run twice). Without a gate id, the oldest open
// gate is closed. The request is decoded strictly: a field not listed is
// refused, as is a missing by, an unknown action or a note over
// [MaxResumeNoteBytes] (4 KiB).
//
// The update validates before anything is written to history. Its
// refusals are application errors with stable types, for clients to test
// with [IsNotPaused], [IsWrongGate] and [IsInvalidResume] (never by their
// text): [NotPausedErrorType], [WrongGateErrorType] (its details list the
// open gates), [InvalidResumeErrorType]. A signal cannot be refused: one
// that is undecodable, invalid, for a gate that is not open, or that
// arrives when nothing is paused is counted (Counters.IgnoredResumes),
// logged with the reason and the by it claims (a signal carries no
// identity the workflow can read), and dropped, never kept for a later
// gate. Each signal is decoded afresh from its raw payload, so a dropped
// one leaves nothing behind for the next. Prefer the update.
//
// Abort ends the workflow with an application error of type
// [AbortedErrorType] ([IsAborted]). The finished phase's result is kept, so
// resuming never re-runs it.
//
// Phases flagged in parallel (two phase activities in flight in manage
// mode) queue their gates: each is recorded, holds only its own phase's
// result and is resumed on its own; the status shows the oldest open one.
// An abort at any of them closes them all. The next phase receives the
// process note of the latest flagged phase with the last reviewer's note.
//
// While paused, the workflow's current details (workflow.SetCurrentDetails,
// shown by `temporal workflow metadata` and the Web UI) carry each open
// gate's reason, the note the next phase will receive and the exact
// `temporal workflow update execute …` commands that resume or abort it;
// the workflow's own current details come back when the last gate closes.
// The status query and the resume update and signal carry descriptions.
// A static summary is a start option of the workflow, which a worker
// interceptor cannot set: the starter sets it (client.StartWorkflowOptions
// StaticSummary).
//
// A run cancelled at a gate closes it (Gate.Cancelled) and clears the
// paused status and search attribute before it ends. Terminate and timeout
// run no workflow code, so such a run keeps OverseerPaused = true: list
// paused jobs with ExecutionStatus = "Running" as well (ops.ListQuery,
// overseer list --paused and the dashboard do).
//
// # Process note
//
// After a flagged phase (manage mode), the next phase activity receives a
// short process-confidence note (with the reviewer's note, if any): read it
// with [ProcessNote] on the activity's context, or implement [NoteReceiver]
// on the activity's input (a pointer) to have it set there.
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
// # Where the judge runs, and what it costs in history
//
// [Options.Placement] says where the judge answers. By default
// ([PlacementAuto]) a [PureJudge] — the shipped [LearnedJudge] and
// [HeuristicJudge] — answers in workflow code, inside a side effect: one
// MarkerRecorded event per boundary, no activity, and no wait. Any other
// judge (an HTTP judge, a model API) answers in an activity: in observe
// mode a regular one, so the workflow task that schedules the next phase
// is never held by the judge (a slow, hanging or failing judge delays no
// phase; about six events per boundary); in manage mode a local one, since
// the verdict must be waited for anyway (one event per boundary, and the
// workflow task waits for the judge). At the end of a run the overseer
// waits for an assessment still in flight, at most
// [Options.AssessTotalTimeout], so that every boundary is recorded: this
// delays the run's completion, never a phase. Search attributes, when
// enabled, add one UpsertWorkflowSearchAttributes event when the status
// changed. [PlacementActivity] with [Options.AssessTaskQueue] puts judge
// calls on a task queue of their own, where a fleet can cap them per
// second.
//
// # Determinism
//
// Each overseen run pins its configuration (mode, policy, obligations,
// phases, timeouts) in a side effect when it starts, so redeploying a
// worker with other options never changes runs in flight. Runs that
// started before the plugin was added, or in ModeOff, have no version
// marker and replay untouched. Overseer
// state (trajectory, counters, recent assessments, pending note) is carried
// across continue-as-new in a header. Workflow code only uses workflow.*
// APIs; make lint runs workflowcheck over it.
//
// # Secrets
//
// The judge and its credentials live on the worker ([Options.Judge]). No
// key enters workflow history, activity inputs or logs.
package overseer
