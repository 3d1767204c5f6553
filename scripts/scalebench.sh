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
# OUT (default /tmp/scale: binaries, logs), CLOSED and OPEN (default 10000
# and 1000), CLOSED_PHASES (default spec,plan: see the doc), N (requests per
# page and mode, default 40), DASH_PORT (default 28090), RESUME_AGENT_WORK (how long
# each phase of a resumed job works while resume --query runs, default 1ms: every
# resumed job finishes its remaining phases during the batch; 2m: each starts one
# phase and waits, as with real agents), LEARN_PREFIX (the id prefix of the learn
# mode's 1,000 new jobs, default new; give another to run it again on the same data).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ADDRESS="${ADDRESS:-127.0.0.1:28233}"
OUT="${OUT:-/tmp/scale}"
CLOSED="${CLOSED:-10000}" OPEN="${OPEN:-1000}" CLOSED_PHASES="${CLOSED_PHASES:-spec,plan}"
LEARN_PREFIX="${LEARN_PREFIX:-new}" N="${N:-40}" DASH_PORT="${DASH_PORT:-28090}" RESUME_AGENT_WORK="${RESUME_AGENT_WORK:-1ms}"
QUEUE="overseer-jobs"
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

# start_worker starts one worker (phases of $1, default 1 ms) and records its pid.
start_worker() {
	"$OUT/overseer" worker --address "$ADDRESS" --agent-work "${1:-1ms}" >"$OUT/worker.log" 2>&1 &
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

# rss prints the peak RSS /usr/bin/time -v wrote to file $1.
rss() { awk -F': ' '/Maximum resident set size/ {printf "%.1f MB", $2/1024}' "$1"; }
elapsed() { awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$1"; }

# resume_all resumes every gate of the queue with resume --query, one
# worker running, and says how long it took and what was applied.
resume_all() {
	say "resume --query over every gate, one worker running (phases of $RESUME_AGENT_WORK)"
	start_worker "$RESUME_AGENT_WORK"
	/usr/bin/time -v -o "$OUT/resume.time" "$OUT/overseer" resume --address "$ADDRESS" --timeout 60s \
		--query "TaskQueue = '$QUEUE'" --by bench --not-needed >"$OUT/resume.txt" 2>&1 || true
	say "resume --query: $(elapsed "$OUT/resume.time"), peak $(rss "$OUT/resume.time"); $(tail -n 3 "$OUT/resume.txt" | tr '\n' ' ')"
	stop_worker
}

case "${1:-}" in
populate)
	build
	start_worker
	"$OUT/scalebench" populate -address "$ADDRESS" -closed "$CLOSED" -open "$OPEN" -closed-phases "$CLOSED_PHASES"
	stop_worker
	;;
measure)
	build
	say "machine: $(nproc) cores, $(free -m | awk '/Mem:/ {print $2}') MB RAM; no worker running"
	say "the floor: bare List pages and history reads"
	"$OUT/scalebench" floor -address "$ADDRESS"

	say "the dashboard (its own process), / and /waiting"
	"$OUT/overseer" dashboard --address "$ADDRESS" --listen "127.0.0.1:$DASH_PORT" >"$OUT/dashboard.log" 2>&1 &
	dash=$!
	pids+=("$dash")
	until curl -fsS -o /dev/null "http://127.0.0.1:$DASH_PORT/healthz" 2>/dev/null || curl -fsS -o /dev/null "http://127.0.0.1:$DASH_PORT/" 2>/dev/null; do
		kill -0 "$dash" || { cat "$OUT/dashboard.log"; exit 1; }
		sleep 0.2
	done
	"$OUT/scalebench" pages -url "http://127.0.0.1:$DASH_PORT" -n "$N" -conc 16
	"$OUT/scalebench" walk -url "http://127.0.0.1:$DASH_PORT"
	say "dashboard peak memory: $("$OUT/scalebench" hwm "$dash")"
	kill -INT "$dash"
	wait "$dash" 2>/dev/null || true

	say "overseer list (50 rows) and overseer list --paused"
	/usr/bin/time -v -o "$OUT/list.time" "$OUT/overseer" list --address "$ADDRESS" >"$OUT/list.txt"
	say "list: $(elapsed "$OUT/list.time"), peak $(rss "$OUT/list.time")"
	/usr/bin/time -v -o "$OUT/paused.time" "$OUT/overseer" list --paused --json --timeout 60s --address "$ADDRESS" >"$OUT/paused.json"
	say "list --paused: $(elapsed "$OUT/paused.time"), peak $(rss "$OUT/paused.time")"
	"$OUT/scalebench" queue <"$OUT/paused.json"
	/usr/bin/time -v -o "$OUT/paused-text.time" "$OUT/overseer" list --paused --timeout 60s --address "$ADDRESS" >"$OUT/paused.txt"
	say "list --paused (table): $(elapsed "$OUT/paused-text.time"), peak $(rss "$OUT/paused-text.time")"

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
	"$OUT/overseer" worker --address "$ADDRESS" --task-queue scale-learn --learn-records "$OUT/records" --model-registry \
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
	;;
*)
	echo "usage: scripts/scalebench.sh populate|measure|resume|learn" >&2
	exit 2
	;;
esac
