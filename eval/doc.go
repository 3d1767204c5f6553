// Package eval replays recorded agent runs with known outcomes through the
// project's two judges, to measure — separately — how well each signal
// anticipates a failed run:
//
//   - the phase-boundary signal: the overseer's P(on objective) and pause
//     rule ([overseer.NewRequest], a [jev.Judge], [overseer.ParseAnswers],
//     [overseer.Policy.Evaluate]), asked at every derived phase boundary
//     with the trajectory a [overseer.TrajectoryRecorder] builds under the
//     plugin's own rules;
//   - the completion signal: the in-phase supervisor's advice
//     ([supervision.Supervisor.ObserveSnapshot]) on the finished run, with
//     the worker idle and no host evidence — a trace carries no verification
//     receipt, so completion review can never be advised.
//
// `overseer eval-traces --dir DIR` prints the table (cmd/overseer/cli).
// It is a bench command, not a test: it asserts nothing about the numbers.
//
// # Traces
//
// [LoadTrace] reads the mini-swe-agent-1 format ([Format]): info.exit_status,
// info.submission, info.model_stats, and messages — the system prompt, the
// task (the PR description of the first user message), then assistant turns
// each holding one bash block (the action, with extra.response.created and
// usage.cost) followed by a user turn starting with
// <returncode>N</returncode>. A turn without exactly one bash block is a
// format error (nothing ran); a command the harness killed is a timeout.
// Both, and every non-zero return code, are failed tool calls.
// labels.json maps an instance id to true when the run resolved its task.
//
// # From actions to phases
//
// Each command gets a [Class] — read (search and read), reproduce, test,
// edit or submit — by the rules of [Classify]; a [Classifier] also
// remembers the scratch scripts and directories of the run. [Phases] groups
// consecutive actions of one class into a phase run; each phase end is a
// boundary. A phase run reports its turns, cost, failed tool calls by
// category (the action's class, or "format"), one unit of rework when it is
// an edit run after the previous edit was tested (test → edit), and a
// missing output when the submission is empty. A phase run never fails as
// an activity: a trace has no activity errors. Looping — a run of a class
// that already ran since the last edit — is counted per run for the table;
// the overseer sees repeats only through its own re-run rule.
//
// # What the numbers mean
//
// With the heuristic judges these numbers describe fixed rules, not a
// model: how well these rules anticipate failure on this sample, nothing
// more. [Summary] also reports two baselines (AUROC of the number of
// actions and of failed tool calls) so the signal can be read against
// something trivial.
package eval
