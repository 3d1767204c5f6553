// Package conformance is a suite of workflow patterns nobody would write
// for an overseer — a saga, a retry loop in workflow code, selectors
// racing a phase against a timer, a signal, an update and a second phase,
// sessions, hand-written data converters and context-bound codecs, memo
// upserts, updates with validators, child workflows, continue-as-new,
// local activities, cancellation, GetInfo, a phase's context cancelled as
// soon as the workflow has its result (a deferred cancel, a race that
// cancels its loser, a deferred CompleteSession) — and the modes every
// pattern is held to ([Modes]): without the plugin, off, observe (the
// judge in workflow code, and in a local activity), and manage with a
// judge that never pauses ([NeverPauses]). [FlagsFirstPhase] pauses after
// a job's first phase, for tests that a gate holds whatever the workflow
// does next.
//
// The tests run each pattern in each mode in the SDK's test environment
// and on a real dev server, where the events of a race are made to land
// in one workflow task (the workflow's worker is stopped while the phase
// completes and the timer fires or the signal arrives, as under load or
// after a restart). A pattern must give the same result, the same handler
// outcomes and, on the server, the same commands in the same order in
// every mode as without the plugin; its history may differ only by the
// overseer's own events (docs/configuration.md, "What observe mode
// costs").
package conformance
