#!/usr/bin/env bash
# The views measured at scale (docs/performance.md, "Measured at scale").
#
#   scripts/scalebench.sh populate   # start the jobs, with one worker, and wait for them
#   scripts/scalebench.sh measure    # no worker: the floor, the pages, list --paused; then resume --query
#   scripts/scalebench.sh resume     # only resume --query over every gate, one worker
#   scripts/scalebench.sh learn      # a first learn round over the closed jobs, 1,000 new ones, a second round
#
# Run against a cluster of its own (scripts/cluster.sh), e.g.
#   OVERSEER_CLUSTER_DIR=/tmp/scale/cluster OVERSEER_CLUSTER_PORT_OFFSET=21000 \
#     OVERSEER_CLUSTER_FRESH=1 bash scripts/cluster.sh up &
#
# Environment: ADDRESS (default 127.0.0.1:28233, the frontend at offset 21000),
# OUT (default /tmp/scale: binaries, logs, populate's state file), CLOSED and
# OPEN (default 100000 and 5000: a day), LOOPS (of the closed jobs, agent
# loops; default 2% of them), BUDGETED_EVERY (every this many closed jobs
# carries a budget; default 10), VERDICT_GATES (of the open jobs, how many
# the judge pauses, the rest at a budget; default a fifth), WINDOW (jobs
# started and not settled, at most; default 600: 2,000 held the worker's
# cache at its memory limit), CLOSED_PHASES (default
# spec: see the doc), N (requests per
# page and mode, default 40), DASH_PORT (default 28090), RESUME_AGENT_WORK (how long
# each phase of a resumed job works while resume --query runs, default 1ms: every
# resumed job finishes its remaining phases during the batch; 2m: each starts one
# phase and waits, as with real agents), RESUME_QUERY (the gates resume
# --query resumes; default populate's verdict gates, ids scale-gate-N: a
# budget gate takes a raise, not --not-needed), LEARN_PREFIX (the id prefix of the learn
# mode's 1,000 new jobs, default new; give another to run it again on the same data).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ADDRESS="${ADDRESS:-127.0.0.1:28233}"
OUT="${OUT:-/tmp/scale}"
CLOSED="${CLOSED:-100000}" OPEN="${OPEN:-5000}" CLOSED_PHASES="${CLOSED_PHASES:-spec}"
LOOPS="${LOOPS:-$((CLOSED / 50))}" BUDGETED_EVERY="${BUDGETED_EVERY:-10}" VERDICT_GATES="${VERDICT_GATES:-$((OPEN / 5))}" WINDOW="${WINDOW:-600}"
LEARN_PREFIX="${LEARN_PREFIX:-new}" N="${N:-40}" DASH_PORT="${DASH_PORT:-28090}" RESUME_AGENT_WORK="${RESUME_AGENT_WORK:-1ms}"
QUEUE="overseer-jobs"
# WORKER_FLAGS: more flags for the workers the script starts, e.g.
# "--memory-limit 0" (populate's worker holds every gate it opened).
WORKER_FLAGS="${WORKER_FLAGS:-}"
RESUME_QUERY="${RESUME_QUERY:-TaskQueue = '$QUEUE' AND WorkflowId STARTS_WITH 'scale-gate-'}"
# The proxies that count each process's visibility calls (scalebench proxy).
PROXY_DASH_PORT=28301 PROXY_CLI_PORT=28302 PROXY_WORKER_PORT=28303 PROXY_LEARN_PORT=28304
mkdir -p "$OUT"

say() { echo "scalebench: $*"; }

# Every process this script starts is stopped when it exits, however it
# exits (set -e, a failed wait, Ctrl-C): stop_all on EXIT.
pids=()
stop_all() {
	local pid
	for pid in "${pids[@]}"; do
		if kill -0 "$pid" 2>/dev/null; then
			kill -INT "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
		fi
	done
}
trap stop_all EXIT

build() {
	(cd "$ROOT" && go build -o "$OUT/overseer" ./cmd/overseer)
	(cd "$ROOT/cmd" && go build -o "$OUT/scalebench" ./scalebench)
}

