#!/usr/bin/env bash
# A Temporal cluster on PostgreSQL on this machine, without containers: the
# cluster docker-compose.yml describes, run from the same files (deploy/) so
# that what CI tests is what compose runs.
#
#   scripts/cluster.sh up          # make cluster: start, print the address, stop on Ctrl-C
#   scripts/cluster.sh run CMD...  # start, run CMD with OVERSEER_E2E_* set, stop (make test-cluster)
#   scripts/cluster.sh start       # start in the background ...
#   scripts/cluster.sh stop        # ... and stop what start started
#   scripts/cluster.sh build       # only build the server and its schema tool
#   scripts/cluster.sh env         # print the server's environment (what
#                                  # deploy/temporal/overseer.yaml reads)
#
# What start does:
#   1. PostgreSQL from Debian's packages (apt-get install postgresql when no
#      server is installed; needs root), run as a plain process (pg_ctl, as
#      the postgres user when run as root) on its own data directory.
#   2. The Temporal server and temporal-sql-tool built from Go modules at the
#      versions scripts/cluster/go.mod pins (go.temporal.io/server v1.29.1,
#      the dev server's release), cached in .tools/bin with a version stamp;
#      with OVERSEER_CLUSTER_SERVER=v1.32.0, the versions
#      scripts/cluster-v1.32/go.mod pins, cached under their own names
#      (temporal-server-v1.32.0, temporal-sql-tool-v1.32.0).
#   3. The persistence and visibility databases at the release's
#      postgresql/v12 schema (deploy/setup-schema.sh, with that release's
#      temporal-sql-tool, which embeds its schema).
#   4. The server, all services in one process, with deploy/temporal/overseer.yaml
#      (4 history shards, SQL visibility) and deploy/dynamicconfig/
#      (deploy/start-temporal.sh), on loopback: development-sql.yaml, or
#      for v1.32.0 development-sql-workflow-pause.yaml, the same settings
#      with Temporal's Workflow Pause enabled (frontend.WorkflowPauseEnabled).
#   5. The namespace and the overseer's search attributes through the
#      operator API (deploy/register-search-attributes.sh with .tools/bin/temporal).
#
# Environment:
#   OVERSEER_CLUSTER_SERVER       the Temporal server release: v1.29.1 (the
#                                 default) or v1.32.0 (Workflow Pause on; make
#                                 test-pause)
#   OVERSEER_CLUSTER_DIR          state: PostgreSQL data, logs, pid files
#                                 (default .tools/cluster, or
#                                 .tools/cluster-v1.32.0 for v1.32.0)
#   OVERSEER_CLUSTER_PORT_OFFSET  every port is Temporal's (or PostgreSQL's)
#                                 default plus this (default 10000): frontend
#                                 127.0.0.1:17233, PostgreSQL 127.0.0.1:15432
#   OVERSEER_CLUSTER_FRESH=1      start from empty databases
#   LOG_LEVEL                     the server's log level (default info)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.tools/bin"

say() { echo "cluster: $*"; }
die() {
	echo "cluster: $*" >&2
	exit 1
}

# The default release (scripts/cluster/go.mod pins it; this is checked against it).
TEMPORAL_SERVER_VERSION="v1.29.1"
# Per release: the module that pins it, the names its binaries are cached
# under, its state directory and its dynamic configuration.
case "${OVERSEER_CLUSTER_SERVER:-$TEMPORAL_SERVER_VERSION}" in
"$TEMPORAL_SERVER_VERSION")
	MODDIR="$ROOT/scripts/cluster" BINSUFFIX="" DEFAULT_DIR="$ROOT/.tools/cluster"
	DYNAMIC_CONFIG="development-sql.yaml" WORKFLOW_PAUSE=0
	;;
v1.32.0)
	# Workflow Pause (PauseWorkflowExecution) is in servers from v1.30.0,
	# off unless frontend.WorkflowPauseEnabled is set.
	TEMPORAL_SERVER_VERSION="v1.32.0"
	MODDIR="$ROOT/scripts/cluster-v1.32" BINSUFFIX="-v1.32.0" DEFAULT_DIR="$ROOT/.tools/cluster-v1.32.0"
	DYNAMIC_CONFIG="development-sql-workflow-pause.yaml" WORKFLOW_PAUSE=1
	;;
