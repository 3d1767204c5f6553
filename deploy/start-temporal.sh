#!/bin/sh
# Starts the Temporal server (all services in one process) with the shared
# configuration deploy/temporal/overseer.yaml. The temporal service of
# docker-compose.yml runs it in the temporalio/server image; scripts/cluster.sh
# (make cluster, CI) runs it with the server built from Go modules.
#
# Environment: the variables deploy/temporal/overseer.yaml reads, and
#   TEMPORAL_SERVER         the server binary (default: temporal-server on PATH)
#   OVERSEER_SERVER_CONFIG  the directory holding overseer.yaml
#                           (default: /etc/temporal/overseer, compose's mount)
#   BIND_ON_IP              default: this host's first address (hostname -i),
#                           which other containers reach
set -eu

: "${TEMPORAL_SERVER:=temporal-server}"
: "${OVERSEER_SERVER_CONFIG:=/etc/temporal/overseer}"
if [ -z "${BIND_ON_IP:-}" ]; then
	BIND_ON_IP=$(hostname -i | awk '{print $1}')
fi
export BIND_ON_IP
# The frontend's periodic version check calls out to Temporal's servers.
export TEMPORAL_VERSION_CHECK_DISABLED=1

exec "$TEMPORAL_SERVER" --root / --config "$OVERSEER_SERVER_CONFIG" --env overseer --allow-no-auth start
