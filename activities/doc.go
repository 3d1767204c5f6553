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
// send (turns, cost, rework, failed tool calls, open pull requests), and
// [PhaseInput] receives the overseer's process note (it implements
// overseer.NoteReceiver), so the scenarios play out differently under
// observe and manage mode. The code phase is also a small agent loop that
// reports its steps, heartbeats and a workspace's evidence to the in-phase
// supervisor of package supervision.
//
// # Registering the agents
//
// [Agents.Register] registers one activity per phase of [DefaultPhases],
// named coro.<phase> ([ActivityName]):
//
//	agents := &activities.Agents{Work: 2 * time.Second} // each phase pretends to work 2 s
//	agents.Register(w)
package activities