*)
	die "OVERSEER_CLUSTER_SERVER=$OVERSEER_CLUSTER_SERVER: this script runs v1.29.1 (the default, scripts/cluster) or v1.32.0 (scripts/cluster-v1.32); unset it or choose one of them"
	;;
esac
SERVER_BIN="$BIN/temporal-server$BINSUFFIX" SQL_TOOL_BIN="$BIN/temporal-sql-tool$BINSUFFIX"
DIR="${OVERSEER_CLUSTER_DIR:-$DEFAULT_DIR}"
case "$DIR" in /*) ;; *) DIR="$PWD/$DIR" ;; esac
PGDATA="$DIR/pgdata"
LOGS="$DIR/logs"
OFFSET="${OVERSEER_CLUSTER_PORT_OFFSET:-10000}"
# The server records its membership ports in a PostgreSQL smallint: the
# highest, 6939 + OFFSET, must stay at or below 32767.
if ! [[ "$OFFSET" =~ ^[0-9]+$ ]] || (( 6939 + OFFSET > 32767 )); then
	echo "cluster: OVERSEER_CLUSTER_PORT_OFFSET=$OFFSET: give a number from 0 to 25828 (the server stores its membership ports, 6933-6939 plus the offset, in a PostgreSQL smallint)" >&2
	exit 2
fi

NAMESPACE="default"
# What docker-compose.yml's temporal-admin service registers (compose_test.go
# checks that the two lists agree with the plugin).
SEARCH_ATTRIBUTES="OverseerStatus=Keyword OverseerOnObjective=Double OverseerPaused=Bool OverseerGateSince=Datetime OverseerBudget=Keyword"

# The environment deploy/temporal/overseer.yaml and deploy/setup-schema.sh read.
export BIND_ON_IP=127.0.0.1
export FRONTEND_GRPC_PORT=$((7233 + OFFSET)) FRONTEND_HTTP_PORT=$((7243 + OFFSET)) FRONTEND_MEMBERSHIP_PORT=$((6933 + OFFSET))
export HISTORY_GRPC_PORT=$((7234 + OFFSET)) HISTORY_MEMBERSHIP_PORT=$((6934 + OFFSET))
export MATCHING_GRPC_PORT=$((7235 + OFFSET)) MATCHING_MEMBERSHIP_PORT=$((6935 + OFFSET))
export WORKER_GRPC_PORT=$((7239 + OFFSET)) WORKER_MEMBERSHIP_PORT=$((6939 + OFFSET))
export POSTGRES_SEEDS=127.0.0.1 DB_PORT=$((5432 + OFFSET)) POSTGRES_USER=temporal POSTGRES_PWD=temporal
export DBNAME=temporal VISIBILITY_DBNAME=temporal_visibility
export LOG_LEVEL="${LOG_LEVEL:-info}"
ADDRESS="127.0.0.1:$FRONTEND_GRPC_PORT"

# --- PostgreSQL -------------------------------------------------------------

# The newest installed PostgreSQL server's bin directory (Debian layout).
pg_bindir() {
	local d
	d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)"
	[[ -n "$d" && -x "$d/postgres" && -x "$d/initdb" && -x "$d/pg_ctl" ]] && echo "$d"
}

ensure_postgres() {
	if [[ -n "$(pg_bindir)" ]]; then
		return
	fi
	[[ $EUID -eq 0 ]] || die "no PostgreSQL server in /usr/lib/postgresql/*/bin: install Debian's (sudo apt-get install -y postgresql) and run again"
	say "installing PostgreSQL from Debian's packages (apt-get install -y postgresql)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	apt-get install -y -q postgresql
	[[ -n "$(pg_bindir)" ]] || die "apt-get installed postgresql but no server is in /usr/lib/postgresql/*/bin"
}

