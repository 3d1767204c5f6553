#!/bin/sh
# One-shot admin step of docker-compose.yml: waits for the Temporal frontend,
# then registers the overseer's search attributes on the namespace. It is
# idempotent: an attribute that exists already with the same type is fine.
#
# Environment (set in docker-compose.yml):
#   TEMPORAL_ADDRESS             frontend host:port, e.g. temporal:7233
#   TEMPORAL_NAMESPACE           namespace, e.g. default
#   OVERSEER_SEARCH_ATTRIBUTES   space-separated NAME=Type pairs
#   WAIT_SECONDS                 how long to wait for the frontend (default 300)
set -eu

: "${TEMPORAL_ADDRESS:?set TEMPORAL_ADDRESS}"
: "${TEMPORAL_NAMESPACE:=default}"
: "${OVERSEER_SEARCH_ATTRIBUTES:?set OVERSEER_SEARCH_ATTRIBUTES}"
: "${WAIT_SECONDS:=300}"

waited=0
until temporal operator namespace describe --address "$TEMPORAL_ADDRESS" --namespace "$TEMPORAL_NAMESPACE" >/dev/null 2>&1; do
	if [ "$waited" -ge "$WAIT_SECONDS" ]; then
		echo "register-search-attributes: namespace $TEMPORAL_NAMESPACE at $TEMPORAL_ADDRESS not ready after ${WAIT_SECONDS}s" >&2
		exit 1
	fi
	sleep 2
	waited=$((waited + 2))
done

for pair in $OVERSEER_SEARCH_ATTRIBUTES; do
	name=${pair%%=*}
	type=${pair#*=}
	if temporal operator search-attribute create --address "$TEMPORAL_ADDRESS" --namespace "$TEMPORAL_NAMESPACE" \
		--name "$name" --type "$type" >/dev/null 2>&1; then
		echo "register-search-attributes: created $name ($type)"
	elif temporal operator search-attribute list --address "$TEMPORAL_ADDRESS" --namespace "$TEMPORAL_NAMESPACE" | grep -Eq "^[[:space:]]*$name[[:space:]]+$type([[:space:]]|\$)"; then
		echo "register-search-attributes: $name ($type) exists"
	else
		echo "register-search-attributes: could not register $name ($type)" >&2
		exit 1
	fi
done
