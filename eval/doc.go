// Package eval measures and fits the overseer's phase-boundary judgment on
// recorded agent runs with known outcomes. It is what the `overseer train`,
// `overseer eval` and `overseer calibrate` commands run.
//
// It is a Go module of its own. From Go, fitting a model and a policy for
// it reads:
//
//	runs, err := eval.LoadRuns("runs.jsonl", "") // the format is detected
//	if err != nil {
//		return err
//	}
//	fit, err := eval.Train(ctx, runs, eval.TrainOptions{}) // overseer train
//	if err != nil {
//		return err
//	}
//	judge := &overseer.LearnedJudge{Model: fit.Model}
//	scored, err := eval.Score(ctx, runs, eval.ScoreOptions{Judge: judge}) // overseer eval
//	if err != nil {
//		return err
//	}
//	cal, err := eval.Calibrate(scored, 0.05) // overseer calibrate: at most 5 % false pauses
//	if err != nil {
//		return err
//	}
//	file, err := overseer.MarshalPolicy(cal.Policy, cal)
//
// Scores of runs the model was fitted on flatter it: read its measures
// from fit.CV, every run scored by a model that never saw its task family.
//
// # Run records
//
// Every command reads one format: run records ([Record], format
// [RecordFormat]), JSON Lines with one run per line — its id, outcome
// (succeeded, failed or blocked), task (family and objective) and its
// ordered steps (agent steps, [UnitStep]) or phase runs ([UnitPhase]),
// each with a phase name, a failed flag, duration, cost and input/output
// tokens. [LoadRuns] reads records or converts another format on the fly:
// a mini-swe-agent run directory, SWE-agent trajectories, OpenAI
// chat-completions logs with tool calls (OpenHands' among them, see
// [ImportOpenAIChat]), or a phase-letter CSV (see [Formats]), detected by
// the files an input holds ([DetectFormat]); `overseer export` writes
// records from Temporal itself.
//
// # Replay
//
// [Record.Boundaries] groups steps into phase runs (consecutive steps of
// one phase), each ending at a phase boundary, with the [overseer.PhaseReport]
// the phase would have returned; [Replay] feeds them to an
// [overseer.TrajectoryRecorder], so every boundary yields exactly the
// bounded trajectory the plugin would send to its judge. [Score] asks any
// judge at every boundary, concurrently and within the judge's budget.
//
// # Measures
//
// A failed (or blocked) run is the positive class, and the score is
// 1 − P(on objective). [Checkpoints] measures the answer the judge had
// given at 25, 50, 75 and 100 % of each run and after 10, 20, 30 and 40
// steps for the runs still going: AUROC with a bootstrap interval, the
// share of failed runs caught at a 5 % and 10 % false-pause budget, the
// Brier score and a reliability table. [PolicyRatesOf] applies a pause
// policy to whole runs: a run is paused when any boundary is flagged.
//
// # Training
//
// [Train] fits the [overseer.LearnedModel]: a logistic regression of "the
// run succeeds" on features of the trajectory at every boundary (each run
// weighing the same), with forward feature selection and an L2 penalty
// chosen by cross-validation grouped by task family, and a Platt map
// calibrated on out-of-fold scores. Its figures come from nested grouped
// cross-validation: every run is scored, through the real judge, by a
// model that never saw its task family. By default only rate features are
// selected (see [DefaultFeatures]).
//
// # Calibration
//
// [Calibrate] chooses the pause threshold (and band edges) that pause at
// most a given share of succeeded runs with the best catch rate of failed
// ones; [overseer.MarshalPolicy] writes it as a policy file.
package eval