# start_worker starts one worker (phases of $1, default 1 ms) and records its
# pid; with a second argument, through a proxy that counts its visibility
# calls (stop_proxy worker says them).
start_worker() {
	local address="$ADDRESS"
	if [[ -n "${2:-}" ]]; then
		start_proxy worker "$PROXY_WORKER_PORT"
		address="127.0.0.1:$PROXY_WORKER_PORT"
	fi
	# shellcheck disable=SC2086 # WORKER_FLAGS is words
	"$OUT/overseer" worker --address "$address" --agent-work "${1:-1ms}" $WORKER_FLAGS >"$OUT/worker.log" 2>&1 &
	echo $! >"$OUT/worker.pid"
	pids+=("$!")
	until grep -q "Worker polling" "$OUT/worker.log"; do
		kill -0 "$(cat "$OUT/worker.pid")" || { cat "$OUT/worker.log"; exit 1; }
		sleep 0.2
	done
}

stop_worker() {
	local pid
	pid="$(cat "$OUT/worker.pid")"
	say "worker peak memory: $("$OUT/scalebench" hwm "$pid")"
	kill -INT "$pid"
	wait "$pid" 2>/dev/null || true
}

# start_proxy NAME PORT: a proxy to the frontend that counts the visibility
# calls of the one process given its address ($OUT/proxy-NAME.log).
start_proxy() {
	"$OUT/scalebench" proxy -listen "127.0.0.1:$2" -target "$ADDRESS" -name "$1" >"$OUT/proxy-$1.log" 2>&1 &
	echo $! >"$OUT/proxy-$1.pid"
	pids+=("$!")
	until grep -qs "^proxy" "$OUT/proxy-$1.log"; do sleep 0.1; done
}

# stop_proxy NAME: stop it and say what it counted.
stop_proxy() {
	local pid
	pid="$(cat "$OUT/proxy-$1.pid")"
	kill -TERM "$pid"
	wait "$pid" 2>/dev/null || true
	say "$(tail -n 1 "$OUT/proxy-$1.log")"
}

# views LABEL: the dashboard in its own process (through a proxy): the list,
# Waiting and job pages, one viewer and 16 at once, all the Waiting pages,
# its peak memory and its visibility calls a second.
views() {
	say "the dashboard ($1): /, /waiting and a job's page (a closed job, a gate)"
	start_proxy "dashboard-${1// /-}" "$PROXY_DASH_PORT"
	"$OUT/overseer" dashboard --address "127.0.0.1:$PROXY_DASH_PORT" --listen "127.0.0.1:$DASH_PORT" >"$OUT/dashboard.log" 2>&1 &
	local dash=$!
	pids+=("$dash")
	until curl -fsS -o /dev/null "http://127.0.0.1:$DASH_PORT/healthz" 2>/dev/null; do
		kill -0 "$dash" || { cat "$OUT/dashboard.log"; exit 1; }
		sleep 0.2
	done
	"$OUT/scalebench" pages -url "http://127.0.0.1:$DASH_PORT" -n "$N" -conc 16 -paths "/,/waiting,/job?id=scale-000002,/job?id=scale-gate-000000"
	"$OUT/scalebench" walk -url "http://127.0.0.1:$DASH_PORT"
	say "dashboard peak memory: $("$OUT/scalebench" hwm "$dash")"
	kill -INT "$dash"
	wait "$dash" 2>/dev/null || true
	stop_proxy "dashboard-${1// /-}"
}

# cli NAME ARGS...: one overseer command through a proxy of its own: its
# time, peak memory and visibility calls ($OUT/NAME.txt holds its output).
cli() {
	local name=$1
	shift
	start_proxy "$name" "$PROXY_CLI_PORT"
	/usr/bin/time -v -o "$OUT/$name.time" "$OUT/overseer" "$@" --address "127.0.0.1:$PROXY_CLI_PORT" >"$OUT/$name.txt" 2>&1 || true
	say "overseer $*: $(elapsed "$OUT/$name.time"), peak $(rss "$OUT/$name.time"), $(wc -l <"$OUT/$name.txt") lines"
	stop_proxy "$name"
}

# rss prints the peak RSS /usr/bin/time -v wrote to file $1.
rss() { awk -F': ' '/Maximum resident set size/ {printf "%.1f MB", $2/1024}' "$1"; }
elapsed() { awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$1"; }

# resume_all resumes every gate of the queue with resume --query, one
# worker running, and says how long it took and what was applied.
resume_all() {
	say "resume --query over the gates of $RESUME_QUERY, one worker running (phases of $RESUME_AGENT_WORK)"
	start_worker "$RESUME_AGENT_WORK" proxied
	cli resume resume --timeout 60s --query "$RESUME_QUERY" --by bench --not-needed
	say "resume --query: $(tail -n 3 "$OUT/resume.txt" | tr '\n' ' ')"
	stop_worker
	stop_proxy worker
}

case "${1:-}" in
populate)
	build
	start_worker
	# Interrupted, it takes up where it stopped: the same command again
	# (the state file says which jobs were started).
	"$OUT/scalebench" populate -address "$ADDRESS" -closed "$CLOSED" -open "$OPEN" -closed-phases "$CLOSED_PHASES" \
		-loops "$LOOPS" -budgeted-every "$BUDGETED_EVERY" -verdict-gates "$VERDICT_GATES" -window "$WINDOW" \
		-state "$OUT/populate.state"
	stop_worker
	;;
