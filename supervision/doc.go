// Package supervision follows a long-running agent inside one phase
// activity and recommends — never enforces — what should happen next:
// CONTINUE, REQUEST_VERIFICATION, REVIEW_COMPLETION, REVIEW_DOCUMENTATION,
// REVIEW_DIRECTION or MANUAL_REVIEW. It is the Go and Temporal rendering of
// the JEV supervision middleware of seeds 001–003 (behaviour in
// shared/supervision-spec.md); every number and rule there is kept.
//
// # Where each concept lives
//
//   - Check list, thresholds, YES/NO/UNKNOWN: checks.go ([Checks],
//     [Thresholds]). Keys are "<responsibility>__<id>", in the seed's fixed
//     order; quality.documentation only when documentation is required.
//   - Limits, abstention and truncation: limits.go ([Limits],
//     [DefaultLimits]) and supervisor.go.
//   - Offline entry point and execution wrapper (mode, one budget for
//     evidence and judgment, error mapping, one [Record] per call):
//     supervisor.go ([New], [Supervisor.Observe], [Supervisor.ObserveSnapshot]).
//   - Proposals and arbitration: arbitrate.go.
//   - Trusted evidence: [Evidence], [Verification], [EvidenceSource];
//     [Evidence.Verified] is the only way to completion review.
//     [GitRevision] computes a revision that covers uncommitted and untracked
//     changes.
//   - Observation loop (schedule, coalescing, superseded, final assessment,
//     cancellation, budgets): loop.go ([Schedule], [Observation]).
//   - Temporal activity interceptor, events, observers, workflow advice:
//     interceptor.go ([NewInterceptor], [RecordEvent], [SetTask],
//     [SetEvidenceSource], [AdviceRecords]); the worker plugin that ties
//     the interceptor to the worker's lifecycle: plugin.go ([NewPlugin]).
//   - Service configuration block with its caps: config.go ([ParseConfig]).
//   - A rules-based judge for offline use: heuristic.go ([HeuristicJudge]).
//
// # Mapping to Temporal
//
// The reference middleware wraps an agent's event stream. Here the unit is
// one attempt of a designated activity ([InterceptorOptions.Activities]):
//
//   - Events come from the activity's heartbeats (each heartbeat is one
//     event; an [Event] as the first detail gives it a type and text) and
//     from explicit [RecordEvent] calls. THINKING_* events are ignored;
//     EXCEED_MAX_ITERS, REQUEST_STOP and ALL_TOOLS_DENIED mark the worker
//     failed; DATA_BLOCK_* or non-text content mark the evidence incomplete;
//     TEXT_DELTA appends to the output tail and FINAL_RESULT replaces it.
//     Heartbeats still reach the server unchanged.
//   - The task is the activity input's [Tasker] text, or [SetTask].
//   - Scope: user = the namespace, session = the workflow id, run = a fresh
//     random id per activity attempt; a user or session that is blank or
//     longer than [MaxScopeChars] becomes "unscoped-<run id>". The host's
//     evidence source receives it in [EvidenceRequest.Scope] and must bind
//     its receipts to it.
//   - The evidence source is the interceptor's default or the one the
//     activity sets for itself with [SetEvidenceSource] — host code, never
//     the model or tool arguments.
//   - "Worker completes" is the activity returning without error: the loop
//     awaits the judgment in flight and runs one final assessment if the
//     budgets allow, so the activity's completion can be delayed by up to
//     about two budgets. An activity error is "the worker errors": ticks
//     stop, the judgment in flight is cancelled, no final assessment runs,
//     and the error is returned unchanged (the supervisor never retries).
//     Cancellation of the activity cancels ticks, evidence reads and the
//     judgment in flight; nothing more is published.
//   - Advice reaches the host through [InterceptorOptions.Observers] (a
//     bounded queue of 256 callbacks on their own goroutine, started with
//     the first observation and stopped when the worker stops: a slow or
//     panicking observer never affects the activity) and the workflow: an
//     overseer.supervision signal ([SignalName]) whenever the consumable
//     advice changes and for the final observation; the overseer plugin
//     shows it in overseer.status (InPhase). Set
//     [InterceptorOptions.NoWorkflowAdvice] to keep it off the history, and
//     in the SDK's TestActivityEnvironment, whose client is a mock.
//   - Records: the supervisor's [Options.OnRecord] gets one task_supervision
//     Record per judgment (status, duration, the recommendation map with
//     model and usage); [InterceptorOptions.OnRecord] gets the
//     supervision.advice and supervision.<check> records of each
//     observation ([AdviceRecords]), correlated by run id.
//
// Characters are counted as Unicode code points (the reference counts
// UTF-16 units); the state size is that of Go's JSON encoding.
//
// # Modes
//
// An explicit mode is required. OFF captures nothing and calls nothing (the
// interceptor passes every activity through); SHADOW observes and
// recommends; ENFORCE is rejected when a supervisor is built.
package supervision
