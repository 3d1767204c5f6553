// Package activities holds simulated phase agents for the reference job
// of package workflows. They do no real work: each [Scenario] makes them
// behave like a real agent in one of four situations the overseer must
// tell apart —
//
//   - [OnTrack]: the tests fail once and the loop back to code fixes them;
//   - [Drifting]: the code phase keeps switching lanes (refactor, docs…)
//     and redoing work, and the review keeps sending it back, until a
//     process note brings it back to the feature;
//   - [Looping]: the same tests fail again and again until a process note
//     (after a person looked) makes the agent change its approach;
//   - [Blocked]: the code phase fails on missing credentials until a person
//     resumes the job with a note.
//
// Every phase result carries the overseer.PhaseReport a real agent would
// send (turns, input and output tokens, cost, rework, failed tool calls,
// open pull requests), and
// [PhaseInput] receives the overseer's process note (it implements
// overseer.NoteReceiver), so the scenarios play out differently under
// observe and manage mode. The code phase is also a small agent loop that
// reports its steps, heartbeats and a workspace's evidence to the in-phase
// supervisor of package supervision.
//
// # Simulated telemetry
//
// The turns, tokens and cost come from a small, documented model of an
// agent loop (see [SystemPromptTokens] and the constants with it): a phase
// takes turns by its kind, more when its check fails, it reworks or it
// gets a note; every turn re-sends the preamble, the job's context carried
// into the phase and the phase's history so far, so input per turn grows
// within a phase and from run to run of a loop; output per turn is drawn
// from a range by kind; cost is priced at illustrative per-million-token
// prices. It is a simulation, not fitted to any judge, model or data set.
// The draws are seeded from a hash of the job (workflow ID), phase, run and
// attempt, so a job replayed or re-run under its id reports the same
// numbers.
//
// # Registering the agents
//
// [Agents.Register] registers one activity per phase of [DefaultPhases],
// named coro.<phase> ([ActivityName]):
//
//	agents := &activities.Agents{Work: 2 * time.Second} // each phase pretends to work 2 s
//	agents.Register(w)
package activities
