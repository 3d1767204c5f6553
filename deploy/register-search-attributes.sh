#!/bin/sh
# The admin step of the overseer's cluster, shared by docker-compose.yml (the
# one-shot temporal-admin service) and scripts/cluster.sh (make cluster, CI):
# waits for the Temporal frontend, creates the namespace when it is missing,
# then registers the overseer's search attributes on it through the operator
# API, and waits until a visibility query can use each (the server caches its
# search attributes for up to a minute: the shipped dynamic configuration
# does not force a refresh on every read, a setting meant for tests). It is
# idempotent: a namespace or an attribute that exists already (with the same
# type) is fine.
#
# Environment:
#   TEMPORAL_ADDRESS             frontend host:port, e.g. temporal:7233
#   TEMPORAL_NAMESPACE           namespace, e.g. default
#   OVERSEER_SEARCH_ATTRIBUTES   space-separated NAME=Type pairs
#   WAIT_SECONDS                 how long to wait for the frontend, the
#                                namespace and each attribute (default 300)
#   TEMPORAL                     the Temporal CLI (default: temporal on PATH)
set -eu

: "${TEMPORAL_ADDRESS:?set TEMPORAL_ADDRESS}"
: "${TEMPORAL_NAMESPACE:=default}"
: "${OVERSEER_SEARCH_ATTRIBUTES:?set OVERSEER_SEARCH_ATTRIBUTES}"
: "${WAIT_SECONDS:=300}"
: "${TEMPORAL:=temporal}"

waited=0
# tick WHAT: waits a second more for WHAT, or gives up.
tick() {
	if [ "$waited" -ge "$WAIT_SECONDS" ]; then
		echo "register-search-attributes: $1 not ready after ${WAIT_SECONDS}s" >&2
		exit 1
	fi
	sleep 1
	waited=$((waited + 1))
}

until "$TEMPORAL" operator cluster health --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1; do
	tick "the Temporal frontend at $TEMPORAL_ADDRESS"
done

waited=0
until "$TEMPORAL" operator namespace describe --address "$TEMPORAL_ADDRESS" --namespace "$TEMPORAL_NAMESPACE" >/dev/null 2>&1; do
	if "$TEMPORAL" operator namespace create --address "$TEMPORAL_ADDRESS" --namespace "$TEMPORAL_NAMESPACE" >/dev/null 2>&1; then
		echo "register-search-attributes: created namespace $TEMPORAL_NAMESPACE"
	fi
	tick "namespace $TEMPORAL_NAMESPACE at $TEMPORAL_ADDRESS"
done

for pair in $OVERSEER_SEARCH_ATTRIBUTES; do
	name=${pair%%=*}
	type=${pair#*=}
	waited=0
	# Retried: a namespace created a moment ago may not be known to every
	# service yet.
	while :; do
		if "$TEMPORAL" operator search-attribute create --address "$TEMPORAL_ADDRESS" --namespace "$TEMPORAL_NAMESPACE" \
			--name "$name" --type "$type" >/dev/null 2>&1; then
			echo "register-search-attributes: registered $name ($type)"
			break
		elif "$TEMPORAL" operator search-attribute list --address "$TEMPORAL_ADDRESS" --namespace "$TEMPORAL_NAMESPACE" 2>/dev/null |
			grep -Eq "^[[:space:]]*$name[[:space:]]+$type([[:space:]]|\$)"; then
			echo "register-search-attributes: $name ($type) exists"
			break
		fi
		tick "search attribute $name ($type)"
	done
done

# Ready when a visibility query that names each attribute is accepted: a
# worker's first upsert of it is then accepted too.
for pair in $OVERSEER_SEARCH_ATTRIBUTES; do
	name=${pair%%=*}
	type=${pair#*=}
	case "$type" in
	Bool) value=true ;;
	Double | Int) value=0 ;;
	Datetime) value="'2000-01-01T00:00:00Z'" ;;
	*) value="''" ;;
	esac
	waited=0
	until "$TEMPORAL" workflow count --address "$TEMPORAL_ADDRESS" --namespace "$TEMPORAL_NAMESPACE" \
		--query "$name = $value" >/dev/null 2>&1; do
		tick "search attribute $name in visibility queries"
	done
done
echo "register-search-attributes: every search attribute is usable"
