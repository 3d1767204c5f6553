/*
Package supervision follows a long-running agent inside one activity and
recommends what should happen next. It never enforces: the advice carries
no execution authority, and the host (or a person) decides what to do
with it.

Where the overseer plugin judges a workflow at its phase boundaries,
supervision watches the work inside a phase while it runs: an agent that
edits code for an hour, a migration, a long tool loop. It answers one
question again and again — should the worker go on, or does someone need
to look? — with one [Advice]:

  - [AdviceContinue]: the worker may go on.
  - [AdviceRequestVerification]: the work looks complete but nothing
    verified it at its current revision.
  - [AdviceReviewCompletion]: complete and verified; ready for review.
  - [AdviceReviewDocumentation]: required documentation is missing.
  - [AdviceReviewDirection]: the worker drifts, loops, or breaks the
    repository's instructions.
  - [AdviceManualReview]: the task needs a person, the worker failed, or
    the evidence is incomplete or the judgment uncertain.

# Supervisors and snapshots

A [Supervisor] judges one [Snapshot] at a time: the task, the worker's
latest output and recent events, whether it is still active or failed, and
the host's [Evidence] about the work. Build one with [New]; an explicit
[Mode] is required:

	sup, err := supervision.New(supervision.Options{
		Mode:       supervision.ModeShadow,
		Judge:      judge, // any jev.Judge
		Thresholds: supervision.Thresholds{No: 0.2, Yes: 0.8},
	})

[ModeShadow] observes and recommends, like the overseer's observe mode.
[ModeOff] captures nothing and calls nothing. There is no enforcing mode:
the value "ENFORCE" is rejected, since advice never has an actuator.

[Supervisor.ObserveSnapshot] judges a snapshot offline and returns a
[Decision]:

	d := sup.ObserveSnapshot(ctx, snap)
	if d.Report != nil {
		fmt.Println(d.Report.Selected.Advice, d.Reason)
	}

The judge answers ten yes/no questions about the snapshot (eleven when the
evidence says documentation is required): does the task need a human,
does the work break the repository's instructions, is the worker making
progress, stuck or off track, is the implementation complete, are the
requirements satisfied and is it ready to finish, are the tests
sufficient, does it need verification, is the documentation sufficient.
Each [Finding] holds one answer's probability and its [Truth] under the
[Thresholds]: [TruthYes], [TruthNo] or [TruthUnknown] in between. Fixed
rules turn the findings into [Proposal] values, and the proposal with the
highest priority (then confidence, then order) is the report's Selected
advice. An uncertain check that matters yields manual review, never a
guess.

The [Decision]'s [Status] says how far the judgment got:
[StatusDecided], [StatusInconclusive] (abstained, or decided on uncertain
checks or truncated evidence), [StatusError] (the judge or the evidence
source failed or timed out), [StatusCancelled] or [StatusSkipped]; its
[Reason] says why. Errors, skips and abstentions carry no [Report]: a
judge's failure is never turned into a verdict about the work.

# Evidence

[Evidence] is the host's trusted view of the work — the repository's
revision, status and diff, the changed files, the repository's
instructions — read from an [EvidenceSource] the host supplies, never from
the model or tool arguments. Completion review needs a [Verification]
receipt: issued by the host for a check that passed, at the evidence's
own non-blank revision, and bound to the observation's [Scope] (user,
session and run). A claim of "done" in the worker's output never
suffices: without a current receipt the advice is at most
[AdviceRequestVerification]. [GitRevision] computes a revision for a git
working tree that covers uncommitted and untracked changes, so that a
receipt cannot outlive an edit.

[Limits] bound what one observation sends to the judge, in characters
(Unicode code points) and files. Longer output, diffs and status are cut
to their tail and mark the evidence truncated, which asks for manual
review; a missing or over-long task, over-long instructions, or a state
over the limit make the supervisor abstain without calling the judge.

A budget (Options.Budget, the judge protocol's default and maximum)
bounds the evidence read and the judgment together.

# In a worker

[NewPlugin] supervises designated activities in a Temporal worker:

	p, err := supervision.NewPlugin(supervision.InterceptorOptions{
		Supervisor: sup,
		Activities: []string{"agent.code"},
		Evidence:   mySource, // an EvidenceSource
		Observers:  []func(supervision.Observation){notify},
	})
	w := worker.New(c, "agents", worker.Options{Plugins: []worker.Plugin{p}})

Experimental: the plugin builds on the Temporal Go SDK's plugin API,
which is experimental and may change. [NewInterceptor] returns the same
supervision as a bare worker interceptor for worker.Options.Interceptors;
call its Close after the worker has stopped.

The supervisor watches each attempt of a designated activity:

  - Each heartbeat is an event; an [Event] as the first heartbeat detail
    gives it a type and text. [RecordEvent] records an event without a
    heartbeat, and does nothing outside a supervised activity, so agents
    can call it unconditionally. [EventTextDelta] adds to the worker's
    output and [EventFinalResult] replaces it; see [EventType] for the
    others. Heartbeats reach the server unchanged.
  - The task is the activity input's [Tasker] text, or what [SetTask] set.
  - The evidence comes from InterceptorOptions.Evidence, or from the
    source the activity sets for itself with [SetEvidenceSource]; without
    either, evidence is missing, which never yields completion review.
  - The scope is the namespace, the workflow id and a fresh run id per
    attempt, given to the evidence source in [EvidenceRequest] to bind its
    receipts to.

A [Schedule] paces the judgments: at most one in flight, bursts of events
coalesced, a periodic re-check when nothing happens, a cap on assessments
and on errors in a row. When the activity returns, one final assessment
runs (so completion can be delayed by up to about two budgets); when it
fails or is cancelled, supervision stops and the activity's result or
error is returned unchanged. The supervisor never retries, fails or
changes an activity.

Each judgment is published as an [Observation] to the observers, in
order, on a goroutine of their own through a bounded queue: a slow
or panicking observer never affects the activity. Observation.Advice is
the advice to act on. The workflow receives it too, as an
overseer.InPhaseAdvice on the overseer.InPhaseSignalName signal, whenever
the advice changes and for the final assessment; the overseer plugin shows
it in its status. Set InterceptorOptions.DisableWorkflowAdvice to keep it
out of the workflow's history.

# Records

Options.OnRecord receives one [Record] per judgment and
InterceptorOptions.OnRecord the advice and per-check records of every
observation, for audit: status, reason, duration, and the judge's model
and token usage.

# Configuration

[ParseConfig] reads a supervision configuration from JSON, strictly:

	{"jev": {"supervision": {"mode": "SHADOW", "threshold": 0.8, "rejectionThreshold": 0.2}}}

Unknown keys, secrets and endpoint overrides are rejected; a missing mode
means off; both thresholds are required when enabled; every integer
(budgetMillis, minIntervalMillis, periodicIntervalMillis, maxAssessments,
maxConsecutiveFailures, maxTextChars, maxDiffChars, maxFiles,
maxStateChars) is range-checked. [Config.Supervisor] builds the
supervisor it describes.

# Judges

Any jev.Judge can answer the checks. [HeuristicJudge] answers them with
fixed rules, offline and deterministically: for demos, tests and the
overseer CLI's observe command, not for production judgments.
*/
package supervision
