// Package bench measures what the overseer plugin costs a job, side by
// side with the same job run bare and with a hand-written judge loop.
//
// # Running it
//
// `overseer bench` runs it and prints a table (--json for the raw
// figures). From Go, give [Run] a client of a server set up as described
// under "The server" below:
//
//	res, err := bench.Run(ctx, c, bench.Options{Rounds: 3, Progress: os.Stderr})
//	if err != nil {
//		return err
//	}
//	return bench.WriteTable(os.Stdout, res)
//
// # Variants
//
// Every variant runs the same job ([Job]: N phase activities in a row)
// on a worker of its own, one variant at a time, interleaved over several
// rounds so that no variant always runs first or last:
//
//   - bare: the job with no plugin;
//   - hand-written: [HandwrittenJob], the honest baseline — a local
//     activity asks the same judge after each phase and a selector waits
//     for a resume signal when the policy flags the answer;
//   - hand-written/listening: [HandwrittenListeningJob], the hand-written
//     job with a second coroutine that listens for signals while phases
//     run, as the plugin's run does: what that coroutine alone costs;
//   - observe, manage: the plugin with its defaults (the learned judge,
//     which is pure, answers in workflow code);
//   - manage+search-attributes: manage mode that also upserts the
//     Overseer* search attributes;
//   - manage/local-activity: the judge in a local activity, like the
//     hand-written job;
//   - hand-written/background: [HandwrittenBackgroundJob], observe by
//     hand with the judge asked in the background, the baseline of the
//     judges in the background;
//   - observe/remote-judge: the same judge seen as a remote one (not
//     pure), in the background (the default in observe mode);
//   - observe/http-judge: the same judge behind an in-process Jev HTTP
//     server, as `overseer judge serve` runs it;
//   - observe/activity, observe/local-activity: the remote judge in a
//     regular and in a local activity;
//   - observe/hanging-judge: a remote judge that never answers within its
//     budget;
//   - bare/agent-loop, observe/agent-loop, manage/agent-loop: the job as
//     an agent loop ([JobInput].Loop: a model call, then the tool call it
//     asked for, each call a boundary), with no plugin and under the
//     plugin's defaults (the learned judge's agent-loop rules and loop
//     model); the plugin's loop variants are measured against the bare
//     loop, and there is no hand-written loop.
//
// # Measurements
//
// Per variant and round: the latency of one job with phases of a given
// duration (and when its last phase completed, by the server's clock), the
// latency of one job with trivial phases, and the throughput and this
// process' CPU time per boundary of several trivial jobs at once. Once per
// variant: the job's history events and bytes per boundary and its largest
// event. Once per bench: the judge's request size along a long job that
// continues as new halfway, and the overseer state it carries over.
//
// # Under load
//
// [RunLoad] (`overseer bench --load N`) starts N trivial jobs at once per
// variant (10 phases each by default; bare, hand-written,
// hand-written/listening, the judge in a local activity,
// hand-written/background and the remote judge in the background unless
// --variants says otherwise), interleaved over 3 rounds,
// and reports the batch's wall time, jobs per second and this process' CPU
// time (getrusage), with --profile-dir a CPU profile of every batch. Given
// the PostgreSQL server behind the Temporal server (--pg-dsn, or
// $OVERSEER_BENCH_PG_DSN; psql on PATH) it also reports what each job cost
// the database: rows inserted, updated and deleted in the temporal*
// databases (pg_stat_database), commits and WAL bytes. --gate-burst N
// ([RunGateBurst]) then pauses N jobs in manage mode at once and resumes
// them all with the overseer.resume update: gate opening, the update's
// round trip and resume → next phase scheduled, p50 and p99. Against `make
// cluster` (4 history shards on PostgreSQL):
//
//	overseer bench --address 127.0.0.1:17233 --load 500 --gate-burst 500 \
//		--pg-dsn postgres://temporal:temporal@127.0.0.1:15432/temporal
//
// # The server
//
// By default ([DevServerConfig]) the dev server keeps its stock task
// queues (4 partitions, as every Temporal server has them) and only its
// transfer queue polls faster than its default of 20 times a second
// (history.transferProcessorMaxPollRPS), which would pace a job at about
// 100 ms per phase whatever runs it. [TunedDevServerConfig]
// (`overseer bench --tuned`) also gives task queues one partition, which
// hides the 2 s a task can wait on a partition no poller is on.
// `overseer bench` starts such a dev server unless given --address.
package bench