# as_pg CMD...: runs a PostgreSQL program as the postgres user when root
# (the server refuses to run as root), else as this user.
as_pg() {
	if [[ $EUID -eq 0 ]]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

pg_running() {
	[[ -f "$PGDATA/PG_VERSION" ]] && as_pg "$(pg_bindir)/pg_ctl" -D "$PGDATA" status >/dev/null 2>&1
}

init_postgres() {
	local bindir="$1"
	if [[ "${OVERSEER_CLUSTER_FRESH:-}" == "1" && -d "$PGDATA" ]]; then
		say "OVERSEER_CLUSTER_FRESH=1: removing $PGDATA"
		rm -rf "$PGDATA"
	fi
	[[ -f "$PGDATA/PG_VERSION" ]] && return
	mkdir -p "$PGDATA"
	chmod 700 "$PGDATA"
	local pwfile="$DIR/.pwfile"
	(umask 077 && printf '%s\n' "$POSTGRES_PWD" >"$pwfile")
	if [[ $EUID -eq 0 ]]; then
		chown postgres: "$PGDATA" "$pwfile"
		runuser -u postgres -- test -x "$PGDATA" ||
			die "the postgres user cannot reach $PGDATA: set OVERSEER_CLUSTER_DIR to a directory it can (e.g. /tmp/overseer-cluster)"
	fi
	# The Temporal user is the superuser, as in the postgres image compose
	# runs (POSTGRES_USER): it creates the databases.
	as_pg "$bindir/initdb" -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" --auth=scram-sha-256 \
		-E UTF8 --no-locale >"$LOGS/initdb.log" 2>&1 || {
		rm -f "$pwfile"
		cat "$LOGS/initdb.log" >&2
		die "initdb failed"
	}
	rm -f "$pwfile"
}

start_postgres() {
	local bindir="$1"
	touch "$LOGS/postgresql.log"
	[[ $EUID -ne 0 ]] || chown postgres: "$LOGS/postgresql.log"
	# Loopback TCP only (no Unix socket), on its own port.
	as_pg "$bindir/pg_ctl" -D "$PGDATA" -l "$LOGS/postgresql.log" -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -c port=$DB_PORT -c unix_socket_directories=''" start >/dev/null ||
		{
			tail -n 20 "$LOGS/postgresql.log" >&2 || true
			die "PostgreSQL did not start (log: $LOGS/postgresql.log)"
		}
}

stop_postgres() {
	local bindir
	bindir="$(pg_bindir)" || return 0
	if pg_running; then
		as_pg "$bindir/pg_ctl" -D "$PGDATA" -m fast -w -t 60 stop >/dev/null && say "PostgreSQL stopped"
	fi
}

# --- Temporal server --------------------------------------------------------

