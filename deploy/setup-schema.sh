#!/bin/sh
# Creates the Temporal server's two PostgreSQL databases (persistence and
# visibility) and brings them to the schema of the temporal-sql-tool's
# release (1.29.1): the postgresql/v12 schemas embedded in the tool, the same
# files as schema/postgresql/v12/{temporal,visibility}/versioned in
# go.temporal.io/server. Idempotent: databases that exist are kept, and only
# missing schema versions are applied. The temporal-schema service of
# docker-compose.yml runs it (admin-tools image); so does scripts/cluster.sh.
#
# Environment:
#   SQL_TOOL                     the schema tool (default: temporal-sql-tool on PATH)
#   POSTGRES_SEEDS, DB_PORT      PostgreSQL host and port
#   POSTGRES_USER, POSTGRES_PWD  a user that may create databases
#   DBNAME, VISIBILITY_DBNAME    default temporal, temporal_visibility
#   WAIT_SECONDS                 how long to wait for PostgreSQL (default 120)
set -eu

: "${SQL_TOOL:=temporal-sql-tool}"
: "${POSTGRES_SEEDS:?set POSTGRES_SEEDS}"
: "${DB_PORT:=5432}"
: "${POSTGRES_USER:?set POSTGRES_USER}"
: "${POSTGRES_PWD:?set POSTGRES_PWD}"
: "${DBNAME:=temporal}"
: "${VISIBILITY_DBNAME:=temporal_visibility}"
: "${WAIT_SECONDS:=120}"

# The password goes through the environment (SQL_PASSWORD), not argv.
export SQL_PASSWORD="$POSTGRES_PWD"
sql() {
	"$SQL_TOOL" --plugin postgres12 --endpoint "$POSTGRES_SEEDS" --port "$DB_PORT" --user "$POSTGRES_USER" "$@"
}
# quiet ARGS...: sql, its log shown only when it fails.
quiet() {
	if ! out=$(sql "$@" 2>&1); then
		printf '%s\n' "$out" >&2
		echo "setup-schema: temporal-sql-tool $* failed" >&2
		exit 1
	fi
}

waited=0
until sql --database "$DBNAME" create-database >/dev/null 2>&1; do
	if [ "$waited" -ge "$WAIT_SECONDS" ]; then
		echo "setup-schema: cannot create database $DBNAME at $POSTGRES_SEEDS:$DB_PORT after ${WAIT_SECONDS}s:" >&2
		sql --database "$DBNAME" create-database >&2 || true
		exit 1
	fi
	sleep 1
	waited=$((waited + 1))
done

for pair in "$DBNAME=postgresql/v12/temporal" "$VISIBILITY_DBNAME=postgresql/v12/visibility"; do
	db=${pair%%=*}
	schema=${pair#*=}
	quiet --database "$db" create-database
	quiet --database "$db" setup-schema --version 0.0
	quiet --database "$db" update-schema --schema-name "$schema"
	echo "setup-schema: $db at schema $schema (temporal-sql-tool $("$SQL_TOOL" --version 2>/dev/null | awk '{print $NF}'))"
done