measure)
	build
	say "machine: $(nproc) cores, $(free -m | awk '/Mem:/ {print $2}') MB RAM; $(lscpu | awk -F': *' '/Model name/ {print $2}')"
	say "jobs: $("$ROOT/.tools/bin/temporal" workflow count --address "$ADDRESS" --query "TaskQueue = '$QUEUE' AND ExecutionStatus = 'Completed'") closed," \
		"$("$ROOT/.tools/bin/temporal" workflow count --address "$ADDRESS" --query "TaskQueue = '$QUEUE' AND ExecutionStatus = 'Running' AND OverseerPaused = true") paused"
	say "the floor, no worker: bare List pages and history reads"
	"$OUT/scalebench" floor -address "$ADDRESS"
	views "no worker"
	say "overseer list (50 rows), list --over-budget, list --paused; each through a proxy of its own that counts its visibility calls"
	cli list list
	cli over-budget list --over-budget --timeout 60s
	cli paused-json list --paused --json --timeout 60s
	"$OUT/scalebench" queue <"$OUT/paused-json.txt"
	cli paused list --paused --timeout 60s

	say "the same views with the worker up (idle: every job is closed or paused)"
	start_worker 1ms proxied
	views "worker up"
	stop_worker
	stop_proxy worker

	resume_all
	;;
resume)
	build
	resume_all
	;;
learn)
	build
	# The rounds' worker polls a queue of its own, so the jobs' queue has no
	# worker while a round reads.
	start_proxy learnworker "$PROXY_LEARN_PORT"
	"$OUT/overseer" worker --address "127.0.0.1:$PROXY_LEARN_PORT" --task-queue scale-learn --learn-records "$OUT/records" --model-registry \
		--agent-work 1ms >"$OUT/learnworker.log" 2>&1 &
	lw=$!
	pids+=("$lw")
	until grep -q "Worker polling" "$OUT/learnworker.log"; do
		kill -0 "$lw" || { cat "$OUT/learnworker.log"; exit 1; }
		sleep 0.2
	done
	round() {
		/usr/bin/time -v -o "$OUT/learn$1.time" "$OUT/overseer" learn run --address "$ADDRESS" --task-queue scale-learn --type CoroJob \
			--where "TaskQueue = '$QUEUE'" --wait 30m >"$OUT/learn$1.txt" 2>&1 || true
		say "learn round $1: $(elapsed "$OUT/learn$1.time"), CLI peak $(rss "$OUT/learn$1.time"), round worker $("$OUT/scalebench" hwm "$lw")"
		tail -n 1 "$OUT/learn$1.txt"
	}
	round 1
	start_worker
	"$OUT/scalebench" populate -address "$ADDRESS" -closed 1000 -open 0 -closed-phases "$CLOSED_PHASES" -prefix "$LEARN_PREFIX" >/dev/null
	# Settled: completed, or paused at a gate (a phase lost under load).
	settled() {
		local done paused
		done=$("$ROOT/.tools/bin/temporal" workflow count --address "$ADDRESS" --query "WorkflowId STARTS_WITH '$LEARN_PREFIX-' AND ExecutionStatus = 'Completed'" | awk '{print $2}')
		paused=$("$ROOT/.tools/bin/temporal" workflow count --address "$ADDRESS" --query "WorkflowId STARTS_WITH '$LEARN_PREFIX-' AND ExecutionStatus = 'Running' AND OverseerPaused = true" | awk '{print $2}')
		echo $((done + paused))
	}
	deadline=$((SECONDS + 1800))
	until [[ "$(settled)" -ge 1000 ]]; do
		if ((SECONDS > deadline)); then
			say "the 1,000 new jobs did not settle within 30 minutes ($(settled) did): round 2 reads those that closed"
			break
		fi
		sleep 5 # a count every 5 s; the loop ends on the count or the deadline
	done
	stop_worker
	round 2
	kill -INT "$lw"
	wait "$lw" 2>/dev/null || true
	stop_proxy learnworker
	;;
*)
	echo "usage: scripts/scalebench.sh populate|measure|resume|learn" >&2
	exit 2
	;;
esac