# build: the server and the schema tool into .tools/bin, unless the stamped
# binaries are of the pinned version. The default release's are
# temporal-server and temporal-sql-tool, another's carry its version
# (temporal-server-v1.32.0), each with its own stamp, so that both stay
# cached side by side.
build() {
	command -v go >/dev/null 2>&1 || die "'go' not found on PATH"
	# scripts/cluster (and scripts/cluster-v1.32) is its own module, outside the repository's go.work:
	# the server builds with the versions it pins, not the workspace's.
	local -x GOWORK=off
	local pinned
	pinned="$(cd "$MODDIR" && go list -m -f '{{.Version}}' go.temporal.io/server)"
	[[ "$pinned" == "$TEMPORAL_SERVER_VERSION" ]] ||
		die "${MODDIR#"$ROOT/"}/go.mod pins go.temporal.io/server $pinned, this script $TEMPORAL_SERVER_VERSION: make them agree"
	local want="go.temporal.io/server/cmd/server+cmd/tools/sql@$TEMPORAL_SERVER_VERSION" stamp="$BIN/.temporal-server$BINSUFFIX.version"
	local names=".tools/bin/temporal-server$BINSUFFIX, temporal-sql-tool$BINSUFFIX"
	if [[ -x "$SERVER_BIN" && -x "$SQL_TOOL_BIN" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
		printf '%-17s %-8s up to date   %s\n' temporal-server "$TEMPORAL_SERVER_VERSION" "$names"
		return
	fi
	local start=$SECONDS tmp
	mkdir -p "$BIN"
	tmp="$(mktemp -d "$BIN/.build.XXXXXX")"
	rm -f "$stamp"
	(cd "$MODDIR" && go build -o "$tmp/" go.temporal.io/server/cmd/server go.temporal.io/server/cmd/tools/sql) ||
		{
			rm -rf "$tmp"
			die "building the Temporal server $TEMPORAL_SERVER_VERSION failed"
		}
	mv "$tmp/server" "$SERVER_BIN"
	mv "$tmp/sql" "$SQL_TOOL_BIN"
	rm -rf "$tmp"
	echo "$want" >"$stamp"
	printf '%-17s %-8s built        %s (%ss)\n' temporal-server "$TEMPORAL_SERVER_VERSION" "$names" "$((SECONDS - start))"
}

server_pid() {
	local pid
	[[ -f "$DIR/temporal.pid" ]] || return 1
	pid="$(cat "$DIR/temporal.pid")"
	[[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

start_server() {
	# The server detaches from the terminal's process group (setsid), so
	# Ctrl-C reaches this script, which stops it after its clients.
	(
		while IFS= read -r kv; do export "${kv?}"; done < <(server_env)
		exec setsid sh "$ROOT/deploy/start-temporal.sh" >>"$LOGS/temporal.log" 2>&1 </dev/null
	) &
	echo $! >"$DIR/temporal.pid"
	local pid=$! deadline=$((SECONDS + 120))
	until "$BIN/temporal" operator cluster health --address "$ADDRESS" >/dev/null 2>&1; do
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 30 "$LOGS/temporal.log" >&2 || true
			die "the Temporal server exited (log: $LOGS/temporal.log)"
		fi
		if ((SECONDS >= deadline)); then
			tail -n 30 "$LOGS/temporal.log" >&2 || true
			die "the Temporal server did not answer at $ADDRESS in 120 s (log: $LOGS/temporal.log)"
		fi
		sleep 0.5
	done
}

stop_server() {
	local pid i
	pid="$(server_pid)" || {
		rm -f "$DIR/temporal.pid"
		return 0
	}
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 60; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.5
	done
	if kill -0 "$pid" 2>/dev/null; then
		say "the Temporal server ignored SIGTERM for 30 s: killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$DIR/temporal.pid"
	say "Temporal server stopped"
}

# --- commands ---------------------------------------------------------------

# check_ports: every port this cluster listens on is free.
check_ports() {
	local p taken=()
	for p in "$DB_PORT" "$FRONTEND_GRPC_PORT" "$FRONTEND_HTTP_PORT" "$FRONTEND_MEMBERSHIP_PORT" \
		"$HISTORY_GRPC_PORT" "$HISTORY_MEMBERSHIP_PORT" "$MATCHING_GRPC_PORT" "$MATCHING_MEMBERSHIP_PORT" \
		"$WORKER_GRPC_PORT" "$WORKER_MEMBERSHIP_PORT"; do
		if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			taken+=("$p")
		fi
	done
	((${#taken[@]} == 0)) ||
		die "port(s) ${taken[*]} on 127.0.0.1 are taken: stop what uses them, or choose other ports with OVERSEER_CLUSTER_PORT_OFFSET (now $OFFSET)"
}

start() {
	local t0=$SECONDS
	if server_pid >/dev/null || { [[ -n "$(pg_bindir)" ]] && pg_running; }; then
		die "a cluster from $DIR is running already: scripts/cluster.sh stop (with the same OVERSEER_CLUSTER_DIR) first"
	fi
	check_ports
	STARTED=1
	mkdir -p "$DIR" "$LOGS"
	ensure_postgres
	local bindir
	bindir="$(pg_bindir)"
	bash "$ROOT/scripts/install-tools.sh" temporal
	build
	init_postgres "$bindir"
	start_postgres "$bindir"
	say "$("$bindir/postgres" --version) on 127.0.0.1:$DB_PORT, data in $PGDATA"
	SQL_TOOL="$SQL_TOOL_BIN" sh "$ROOT/deploy/setup-schema.sh" | sed 's/^/cluster: /'
	start_server
	say "Temporal server $TEMPORAL_SERVER_VERSION at $ADDRESS (log: $LOGS/temporal.log, dynamic config deploy/dynamicconfig/$DYNAMIC_CONFIG)"
	TEMPORAL="$BIN/temporal" TEMPORAL_ADDRESS="$ADDRESS" TEMPORAL_NAMESPACE="$NAMESPACE" \
		OVERSEER_SEARCH_ATTRIBUTES="$SEARCH_ATTRIBUTES" sh "$ROOT/deploy/register-search-attributes.sh" | sed 's/^/cluster: /'
	cat >"$DIR/env" <<EOF
OVERSEER_E2E_ADDRESS=$ADDRESS
OVERSEER_E2E_NAMESPACE=$NAMESPACE
TEMPORAL_ADDRESS=$ADDRESS
TEMPORAL_NAMESPACE=$NAMESPACE
EOF
	say "ready in $((SECONDS - t0)) s"
}

stop() {
	stop_server
	stop_postgres
}

# cleanup: stops the cluster if this invocation started (part of) it.
STARTED=0
cleanup() {
	if ((STARTED)); then
		stop
	fi
}

# e2e_env: what the end-to-end tests read to run against this cluster
# (testsuite/e2e_test.go), and what they need to restart it.
e2e_env() {
	export OVERSEER_E2E_TARGET=cluster OVERSEER_E2E_ADDRESS="$ADDRESS" OVERSEER_E2E_NAMESPACE="$NAMESPACE"
	export OVERSEER_E2E_CLUSTER_CTL="$ROOT/scripts/cluster.sh" OVERSEER_CLUSTER_DIR="$DIR" OVERSEER_CLUSTER_PORT_OFFSET="$OFFSET"
	# The release, for a restart from the tests, and whether the tests of
	# Temporal's Workflow Pause can run (testsuite/e2e/workflowpause_e2e_test.go).
	export OVERSEER_CLUSTER_SERVER="$TEMPORAL_SERVER_VERSION" OVERSEER_E2E_WORKFLOW_PAUSE="$WORKFLOW_PAUSE"
	# A restart from the tests keeps the data.
	unset OVERSEER_CLUSTER_FRESH
}

# server_env: the environment deploy/start-temporal.sh runs the server with.
server_env() {
	local v
	for v in BIND_ON_IP FRONTEND_GRPC_PORT FRONTEND_HTTP_PORT FRONTEND_MEMBERSHIP_PORT HISTORY_GRPC_PORT \
		HISTORY_MEMBERSHIP_PORT MATCHING_GRPC_PORT MATCHING_MEMBERSHIP_PORT WORKER_GRPC_PORT WORKER_MEMBERSHIP_PORT \
		POSTGRES_SEEDS DB_PORT POSTGRES_USER POSTGRES_PWD DBNAME VISIBILITY_DBNAME LOG_LEVEL; do
		echo "$v=${!v}"
	done
	echo "TEMPORAL_SERVER=$SERVER_BIN"
	echo "OVERSEER_SERVER_CONFIG=$ROOT/deploy/temporal"
	echo "DYNAMIC_CONFIG_FILE_PATH=$ROOT/deploy/dynamicconfig/$DYNAMIC_CONFIG"
}

cmd="${1:-}"
shift || true
case "$cmd" in
build)
	build
	;;
env)
	server_env
	;;
start)
	# A failed start stops what it had started.
	trap 'rc=$?; ((rc == 0)) || cleanup' EXIT
	start
	;;
stop)
	stop
	;;
up)
	trap cleanup EXIT
	trap 'exit 0' INT TERM # Ctrl-C is how it ends
	start
	cat <<EOF

A Temporal cluster on PostgreSQL is running until Ctrl-C:
  frontend   $ADDRESS (namespace $NAMESPACE)
  worker     go run ./cmd/overseer worker --address $ADDRESS
  tests      OVERSEER_E2E_TARGET=cluster OVERSEER_E2E_ADDRESS=$ADDRESS OVERSEER_E2E_WORKFLOW_PAUSE=$WORKFLOW_PAUSE go test ./testsuite/e2e
  logs       $LOGS

EOF
	wait "$(server_pid)" || true
	say "the Temporal server exited (log: $LOGS/temporal.log)"
	;;
run)
	[[ $# -gt 0 ]] || die "usage: scripts/cluster.sh run CMD [ARGS...]"
	trap cleanup EXIT
	trap 'exit 130' INT TERM
	start
	e2e_env
	set +e
	"$@"
	rc=$?
	set -e
	exit "$rc"
	;;
*)
	echo "usage: scripts/cluster.sh up|run CMD...|start|stop|build|env" >&2
	exit 2
	;;
esac
